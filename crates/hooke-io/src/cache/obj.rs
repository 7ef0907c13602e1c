//! Wavefront OBJ sequence writer, and the OBJ text shared with the PC2 rest meshes.
//!
//! Frame `f` goes to `<dir>/<scene_name>_<f:04>.obj` (more digits past frame 9999):
//!
//! ```text
//! # hooke cache: scene "flag", frame 3, time 0.1 s; units m, Y up
//! o cloth
//! v 0.1 0.0 -0.2
//! …
//! f 1 6 2
//! …
//! o rope_1
//! v …
//! l 21 22 23 24 25 26 27
//! ```
//!
//! Object names are the body names made into file-safe names ([`file_stems`]); face and
//! line indices are 1-based and count vertices across the whole file. Each frame is written
//! to a temporary file and renamed into place, so a crash leaves only complete frames.

use super::atomic::AtomicFile;
use super::{CacheError, CacheSpec, CacheWriter, FrameCounter, body_range, file_stems, local_triangles};
use glam::Vec3;
use hooke::{Body, Model};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One body of the sequence.
#[derive(Debug)]
struct ObjBody {
    /// `o <name>` line.
    object: String,
    /// Particle range in the position arrays.
    range: Range<usize>,
    /// `f`/`l` lines with file-global indices (constant across frames).
    topology: String,
}

/// Writer of [`Format::Obj`](super::Format::Obj).
#[derive(Debug)]
pub(crate) struct ObjWriter {
    dir: PathBuf,
    scene_name: String,
    fps: f32,
    bodies: Vec<ObjBody>,
    counter: FrameCounter,
    written: Vec<PathBuf>,
    buf: String,
}

impl ObjWriter {
    pub(crate) fn new(spec: &CacheSpec) -> Result<ObjWriter, CacheError> {
        let model = spec.model;
        let names = file_stems(model.bodies().iter().map(|b| b.name.as_str()));
        let mut bodies = Vec::with_capacity(names.len());
        let mut base = 0u64;
        for (body, name) in model.bodies().iter().zip(names) {
            let range = body_range(model, body)?;
            let topology = topology(model, body, base)?;
            base += range.len() as u64;
            bodies.push(ObjBody { object: format!("o {name}\n"), range, topology });
        }
        Ok(ObjWriter {
            dir: spec.dir.to_path_buf(),
            scene_name: spec.scene_name.to_string(),
            fps: spec.fps,
            bodies,
            counter: FrameCounter::new(spec.dir.to_path_buf(), model.particle_count()),
            written: Vec::new(),
            buf: String::new(),
        })
    }
}

impl CacheWriter for ObjWriter {
    fn write_frame(&mut self, frame: usize, positions: &[Vec3]) -> Result<(), CacheError> {
        self.counter.begin(frame, positions)?;
        let buf = &mut self.buf;
        buf.clear();
        let _ = writeln!(
            buf,
            "# hooke cache: scene \"{}\", frame {frame}, time {} s; units m, Y up",
            self.scene_name.escape_debug(),
            frame as f32 / self.fps
        );
        for body in &self.bodies {
            buf.push_str(&body.object);
            push_vertices(buf, &positions[body.range.clone()]);
            buf.push_str(&body.topology);
        }
        let path = self.dir.join(format!("{}_{frame:04}.obj", self.scene_name));
        let mut file = AtomicFile::create(&path)?;
        file.write_all(buf.as_bytes())?;
        self.written.push(file.commit()?);
        self.counter.end();
        Ok(())
    }

    /// Also removes frames `<scene>_NNNN.obj` beyond the last one written, left in the
    /// directory by an earlier, longer run of the same scene (they would otherwise be read as
    /// part of this sequence).
    fn finish(self: Box<Self>) -> Result<Vec<PathBuf>, CacheError> {
        self.counter.check_finish()?;
        remove_later_frames(&self.dir, &self.scene_name, self.written.len());
        Ok(self.written)
    }
}

/// Removes `dir/<scene>_NNNN.obj` for every frame number NNNN ≥ `frames` (best effort: a file
/// that cannot be removed stays).
fn remove_later_frames(dir: &Path, scene: &str, frames: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let frame = name
            .to_str()
            .and_then(|n| n.strip_prefix(scene))
            .and_then(|n| n.strip_prefix('_'))
            .and_then(|n| n.strip_suffix(".obj"))
            .filter(|digits| digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<usize>().ok());
        if frame.is_some_and(|f| f >= frames) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Appends `v x y z` lines (shortest round-trip floats).
pub(crate) fn push_vertices(buf: &mut String, points: &[Vec3]) {
    for p in points {
        let _ = writeln!(buf, "v {:?} {:?} {:?}", p.x, p.y, p.z);
    }
}

/// The `f a b c` lines of a cloth or the `l …` line of a rope, 1-based, the body's first
/// vertex being number `base + 1` in the file.
pub(crate) fn topology(model: &Model, body: &Body, base: u64) -> Result<String, CacheError> {
    let mut s = String::new();
    if body.is_cloth() {
        for [a, b, c] in local_triangles(model, body)? {
            let (a, b, c) = (base + a as u64 + 1, base + b as u64 + 1, base + c as u64 + 1);
            let _ = writeln!(s, "f {a} {b} {c}");
        }
    } else {
        s.push('l');
        for k in 0..body_range(model, body)?.len() as u64 {
            let _ = write!(s, " {}", base + k + 1);
        }
        s.push('\n');
    }
    Ok(s)
}
