//! Triangle mesh import (OBJ, via `tobj`).

use glam::Vec3;
use std::path::Path;

/// Largest mesh file accepted (bytes): 1 GiB.
pub const MAX_MESH_FILE: u64 = 1 << 30;

/// Loads every object of an OBJ file as one triangle mesh (faces triangulated, objects
/// merged): vertex positions (file units) and triangles as vertex indices. Vertices keep the
/// file's order and are shared by position index alone — texture and normal indices (`vt`,
/// `vn`) do not split them, so a UV seam or flat shading does not tear the cloth, and a cache
/// of the result lines up with the original mesh.
///
/// # Errors
/// A message naming the file if it is not a regular file, is larger than [`MAX_MESH_FILE`],
/// cannot be read or parsed, or has no triangles.
pub fn load_obj(path: &Path) -> Result<(Vec<Vec3>, Vec<[u32; 3]>), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if meta.len() > MAX_MESH_FILE {
        return Err(format!(
            "{}: {} bytes, larger than the {} byte limit for a mesh",
            path.display(),
            meta.len(),
            MAX_MESH_FILE
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_obj(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses OBJ text: `v x y z` lines and `f` lines (polygons fan-triangulated; `a/b/c` tokens
/// use the position index `a`; negative indices count back from the last vertex). Other
/// statements (`vt`, `vn`, `o`, `g`, `s`, `usemtl`, …) are ignored. tobj is not used here
/// because it renumbers vertices by first use, which would break pin indices and caches.
///
/// # Errors
/// A message naming the line for a malformed `v` or `f`, an index out of range, or no face.
pub fn parse_obj(text: &str) -> Result<(Vec<Vec3>, Vec<[u32; 3]>), String> {
    let mut positions = Vec::new();
    let mut triangles = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("v") => {
                let c: Vec<f32> = it
                    .take(3)
                    .map(|t| t.parse::<f32>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("line {}: {e}", ln + 1))?;
                if c.len() != 3 {
                    return Err(format!("line {}: a vertex needs x, y and z", ln + 1));
                }
                positions.push(Vec3::new(c[0], c[1], c[2]));
            }
            Some("f") => {
                let n = positions.len() as i64;
                let idx = it
                    .map(|t| {
                        let v: i64 = t
                            .split('/')
                            .next()
                            .unwrap_or("")
                            .parse()
                            .map_err(|_| format!("line {}: bad face index {t:?}", ln + 1))?;
                        let k = if v < 0 { n + v } else { v - 1 };
                        if (0..n).contains(&k) {
                            Ok(k as u32)
                        } else {
                            Err(format!("line {}: vertex index {v} is out of range ({n} vertices so far)", ln + 1))
                        }
                    })
                    .collect::<Result<Vec<u32>, String>>()?;
                if idx.len() < 3 {
                    return Err(format!("line {}: a face needs at least 3 vertices", ln + 1));
                }
                triangles.extend((1..idx.len() - 1).map(|k| [idx[0], idx[k], idx[k + 1]]));
            }
            _ => {}
        }
    }
    if triangles.is_empty() {
        return Err("no triangles".into());
    }
    Ok((positions, triangles))
}
