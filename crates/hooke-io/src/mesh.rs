//! Triangle mesh import: a small OBJ reader of our own that keeps the file's vertex order (see
//! [`parse_obj`] for why not `tobj`), polygon triangulation by ear clipping, and vertex welding
//! with a map from the file's vertices to the particles ([`weld`], [`VertexMap`]).

use glam::{DVec2, DVec3, Vec2, Vec3};
use std::collections::HashMap;
use std::path::Path;

/// Largest mesh file accepted (bytes): 1 GiB.
pub const MAX_MESH_FILE: u64 = 1 << 30;

/// Default weld tolerance relative to the mesh's size: vertices closer than
/// `DEFAULT_WELD_RELATIVE` × the diagonal of the mesh's bounding box are welded.
///
/// Why 10⁻⁶: copies of one position that an exporter computed twice (per face corner, through
/// a transform) differ by f32 rounding — a few ulps, 10⁻⁷ of the coordinates' magnitude — so
/// the tolerance must be well above that; and it must stay far below any real feature of a
/// cloth mesh. A triangle whose edges are all under 10⁻⁵ of the diagonal has an area under
/// 10⁻¹⁰ × diagonal², which the engine already refuses as degenerate, and a mesh would need a
/// million edges across its diagonal before distinct vertices came within 10⁻⁶ of it. For a
/// 1 m cloth that is 1 µm.
pub const DEFAULT_WELD_RELATIVE: f32 = 1e-6;

/// A triangle mesh read from OBJ, in the file's vertex order (nothing welded yet).
#[derive(Clone, Debug, PartialEq)]
pub struct ObjMesh {
    /// Vertex positions (file units), in the file's order.
    pub positions: Vec<Vec3>,
    /// Triangles as file vertex indices (polygons triangulated), counter-clockwise as the file
    /// winds them.
    pub triangles: Vec<[u32; 3]>,
    /// One texture coordinate (u, v) per vertex — the first `vt` a face gives it — if the
    /// file has `vt` lines and every vertex gets one; `None` otherwise.
    pub uvs: Option<Vec<Vec2>>,
    /// The line (1-based) of each vertex's `v` statement, for messages.
    pub vertex_lines: Vec<usize>,
    /// The line (1-based) of the `f` statement each triangle comes from, for messages.
    pub triangle_lines: Vec<usize>,
}

/// The largest vertex coordinate a mesh may have (file units, or the arrays' units): the
/// model refuses positions beyond 10⁹ m, and a mesh's own arithmetic (its size, the weld
/// tolerance made from it, a collider's distance grid) squares coordinates, which overflows
/// f32 from about 10¹⁹.
pub const MAX_COORDINATE: f32 = 1e9;

impl ObjMesh {
    /// A mesh from arrays (as the Python bindings give them): `positions` in file units,
    /// `triangles` as indices into them, optionally one texture coordinate per vertex.
    ///
    /// # Errors
    /// A message naming the first vertex that is not finite, the first triangle with an index
    /// out of range or a repeated vertex, UVs of the wrong count, or no triangles at all.
    pub fn from_arrays(
        positions: Vec<Vec3>,
        triangles: Vec<[u32; 3]>,
        uvs: Option<Vec<Vec2>>,
    ) -> Result<ObjMesh, String> {
        if let Some(v) = positions.iter().position(|p| !p.is_finite()) {
            return Err(format!("vertex {v} is not finite: {:?}", positions[v]));
        }
        if let Some(v) = positions.iter().position(|p| p.abs().max_element() > MAX_COORDINATE) {
            return Err(format!(
                "vertex {v} {:?} is beyond {MAX_COORDINATE:e}: too far for f32 arithmetic",
                positions[v]
            ));
        }
        let n = positions.len();
        for (t, tri) in triangles.iter().enumerate() {
            if let Some(&i) = tri.iter().find(|&&i| i as usize >= n) {
                return Err(format!("triangle {t} {tri:?}: vertex {i} does not exist (there are {n})"));
            }
            if tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2] {
                return Err(format!("triangle {t} {tri:?} repeats a vertex"));
            }
        }
        if triangles.is_empty() {
            return Err("no triangles".into());
        }
        if let Some(uvs) = &uvs {
            if uvs.len() != n {
                return Err(format!("{} texture coordinates for {n} vertices", uvs.len()));
            }
            if let Some(v) = uvs.iter().position(|p| !p.is_finite()) {
                return Err(format!("texture coordinate {v} is not finite: {:?}", uvs[v]));
            }
        }
        Ok(ObjMesh { positions, triangles, uvs, vertex_lines: Vec::new(), triangle_lines: Vec::new() })
    }
}

