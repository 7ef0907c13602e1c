//! Cache writers: the particle positions of every cloth and rope, frame by frame, in files
//! that DCC tools (Blender, Houdini, Maya, usdview, …) read.
//!
//! Positions are world positions in metres, Y up, exactly as the solver holds them (no axis
//! conversion: importers that assume Z up must be told the file is Y up).
//!
//! A body's vertices are its particles in order, except for a cloth made from a mesh file
//! whose [`VertexMap`] is given in [`CacheSpec::vertex_maps`]: that one is written in the
//! file's vertex order with the file's triangles, a welded particle repeated at each file
//! vertex that became it, so the cache lines up with the original mesh vertex for vertex (a
//! DCC tool can transfer it onto the file's mesh, and the UV seams keep their two sets of UVs).
//! Texture coordinates — a mesh's, or a grid's u = column/(columns − 1), v = row/(rows − 1) —
//! go into every format, written once.
//!
//! | [`Format`] | Files written | Reference |
//! |---|---|---|
//! | [`Format::Usda`] (default) | `<dir>/<scene_name>.usda` | Pixar USD text format |
//! | [`Format::Obj`] | `<dir>/<scene_name>_<frame:04>.obj`, one per frame | Wavefront OBJ |
//! | [`Format::Pc2`] | `<dir>/<body>.pc2` and its rest mesh `<dir>/<body>.obj` per body | Point Cache 2 |
//!
//! * **USD text (`.usda`)** — the human-readable layer format of Pixar's Universal Scene
//!   Description (<https://openusd.org/release/usdfaq.html>; `.usdc` is the binary "crate"
//!   format, not written here). One layer with stage metadata `upAxis = "Y"`,
//!   `metersPerUnit = 1`, `startTimeCode = 0`, `endTimeCode` = last frame and
//!   `timeCodesPerSecond = framesPerSecond = fps`; a `def Xform "World"` (the default prim)
//!   holds one `UsdGeomMesh` per cloth (triangles, topology and UVs written once — UVs as the
//!   primvar `texCoord2f[] primvars:st` with `interpolation = "vertex"` —, `points` and
//!   `extent` as time samples, one per frame, time code = frame number) and one
//!   `UsdGeomBasisCurves` (`type = "linear"`, `widths` = 2 × particle radius per vertex) per
//!   rope. Prim names are body names made into USD identifiers (see [`usd_identifiers`]).
//! * **OBJ sequence** — Wavefront OBJ (Appendix B1 of the Advanced Visualizer manual; see
//!   <https://paulbourke.net/dataformats/obj/>), one complete file per frame: per body an
//!   `o <name>` group, `v x y z` lines, a cloth's UVs as `vt u v` lines (one per vertex), then
//!   cloth triangles as `f a b c`, or `f a/ta b/tb c/tc` with UVs (1-based, counter-clockwise
//!   from the front, indices counted across the whole file), or the rope as one `l` polyline.
//! * **PC2** — Point Cache 2, the vertex cache of 3ds Max read by Blender's *Mesh Cache*
//!   modifier (<https://docs.blender.org/manual/en/latest/modeling/modifiers/modify/mesh_cache.html>).
//!   Little-endian: `char[12] "POINTCACHE2\0"`, `i32 version = 1`, `i32 numPoints`,
//!   `f32 startFrame = 0`, `f32 sampleRate = 1`, `i32 numSamples`, then
//!   `numSamples × numPoints × (f32 x, f32 y, f32 z)`. PC2 stores no topology, so each body
//!   also gets a rest mesh `<body>.obj` (the frame-0 positions, same vertex order, with its
//!   `vt` UVs and faces like the OBJ sequence's) to apply the cache to.
//!
//! # Atomicity
//!
//! No half-written cache ever appears under its final name. Everything is written to hidden
//! temporary siblings `.<name>.tmp-<pid>-<seq>` in the cache directory and renamed into place
//! (after `fsync`) by [`CacheWriter::finish`] — or, for OBJ sequences, frame by frame. A
//! writer dropped without `finish()` removes its temporary files; those of a process killed
//! outright are removed by the next writer opened on the directory (Linux, where `/proc`
//! shows that their process is gone). A caller whose simulation
//! blows up calls `finish()` with the frames written so far and gets complete, valid files
//! holding exactly those frames. Memory stays bounded for long runs: USD time samples are
//! streamed to one scratch file per prim and attribute and assembled in `finish()`; PC2
//! samples are streamed to the cache and the sample count patched in at the end.
//!
//! ```no_run
//! use hooke::{ClothGrid, ModelBuilder};
//! use hooke_io::cache::{self, CacheSpec, Format};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut builder = ModelBuilder::new();
//! builder.add_cloth_grid(&ClothGrid::new("flag", 10, 10, 0.05))?;
//! let model = builder.finalize()?;
//! let spec = CacheSpec { dir: "out".as_ref(), scene_name: "flag", fps: 30.0, model: &model, vertex_maps: &[] };
//! let mut writer = cache::create(Format::Usda, &spec)?;
//! for frame in 0..3 {
//!     writer.write_frame(frame, model.particle_position())?;
//! }
//! let files = writer.finish()?; // ["out/flag.usda"]
//! # let _ = files; Ok(()) }
//! ```
#![warn(missing_docs)]

