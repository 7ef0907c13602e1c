//! Reading back a `.usda` cache that [`Format::Usda`](super::Format::Usda) wrote — for
//! `hooke render CACHE.usda` and for tests — without a USD library.
//!
//! It reads the layout of the [writer](super::usda) line by line: the layer's
//! `framesPerSecond`; each `def Mesh` (its `faceVertexCounts`, all 3, and
//! `faceVertexIndices`) and `def BasisCurves`; and each prim's `points.timeSamples`, one
//! time code per line. Other lines (`extent`, `widths`, `primvars:st`, metadata) are skipped.
//! It is not a general USD parser: a file that Blender or Houdini re-exported, with arrays
//! spread over several lines, is refused with the line that could not be read. Floats are read
//! with Rust's parser, so the positions come back bit for bit as they were written.

use super::{CacheError, io_error};
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
    /// A mesh's triangles (indices into its points); `None` for a rope.
    pub triangles: Option<Vec<[u32; 3]>>,
    /// The points (m) at each time code of [`UsdaCache::times`], the same count at each.
    pub frames: Vec<Vec<Vec3>>,
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
/// triangles, an index out of range, prims whose time codes differ, a point count that
/// changes between frames, a non-finite point, or a file with no animated prim.
pub fn read_usda(path: impl AsRef<Path>) -> Result<UsdaCache, CacheError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let bad = |line: usize, what: String| CacheError::Invalid(format!("{}:{line}: {what}", path.display()));
    let mut fps = None;
    let mut prims: Vec<UsdaPrim> = Vec::new();
    // Time codes of the prim being read.
    let mut times: Vec<f64> = Vec::new();
    let mut all_times: Option<Vec<f64>> = None;
    let mut current: Option<UsdaPrim> = None;
    // Inside a `.timeSamples = {` block: `Some(true)` for points, `Some(false)` for others.
    let mut block: Option<bool> = None;
    let mut close = |current: &mut Option<UsdaPrim>, times: &mut Vec<f64>, line: usize| -> Result<(), CacheError> {
        let Some(prim) = current.take() else { return Ok(()) };
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
        if let Some(points) = block {
            if t == "}" {
                block = None;
            } else if let (true, Some(prim)) = (points, current.as_mut()) {
                let (time, rest) = t.split_once(':').ok_or_else(|| bad(n, "a time sample without `time:`".into()))?;
                let time: f64 =
                    time.trim().parse().map_err(|_| bad(n, format!("time code {time:?} is not a number")))?;
                if times.last().is_some_and(|&p| time <= p) {
                    return Err(bad(n, format!("time code {time} does not follow {}", times[times.len() - 1])));
                }
                let points = parse_points(rest).map_err(|what| bad(n, what))?;
                if prim.frames.first().is_some_and(|f| f.len() != points.len()) {
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
            fps = Some(rest.trim().parse::<f32>().map_err(|_| bad(n, format!("framesPerSecond {rest:?}")))?);
        } else if let Some(rest) = t.strip_prefix("def ") {
            close(&mut current, &mut times, n)?;
            let (type_name, rest) = rest.split_once(' ').ok_or_else(|| bad(n, "`def` without a type".into()))?;
            let name = rest.trim().trim_end_matches('(').trim().trim_matches('"').to_string();
            current = match type_name {
                "Mesh" => Some(UsdaPrim { name, triangles: Some(Vec::new()), frames: Vec::new() }),
                "BasisCurves" => Some(UsdaPrim { name, triangles: None, frames: Vec::new() }),
                _ => None,
            };
        } else if t.starts_with("int[] faceVertexIndices.timeSamples") {
            return Err(bad(
                n,
                "the mesh's topology changes over time (a cloth tore or was cut), and only caches of a fixed \
                 topology can be read back (to draw it, render its scene instead: hooke render SCENE.toml)"
                    .into(),
            ));
        } else if t.ends_with('{') && t.contains(".timeSamples") {
            block = Some(t.contains(" points.timeSamples"));
        } else if let (Some(_), Some(rest)) = (current.as_ref(), t.strip_prefix("int[] faceVertexCounts =")) {
            if parse_ints(rest).map_err(|what| bad(n, what))?.iter().any(|&c| c != 3) {
                return Err(bad(n, "faces other than triangles (this reader takes hooke's own caches)".into()));
            }
        } else if let (Some(prim), Some(rest)) = (current.as_mut(), t.strip_prefix("int[] faceVertexIndices =")) {
            let indices = parse_ints(rest).map_err(|what| bad(n, what))?;
            if indices.len() % 3 != 0 {
                return Err(bad(
                    n,
                    format!("{} face vertex indices is not a whole number of triangles", indices.len()),
                ));
            }
            prim.triangles = Some(indices.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect());
        }
    }
    close(&mut current, &mut times, last)?;
    let file_bad = |what: String| CacheError::Invalid(format!("{}: {what}", path.display()));
    let times = all_times.unwrap_or_default();
    if prims.is_empty() || times.is_empty() {
        return Err(file_bad("no animated Mesh or BasisCurves prim".into()));
    }
    for prim in &prims {
        let count = prim.frames[0].len() as u32;
        if let Some(t) = &prim.triangles
            && let Some(k) = t.iter().flatten().find(|&&k| k >= count)
        {
            return Err(file_bad(format!("prim {:?}: face vertex index {k} with {count} points", prim.name)));
        }
    }
    let fps = fps.ok_or_else(|| file_bad("no framesPerSecond in the layer's metadata".into()))?;
    if !(fps.is_finite() && fps > 0.0) {
        return Err(file_bad(format!("framesPerSecond {fps} must be positive")));
    }
    Ok(UsdaCache { path: path.to_path_buf(), fps, times, prims })
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
        if !p.is_finite() {
            return Err(format!("point ({xyz}) is not finite"));
        }
        out.push(p);
    }
    Ok(out)
}