/// Which particle each vertex of a mesh file became, with the file's own triangles and UVs:
/// what a cache needs to write a welded mesh in the file's vertex order, and what turns a pin
/// given by file vertex index into a particle.
///
/// Made by [`weld`]; one per mesh cloth in [`Scene::vertex_maps`](crate::scene::Scene).
#[derive(Clone, Debug, PartialEq)]
pub struct VertexMap {
    /// For each file vertex (file order), the index of its particle, local to the body
    /// (0 = the body's first particle). Welded vertices share a particle.
    pub particle: Vec<u32>,
    /// The file's triangles (after triangulation) as file vertex indices.
    pub triangles: Vec<[u32; 3]>,
    /// One texture coordinate per file vertex, or `None` (see [`ObjMesh::uvs`]).
    pub uvs: Option<Vec<Vec2>>,
    /// The weld tolerance used (file units, before `scale`), or `None` if welding was off.
    pub weld_tolerance: Option<f32>,
}

impl VertexMap {
    /// Number of file vertices.
    pub fn vertex_count(&self) -> usize {
        self.particle.len()
    }

    /// Number of particles (distinct values of [`VertexMap::particle`]).
    pub fn particle_count(&self) -> usize {
        self.particle.iter().max().map_or(0, |&m| m as usize + 1)
    }

    /// Number of file vertices welded onto another one: vertices − particles.
    pub fn welded(&self) -> usize {
        self.vertex_count() - self.particle_count()
    }
}

/// A mesh after [`weld`]: one vertex per particle, and the map back to the file.
#[derive(Clone, Debug, PartialEq)]
pub struct WeldedMesh {
    /// One position per particle (file units): that of the particle's first file vertex.
    pub positions: Vec<Vec3>,
    /// Triangles as particle indices, in the file's order.
    pub triangles: Vec<[u32; 3]>,
    /// One UV per particle (that of its first file vertex), if the file gives every vertex one.
    pub uvs: Option<Vec<Vec2>>,
    /// File vertices → particles, the file's triangles and UVs.
    pub map: VertexMap,
}

/// The default weld tolerance of `positions` (file units): [`DEFAULT_WELD_RELATIVE`] × the
/// diagonal of their bounding box (0 for a single point).
pub fn default_weld_tolerance(positions: &[Vec3]) -> f32 {
    let (lo, hi) = positions.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    if positions.is_empty() { 0.0 } else { DEFAULT_WELD_RELATIVE * (hi - lo).length() }
}

