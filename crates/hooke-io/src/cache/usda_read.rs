//! Reading back a `.usda` cache that [`Format::Usda`](super::Format::Usda) wrote — for
//! `hooke render CACHE.usda` and for tests — without a USD library.
//!
//! It reads the layout of the [writer](super::usda) line by line: the layer's
//! `framesPerSecond`; each `def Mesh` (its `faceVertexCounts`, all 3, and
//! `faceVertexIndices`, or for a cloth that tore or was cut their `.timeSamples`, one time code
//! per line) and `def BasisCurves`; and each prim's `points.timeSamples`, one time code per
//! line. Other lines (`extent`, `widths`, `primvars:st`, metadata) are skipped.
//! It is not a general USD parser: a file that Blender or Houdini re-exported, with arrays
//! spread over several lines, is refused with the line that could not be read. Floats are read
//! with Rust's parser, so the positions come back bit for bit as they were written.

use super::{CacheError, io_error};
use crate::mesh::MAX_COORDINATE;
use glam::Vec3;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// A `.usda` cache read back.
#[derive(Clone, Debug, PartialEq)]
pub struct UsdaCache {
    /// The file.
    pub path: PathBuf,
    /// Frames (time codes) per second.
    pub fps: f32,
    /// The time code of each frame, ascending (the same for every prim).
    pub times: Vec<f64>,
    /// The animated prims, in file order.
    pub prims: Vec<UsdaPrim>,
}

/// One animated prim of a [`UsdaCache`]: a cloth (`Mesh`) or a rope (`BasisCurves`).
#[derive(Clone, Debug, PartialEq)]
pub struct UsdaPrim {
    /// The prim's name.
    pub name: String,
    /// A mesh's triangles (indices into its points) at the first time code; `None` for a
    /// rope.
    pub triangles: Option<Vec<[u32; 3]>>,
    /// A mesh's later triangles where its topology changes over time (a cloth that tore or was
    /// cut): (the time code from which they hold, the triangles), time codes ascending; empty
    /// for a fixed topology.
    pub later_triangles: Vec<(f64, Vec<[u32; 3]>)>,
    /// The points (m) at each time code of [`UsdaCache::times`]: the same count at each,
    /// except where the topology changes (split particles are added).
    pub frames: Vec<Vec<Vec3>>,
}

impl UsdaPrim {
    /// A mesh's triangles at time code `time`: the last of its topologies that holds from
    /// `time` or earlier. `None` for a rope.
    pub fn triangles_at(&self, time: f64) -> Option<&[[u32; 3]]> {
        let first = self.triangles.as_deref()?;
        let at = self.later_triangles.partition_point(|(t, _)| *t <= time);
        Some(at.checked_sub(1).map_or(first, |k| &self.later_triangles[k].1[..]))
    }
}

impl UsdaCache {
    /// Frames in the cache.
    pub fn frame_count(&self) -> usize {
        self.times.len()
    }

    /// Points of all prims at frame `frame` (m), prim after prim in file order.
    pub fn positions(&self, frame: usize) -> Vec<Vec3> {
        self.prims.iter().flat_map(|p| p.frames[frame].iter().copied()).collect()
    }
}

