//! Mesh colliders from OBJ files: load, weld, place, validate, sample the signed distance
//! grid — or read it back from the cache next to the mesh. The mesh is read either way: it is
//! the surface drawn for the collider.
//!
//! **Cache.** Building a fine grid takes a while (≈ 1 s for a 10⁴-triangle mesh at 128³), so
//! the grid is kept in `<mesh stem>.<key>.sdf` beside the mesh, where the key is a 64-bit
//! FNV-1a hash of the mesh file's bytes, every setting that shapes the grid (scale, rotation,
//! translation, resolution, margin, sign method) and the format's version. A later run with
//! the same file and settings reads it instead of building; a change to either builds a new
//! one. The file is written to a temporary sibling and renamed into place, so a crash never
//! leaves a partial cache; a cache that cannot be written (read-only folder) or read back
//! (damaged) is reported as a warning and the grid is built in memory.
//!
//! Layout (little-endian): `HOOKESDF`, version u32, key u64, checksum u64 (FNV-1a 64 of every
//! byte after it), nodes per axis 3 × u32, lower corner 3 × f32 (m), cell f32 (m), centre
//! 3 × f32 (m), then the values f32 (m), x fastest. A file whose bytes after the checksum do
//! not hash to it (a damaged disk, a copy cut short and padded, an edit) is refused with a
//! warning and the grid built again, so that a damaged value that is still a finite number is
//! never taken for a distance.

use crate::cache::atomic::AtomicFile;
use glam::{Quat, Vec3};
use hooke::collision::{ColliderMesh, ColliderSurface, GridResolution, SdfGrid, SignMethod};
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Version of the cache layout and of the grid's construction; part of every key.
const VERSION: u32 = 3;

const MAGIC: &[u8; 8] = b"HOOKESDF";

/// Header bytes before the values.
const HEADER: usize = 8 + 4 + 8 + 8 + 12 + 12 + 4 + 12;

/// Where the bytes the checksum covers begin.
const CHECKED: usize = 8 + 4 + 8 + 8;

/// What to load and how to place and sample it.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshColliderSpec {
    /// The OBJ file.
    pub path: PathBuf,
    /// Uniform scale from file units to metres.
    pub scale: f32,
    /// Rotation about the file's origin, applied after scaling.
    pub rotation: Quat,
    /// Translation (m), applied last.
    pub translation: Vec3,
    /// Grid resolution.
    pub resolution: GridResolution,
    /// Margin around the mesh (m); `None`: the default number of cells.
    pub margin: Option<f32>,
    /// The box the grid covers instead (lower and upper corner, m, in the scene's frame, where
    /// the placed mesh lies; [`SdfGrid::build_within`]); with it `margin` must be `None`.
    pub bounds: Option<[Vec3; 2]>,
    /// How inside is told from outside.
    pub sign: SignMethod,
}

/// A loaded mesh collider.
#[derive(Clone, Debug)]
pub struct LoadedMeshCollider {
    /// The grid, ready for [`Shape::Sdf`](hooke::collision::Shape::Sdf).
    pub grid: Arc<SdfGrid>,
    /// The mesh the grid is sampled from, placed, welded and repaired as for the grid, for
    /// drawing ([`Collider::surface`](hooke::collision::Collider::surface)).
    pub surface: Arc<ColliderSurface>,
    /// Repairs made to the mesh and cache problems.
    pub warnings: Vec<String>,
    /// The cache file, when one was read or written.
    pub cache: Option<PathBuf>,
    /// Whether the grid came from the cache.
    pub cached: bool,
    /// Seconds spent building the grid (0 when read from the cache).
    pub build_seconds: f64,
}