/// Welds coincident vertices of `mesh`: every vertex within `tolerance` (file units, ≥ 0; 0
/// welds exactly equal positions only) of an earlier vertex that starts a particle joins that
/// particle (the earliest such one); `None` welds nothing. Particles are numbered in the order
/// of their first file vertex, so a mesh with nothing to weld keeps the file's numbering.
///
/// Coincident vertices that are not shared come from UV seams, flat shading (one vertex per
/// face corner) and exporters that split positions; left apart, the cloth falls to pieces
/// along them. The search uses a hash grid of cells of the tolerance's size: each vertex is
/// compared with the particles in its own and the 26 neighbouring cells, of which there can be
/// only a few (particles are more than the tolerance apart), so welding is O(n).
///
/// # Errors
/// A message naming the line if a vertex is used by no face (it would have no mass), a
/// triangle collapses or has no area (vertices welded together, or collinear), or two faces
/// are the same triangle after welding (a double-sided mesh: set `weld = false` or remove one
/// side); a negative or non-finite tolerance.
pub fn weld(mesh: &ObjMesh, tolerance: Option<f32>) -> Result<WeldedMesh, String> {
    let n = mesh.positions.len();
    // A file's faces and vertices are named by line; a mesh made from arrays by index.
    let vertex_line = |v: usize| mesh.vertex_lines.get(v).map_or(String::new(), |l| format!(" (line {l})"));
    let face = |t: usize| mesh.triangle_lines.get(t).map_or(format!("triangle {t}"), |l| format!("face on line {l}"));
    let particle: Vec<u32> = match tolerance {
        None => (0..n as u32).collect(),
        Some(tol) => {
            if !(tol.is_finite() && tol >= 0.0) {
                return Err(format!("weld tolerance must be a finite length ≥ 0, got {tol}"));
            }
            weld_classes(&mesh.positions, tol)
        }
    };
    let count = particle.iter().max().map_or(0, |&m| m as usize + 1);
    // The first file vertex of each particle.
    let mut first = vec![u32::MAX; count];
    for (v, &p) in particle.iter().enumerate() {
        if first[p as usize] == u32::MAX {
            first[p as usize] = v as u32;
        }
    }
    let positions: Vec<Vec3> = first.iter().map(|&v| mesh.positions[v as usize]).collect();
    let uvs = mesh.uvs.as_ref().map(|uv| first.iter().map(|&v| uv[v as usize]).collect());

    let (lo, hi) = positions.iter().fold((DVec3::MAX, DVec3::MIN), |(lo, hi), p| {
        let p = p.as_dvec3();
        (lo.min(p), hi.max(p))
    });
    let diag = (hi - lo).length().max(f64::MIN_POSITIVE);
    let mut used = vec![false; count];
    let mut seen: HashMap<[u32; 3], usize> = HashMap::with_capacity(mesh.triangles.len());
    let mut triangles = Vec::with_capacity(mesh.triangles.len());
    for (t, tri) in mesh.triangles.iter().enumerate() {
        let w = tri.map(|v| particle[v as usize]);
        let line = face(t);
        for k in 0..3 {
            let (a, b) = (tri[k] as usize, tri[(k + 1) % 3] as usize);
            if w[k] == w[(k + 1) % 3] {
                return Err(if a == b {
                    format!("{line}: uses vertex {a} twice")
                } else {
                    format!(
                        "{line}: collapses, its vertices {a}{} and {b}{} are within the weld tolerance {} of each \
                         other; set a smaller `weld_tolerance` or `weld = false`",
                        vertex_line(a),
                        vertex_line(b),
                        tolerance.unwrap_or(0.0)
                    )
                });
            }
        }
        let [a, b, c] = w.map(|p| positions[p as usize].as_dvec3());
        let area = 0.5 * (b - a).cross(c - a).length();
        // The engine's own criterion for a degenerate triangle, named by line here.
        if area.is_nan() || area <= 1e-10 * diag * diag {
            return Err(format!("{line}: a triangle {tri:?} of it has no area (collinear vertices)"));
        }
        let mut key = w;
        key.sort_unstable();
        if let Some(&other) = seen.get(&key) {
            return Err(format!(
                "{line}: is the same triangle as {}{}",
                face(other),
                if tolerance.is_some() {
                    " after welding (a double-sided mesh? set `weld = false` or remove one side)"
                } else {
                    ""
                }
            ));
        }
        seen.insert(key, t);
        w.iter().for_each(|&p| used[p as usize] = true);
        triangles.push(w);
    }
    if let Some(p) = used.iter().position(|u| !u) {
        let v = first[p] as usize;
        return Err(format!("vertex {v}{} is used by no face (it would have no mass)", vertex_line(v)));
    }
    let map =
        VertexMap { particle, triangles: mesh.triangles.clone(), uvs: mesh.uvs.clone(), weld_tolerance: tolerance };
    Ok(WeldedMesh { positions, triangles, uvs, map })
}

/// How many of `positions` lie within `tolerance` (file units, ≥ 0) of an earlier vertex that
/// [`weld`] would join them to: the count welding would remove.
pub fn coincident_vertices(positions: &[Vec3], tolerance: f32) -> usize {
    let p = weld_classes(positions, tolerance);
    p.len() - p.iter().max().map_or(0, |&m| m as usize + 1)
}