pub(crate) mod atomic;
mod obj;
mod pc2;
mod usda;
mod usda_read;

pub use pc2::read_pc2;
pub use usda_read::{UsdaCache, UsdaPrim, read_usda};

use crate::mesh::VertexMap;
use glam::{Vec2, Vec3};
use hooke::{Body, Model};
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A cache file format. See the [module documentation](self) for each layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// One USD text layer `<scene_name>.usda` with every body animated (the default).
    #[default]
    Usda,
    /// One Wavefront OBJ file per frame, `<scene_name>_<frame:04>.obj`.
    Obj,
    /// One PC2 point cache plus one rest-mesh OBJ per body, `<body>.pc2` and `<body>.obj`.
    Pc2,
}

impl Format {
    /// Every format, in the order listed by error messages.
    pub const ALL: [Format; 3] = [Format::Usda, Format::Obj, Format::Pc2];

    /// The name parsed by [`FromStr`] and printed by [`Display`](fmt::Display): `"usda"`,
    /// `"obj"` or `"pc2"` (also the main file extension).
    pub fn name(self) -> &'static str {
        match self {
            Format::Usda => "usda",
            Format::Obj => "obj",
            Format::Pc2 => "pc2",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Format {
    type Err = CacheError;

    /// Parses `"usda"`, `"obj"` or `"pc2"` (ASCII case-insensitive, surrounding whitespace
    /// ignored).
    ///
    /// # Errors
    /// [`CacheError::Invalid`] naming the input and listing the valid formats.
    fn from_str(s: &str) -> Result<Format, CacheError> {
        let t = s.trim();
        Format::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(t)).ok_or_else(|| {
            let valid: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            CacheError::Invalid(format!("unknown cache format {s:?}: expected one of {}", valid.join(", ")))
        })
    }
}

/// What to cache and where: the input of [`create`].
///
/// Each body is written as its particles in order (triangles from the model, UVs from
/// [`Model::particle_uv`] where the body has them), unless it has a [`VertexMap`] in
/// `vertex_maps`: then it is written as the mesh file was — its vertices in file order, each
/// showing the position of its particle (a welded particle repeated at every file vertex that
/// became it), the file's triangles and the file's UVs — so that the cache lines up with the
/// original mesh, vertex for vertex, and a UV seam keeps its two sets of UVs.
#[derive(Clone, Copy, Debug)]
pub struct CacheSpec<'a> {
    /// Output directory; created (with its parents) if missing.
    pub dir: &'a Path,
    /// Scene name, used for the `.usda` file and the OBJ sequence: a plain file name (not
    /// empty, no `/`, `\` or NUL, not `.` or `..`).
    pub scene_name: &'a str,
    /// Frames per second (> 0, finite): the USD `timeCodesPerSecond` and `framesPerSecond`.
    pub fps: f32,
    /// The model whose bodies are cached; its particle order defines the position arrays.
    pub model: &'a Model,
    /// Per body (indexed like [`Model::bodies`]; may be shorter, or empty): the mesh file's
    /// vertex map, for a cloth to be written in the file's vertex order (see above). A scene
    /// gives it as [`Scene::vertex_maps`](crate::scene::Scene).
    pub vertex_maps: &'a [Option<VertexMap>],
}