/// Reads a `.usda` cache written by this crate.
///
/// # Errors
/// [`CacheError::Io`] if the file cannot be read; [`CacheError::Invalid`] naming the file and
/// line for a file without the `#usda 1.0` header, a line it cannot read, faces other than
/// triangles, an index out of range (at any frame), prims whose time codes differ, a point
/// count that changes between frames of a mesh whose topology does not (or of a rope),
/// topology samples that start after the points' or do not ascend, a non-finite point or one
/// beyond [`MAX_COORDINATE`] (10⁹ m, as for a mesh's vertices; at any frame), a file with no
/// animated prim, and a file cut short: one that ends inside a block, or whose points end
/// before the layer's `endTimeCode` (or start after its `startTimeCode`).
pub fn read_usda(path: impl AsRef<Path>) -> Result<UsdaCache, CacheError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let bad = |line: usize, what: String| CacheError::Invalid(format!("{}:{line}: {what}", path.display()));
    let mut fps = None;
    let mut time_codes_per_second = None;
    let mut prims: Vec<UsdaPrim> = Vec::new();
    // Time codes of the prim being read.
    let mut times: Vec<f64> = Vec::new();
    let mut all_times: Option<Vec<f64>> = None;
    let mut current: Option<Read> = None;
    // Inside a `.timeSamples = {` block: of what.
    let mut block: Option<Block> = None;
    // Blocks `{ … }` open at the current line, and the layer's time range.
    let mut depth = 0usize;
    let (mut start_code, mut end_code) = (None, None);
    let mut close = |current: &mut Option<Read>, times: &mut Vec<f64>, line: usize| -> Result<(), CacheError> {
        let Some(Read { prim, topology_start, counts, sampled_counts }) = current.take() else { return Ok(()) };
        if let (Some(start), Some(&first)) = (topology_start, times.first())
            && start > first
        {
            return Err(bad(
                line,
                format!("prim {:?}: its topology starts at time {start}, its points at {first}", prim.name),
            ));
        }
        // As many faces in faceVertexCounts as faceVertexIndices has triangles, at every time.
        let faces: Vec<(f64, usize)> = match topology_start {
            Some(start) => std::iter::once((start, prim.triangles.as_ref().map_or(0, Vec::len)))
                .chain(prim.later_triangles.iter().map(|(t, tris)| (*t, tris.len())))
                .collect(),
            None => Vec::new(),
        };
        let static_faces = prim.triangles.as_ref().filter(|_| topology_start.is_none()).map(Vec::len);
        if let (Some(counts), Some(faces)) = (counts, static_faces)
            && counts != faces
        {
            return Err(bad(
                line,
                format!(
                    "prim {:?}: faceVertexCounts has {counts} faces, faceVertexIndices {faces} triangles",
                    prim.name
                ),
            ));
        }
        if (!sampled_counts.is_empty() || topology_start.is_some()) && sampled_counts != faces {
            return Err(bad(
                line,
                format!(
                    "prim {:?}: the time samples of faceVertexCounts (time, faces) {sampled_counts:?} do not match \
                     those of faceVertexIndices {faces:?}",
                    prim.name
                ),
            ));
        }
        match &all_times {
            None => all_times = Some(std::mem::take(times)),
            Some(t) if *t == *times => times.clear(),
            Some(_) => return Err(bad(line, format!("prim {:?} has other time codes than the first prim", prim.name))),
        }
        prims.push(prim);
        Ok(())
    };
    let mut last = 0;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io_error(path, e))?;
        let n = i + 1;
        last = n;
        let t = line.trim();
        if i == 0 {
            if !t.starts_with("#usda 1.0") {
                return Err(bad(n, "not a USD text file (no `#usda 1.0` header)".into()));
            }
            continue;
        }
        if t.ends_with('{') {
            depth += 1;
        } else if t == "}" {
            depth = depth.checked_sub(1).ok_or_else(|| bad(n, "a `}` that closes no block".into()))?;
        }
        if let Some(what) = block {
            if t == "}" {
                block = None;
            } else if let (Block::Counts | Block::Indices, Some(prim)) = (what, current.as_mut()) {
                let (time, rest) = t.split_once(':').ok_or_else(|| bad(n, "a time sample without `time:`".into()))?;
                let time: f64 =
                    time.trim().parse().map_err(|_| bad(n, format!("time code {time:?} is not a number")))?;
                let values = parse_ints(rest.trim().trim_end_matches(',')).map_err(|what| bad(n, what))?;
                if what == Block::Counts {
                    if values.iter().any(|&c| c != 3) {
                        return Err(bad(n, "faces other than triangles (this reader takes hooke's own caches)".into()));
                    }
                    prim.sampled_counts.push((time, values.len()));
                    continue;
                }
                let triangles = triangles_of(&values).map_err(|what| bad(n, what))?;
                match prim.topology_start {
                    Some(start) => {
                        let previous = prim.prim.later_triangles.last().map_or(start, |(t, _)| *t);
                        if time <= previous {
                            return Err(bad(n, format!("topology time code {time} does not follow {previous}")));
                        }
                        prim.prim.later_triangles.push((time, triangles));
                    }
                    None => {
                        prim.prim.triangles = Some(triangles);
                        prim.topology_start = Some(time);
                    }
                }
            } else if let (Block::Points, Some(Read { prim, topology_start, .. })) = (what, current.as_mut()) {
                let (time, rest) = t.split_once(':').ok_or_else(|| bad(n, "a time sample without `time:`".into()))?;
                let time: f64 =
                    time.trim().parse().map_err(|_| bad(n, format!("time code {time:?} is not a number")))?;
                if times.last().is_some_and(|&p| time <= p) {
                    return Err(bad(n, format!("time code {time} does not follow {}", times[times.len() - 1])));
                }
                let points = parse_points(rest).map_err(|what| bad(n, what))?;
                if topology_start.is_none() && prim.frames.first().is_some_and(|f| f.len() != points.len()) {
                    return Err(bad(
                        n,
                        format!("{} points at time {time}, {} at the first", points.len(), prim.frames[0].len()),
                    ));
                }
                times.push(time);
                prim.frames.push(points);
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("framesPerSecond =") {
            let value = rest.trim().parse::<f32>().map_err(|_| bad(n, format!("framesPerSecond {rest:?}")))?;
            if !value.is_finite() {
                return Err(bad(n, format!("framesPerSecond {} is not a finite number in f32", rest.trim())));
            }
            fps = Some(value);
        } else if let Some(rest) = t.strip_prefix("timeCodesPerSecond =").filter(|_| depth == 0) {
            // One time code per frame, as the writer has it.
            let value = rest.trim().parse::<f32>().ok().filter(|v| v.is_finite() && *v > 0.0);
            time_codes_per_second = Some(value.ok_or_else(|| {
                bad(n, format!("timeCodesPerSecond {:?} is not a number of time codes > 0 a second", rest.trim()))
            })?);
        } else if let Some(rest) = t.strip_prefix("metersPerUnit =").filter(|_| depth == 0) {
            if rest.trim().parse::<f64>() != Ok(1.0) {
                return Err(bad(
                    n,
                    format!("metersPerUnit {} (this reader takes hooke's own caches, in metres: 1)", rest.trim()),
                ));
            }
        } else if let Some(rest) = t.strip_prefix("upAxis =").filter(|_| depth == 0) {
            if rest.trim() != "\"Y\"" {
                return Err(bad(
                    n,
                    format!("upAxis {} (this reader takes hooke's own caches, whose up axis is \"Y\")", rest.trim()),
                ));
            }
        } else if let (0, Some((key, rest))) = (
            depth,
            t.strip_prefix("startTimeCode =")
                .map(|r| ("startTimeCode", r))
                .or_else(|| t.strip_prefix("endTimeCode =").map(|r| ("endTimeCode", r))),
        ) {
            // The layer's metadata (outside every prim).
            let code =
                rest.trim().parse::<f64>().map_err(|_| bad(n, format!("{key} {:?} is not a number", rest.trim())))?;
            if key == "startTimeCode" {
                start_code = Some(code);
            } else {
                end_code = Some(code);
            }
        } else if let Some(rest) = t.strip_prefix("def ") {
            close(&mut current, &mut times, n)?;
            let (type_name, rest) = rest.split_once(' ').ok_or_else(|| bad(n, "`def` without a type".into()))?;
            let name = rest.trim().trim_end_matches('(').trim().trim_matches('"').to_string();
            let prim = |triangles| Read {
                prim: UsdaPrim { name, triangles, later_triangles: Vec::new(), frames: Vec::new() },
                topology_start: None,
                counts: None,
                sampled_counts: Vec::new(),
            };
            current = match type_name {
                "Mesh" => Some(prim(Some(Vec::new()))),
                "BasisCurves" => Some(prim(None)),
                _ => None,
            };
        } else if t.ends_with('{') && t.contains(".timeSamples") {
            block = Some(if t.contains(" points.timeSamples") {
                Block::Points
            } else if current.is_some() && t.starts_with("int[] faceVertexIndices.timeSamples") {
                Block::Indices
            } else if current.is_some() && t.starts_with("int[] faceVertexCounts.timeSamples") {
                Block::Counts
            } else {
                Block::Other
            });
        } else if let (Some(read), Some(rest)) = (current.as_mut(), t.strip_prefix("int[] faceVertexCounts =")) {
            let counts = parse_ints(rest).map_err(|what| bad(n, what))?;
            if counts.iter().any(|&c| c != 3) {
                return Err(bad(n, "faces other than triangles (this reader takes hooke's own caches)".into()));
            }
            read.counts = Some(counts.len());
        } else if let (Some(read), Some(rest)) = (current.as_mut(), t.strip_prefix("int[] faceVertexIndices =")) {
            let indices = parse_ints(rest).map_err(|what| bad(n, what))?;
            read.prim.triangles = Some(triangles_of(&indices).map_err(|what| bad(n, what))?);
        }
    }
    if let Some(what) = block {
        return Err(bad(last, format!("the file ends inside a {} block: it was cut short", what.describe())));
    }
    if depth > 0 {
        return Err(bad(last, format!("the file ends with {depth} block(s) `{{ … }}` not closed: it was cut short")));
    }
    close(&mut current, &mut times, last)?;
    let file_bad = |what: String| CacheError::Invalid(format!("{}: {what}", path.display()));
    let times = all_times.unwrap_or_default();
    if prims.is_empty() || times.is_empty() {
        return Err(file_bad("no animated Mesh or BasisCurves prim".into()));
    }
    let (first, final_time) = (times[0], times[times.len() - 1]);
    if let Some(end) = end_code.filter(|&end| end != final_time) {
        return Err(file_bad(format!(
            "its points end at time code {final_time}, the layer's endTimeCode is {end}: {}",
            if end > final_time { "frames are missing (cut short?)" } else { "the layer's range leaves frames out" }
        )));
    }
    if let Some(start) = start_code.filter(|&start| start != first) {
        return Err(file_bad(format!("its points start at time code {first}, the layer's startTimeCode is {start}")));
    }
    // One sample a frame, at consecutive whole time codes (codes 0, 1, 1.5, 3 drew four frames).
    if let Some(k) = (1..times.len()).find(|&k| times[k] != times[k - 1] + 1.0) {
        return Err(file_bad(format!(
            "time code {} follows {}: a hooke cache has a sample every frame, at consecutive whole time codes (a \
             frame missing, or one too many)",
            times[k],
            times[k - 1]
        )));
    }
    for prim in &prims {
        for (f, (points, &time)) in prim.frames.iter().zip(&times).enumerate() {
            // A point count changes only with the topology (split particles come with faces).
            let topology = |t: f64| prim.later_triangles.partition_point(|(from, _)| *from <= t);
            if f > 0 && points.len() != prim.frames[f - 1].len() && topology(time) == topology(times[f - 1]) {
                return Err(file_bad(format!(
                    "prim {:?}: {} points at time {time}, {} at time {}, with no new faces between them",
                    prim.name,
                    points.len(),
                    prim.frames[f - 1].len(),
                    times[f - 1]
                )));
            }
            let count = points.len() as u32;
            if let Some(t) = prim.triangles_at(time)
                && let Some(k) = t.iter().flatten().find(|&&k| k >= count)
            {
                return Err(file_bad(format!(
                    "prim {:?}: face vertex index {k} with {count} points at time {time}",
                    prim.name
                )));
            }
        }
    }
    let fps = fps.ok_or_else(|| file_bad("no framesPerSecond in the layer's metadata".into()))?;
    if !(fps.is_finite() && fps > 0.0) {
        return Err(file_bad(format!("framesPerSecond {fps} must be positive")));
    }
    if let Some(codes) = time_codes_per_second.filter(|&codes| codes != fps) {
        return Err(file_bad(format!(
            "timeCodesPerSecond {codes} differs from framesPerSecond {fps}: a hooke cache has one time code a frame"
        )));
    }
    Ok(UsdaCache { path: path.to_path_buf(), fps, times, prims })
}