/// Joins vertices within `tolerance` of one another (as [`weld`] does) without its checks:
/// for collider meshes, whose unused vertices and collapsed triangles are harmless (they are
/// dropped later). Returns the joined positions (each class's first vertex) and the
/// triangles renumbered.
pub fn weld_positions(positions: &[Vec3], triangles: &[[u32; 3]], tolerance: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let class = weld_classes(positions, tolerance);
    let count = class.iter().max().map_or(0, |&m| m as usize + 1);
    let mut joined = vec![Vec3::ZERO; count];
    let mut seen = vec![false; count];
    for (v, &c) in class.iter().enumerate() {
        if !seen[c as usize] {
            seen[c as usize] = true;
            joined[c as usize] = positions[v];
        }
    }
    let triangles = triangles.iter().map(|t| t.map(|v| class[v as usize])).collect();
    (joined, triangles)
}

/// The particle of each vertex: greedy clustering on a hash grid (see [`weld`]).
fn weld_classes(positions: &[Vec3], tol: f32) -> Vec<u32> {
    let mut particle = Vec::with_capacity(positions.len());
    let mut reps: Vec<Vec3> = Vec::new();
    if tol == 0.0 {
        // Exactly equal positions (−0 and +0 alike).
        let mut exact: HashMap<[u32; 3], u32> = HashMap::with_capacity(positions.len());
        for p in positions {
            let key = (*p + Vec3::ZERO).to_array().map(f32::to_bits);
            let next = exact.len() as u32;
            particle.push(*exact.entry(key).or_insert(next));
        }
        return particle;
    }
    let h = tol as f64;
    // `as i64` saturates: absurd ratios of coordinates to tolerance only share cells.
    let cell = |p: Vec3| p.as_dvec3().to_array().map(|x| (x / h).floor() as i64);
    let mut grid: HashMap<[i64; 3], Vec<u32>> = HashMap::with_capacity(positions.len());
    for p in positions {
        let c = cell(*p);
        let mut best: Option<u32> = None;
        for dx in -1..=1i64 {
            for dy in -1..=1i64 {
                for dz in -1..=1i64 {
                    let key = [c[0].saturating_add(dx), c[1].saturating_add(dy), c[2].saturating_add(dz)];
                    for &r in grid.get(&key).into_iter().flatten() {
                        let d = (reps[r as usize].as_dvec3() - p.as_dvec3()).length();
                        if d <= h && best.is_none_or(|b| r < b) {
                            best = Some(r);
                        }
                    }
                }
            }
        }
        particle.push(match best {
            Some(r) => r,
            None => {
                let r = reps.len() as u32;
                reps.push(*p);
                grid.entry(c).or_default().push(r);
                r
            }
        });
    }
    particle
}

/// Loads every object of an OBJ file as one triangle mesh (faces triangulated, objects
/// merged): vertex positions (file units), triangles as vertex indices, and UVs. Vertices keep
/// the file's order and are shared by position index alone — texture and normal indices
/// (`vt`, `vn`) do not split them. Coincident vertices with different indices stay apart here:
/// [`weld`] joins them. Across a UV seam a vertex keeps the first UV a face gives it.
///
/// # Errors
/// A message naming the file if it is another mesh format by its extension (glTF, FBX, PLY,
/// STL, USD, Alembic), is not a regular file, is larger than [`MAX_MESH_FILE`], cannot be read
/// or parsed, or has no triangles.
pub fn load_obj(path: &Path) -> Result<ObjMesh, String> {
    if let Some(ext) = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase)
        && OTHER_FORMATS.contains(&ext.as_str())
    {
        return Err(format!("{}: a .{ext} file; only OBJ meshes are read (export it as OBJ)", path.display()));
    }
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

