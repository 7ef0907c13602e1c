//! Test support shared by hooke-io's and hooke-cli's tests: a summary reader for the `.usda`
//! caches hooke writes (its own output only — a structural check, not a USD reader) and Pixar's
//! reader through `python3 -c "from pxr import …"`, which is the real check: mandatory where
//! `HOOKE_REQUIRE_USD=1` (CI), skipped with a printed reason elsewhere; and Blender's USD
//! importer through `bpy` (Blender as a Python module), mandatory where
//! `HOOKE_REQUIRE_BLENDER=1` (CI).
#![allow(dead_code)]

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Command;

/// What reading a summary can fail with.
#[derive(Debug)]
pub enum Error {
    /// The file cannot be read.
    Io(String),
    /// It is not what hooke writes.
    Invalid(String),
}

/// One animated prim of a `.usda` cache, as read back by [`read_usda_summary`].
#[allow(dead_code)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimSummary {
    /// Prim name (the sanitised body name, e.g. `rope_1` for body `"rope 1"`).
    pub name: String,
    /// Prim type: `"Mesh"` (cloth) or `"BasisCurves"` (rope).
    pub type_name: String,
    /// Number of points of each `points` time sample, in time order (one per frame).
    pub points_per_frame: Vec<usize>,
    /// Number of faces (`faceVertexCounts` entries); 0 for curves.
    pub face_count: usize,
}

/// Reads the animated prims of a `.usda` cache written by this module.
///
/// A small line-based parser of this module's own layout (one time sample per line), not a
/// general USD reader: it returns every `Mesh` and `BasisCurves` prim in file order with the
/// point count of each `points` time sample.
///
/// # Errors
/// [`CacheError::Io`] if the file cannot be read; [`CacheError::Invalid`] naming the file and
/// line if it does not start with `#usda 1.0` or a time sample is malformed.
pub fn read_usda_summary(path: impl AsRef<Path>) -> Result<Vec<PrimSummary>, Error> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    let bad = |line: usize, what: &str| Error::Invalid(format!("{}:{line}: {what}", path.display()));
    let mut prims: Vec<PrimSummary> = Vec::new();
    let mut samples: Vec<(f64, usize)> = Vec::new();
    let mut current: Option<PrimSummary> = None;
    // Inside a `.timeSamples = {` block: `Some(true)` for points, `Some(false)` for others.
    let mut block: Option<bool> = None;
    let mut header = false;
    let close = |current: &mut Option<PrimSummary>, samples: &mut Vec<(f64, usize)>, prims: &mut Vec<PrimSummary>| {
        if let Some(mut p) = current.take() {
            samples.sort_by(|a, b| a.0.total_cmp(&b.0));
            p.points_per_frame = samples.drain(..).map(|(_, n)| n).collect();
            prims.push(p);
        }
        samples.clear();
    };
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
        let n = i + 1;
        let t = line.trim();
        if i == 0 {
            if !t.starts_with("#usda 1.0") {
                return Err(bad(n, "not a USD text file (no `#usda 1.0` header)"));
            }
            header = true;
            continue;
        }
        if let Some(points) = block {
            if t == "}" {
                block = None;
            } else if points && current.is_some() {
                let (time, rest) = t.split_once(':').ok_or_else(|| bad(n, "time sample without `time:`"))?;
                let time: f64 = time.trim().parse().map_err(|_| bad(n, "time code is not a number"))?;
                let rest = rest.trim().trim_end_matches(',').trim_end();
                if !(rest.starts_with('[') && rest.ends_with(']')) {
                    return Err(bad(n, "time sample is not an array `[…]`"));
                }
                samples.push((time, rest.matches('(').count()));
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("def ") {
            close(&mut current, &mut samples, &mut prims);
            let (type_name, rest) = rest.split_once(' ').ok_or_else(|| bad(n, "`def` without a type"))?;
            let name = rest.trim().trim_end_matches('(').trim().trim_matches('"');
            if matches!(type_name, "Mesh" | "BasisCurves") {
                current = Some(PrimSummary {
                    name: name.to_string(),
                    type_name: type_name.to_string(),
                    points_per_frame: Vec::new(),
                    face_count: 0,
                });
            }
        } else if t.ends_with('{') && t.contains(".timeSamples") {
            block = Some(t.contains(" points.timeSamples"));
        } else if let (Some(p), Some(rest)) = (current.as_mut(), t.strip_prefix("int[] faceVertexCounts =")) {
            let inner = rest.trim().trim_start_matches('[').trim_end_matches(']').trim();
            p.face_count = if inner.is_empty() { 0 } else { inner.split(',').count() };
        }
    }
    if !header {
        return Err(bad(1, "empty file, not a USD text file"));
    }
    if block.is_some() {
        return Err(Error::Invalid(format!("{}: ends inside a time-sample block", path.display())));
    }
    close(&mut current, &mut samples, &mut prims);
    Ok(prims)
}

/// Runs `script` (Python, with `from pxr import …`) on `args`; returns its standard output.
/// `None` (with a printed reason) when python3 or usd-core is missing, unless
/// `HOOKE_REQUIRE_USD=1`, which turns that into a failure with an install hint. A script that
/// fails for another reason fails the test.
pub fn pxr(script: &str, args: &[&str]) -> Option<String> {
    python_with("pxr", "HOOKE_REQUIRE_USD", "python3 -m pip install usd-core", script, args)
}

/// Runs `script` (Python, with `import bpy`: Blender as a module) on `args`; returns its
/// standard output. `None` (with a printed reason) when python3 or bpy is missing, unless
/// `HOOKE_REQUIRE_BLENDER=1`, which turns that into a failure with an install hint. A script
/// that fails for another reason fails the test.
pub fn blender(script: &str, args: &[&str]) -> Option<String> {
    python_with("bpy", "HOOKE_REQUIRE_BLENDER", "python3 -m pip install bpy==5.0.1", script, args)
}

/// Runs `script` with python3 when `module` imports; skips (or fails, where `required_by` is
/// set to 1) when it does not.
fn python_with(module: &str, required_by: &str, install: &str, script: &str, args: &[&str]) -> Option<String> {
    let required = std::env::var(required_by).is_ok_and(|v| v == "1");
    let probe = Command::new("python3").args(["-c", &format!("import {module}")]).output();
    match probe {
        Ok(o) if o.status.success() => {}
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").to_string(),
                Err(e) => format!("no python3: {e}"),
            };
            assert!(
                !required,
                "{required_by}=1 but python3 cannot import {module} ({why}); install it with `{install}`"
            );
            println!("skipped the {module} check (python3 cannot import it: {why})");
            return None;
        }
    }
    let out = Command::new("python3").arg("-c").arg(script).args(args).output().expect("python3 runs");
    assert!(out.status.success(), "{module} script failed:\n{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
