//! Triangle mesh import (OBJ, via `tobj`).

use glam::Vec3;
use std::path::Path;

/// Loads every object of an OBJ file as one triangle mesh (faces triangulated, objects
/// merged): vertex positions (file units) and triangles as vertex indices.
///
/// # Errors
/// A message naming the file if it cannot be read or parsed, or has no triangles.
pub fn load_obj(path: &Path) -> Result<(Vec<Vec3>, Vec<[u32; 3]>), String> {
    let opts = tobj::LoadOptions { triangulate: true, single_index: true, ..Default::default() };
    let (models, _) = tobj::load_obj(path, &opts).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut positions = Vec::new();
    let mut triangles = Vec::new();
    for m in &models {
        let base = positions.len() as u32;
        positions.extend(m.mesh.positions.chunks_exact(3).map(|p| Vec3::new(p[0], p[1], p[2])));
        triangles.extend(m.mesh.indices.chunks_exact(3).map(|t| [t[0] + base, t[1] + base, t[2] + base]));
    }
    if triangles.is_empty() {
        return Err(format!("{}: no triangles", path.display()));
    }
    Ok((positions, triangles))
}
