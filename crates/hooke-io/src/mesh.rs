//! Triangle mesh import: a small OBJ reader of our own that keeps the file's vertex order (see
//! [`parse_obj`] for why not `tobj`).

use glam::{Vec2, Vec3};
use std::path::Path;

/// Largest mesh file accepted (bytes): 1 GiB.
pub const MAX_MESH_FILE: u64 = 1 << 30;

/// A triangle mesh read from OBJ.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjMesh {
    /// Vertex positions (file units), in the file's order.
    pub positions: Vec<Vec3>,
    /// Triangles as vertex indices.
    pub triangles: Vec<[u32; 3]>,
    /// One texture coordinate (u, v) per vertex — the first `vt` a face gives it — if the
    /// file has `vt` lines and every vertex gets one; `None` otherwise.
    pub uvs: Option<Vec<Vec2>>,
}

/// Loads every object of an OBJ file as one triangle mesh (faces triangulated, objects
/// merged): vertex positions (file units), triangles as vertex indices, and UVs. Vertices keep
/// the file's order and are shared by position index alone — texture and normal indices
/// (`vt`, `vn`) do not split them, so a UV seam or flat shading does not tear the cloth, and a
/// cache of the result lines up with the original mesh. Across a UV seam a vertex keeps the
/// first UV a face gives it.
///
/// # Errors
/// A message naming the file if it is not a regular file, is larger than [`MAX_MESH_FILE`],
/// cannot be read or parsed, or has no triangles.
pub fn load_obj(path: &Path) -> Result<ObjMesh, String> {
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

/// Parses OBJ text: `v x y z`, `vt u [v [w]]` and `f` lines (polygons fan-triangulated;
/// `a/b/c` tokens use the position index `a` and the texture index `b`, if present; negative
/// indices count back from the last vertex or texture coordinate). Other statements (`vn`,
/// `o`, `g`, `s`, `usemtl`, …) are ignored. tobj is not used here because it renumbers
/// vertices by first use, which would break pin indices and caches.
///
/// # Errors
/// A message naming the line for a malformed `v`, `vt` or `f`, an index out of range, or no
/// face.
pub fn parse_obj(text: &str) -> Result<ObjMesh, String> {
    let mut positions = Vec::new();
    let mut triangles = Vec::new();
    let mut texcoords: Vec<Vec2> = Vec::new();
    // UV of each vertex: the first one a face gives it.
    let mut uvs: Vec<Option<Vec2>> = Vec::new();
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
                if !c.iter().all(|x| x.is_finite()) {
                    return Err(format!("line {}: vertex {c:?} is not finite in f32", ln + 1));
                }
                positions.push(Vec3::new(c[0], c[1], c[2]));
            }
            Some("vt") => {
                let c: Vec<f32> = it
                    .take(2)
                    .map(|t| t.parse::<f32>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("line {}: {e}", ln + 1))?;
                if !c.iter().all(|x| x.is_finite()) {
                    return Err(format!("line {}: texture coordinate {c:?} is not finite in f32", ln + 1));
                }
                match c[..] {
                    [u] => texcoords.push(Vec2::new(u, 0.0)),
                    [u, v] => texcoords.push(Vec2::new(u, v)),
                    _ => return Err(format!("line {}: a texture coordinate needs u", ln + 1)),
                }
            }
            Some("f") => {
                let n = positions.len() as i64;
                let nt = texcoords.len() as i64;
                uvs.resize(positions.len(), None);
                let idx = it
                    .map(|t| {
                        let mut parts = t.split('/');
                        // v, v/vt, v//vn or v/vt/vn; the normal index, unused, must still be one.
                        let fields: Vec<&str> = t.split('/').collect();
                        let vn_ok = fields.get(2).is_none_or(|vn| vn.is_empty() || vn.parse::<i64>().is_ok());
                        if fields.len() > 3 || !vn_ok {
                            return Err(format!(
                                "line {}: bad face vertex {t:?} (expected v, v/vt, v//vn or v/vt/vn)",
                                ln + 1
                            ));
                        }
                        let v: i64 = parts
                            .next()
                            .unwrap_or("")
                            .parse()
                            .map_err(|_| format!("line {}: bad face index {t:?}", ln + 1))?;
                        let k = if v < 0 { n + v } else { v - 1 };
                        if !(0..n).contains(&k) {
                            return Err(format!(
                                "line {}: vertex index {v} is out of range ({n} vertices so far)",
                                ln + 1
                            ));
                        }
                        match parts.next() {
                            Some(vt) if !vt.is_empty() => {
                                let vt: i64 =
                                    vt.parse().map_err(|_| format!("line {}: bad texture index in {t:?}", ln + 1))?;
                                let kt = if vt < 0 { nt + vt } else { vt - 1 };
                                if !(0..nt).contains(&kt) {
                                    return Err(format!(
                                        "line {}: texture index {vt} is out of range ({nt} texture coordinates so far)",
                                        ln + 1
                                    ));
                                }
                                uvs[k as usize].get_or_insert(texcoords[kt as usize]);
                            }
                            _ => {}
                        }
                        Ok(k as u32)
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
    uvs.resize(positions.len(), None);
    let uvs = if texcoords.is_empty() { None } else { uvs.into_iter().collect::<Option<Vec<Vec2>>>() };
    Ok(ObjMesh { positions, triangles, uvs })
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUAD: &str = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n";

    /// `v/vt` and `v/vt/vn` give each vertex the first UV a face assigns it (a seam does not
    /// split vertices); `v//vn` and plain indices give none.
    #[test]
    fn uvs_from_face_texture_indices() {
        let text = format!("{QUAD}vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 0.5 0.5\nf 1/1 2/2/1 3/3\nf 1/5 3/5 -1/-2\n");
        let m = parse_obj(&text).unwrap();
        assert_eq!(m.triangles, vec![[0, 1, 2], [0, 2, 3]]);
        let uv = m.uvs.unwrap();
        assert_eq!(uv, vec![Vec2::new(0.0, 0.0), Vec2::new(1.0, 0.0), Vec2::new(1.0, 1.0), Vec2::new(0.0, 1.0)]);
        assert_eq!(parse_obj(&format!("{QUAD}f 1 2 3 4\n")).unwrap().uvs, None);
        // A vertex that never gets a UV: the mesh has none.
        assert_eq!(parse_obj(&format!("{QUAD}vt 0 0\nf 1/1 2/1 3//1\nf 1 3 4\n")).unwrap().uvs, None);
    }

    #[test]
    fn bad_texture_indices_name_the_line() {
        let e = parse_obj(&format!("{QUAD}vt 0 0\nf 1/2 2/1 3/1\n")).unwrap_err();
        assert!(e.contains("line 6") && e.contains("texture index 2"), "{e}");
        let e = parse_obj(&format!("{QUAD}vt 0 0\nf 1/x 2/1 3/1\n")).unwrap_err();
        assert!(e.contains("line 6"), "{e}");
        let e = parse_obj(&format!("{QUAD}vt\nf 1 2 3\n")).unwrap_err();
        assert!(e.contains("line 5"), "{e}");
    }

    /// Non-finite coordinates (NaN, inf, or beyond f32) and malformed face vertices are errors
    /// naming the line; `v//vn` and `v/vt/vn` are accepted.
    #[test]
    fn non_finite_values_and_bad_face_vertices_name_the_line() {
        for (text, line) in [
            (format!("{QUAD}vt nan 0\nf 1 2 3\n"), "line 5"),
            (format!("{QUAD}vt 1e39 0\nf 1 2 3\n"), "line 5"),
            ("v 0 0 0\nv inf 0 0\nv 0 1 0\nf 1 2 3\n".to_string(), "line 2"),
            (format!("{QUAD}vt 0 0\nf 1/1/1/1 2 3\n"), "line 6"),
            (format!("{QUAD}f 1//x 2 3\n"), "line 5"),
        ] {
            let e = parse_obj(&text).unwrap_err();
            assert!(e.contains(line), "{text:?}: {e}");
        }
        let ok = parse_obj(&format!("{QUAD}vt 0 0\nvn 0 0 1\nf 1/1/1 2//1 3\n")).unwrap();
        assert_eq!(ok.triangles, vec![[0, 1, 2]]);
    }
}