/// Loads a mesh collider (see the [module documentation](self)).
///
/// # Errors
/// A message naming the file when it is missing, unreadable or malformed, when the mesh is
/// open (with pseudo-normals), not orientable or of zero volume, or when a setting is out of
/// range.
pub fn load_mesh_collider(spec: &MeshColliderSpec) -> Result<LoadedMeshCollider, String> {
    let file = spec.path.display();
    if !(spec.scale.is_finite() && spec.scale > 0.0) {
        return Err(format!("{file}: scale must be a finite number > 0, got {}", spec.scale));
    }
    let meta = std::fs::metadata(&spec.path).map_err(|e| format!("{file}: cannot read the mesh: {e}"))?;
    if !meta.is_file() || meta.len() > crate::mesh::MAX_MESH_FILE {
        return Err(format!("{file}: not a regular file of at most {} bytes", crate::mesh::MAX_MESH_FILE));
    }
    let bytes = std::fs::read(&spec.path).map_err(|e| format!("{file}: cannot read the mesh: {e}"))?;
    let key = cache_key(&bytes, spec);
    let cache = cache_path(&spec.path, key);
    let mut warnings = Vec::new();
    let text = String::from_utf8(bytes).map_err(|_| format!("{file}: not UTF-8 text (an OBJ file is expected)"))?;
    let obj = crate::mesh::parse_obj(&text).map_err(|e| format!("{file}: {e}"))?;
    // Join coincident vertices (split by UV seams or flat shading) so that the mesh's edges
    // are shared and it reads as closed.
    let tolerance = crate::mesh::default_weld_tolerance(&obj.positions);
    let (positions, triangles) = crate::mesh::weld_positions(&obj.positions, &obj.triangles, tolerance);
    // The mesh's size after its scale, within a cloth mesh's range: a scale of 1e30 made a grid
    // of cells of 1e28 m whose distances read 0 inside the mesh, and one of 1e-30 a collider no
    // particle can resolve.
    let (lo, hi) = positions.iter().fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    let size = (hi - lo).max_element() * spec.scale;
    // (No vertices, or all at one point: the mesh's own checks name it.)
    if size > 0.0 && !(1e-6..=1e9).contains(&size) {
        return Err(format!(
            "{file} (scale = {}): the mesh spans {size:e} m; a mesh collider must span between 1e-6 m and 1e9 m",
            spec.scale
        ));
    }
    let placed: Vec<Vec3> = positions.iter().map(|&p| spec.translation + spec.rotation * (p * spec.scale)).collect();
    let start = Instant::now();
    let (mesh, repairs) = ColliderMesh::new(&placed, &triangles, spec.sign).map_err(|e| format!("{file}: {e}"))?;
    warnings.extend(repairs.into_iter().map(|w| format!("{file}: {w}")));
    // (The mesh is read even when its grid is cached: it is drawn.)
    let surface = Arc::new(ColliderSurface::from_mesh(&mesh));
    match read_cache(&cache, key) {
        Ok(Some(grid)) => {
            warnings.extend(cut_warning(spec, &grid));
            return Ok(LoadedMeshCollider {
                grid: Arc::new(grid),
                surface,
                warnings,
                cache: Some(cache),
                cached: true,
                build_seconds: 0.0,
            });
        }
        Ok(None) => {}
        Err(e) => {
            warnings.push(format!("{}: unusable signed distance cache ({e}); building it again", cache.display()))
        }
    }
    let grid = match spec.bounds {
        Some(_) if spec.margin.is_some() => {
            return Err(format!("{file}: bounds and margin both given; the bounds set the grid's box, give one"));
        }
        Some([lo, hi]) => SdfGrid::build_within(&mesh, spec.resolution, lo, hi),
        None => SdfGrid::build(&mesh, spec.resolution, spec.margin),
    }
    .map_err(|e| format!("{file}: {e}"))?;
    let build_seconds = start.elapsed().as_secs_f64();
    warnings.extend(cut_warning(spec, &grid));
    let written = match write_cache(&cache, key, &grid) {
        Ok(()) => Some(cache),
        Err(e) => {
            warnings.push(format!(
                "{file}: the signed distance grid could not be cached ({e}); it is rebuilt on every run"
            ));
            None
        }
    };
    Ok(LoadedMeshCollider { grid: Arc::new(grid), surface, warnings, cache: written, cached: false, build_seconds })
}