/// A prim being read, and the time code of its first topology sample (`None`: its topology is
/// not time-sampled, or not yet read).
struct Read {
    prim: UsdaPrim,
    topology_start: Option<f64>,
    /// Faces of its `faceVertexCounts` (`None`: not read), and of each of its time samples.
    counts: Option<usize>,
    sampled_counts: Vec<(f64, usize)>,
}

impl Block {
    /// The block in words, for messages.
    fn describe(self) -> &'static str {
        match self {
            Block::Points => "`points.timeSamples`",
            Block::Counts => "`faceVertexCounts.timeSamples`",
            Block::Indices => "`faceVertexIndices.timeSamples`",
            Block::Other => "`.timeSamples`",
        }
    }
}

/// What a `.timeSamples` block holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// A prim's points.
    Points,
    /// A mesh's face vertex counts (all 3).
    Counts,
    /// A mesh's face vertex indices.
    Indices,
    /// Anything else (extents, texture coordinates): skipped.
    Other,
}

/// Triangles of face vertex `indices`, three by three.
fn triangles_of(indices: &[u32]) -> Result<Vec<[u32; 3]>, String> {
    if !indices.len().is_multiple_of(3) {
        return Err(format!("{} face vertex indices is not a whole number of triangles", indices.len()));
    }
    Ok(indices.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

/// The integers of `[a, b, …]`.
fn parse_ints(text: &str) -> Result<Vec<u32>, String> {
    let inner = text.trim().strip_prefix('[').and_then(|s| s.strip_suffix(']')).ok_or("an array `[…]` on one line")?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner.split(',').map(|v| v.trim().parse::<u32>().map_err(|_| format!("{:?} is not an index", v.trim()))).collect()
}

/// The points of `[(x, y, z), …],`.
fn parse_points(text: &str) -> Result<Vec<Vec3>, String> {
    let text = text.trim().trim_end_matches(',').trim_end();
    let inner = text
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or("a time sample that is not `[…]` on one line")?;
    let mut out = Vec::new();
    for part in inner.split(')') {
        let part = part.trim().trim_start_matches(',').trim();
        if part.is_empty() {
            continue;
        }
        let xyz = part.strip_prefix('(').ok_or_else(|| format!("{part:?} is not a point `(x, y, z)`"))?;
        let v: Vec<f32> = xyz
            .split(',')
            .map(|c| c.trim().parse::<f32>().map_err(|_| format!("{:?} is not a number", c.trim())))
            .collect::<Result<_, _>>()?;
        let [x, y, z] = v[..] else { return Err(format!("({xyz}) does not have three coordinates")) };
        let p = Vec3::new(x, y, z);
        // A finite number too large for f32 reads as infinite: it is out of range, not NaN.
        if !p.is_finite() && !xyz.split(',').all(|c| c.trim().parse::<f64>().is_ok_and(f64::is_finite)) {
            return Err(format!("point ({xyz}) is not finite"));
        }
        // (A cache's points stay within the bound a mesh's vertices and a scene's keyframes
        // have: beyond it f32 positions lose the cloth's own size, and a picture frames nothing.)
        if !p.is_finite() || p.abs().max_element() > MAX_COORDINATE {
            return Err(format!("point ({xyz}) is beyond {MAX_COORDINATE:e} m of the origin"));
        }
        out.push(p);
    }
    Ok(out)
}