/// Why a cache could not be written or read. Every message names the file or directory.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A file system operation failed on `path`.
    #[error("I/O error on {}: {cause}", path.display())]
    Io {
        /// The file or directory concerned (for temporary files, the temporary path).
        path: PathBuf,
        /// The underlying error.
        cause: std::io::Error,
    },
    /// Invalid input (a bad spec, frame number, position array or format name) or a file
    /// that is not a cache this module wrote; the message says which file and what is wrong.
    #[error("{0}")]
    Invalid(String),
}

/// Wraps an I/O error with the path it concerns.
pub(crate) fn io_error(path: &Path, source: std::io::Error) -> CacheError {
    CacheError::Io { path: path.to_path_buf(), cause: source }
}

/// Writes the frames of one simulation run into a cache. Made by [`create`].
///
/// Frames must come in order 0, 1, 2, …; after an error from
/// [`write_frame`](CacheWriter::write_frame) that rejected its input
/// ([`CacheError::Invalid`]) nothing was written and the writer can still be finished; after
/// an I/O error the writer is spoiled and [`finish`](CacheWriter::finish) fails (dropping it
/// cleans up).
pub trait CacheWriter: Send {
    /// Appends one frame.
    ///
    /// `frame` = 0, 1, 2, … consecutive; `positions` has `model.particle_count()` entries
    /// (m, world space, Y up), all finite.
    ///
    /// # Errors
    /// [`CacheError::Invalid`] for a frame out of sequence, a wrong number of positions or a
    /// non-finite position (nothing is written then); [`CacheError::Io`] if writing fails.
    fn write_frame(&mut self, frame: usize, positions: &[Vec3]) -> Result<(), CacheError>;

    /// Takes a new topology from the next frame on: `model` is the cached model after tearing
    /// (`hooke::tearing`: particles split, constraints removed) — the same bodies in the same
    /// order — and each body is written in its particle order from then on (a mesh's vertex
    /// map no longer applies once it has torn). USD writes the points, face indices and UVs
    /// time-sampled; an OBJ sequence writes each frame's faces.
    ///
    /// # Errors
    /// [`CacheError::Invalid`] for a format that holds a fixed vertex count (PC2), or a model
    /// whose bodies are not the cached model's.
    fn set_model(&mut self, model: &Model) -> Result<(), CacheError> {
        let _ = model;
        Err(CacheError::Invalid(
            "this cache format holds a fixed vertex count and cannot follow a cloth that tears; write usda or obj"
                .into(),
        ))
    }

    /// Makes [`CacheWriter::finish`] put the files into `dir` instead of the folder the
    /// writer was made for, under the same names — where a run that stopped early keeps its
    /// frames without taking the place of an earlier, complete cache. `dir` must exist and be
    /// on the same file system as the writer's folder (a subfolder of it): the temporary files
    /// stay where they are and are renamed across.
    fn redirect(&mut self, dir: &Path);

    /// Completes the files with the frames written so far — atomically: each is moved from
    /// its temporary name into place only when complete — and returns their final paths.
    ///
    /// # Errors
    /// [`CacheError::Invalid`] if no frame was written or an earlier write failed;
    /// [`CacheError::Io`] if completing or renaming a file fails. Temporary files are removed
    /// in every case.
    fn finish(self: Box<Self>) -> Result<Vec<PathBuf>, CacheError>;
}

/// Creates a writer of `format` for `spec`, creating `spec.dir` (and its parents) if missing.
///
/// Nothing appears under a final name until [`CacheWriter::finish`] (OBJ: until each frame is
/// complete); temporary files may be created right away. Temporary files that a killed run
/// left in `spec.dir` are removed first (Linux; see the module documentation).
///
/// # Errors
/// [`CacheError::Invalid`] for a bad scene name or fps, or a body whose particles or
/// triangles are inconsistent with the model; [`CacheError::Io`] if the directory or a
/// temporary file cannot be created.
pub fn create(format: Format, spec: &CacheSpec) -> Result<Box<dyn CacheWriter>, CacheError> {
    validate_scene_name(spec.scene_name)?;
    if !(spec.fps.is_finite() && spec.fps > 0.0) {
        return Err(CacheError::Invalid(format!(
            "cache {}: fps must be positive and finite, got {}",
            spec.dir.display(),
            spec.fps
        )));
    }
    body_outputs(spec)?;
    std::fs::create_dir_all(spec.dir).map_err(|e| io_error(spec.dir, e))?;
    atomic::sweep_stale(spec.dir);
    Ok(match format {
        Format::Usda => Box::new(usda::UsdaWriter::new(spec)?),
        Format::Obj => Box::new(obj::ObjWriter::new(spec)?),
        Format::Pc2 => Box::new(pc2::Pc2Writer::new(spec)?),
    })
}