/// A warning when `spec`'s bounds cut through the mesh: its part outside them is not felt.
fn cut_warning(spec: &MeshColliderSpec, grid: &SdfGrid) -> Option<String> {
    let cut = grid.deepest_boundary_node();
    (spec.bounds.is_some() && cut < 0.0).then(|| {
        format!(
            "{}: the bounds cut through the mesh (up to {:.3e} m inside it at their faces); the part of the mesh \
             outside them is not felt by the cloth",
            spec.path.display(),
            -cut
        )
    })
}

/// The cache file `spec` would read or write.
///
/// # Errors
/// A message naming the file if it cannot be read.
pub fn cache_path_for(spec: &MeshColliderSpec) -> Result<PathBuf, String> {
    let bytes = std::fs::read(&spec.path).map_err(|e| format!("{}: cannot read the mesh: {e}", spec.path.display()))?;
    Ok(cache_path(&spec.path, cache_key(&bytes, spec)))
}

/// FNV-1a 64 of the mesh's bytes, the settings and [`VERSION`].
fn cache_key(bytes: &[u8], spec: &MeshColliderSpec) -> u64 {
    let mut h = fnv::FnvHasher::default();
    h.write_u32(VERSION);
    h.write_u64(bytes.len() as u64);
    h.write(bytes);
    // −0.0 and 0.0 are the same setting (a scene's rotation [0, 0, 0] makes a quaternion with
    // −0.0 components, `hooke sdf`'s the identity's +0.0): hash them alike, so that a grid
    // built ahead of time is the one the scene finds.
    let f = |h: &mut fnv::FnvHasher, v: f32| h.write_u32((v + 0.0).to_bits());
    f(&mut h, spec.scale);
    for v in spec.rotation.to_array() {
        f(&mut h, v);
    }
    for v in spec.translation.to_array() {
        f(&mut h, v);
    }
    match spec.resolution {
        GridResolution::Cells(n) => {
            h.write_u8(0);
            h.write_u32(n);
        }
        GridResolution::CellSize(c) => {
            h.write_u8(1);
            f(&mut h, c);
        }
    }
    match spec.margin {
        None => h.write_u8(0),
        Some(m) => {
            h.write_u8(1);
            f(&mut h, m);
        }
    }
    // Only a box adds to the key, so the caches of grids without one keep their names.
    if let Some(corners) = spec.bounds {
        h.write_u8(2);
        for v in corners.iter().flat_map(|c| c.to_array()) {
            f(&mut h, v);
        }
    }
    h.write_u8(match spec.sign {
        SignMethod::PseudoNormals => 0,
        SignMethod::WindingNumber => 1,
    });
    h.finish()
}

/// `<dir>/<stem>.<key as 16 hex digits>.sdf`.
pub fn cache_path(mesh: &Path, key: u64) -> PathBuf {
    let stem = mesh.file_stem().map_or_else(|| "mesh".into(), |s| s.to_string_lossy().into_owned());
    mesh.with_file_name(format!("{stem}.{key:016x}.sdf"))
}