/// Parses OBJ text: `v x y z`, `vt u [v [w]]` and `f` lines (`a/b/c` tokens use the position
/// index `a` and the texture index `b`, if present; negative indices count back from the last
/// vertex or texture coordinate). Polygons are triangulated in their own plane (see
/// [`triangulate`]): a convex one as a fan from its first vertex, a concave one by ear
/// clipping; a self-intersecting or degenerate one is refused. Other statements (`vn`, `o`,
/// `g`, `s`, `usemtl`, …) are ignored, and a leading UTF-8 byte-order mark is skipped. tobj is
/// not used here because it renumbers vertices by first use, which would break pin indices and
/// caches.
///
/// # Errors
/// A message naming the line for a malformed `v`, `vt` or `f`, an index out of range, a
/// polygon that cannot be triangulated, or no face.
pub fn parse_obj(text: &str) -> Result<ObjMesh, String> {
    // Editors on Windows write a byte-order mark; `lines()` would keep it glued to the first
    // statement, which would then not read as `v` and be skipped.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut positions = Vec::new();
    let mut vertex_lines = Vec::new();
    let mut triangles = Vec::new();
    let mut triangle_lines = Vec::new();
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
                if c.iter().any(|x| x.abs() > MAX_COORDINATE) {
                    return Err(format!(
                        "line {}: vertex {c:?} is beyond {MAX_COORDINATE:e} (file units): too far for f32 arithmetic",
                        ln + 1
                    ));
                }
                positions.push(Vec3::new(c[0], c[1], c[2]));
                vertex_lines.push(ln + 1);
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
                let before = triangles.len();
                if idx.len() == 3 {
                    triangles.push([idx[0], idx[1], idx[2]]);
                } else {
                    triangles.extend(triangulate(&positions, &idx).map_err(|e| format!("line {}: {e}", ln + 1))?);
                }
                triangle_lines.resize(triangle_lines.len() + triangles.len() - before, ln + 1);
            }
            _ => {}
        }
    }
    if triangles.is_empty() {
        return Err("no triangles".into());
    }
    uvs.resize(positions.len(), None);
    let uvs = if texcoords.is_empty() { None } else { uvs.into_iter().collect::<Option<Vec<Vec2>>>() };
    Ok(ObjMesh { positions, triangles, uvs, vertex_lines, triangle_lines })
}

/// Edges shared by more than two of `triangles` (a non-manifold mesh: a "book" of pages on
/// one spine), counted once each.
pub fn non_manifold_edges(triangles: &[[u32; 3]]) -> usize {
    let mut uses: HashMap<(u32, u32), u32> = HashMap::with_capacity(triangles.len() * 3 / 2);
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *uses.entry((a.min(b), a.max(b))).or_default() += 1;
        }
    }
    uses.values().filter(|&&n| n > 2).count()
}

/// The most corners a polygon may have for [`triangulate`].
pub const MAX_FACE_CORNERS: usize = 4096;

/// Mesh formats that [`load_obj`] names instead of reading them as OBJ text (extensions, lower
/// case).
const OTHER_FORMATS: [&str; 9] = ["gltf", "glb", "fbx", "ply", "stl", "usd", "usda", "usdc", "abc"];