fn validate_scene_name(name: &str) -> Result<(), CacheError> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(CacheError::Invalid(format!(
            "scene name {name:?} cannot be used as a file name (it must be non-empty, \
             not \".\" or \"..\", and contain no '/', '\\' or NUL)"
        )));
    }
    Ok(())
}

/// The particle range of `body` as `usize`, checked against the model.
pub(crate) fn body_range(model: &Model, body: &Body) -> Result<Range<usize>, CacheError> {
    let r = body.particles.start as usize..body.particles.end as usize;
    if r.start > r.end || r.end > model.particle_count() {
        return Err(CacheError::Invalid(format!(
            "body {:?}: particles {:?} lie outside the model's {} particles",
            body.name,
            body.particles,
            model.particle_count()
        )));
    }
    Ok(r)
}

/// What is written for one body: which particle each written vertex shows, the triangles over
/// the written vertices, and their UVs.
#[derive(Clone, Debug)]
pub(crate) struct BodyOutput {
    /// Particle range of the body in the position arrays.
    pub(crate) range: Range<usize>,
    /// For each written vertex, its particle local to the body; `None`: the particles in order.
    pub(crate) gather: Option<Vec<u32>>,
    /// Triangles over the written vertices (empty for a rope).
    pub(crate) triangles: Vec<[u32; 3]>,
    /// One UV per written vertex, if the body has them all.
    pub(crate) uvs: Option<Vec<Vec2>>,
    /// Whether the body is a cloth (else a rope).
    pub(crate) cloth: bool,
}

impl BodyOutput {
    /// Number of vertices written per frame.
    pub(crate) fn vertex_count(&self) -> usize {
        self.gather.as_ref().map_or(self.range.len(), Vec::len)
    }

    /// The written vertices' positions out of a frame's particle `positions`, into `out`.
    pub(crate) fn points<'p>(&self, positions: &'p [Vec3], out: &'p mut Vec<Vec3>) -> &'p [Vec3] {
        let own = &positions[self.range.clone()];
        match &self.gather {
            None => own,
            Some(g) => {
                out.clear();
                out.extend(g.iter().map(|&p| own[p as usize]));
                out
            }
        }
    }
}

/// What [`create`] writes for each body of `spec`, checked against the model: a [`VertexMap`]
/// must belong to a mesh cloth, name only the body's particles (every one of them), and have
/// triangles over its vertices and one finite UV per vertex.
pub(crate) fn body_outputs(spec: &CacheSpec) -> Result<Vec<BodyOutput>, CacheError> {
    let model = spec.model;
    let uv_all = model.particle_uv();
    let mut out = Vec::with_capacity(model.bodies().len());
    for (k, body) in model.bodies().iter().enumerate() {
        let range = body_range(model, body)?;
        let bad = |what: String| CacheError::Invalid(format!("body {:?}: vertex map: {what}", body.name));
        let o = match spec.vertex_maps.get(k).and_then(Option::as_ref) {
            Some(map) => {
                if !body.is_cloth() {
                    return Err(bad("a rope has no mesh file".into()));
                }
                let mut hit = vec![false; range.len()];
                for &p in &map.particle {
                    *hit.get_mut(p as usize)
                        .ok_or_else(|| bad(format!("particle {p} is outside the body's {}", range.len())))? = true;
                }
                if let Some(p) = hit.iter().position(|h| !h) {
                    return Err(bad(format!("particle {p} is shown by no vertex")));
                }
                let n = map.particle.len();
                if let Some(t) = map.triangles.iter().find(|t| t.iter().any(|&v| v as usize >= n)) {
                    return Err(bad(format!("triangle {t:?} refers to a vertex beyond the {n} vertices")));
                }
                if let Some(uv) = &map.uvs
                    && (uv.len() != n || !uv.iter().all(|x| x.is_finite()))
                {
                    return Err(bad(format!("{} UVs for {n} vertices, or not all finite", uv.len())));
                }
                BodyOutput {
                    range,
                    gather: Some(map.particle.clone()),
                    triangles: map.triangles.clone(),
                    uvs: map.uvs.clone(),
                    cloth: true,
                }
            }
            None => {
                let triangles = if body.is_cloth() { local_triangles(model, body)? } else { Vec::new() };
                // Grid UVs, or a mesh's per-particle UVs; ropes hold NaN (none).
                let uvs = uv_all
                    .and_then(|uv| uv.get(range.clone()))
                    .filter(|uv| body.is_cloth() && uv.iter().all(|x| x.is_finite()))
                    .map(<[Vec2]>::to_vec);
                BodyOutput { range, gather: None, triangles, uvs, cloth: body.is_cloth() }
            }
        };
        out.push(o);
    }
    Ok(out)
}

