//! Wavefront OBJ sequence writer, and the OBJ text shared with the PC2 rest meshes.
//!
//! Frame `f` goes to `<dir>/<scene_name>_<f:04>.obj` (more digits past frame 9999):
//!
//! ```text
//! # hooke cache: scene "flag", frame 3, time 0.1 s; units m, Y up
//! o cloth
//! v 0.1 0.0 -0.2
//! …
//! vt 0.0 0.25                  (a cloth with UVs: one per vertex)
//! …
//! f 1/1 6/6 2/2                (without UVs: f 1 6 2)
//! …
//! o rope_1
//! v …
//! l 21 22 23 24 25 26 27
//! ```
//!
//! Object names are the body names made into file-safe names ([`file_stems`]); face and
//! line indices are 1-based and count vertices (and texture coordinates) across the whole
//! file. A cloth with a vertex map is written in its mesh file's vertex order (see the
//! [parent module](super)). Each frame is written
//! to a temporary file (`.<scene>_<f:04>.obj.tmp-…`, see [`AtomicFile`]), and the frames are
//! renamed into place together when the run finishes ([`CacheWriter::finish`]), after which the
//! frames of an earlier, longer run of the same scene past the new last one are removed. A run
//! that fails (a full disk, a `--strict` stop, a tear that cannot be made: the writer dropped
//! without `finish`) removes its temporary frames and leaves an earlier run's sequence as it
//! was, as the single-file caches do.

use super::atomic::AtomicFile;
use super::{BodyOutput, CacheError, CacheSpec, CacheWriter, FrameCounter, body_outputs, file_stems};
use glam::Vec3;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One body of the sequence.
#[derive(Debug)]
struct ObjBody {
    /// `o <name>` line.
    object: String,
    /// The body's vertices.
    output: BodyOutput,
    /// `vt` lines and `f`/`l` lines with file-global indices (constant across frames).
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
    /// The frames written so far, complete and closed, under their temporary names until
    /// [`CacheWriter::finish`] renames them (dropped uncommitted, they are removed).
    pending: Vec<AtomicFile>,
    buf: String,
    /// Scratch for the points of a body written in file order.
    gathered: Vec<Vec3>,
}

impl ObjWriter {
    pub(crate) fn new(spec: &CacheSpec) -> Result<ObjWriter, CacheError> {
        let model = spec.model;
        let names = file_stems(model.bodies().iter().map(|b| b.name.as_str()));
        let mut bodies = Vec::with_capacity(names.len());
        let (mut base, mut uv_base) = (0u64, 0u64);
        for (output, name) in body_outputs(spec)?.into_iter().zip(names) {
            let topology = topology(&output, base, uv_base);
            base += output.vertex_count() as u64;
            uv_base += output.uvs.as_ref().map_or(0, |uv| uv.len() as u64);
            bodies.push(ObjBody { object: format!("o {name}\n"), output, topology });
        }
        Ok(ObjWriter {
            dir: spec.dir.to_path_buf(),
            scene_name: spec.scene_name.to_string(),
            fps: spec.fps,
            bodies,
            counter: FrameCounter::new(spec.dir.to_path_buf(), model.particle_count()),
            pending: Vec::new(),
            buf: String::new(),
            gathered: Vec::new(),
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
            push_vertices(buf, body.output.points(positions, &mut self.gathered));
            buf.push_str(&body.topology);
        }
        let path = self.dir.join(format!("{}_{frame:04}.obj", self.scene_name));
        let mut file = AtomicFile::create(&path)?;
        file.write_all(buf.as_bytes())?;
        file.close()?;
        self.pending.push(file);
        self.counter.end();
        Ok(())
    }

    fn set_model(&mut self, model: &hooke::Model) -> Result<(), CacheError> {
        let old: Vec<BodyOutput> = self.bodies.iter().map(|b| b.output.clone()).collect();
        let outputs = super::retopologized(model, &old)?;
        let (mut base, mut uv_base) = (0u64, 0u64);
        for (body, output) in self.bodies.iter_mut().zip(outputs) {
            body.topology = topology(&output, base, uv_base);
            base += output.vertex_count() as u64;
            uv_base += output.uvs.as_ref().map_or(0, |uv| uv.len() as u64);
            body.output = output;
        }
        self.counter.set_particles(model.particle_count());
        Ok(())
    }

    fn redirect(&mut self, dir: &Path) {
        self.dir = dir.to_path_buf();
        for file in &mut self.pending {
            file.retarget(dir);
        }
    }

    /// Renames the frames into place, then removes frames `<scene>_NNNN.obj` beyond the last
    /// one, left in the directory by an earlier, longer run of the same scene (they would
    /// otherwise be read as part of this sequence).
    ///
    /// # Errors
    /// A frame's final name taken by a folder is refused before any frame is renamed (the
    /// folder keeps the earlier sequence). Should a rename fail part-way all the same, the
    /// earlier run's frames from that one on are removed, so that the folder holds one run's
    /// first frames, not two runs' frames mixed, and the error says so.
    fn finish(mut self: Box<Self>) -> Result<Vec<PathBuf>, CacheError> {
        self.counter.check_finish()?;
        if let Some(taken) = self.pending.iter().map(|f| f.final_path()).find(|p| p.is_dir()) {
            return Err(CacheError::Invalid(format!("{}: a folder has the name of a frame", taken.display())));
        }
        let mut written = Vec::with_capacity(self.pending.len());
        for file in std::mem::take(&mut self.pending) {
            match file.commit() {
                Ok(path) => written.push(path),
                Err(e) => {
                    remove_later_frames(&self.dir, &self.scene_name, written.len());
                    return Err(CacheError::Invalid(format!(
                        "{e}; the sequence holds this run's first {} frames only",
                        written.len()
                    )));
                }
            }
        }
        remove_later_frames(&self.dir, &self.scene_name, written.len());
        Ok(written)
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

/// The `vt u v` lines and `f a/ta b/tb c/tc` lines of a cloth with UVs, the `f a b c` lines
/// of one without, or the `l …` line of a rope; 1-based, the body's first vertex being number
/// `base + 1` in the file and its first texture coordinate number `uv_base + 1`.
pub(crate) fn topology(output: &BodyOutput, base: u64, uv_base: u64) -> String {
    let mut s = String::new();
    if output.cloth {
        if let Some(uvs) = &output.uvs {
            for uv in uvs {
                let _ = writeln!(s, "vt {:?} {:?}", uv.x, uv.y);
            }
        }
        for tri in &output.triangles {
            let [a, b, c] = tri.map(|v| base + v as u64 + 1);
            if output.uvs.is_some() {
                let [ta, tb, tc] = tri.map(|v| uv_base + v as u64 + 1);
                let _ = writeln!(s, "f {a}/{ta} {b}/{tb} {c}/{tc}");
            } else {
                let _ = writeln!(s, "f {a} {b} {c}");
            }
        }
    } else {
        s.push('l');
        for k in 0..output.vertex_count() as u64 {
            let _ = write!(s, " {}", base + k + 1);
        }
        s.push('\n');
    }
    s
}