/// Triangulates the polygon `face` (indices into `positions`, in winding order, at least 3) in
/// its own plane, keeping its winding: n − 2 triangles of total area the polygon's.
///
/// The plane is the one of Newell's normal (the polygon's vector area, exact for planar
/// polygons and a least-squares plane for slightly warped ones); the vertices are projected
/// onto it and the polygon checked to be simple — no two edges cross or touch, no vertex
/// repeated, no edge folding back on the one before. A convex polygon becomes a fan from its
/// first vertex (what every importer does, so convex quads split as before); a concave one is
/// cut by ear clipping (Meisters 1975: a simple polygon always has an ear, a convex corner
/// whose triangle holds no other vertex; cutting ears n − 3 times leaves the last triangle).
///
/// # Errors
/// A message if the polygon repeats a vertex, has no area, crosses or touches itself, or has
/// a spike (an edge folding back): such a face has no triangulation that covers it once.
pub fn triangulate(positions: &[Vec3], face: &[u32]) -> Result<Vec<[u32; 3]>, String> {
    let n = face.len();
    if n < 3 {
        return Err(format!("a face needs at least 3 vertices, got {n}"));
    }
    if n > MAX_FACE_CORNERS {
        // The simplicity check compares every edge with every other: a face of 60 000 corners
        // took 16 s.
        return Err(format!(
            "a face of {n} corners: at most {MAX_FACE_CORNERS} are triangulated here (triangulate it in the modeller)"
        ));
    }
    let mut seen = HashMap::with_capacity(n);
    for (k, &v) in face.iter().enumerate() {
        if let Some(j) = seen.insert(v, k) {
            return Err(format!("the polygon uses vertex {v} twice (corners {j} and {k})"));
        }
    }
    let p: Vec<DVec3> = face.iter().map(|&v| positions[v as usize].as_dvec3()).collect();
    let (lo, hi) = p.iter().fold((DVec3::MAX, DVec3::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    let size = (hi - lo).length();
    // Newell's normal: twice the vector area.
    let normal: DVec3 = (0..n).map(|i| (p[i] - p[0]).cross(p[(i + 1) % n] - p[0])).sum();
    // Orientations below this (twice a triangle's area) count as zero: 10⁻¹² of the polygon's
    // size squared, far above f64 rounding of f32 inputs and far below any real triangle.
    let eps = 1e-12 * size * size;
    let area2 = normal.length();
    if area2.is_nan() || area2 <= eps {
        return Err("the polygon has no area (its vertices are collinear or it folds onto itself)".into());
    }
    let w = normal.normalize();
    let u = w.any_orthonormal_vector();
    let v = w.cross(u); // (u, v, w) right-handed: the polygon winds counter-clockwise in (u, v)
    let q: Vec<DVec2> = p.iter().map(|x| DVec2::new((*x - p[0]).dot(u), (*x - p[0]).dot(v))).collect();
    let orient = |a: DVec2, b: DVec2, c: DVec2| (b - a).perp_dot(c - a);

    // Corners: convex (left turn), straight, reflex; spikes and zero-length edges are refused.
    let mut convex = true;
    let mut turning = 0.0f64;
    for i in 0..n {
        let (a, b, c) = (q[(i + n - 1) % n], q[i], q[(i + 1) % n]);
        let (e0, e1) = (b - a, c - b);
        if e1.length() <= 1e-9 * size {
            return Err(format!("two consecutive vertices of the polygon coincide (corners {i} and {})", (i + 1) % n));
        }
        let cross = e0.perp_dot(e1);
        if cross.abs() <= eps && e0.dot(e1) < 0.0 {
            return Err(format!("the polygon folds back on itself at corner {i} (a spike)"));
        }
        convex &= cross > eps;
        turning += cross.atan2(e0.dot(e1));
    }
    if convex && (turning - std::f64::consts::TAU).abs() < 1e-6 {
        // All left turns that add up to one full turn: a convex, simple polygon.
        return Ok((1..n - 1).map(|k| [face[0], face[k], face[k + 1]]).collect());
    }
    // Simple: no two edges cross or touch, except neighbours at their shared corner.
    let sign = |x: f64| {
        if x > eps {
            1
        } else if x < -eps {
            -1
        } else {
            0
        }
    };
    let on = |a: DVec2, b: DVec2, x: DVec2| {
        x.x >= a.x.min(b.x) && x.x <= a.x.max(b.x) && x.y >= a.y.min(b.y) && x.y <= a.y.max(b.y)
    };
    for i in 0..n {
        for j in i + 2..n {
            if i == 0 && j == n - 1 {
                continue; // neighbours across the closing edge
            }
            let (a, b, c, d) = (q[i], q[(i + 1) % n], q[j], q[(j + 1) % n]);
            let (o1, o2, o3, o4) =
                (sign(orient(a, b, c)), sign(orient(a, b, d)), sign(orient(c, d, a)), sign(orient(c, d, b)));
            let cross = o1 * o2 < 0 && o3 * o4 < 0;
            let touch = (o1 == 0 && on(a, b, c))
                || (o2 == 0 && on(a, b, d))
                || (o3 == 0 && on(c, d, a))
                || (o4 == 0 && on(c, d, b));
            if cross || touch {
                return Err(format!(
                    "the polygon is self-intersecting (its edges {i}–{} and {j}–{} {})",
                    (i + 1) % n,
                    (j + 1) % n,
                    if cross { "cross" } else { "touch" }
                ));
            }
        }
    }
    // Ear clipping over the ring of remaining corners.
    let inside = |x: DVec2, a: DVec2, b: DVec2, c: DVec2| {
        orient(a, b, x) >= -eps && orient(b, c, x) >= -eps && orient(c, a, x) >= -eps
    };
    let mut ring: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(n - 2);
    let mut start = 0;
    while ring.len() > 3 {
        let m = ring.len();
        let ear = (0..m).map(|s| (start + s) % m).find(|&k| {
            let (ia, ib, ic) = (ring[(k + m - 1) % m], ring[k], ring[(k + 1) % m]);
            let (a, b, c) = (q[ia], q[ib], q[ic]);
            orient(a, b, c) > eps && !ring.iter().any(|&j| j != ia && j != ib && j != ic && inside(q[j], a, b, c))
        });
        let Some(k) = ear else {
            return Err("the polygon cannot be triangulated (no ear found: it is degenerate)".into());
        };
        out.push([face[ring[(k + m - 1) % m]], face[ring[k]], face[ring[(k + 1) % m]]]);
        ring.remove(k);
        start = if k == 0 { ring.len() - 1 } else { k - 1 };
    }
    if orient(q[ring[0]], q[ring[1]], q[ring[2]]) <= eps {
        return Err("the polygon cannot be triangulated (its last triangle has no area)".into());
    }
    out.push([face[ring[0]], face[ring[1]], face[ring[2]]]);
    Ok(out)
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

    /// Signed area (z component of the vector area) of triangles over `p`.
    fn signed_areas(p: &[Vec3], tris: &[[u32; 3]]) -> Vec<f32> {
        tris.iter()
            .map(|t| {
                let [a, b, c] = t.map(|v| p[v as usize]);
                0.5 * (b - a).cross(c - a).z
            })
            .collect()
    }

    /// A convex polygon keeps the fan from its first vertex; concave ones are ear-clipped into
    /// n − 2 triangles, all wound like the polygon, of total area the polygon's — also when it
    /// is not in the xy plane and has straight corners.
    #[test]
    fn polygons_are_triangulated_in_their_plane() {
        let quad = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
        assert_eq!(triangulate(&quad, &[0, 1, 2, 3]).unwrap(), vec![[0, 1, 2], [0, 2, 3]]);
        // A comb: 4 teeth, 12 corners, many reflex; area 3·1 + 4·(0.5·1) = 5.
        let comb: Vec<Vec3> = [
            (0.0, 0.0),
            (3.5, 0.0),
            (3.5, 2.0),
            (3.0, 2.0),
            (3.0, 1.0),
            (2.5, 1.0),
            (2.0, 2.0),
            (1.5, 1.0),
            (1.0, 1.0),
            (0.5, 2.0),
            (0.5, 1.0),
            (0.0, 1.0),
        ]
        .iter()
        .map(|&(x, y)| Vec3::new(x, y, 0.0))
        .collect();
        let face: Vec<u32> = (0..comb.len() as u32).collect();
        let shoelace: f32 = (0..comb.len()).map(|i| 0.5 * comb[i].cross(comb[(i + 1) % comb.len()]).z).sum();
        let tris = triangulate(&comb, &face).unwrap();
        assert_eq!(tris.len(), comb.len() - 2);
        let areas = signed_areas(&comb, &tris);
        assert!(areas.iter().all(|&a| a > 1e-6), "{areas:?}");
        assert!((areas.iter().sum::<f32>() - shoelace).abs() < 1e-5, "{areas:?} vs {shoelace}");
        // The same comb turned into another plane and wound the other way round.
        let rot = glam::Quat::from_euler(glam::EulerRot::XYZ, 0.7, -1.1, 0.3);
        let turned: Vec<Vec3> = comb.iter().map(|&p| rot * p + Vec3::new(5.0, -2.0, 1.0)).collect();
        let back: Vec<u32> = face.iter().rev().copied().collect();
        let tris = triangulate(&turned, &back).unwrap();
        let normal = rot * Vec3::NEG_Z;
        let total: f32 = tris
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|v| turned[v as usize]);
                let n = 0.5 * (b - a).cross(c - a);
                assert!(n.dot(normal) > 1e-6, "inverted or flat triangle {t:?}");
                n.length()
            })
            .sum();
        assert!((total - shoelace).abs() < 1e-4, "{total}");
        // A square with a straight corner (a vertex in the middle of an edge).
        let p = [Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0), Vec3::new(2.0, 2.0, 0.0), Vec3::new(0.0, 2.0, 0.0)];
        let tris = triangulate(&p, &[0, 1, 2, 3, 4]).unwrap();
        let areas = signed_areas(&p, &tris);
        assert!(areas.iter().all(|&a| a > 1e-6) && (areas.iter().sum::<f32>() - 4.0).abs() < 1e-5, "{areas:?}");
    }

    #[test]
    fn bad_polygons_are_refused() {
        let p = [Vec3::ZERO, Vec3::new(2.0, 2.0, 0.0), Vec3::X, Vec3::Y, Vec3::new(2.0, 0.0, 0.0)];
        // A bow tie with lobes of different size (a symmetric one has no area at all).
        let e = triangulate(&p, &[0, 1, 4, 3]).unwrap_err();
        assert!(e.contains("self-intersecting") && e.contains("cross"), "{e}");
        let e = triangulate(&p, &[0, 2, 4, 2]).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        // (0,0) → (2,0) → back to (1,0) → (0,1): a spike.
        let e = triangulate(&p, &[0, 4, 2, 3]).unwrap_err();
        assert!(e.contains("folds back"), "{e}");
        // A vertex touching a non-adjacent edge.
        let q = [Vec3::ZERO, Vec3::new(2.0, 0.0, 0.0), Vec3::new(2.0, 2.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::Y];
        let e = triangulate(&q, &[0, 1, 2, 3, 4]).unwrap_err();
        assert!(e.contains("touch"), "{e}");
        let line = [Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0), Vec3::new(3.0, 0.0, 0.0)];
        let e = triangulate(&line, &[0, 1, 2, 3]).unwrap_err();
        assert!(e.contains("no area"), "{e}");
        let e = parse_obj("v 0 0 0\nv 2 2 0\nv 2 0 0\nv 0 1 0\nf 1 2 3 4\n").unwrap_err();
        assert!(e.contains("line 5") && e.contains("self-intersecting"), "{e}");
        // A convex polygon of one corner more than the limit is refused by its size (at the
        // limit it is triangulated: the limit is not an accident of the circle).
        let circle = |n: usize| -> Vec<Vec3> {
            (0..n)
                .map(|k| k as f32 * std::f32::consts::TAU / n as f32)
                .map(|a| Vec3::new(a.cos(), a.sin(), 0.0))
                .collect()
        };
        let at = MAX_FACE_CORNERS;
        assert_eq!(triangulate(&circle(at), &(0..at as u32).collect::<Vec<_>>()).unwrap().len(), at - 2);
        let e = triangulate(&circle(at + 1), &(0..=at as u32).collect::<Vec<_>>()).unwrap_err();
        assert!(e.contains("a face of 4097 corners"), "{e}");
    }

    /// A glTF (or another mesh format) named as a mesh is refused by its format, not read as
    /// OBJ text with "no triangles".
    #[test]
    fn other_mesh_formats_are_named() {
        let dir = std::env::temp_dir().join(format!("hooke-mesh-format-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.GLTF");
        std::fs::write(&path, "{\"asset\": {\"version\": \"2.0\"}}").unwrap();
        let e = load_obj(&path).unwrap_err();
        assert!(e.contains("a.GLTF") && e.contains("only OBJ meshes are read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Vertices within the tolerance of an earlier particle join it, in file order; exact
    /// welding joins bit-equal positions (and ±0); what welds is counted.
    #[test]
    fn welding_joins_coincident_vertices() {
        let p = vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0 + 1e-7, 0.0, 0.0), Vec3::Y, Vec3::new(-0.0, 1.0, 0.0)];
        assert_eq!(weld_classes(&p, 1e-6), vec![0, 1, 1, 2, 2]);
        assert_eq!(weld_classes(&p, 0.0), vec![0, 1, 2, 3, 3]);
        assert_eq!(coincident_vertices(&p, 1e-6), 2);
        assert_eq!(coincident_vertices(&p, 10.0), 4);
        let tol = default_weld_tolerance(&p);
        assert!((tol - 1e-6 * 2f32.sqrt()).abs() < 1e-9, "{tol}");
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