/// The outputs of `model` after a topology change: every body in its particle order, checked
/// to have the bodies (names, kinds, order) of `old`.
pub(crate) fn retopologized(model: &Model, old: &[BodyOutput]) -> Result<Vec<BodyOutput>, CacheError> {
    let spec = CacheSpec { dir: Path::new("."), scene_name: "cache", fps: 1.0, model, vertex_maps: &[] };
    let outputs = body_outputs(&spec)?;
    if outputs.len() != old.len() || outputs.iter().zip(old).any(|(a, b)| a.cloth != b.cloth) {
        return Err(CacheError::Invalid(format!(
            "the new model has other bodies ({}) than the cached one ({})",
            outputs.len(),
            old.len()
        )));
    }
    Ok(outputs)
}

/// The triangles of `body` with indices local to the body (global − `particles.start`).
pub(crate) fn local_triangles(model: &Model, body: &Body) -> Result<Vec<[u32; 3]>, CacheError> {
    let tris = model.triangles();
    let t = body.triangles.start as usize..body.triangles.end as usize;
    let bad = || CacheError::Invalid(format!("body {:?}: triangles {:?} are inconsistent", body.name, body.triangles));
    let tris = tris.get(t).ok_or_else(bad)?;
    tris.iter()
        .map(|tri| {
            let mut out = [0u32; 3];
            for (o, &v) in out.iter_mut().zip(tri) {
                if !body.particles.contains(&v) {
                    return Err(bad());
                }
                *o = v - body.particles.start;
            }
            Ok(out)
        })
        .collect()
}

/// Makes body names into unique USD prim identifiers (`[A-Za-z_][A-Za-z0-9_]*`).
///
/// Every character outside `[A-Za-z0-9_]` (including non-ASCII) becomes `_`; a name starting
/// with a digit gets a `_` prefix; an empty name becomes `_`. Names that are already valid
/// identifiers keep them; a name still taken gets the first free suffix `_1`, `_2`, … .
/// `["rope 1", "rope_1", "2d"]` → `["rope_1_1", "rope_1", "_2d"]`.
pub fn usd_identifiers<'n>(names: impl IntoIterator<Item = &'n str>) -> Vec<String> {
    let pairs = names.into_iter().map(|n| {
        let mut s: String = n.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
            s.insert(0, '_');
        }
        (s == n, s)
    });
    unique(pairs.collect(), false)
}

/// Makes body names into unique, portable file stems (used for PC2 files and OBJ object
/// names).
///
/// Every character outside `[A-Za-z0-9._-]` (spaces, separators, non-ASCII) becomes `_`; a
/// leading `.` becomes `_` (no hidden files); an empty name becomes `body`. Names that need no
/// change keep them; names equal ignoring ASCII case (a clash on case-insensitive file
/// systems) get the first free suffix `_1`, `_2`, … . `["rope 1", "Cloth", "cloth"]` →
/// `["rope_1", "Cloth", "cloth_1"]`.
pub fn file_stems<'n>(names: impl IntoIterator<Item = &'n str>) -> Vec<String> {
    let pairs = names.into_iter().map(|n| {
        let mut s: String = n
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' })
            .collect();
        if s.is_empty() {
            s.push_str("body");
        }
        if s.starts_with('.') {
            s.replace_range(0..1, "_");
        }
        (s == n, s)
    });
    unique(pairs.collect(), true)
}