/// The grid in `path` if it exists and holds `key`; `Ok(None)` if there is no such file.
fn read_cache(path: &Path, key: u64) -> Result<Option<SdfGrid>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err("not a hooke SDF file".into());
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let f32_at = |o: usize| f32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    if u32_at(8) != VERSION {
        return Err(format!("version {} where {VERSION} is expected", u32_at(8)));
    }
    if u64::from_le_bytes(bytes[12..20].try_into().unwrap()) != key {
        return Err("its key does not match its name".into());
    }
    if u64::from_le_bytes(bytes[20..28].try_into().unwrap()) != checksum(&bytes[CHECKED..]) {
        return Err("damaged: its bytes do not match its checksum".into());
    }
    let dims = [u32_at(28), u32_at(32), u32_at(36)];
    let origin = Vec3::new(f32_at(40), f32_at(44), f32_at(48));
    let cell = f32_at(52);
    let centre = Vec3::new(f32_at(56), f32_at(60), f32_at(64));
    let n = dims.iter().map(|&d| d as u128).product::<u128>();
    if n > SdfGrid::MAX_SAMPLES as u128 || (bytes.len() - HEADER) as u128 != 4 * n {
        return Err(format!("{} bytes of values for a grid of {dims:?} nodes", bytes.len() - HEADER));
    }
    let values = bytes[HEADER..].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    SdfGrid::from_parts(origin, cell, dims, values, centre).map(Some)
}

/// FNV-1a 64 of `bytes`: the cache's checksum of its grid.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h = fnv::FnvHasher::default();
    h.write(bytes);
    h.finish()
}