/// De-duplicates sanitised names `(unchanged, name)`: unchanged names are served first, then
/// the others in order, a clash getting the first suffix `_1`, `_2`, … that is neither taken
/// nor another body's own name.
fn unique(names: Vec<(bool, String)>, ignore_case: bool) -> Vec<String> {
    let key = |s: &str| if ignore_case { s.to_ascii_lowercase() } else { s.to_string() };
    let bases: HashSet<String> = names.iter().map(|(_, n)| key(n)).collect();
    let mut taken: HashSet<String> = HashSet::new();
    let mut out: Vec<Option<String>> = vec![None; names.len()];
    for (slot, (unchanged, n)) in out.iter_mut().zip(&names) {
        if *unchanged && taken.insert(key(n)) {
            *slot = Some(n.clone());
        }
    }
    for (slot, (_, n)) in out.iter_mut().zip(&names) {
        if slot.is_some() {
            continue;
        }
        let mut candidate = n.clone();
        let mut k = 1usize;
        while taken.contains(&key(&candidate)) || (candidate != *n && bases.contains(&key(&candidate))) {
            candidate = format!("{n}_{k}");
            k += 1;
        }
        taken.insert(key(&candidate));
        *slot = Some(candidate);
    }
    out.into_iter().flatten().collect()
}

/// Checks frame order and position arrays; shared by all writers.
#[derive(Debug)]
pub(crate) struct FrameCounter {
    /// What the messages name (the cache file or directory).
    target: PathBuf,
    /// Particles per frame.
    particles: usize,
    /// Frames written so far (= the next frame number expected).
    frames: usize,
    /// Set while a frame is being written; still set after an I/O error mid-frame.
    spoiled: bool,
}

impl FrameCounter {
    pub(crate) fn new(target: PathBuf, particles: usize) -> FrameCounter {
        FrameCounter { target, particles, frames: 0, spoiled: false }
    }

    /// Frames completely written.
    pub(crate) fn frames(&self) -> usize {
        self.frames
    }

    /// Validates a frame before anything is written, then marks a write in progress.
    pub(crate) fn begin(&mut self, frame: usize, positions: &[Vec3]) -> Result<(), CacheError> {
        let target = self.target.display();
        if self.spoiled {
            return Err(CacheError::Invalid(format!("cache {target}: an earlier write failed; cannot continue")));
        }
        if frame != self.frames {
            return Err(CacheError::Invalid(format!(
                "cache {target}: frame {frame} written out of order (expected frame {})",
                self.frames
            )));
        }
        if positions.len() != self.particles {
            return Err(CacheError::Invalid(format!(
                "cache {target}: frame {frame} has {} positions, expected {} (one per particle)",
                positions.len(),
                self.particles
            )));
        }
        if let Some(i) = positions.iter().position(|p| !p.is_finite()) {
            return Err(CacheError::Invalid(format!(
                "cache {target}: frame {frame}: particle {i} has a non-finite position {}; frame not written",
                positions[i]
            )));
        }
        self.spoiled = true;
        Ok(())
    }

    /// Marks the frame begun by [`FrameCounter::begin`] as complete.
    pub(crate) fn end(&mut self) {
        self.spoiled = false;
        self.frames += 1;
    }

    /// Expects `particles` positions per frame from the next frame on.
    pub(crate) fn set_particles(&mut self, particles: usize) {
        self.particles = particles;
    }

    /// Checks that the cache can be finished: at least one frame, no failed write.
    pub(crate) fn check_finish(&self) -> Result<(), CacheError> {
        let target = self.target.display();
        if self.spoiled {
            return Err(CacheError::Invalid(format!("cache {target}: an earlier write failed; not finished")));
        }
        if self.frames == 0 {
            return Err(CacheError::Invalid(format!("cache {target}: no frame was written; nothing to finish")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        let ids = usd_identifiers(["rope 1", "rope_1", "2d", "", "é", "World", "a-b"]);
        assert_eq!(ids, ["rope_1_1", "rope_1", "_2d", "_", "__1", "World", "a_b"]);
    }

    #[test]
    fn stems() {
        let s = file_stems(["rope 1", "Cloth", "cloth", ".hidden", "", "a/b"]);
        assert_eq!(s, ["rope_1", "Cloth", "cloth_1", "_hidden", "body", "a_b"]);
    }

    #[test]
    fn formats() {
        for f in Format::ALL {
            assert_eq!(f.to_string().parse::<Format>().unwrap(), f);
        }
        assert_eq!(" PC2 ".parse::<Format>().unwrap(), Format::Pc2);
        let e = "abc".parse::<Format>().unwrap_err().to_string();
        assert!(e.contains("usda, obj, pc2") && e.contains("abc"), "{e}");
        assert_eq!(Format::default(), Format::Usda);
    }
}