/// Writes `grid` to `path` through a temporary file.
fn write_cache(path: &Path, key: u64, grid: &SdfGrid) -> Result<(), String> {
    let mut bytes = Vec::with_capacity(HEADER + 4 * grid.values().len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&key.to_le_bytes());
    bytes.extend_from_slice(&0u64.to_le_bytes());
    for d in grid.dims() {
        bytes.extend_from_slice(&d.to_le_bytes());
    }
    for v in grid.origin().to_array().into_iter().chain([grid.cell()]).chain(grid.centre().to_array()) {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    for v in grid.values() {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let sum = checksum(&bytes[CHECKED..]);
    bytes[CHECKED - 8..CHECKED].copy_from_slice(&sum.to_le_bytes());
    let mut file = AtomicFile::create(path).map_err(|e| e.to_string())?;
    file.write_all(&bytes).map_err(|e| e.to_string())?;
    file.commit().map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TETRA: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";

    fn spec(path: PathBuf) -> MeshColliderSpec {
        MeshColliderSpec {
            path,
            scale: 1.0,
            rotation: Quat::IDENTITY,
            translation: Vec3::ZERO,
            // 1/7 of the longest side: a cell whose reciprocal is not exact in f32.
            resolution: GridResolution::Cells(7),
            margin: None,
            bounds: None,
            sign: SignMethod::PseudoNormals,
        }
    }

    /// A scale that puts the mesh outside 1 µm – 10⁶ km is refused, naming the file, the scale
    /// and the size (1e30 built a grid of 1e28 m cells whose distances read 0 inside the mesh).
    #[test]
    fn a_scale_beyond_a_meshs_range_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tetra.obj");
        std::fs::write(&path, TETRA).unwrap();
        for (scale, size) in [(1e30f32, "1e30 m"), (1e-30, "1e-30 m")] {
            let e = load_mesh_collider(&MeshColliderSpec { scale, ..spec(path.clone()) }).err().unwrap();
            assert!(
                e.contains("tetra.obj (scale = ") && e.contains(&format!("the mesh spans {size}; a mesh collider")),
                "{e}"
            );
        }
        for scale in [1e-5f32, 1e8] {
            assert!(load_mesh_collider(&MeshColliderSpec { scale, ..spec(path.clone()) }).is_ok(), "{scale}");
        }
    }

    /// The surface drawn is the mesh placed as its grid is: scaled, turned, then moved.
    #[test]
    fn the_surface_is_placed_as_the_grid_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tetra.obj");
        std::fs::write(&path, TETRA).unwrap();
        let mut placed = spec(path);
        placed.scale = 2.0;
        placed.rotation = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
        placed.translation = Vec3::new(1.0, 0.0, 0.0);
        let loaded = load_mesh_collider(&placed).unwrap();
        // Vertex 1 (1, 0, 0): scaled to (2, 0, 0), turned to (0, 2, 0), moved to (1, 2, 0).
        assert!((loaded.surface.positions()[1] - Vec3::new(1.0, 2.0, 0.0)).length() < 1e-6);
        // The grid agrees: the surface's vertices lie on its zero level within a cell.
        for &p in loaded.surface.positions() {
            let (phi, _) = loaded.grid.sample(p);
            assert!(phi.abs() <= loaded.grid.cell(), "φ = {phi} at a vertex {p}");
        }
    }

    /// The second load reads the cache and gets the same grid, and the same surface to draw
    /// (read from the mesh, which the cache does not hold); other settings get another file;
    /// a damaged cache is rebuilt with a warning.
    #[test]
    fn the_grid_is_cached_under_its_content_and_settings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tetra.obj");
        std::fs::write(&path, TETRA).unwrap();
        let first = load_mesh_collider(&spec(path.clone())).unwrap();
        assert!(!first.cached && first.cache.as_ref().is_some_and(|c| c.exists()));
        let second = load_mesh_collider(&spec(path.clone())).unwrap();
        assert!(second.cached);
        assert_eq!(first.grid, second.grid);
        assert_eq!(first.surface, second.surface);
        assert_eq!(first.surface.triangles().len(), 4);
        assert_eq!(first.surface.positions()[1], Vec3::X);
        let mut finer = spec(path.clone());
        finer.resolution = GridResolution::Cells(12);
        let third = load_mesh_collider(&finer).unwrap();
        assert!(!third.cached && third.cache != first.cache);
        // Damage the first cache: it is rebuilt, with a warning, to the same grid.
        let cache = first.cache.unwrap();
        let mut bytes = std::fs::read(&cache).unwrap();
        bytes.truncate(bytes.len() - 3);
        std::fs::write(&cache, bytes).unwrap();
        let again = load_mesh_collider(&spec(path.clone())).unwrap();
        assert!(!again.cached && again.warnings.iter().any(|w| w.contains("unusable")));
        assert_eq!(*again.grid, *first.grid);
        // A value changed to another finite distance (the file's length and header intact):
        // refused by the checksum, rebuilt to the same grid. The last value's bytes are
        // 1.5 m, finite and plausible for a grid around a unit tetrahedron.
        let mut bytes = std::fs::read(&cache).unwrap();
        let n = bytes.len();
        bytes[n - 4..].copy_from_slice(&1.5f32.to_le_bytes());
        std::fs::write(&cache, bytes).unwrap();
        let damaged = load_mesh_collider(&spec(path.clone())).unwrap();
        assert!(!damaged.cached && damaged.warnings.iter().any(|w| w.contains("checksum")), "{:?}", damaged.warnings);
        assert_eq!(*damaged.grid, *first.grid);
        // No temporary files are left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
    }

    /// A scene's rotation [0, 0, 0] (a quaternion made from Euler angles, whose zero components
    /// may be −0.0) finds the cache that `hooke sdf` builds with the identity: the key hashes
    /// −0.0 as 0.0. Hashing the raw bits gave the two different names, and `hooke sdf`'s grid
    /// was never read.
    #[test]
    fn a_zero_rotation_finds_the_cache_built_with_the_identity() {
        let mut euler = spec(PathBuf::from("tetra.obj"));
        euler.rotation = Quat::from_euler(glam::EulerRot::XYZ, 0.0, 0.0, 0.0);
        let identity = MeshColliderSpec { rotation: Quat::IDENTITY, ..euler.clone() };
        assert_eq!(cache_key(TETRA.as_bytes(), &euler), cache_key(TETRA.as_bytes(), &identity));
        let mut turned = euler.clone();
        turned.rotation = Quat::from_rotation_y(0.5);
        assert_ne!(cache_key(TETRA.as_bytes(), &turned), cache_key(TETRA.as_bytes(), &identity));
    }

    /// A box of the user's sets the grid's extent: the grid starts at its lower corner, is
    /// cached under another name than the grid without it (whose cache name is unchanged by
    /// the key), and is read back the same; a box that cuts the mesh is warned of, one within
    /// it refused, and one with a margin too refused, naming the file.
    #[test]
    fn bounds_set_the_grid_and_its_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tetra.obj");
        std::fs::write(&path, TETRA).unwrap();
        let whole = load_mesh_collider(&spec(path.clone())).unwrap();
        let mut boxed = spec(path.clone());
        boxed.bounds = Some([Vec3::new(-0.1, -0.1, -0.1), Vec3::new(1.2, 1.1, 1.1)]);
        let first = load_mesh_collider(&boxed).unwrap();
        assert_eq!(first.grid.origin(), Vec3::splat(-0.1));
        assert!((first.grid.cell() - 1.3 / 7.0).abs() < 1e-6, "{}", first.grid.cell());
        assert_ne!(first.cache, whole.cache);
        let again = load_mesh_collider(&boxed).unwrap();
        assert!(again.cached && again.grid == first.grid);
        assert!(first.warnings.is_empty() && again.warnings.is_empty(), "{:?}", first.warnings);
        // A box that cuts the tetrahedron (its far corner at (1, 0, 0) outside) is warned of,
        // built or read back; one within it is refused.
        let mut cutting = spec(path.clone());
        cutting.bounds = Some([Vec3::splat(-0.1), Vec3::new(0.5, 0.6, 0.6)]);
        for _ in 0..2 {
            let cut = load_mesh_collider(&cutting).unwrap();
            assert!(cut.warnings.iter().any(|w| w.contains("cut through the mesh")), "{:?}", cut.warnings);
        }
        let mut inside = spec(path.clone());
        inside.bounds = Some([Vec3::splat(0.05), Vec3::splat(0.2)]);
        let e = load_mesh_collider(&inside).unwrap_err();
        assert!(e.contains("tetra.obj") && e.contains("inside the mesh"), "{e}");
        boxed.margin = Some(0.1);
        let e = load_mesh_collider(&boxed).unwrap_err();
        assert!(e.contains("tetra.obj") && e.contains("bounds and margin"), "{e}");
    }

    /// Missing, open and zero-volume meshes are refused with the file's name.
    #[test]
    fn bad_meshes_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.obj");
        let e = load_mesh_collider(&spec(missing)).unwrap_err();
        assert!(e.contains("missing.obj") && e.contains("cannot read"), "{e}");
        let open = dir.path().join("open.obj");
        std::fs::write(&open, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\n").unwrap();
        let e = load_mesh_collider(&spec(open.clone())).unwrap_err();
        assert!(e.contains("open.obj") && e.contains("not closed") && e.contains("3 edges have one face"), "{e}");
        // With the winding number an open mesh is accepted (a tetrahedron missing a face still
        // holds some nodes with w > ½)...
        let mut gwn = spec(open);
        gwn.sign = SignMethod::WindingNumber;
        if let Err(e) = load_mesh_collider(&gwn) {
            panic!("{e}")
        }
        // ... but not a lone triangle, which encloses nothing.
        let sheet = dir.path().join("sheet.obj");
        std::fs::write(&sheet, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
        let mut gwn = spec(sheet);
        gwn.sign = SignMethod::WindingNumber;
        let e = load_mesh_collider(&gwn).unwrap_err();
        assert!(e.contains("sheet.obj") && e.contains("encloses nothing"), "{e}");
        // A closed tetrahedron flattened into a plane: closed, but no volume.
        let flat = dir.path().join("flat.obj");
        std::fs::write(&flat, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0.3 0.3 0\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n").unwrap();
        let e = load_mesh_collider(&spec(flat)).unwrap_err();
        assert!(e.contains("flat.obj") && e.contains("no volume"), "{e}");
        let bad = dir.path().join("bad.obj");
        std::fs::write(&bad, "v 0 0 0\nv 1 0 0\nf 1 2 7\n").unwrap();
        let e = load_mesh_collider(&spec(bad)).unwrap_err();
        assert!(e.contains("bad.obj"), "{e}");
    }
}
