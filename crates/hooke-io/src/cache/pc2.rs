//! PC2 (Point Cache 2) writer and reader, with one rest-mesh OBJ per body.
//!
//! Per body (file names from [`file_stems`], e.g. `rope_1` for body `"rope 1"`):
//!
//! * `<dir>/<body>.pc2`, little-endian (the layout of 3ds Max's Point Cache 2, read by
//!   Blender's Mesh Cache modifier):
//!
//!   | offset | type | value |
//!   |---|---|---|
//!   | 0 | `char[12]` | `"POINTCACHE2\0"` |
//!   | 12 | `i32` | version = 1 |
//!   | 16 | `i32` | numPoints = vertices of the body (its particles, or its mesh file's vertices) |
//!   | 20 | `f32` | startFrame = 0 |
//!   | 24 | `f32` | sampleRate = 1 (one sample per frame) |
//!   | 28 | `i32` | numSamples = frames written |
//!   | 32 | `f32 × 3 × numPoints × numSamples` | x, y, z (m, Y up), frame-major |
//!
//! * `<dir>/<body>.obj`: the rest mesh to apply the cache to — the frame-0 positions in the
//!   same vertex order, with `vt` UVs and `f` triangles (`f a/a b/b c/c` with UVs) for a cloth,
//!   or one `l` polyline for a rope. A cloth with a vertex map is written in its mesh file's
//!   vertex order (see the [parent module](super)).
//!
//! Samples are streamed to a temporary `.pc2` written with numSamples = 0; `finish()` patches
//! the count, then renames every file into place.

use super::atomic::AtomicFile;
use super::obj::{push_vertices, topology};
use super::{BodyOutput, CacheError, CacheSpec, CacheWriter, FrameCounter, body_outputs, file_stems, io_error};
use glam::Vec3;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The 12-byte signature.
const MAGIC: &[u8; 12] = b"POINTCACHE2\0";
/// Header size (bytes).
const HEADER: u64 = 32;
/// Offset of numSamples in the header.
const NUM_SAMPLES_OFFSET: u64 = 28;

/// One body: its cache and its rest mesh.
#[derive(Debug)]
struct Pc2Body {
    /// The body's vertices.
    output: BodyOutput,
    pc2: AtomicFile,
    /// Final path of the rest mesh.
    rest_path: PathBuf,
    /// Rest mesh text after the vertices (`f`/`l` lines).
    rest_topology: String,
    /// `o <name>` line.
    object: String,
    /// The rest mesh, written at frame 0.
    rest: Option<AtomicFile>,
}

/// Writer of [`Format::Pc2`](super::Format::Pc2).
#[derive(Debug)]
pub(crate) struct Pc2Writer {
    bodies: Vec<Pc2Body>,
    counter: FrameCounter,
    bytes: Vec<u8>,
    /// Scratch for the points of a body written in file order.
    gathered: Vec<Vec3>,
}

impl Pc2Writer {
    pub(crate) fn new(spec: &CacheSpec) -> Result<Pc2Writer, CacheError> {
        let model = spec.model;
        let names = file_stems(model.bodies().iter().map(|b| b.name.as_str()));
        let mut bodies = Vec::with_capacity(names.len());
        for (output, name) in body_outputs(spec)?.into_iter().zip(names) {
            let path = spec.dir.join(format!("{name}.pc2"));
            let n = output.vertex_count();
            let points = i32::try_from(n)
                .map_err(|_| CacheError::Invalid(format!("{}: {n} points do not fit a PC2 file", path.display())))?;
            let mut pc2 = AtomicFile::create(&path)?;
            let mut header = Vec::with_capacity(HEADER as usize);
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&1i32.to_le_bytes());
            header.extend_from_slice(&points.to_le_bytes());
            header.extend_from_slice(&0f32.to_le_bytes());
            header.extend_from_slice(&1f32.to_le_bytes());
            header.extend_from_slice(&0i32.to_le_bytes());
            pc2.write_all(&header)?;
            bodies.push(Pc2Body {
                rest_topology: topology(&output, 0, 0),
                output,
                pc2,
                rest_path: spec.dir.join(format!("{name}.obj")),
                object: format!("o {name}\n"),
                rest: None,
            });
        }
        let target = spec.dir.to_path_buf();
        Ok(Pc2Writer {
            bodies,
            counter: FrameCounter::new(target, model.particle_count()),
            bytes: Vec::new(),
            gathered: Vec::new(),
        })
    }
}

impl CacheWriter for Pc2Writer {
    fn write_frame(&mut self, frame: usize, positions: &[Vec3]) -> Result<(), CacheError> {
        if i32::try_from(frame).is_err() || frame == i32::MAX as usize {
            return Err(CacheError::Invalid(format!("PC2 cache: frame {frame} exceeds the format's sample count")));
        }
        self.counter.begin(frame, positions)?;
        for body in &mut self.bodies {
            let pts = body.output.points(positions, &mut self.gathered);
            self.bytes.clear();
            for p in pts {
                for c in p.to_array() {
                    self.bytes.extend_from_slice(&c.to_le_bytes());
                }
            }
            body.pc2.write_all(&self.bytes)?;
            if frame == 0 {
                let cache = body.pc2.final_path().file_name().unwrap_or_default().to_string_lossy();
                let mut text = format!("# hooke rest mesh of {cache}; units m, Y up\n");
                text.push_str(&body.object);
                push_vertices(&mut text, pts);
                text.push_str(&body.rest_topology);
                let mut rest = AtomicFile::create(&body.rest_path)?;
                rest.write_all(text.as_bytes())?;
                rest.close()?;
                body.rest = Some(rest);
            }
        }
        self.counter.end();
        Ok(())
    }

    fn redirect(&mut self, dir: &Path) {
        for body in &mut self.bodies {
            body.pc2.retarget(dir);
            if let Some(name) = body.rest_path.file_name() {
                body.rest_path = dir.join(name);
            }
            if let Some(rest) = &mut body.rest {
                rest.retarget(dir);
            }
        }
    }

    fn finish(self: Box<Self>) -> Result<Vec<PathBuf>, CacheError> {
        let mut this = *self;
        this.counter.check_finish()?;
        let samples = this.counter.frames() as i32; // < i32::MAX, checked in write_frame
        // Complete every file first, then rename them all: the window in which some files
        // are new and others old stays as short as possible.
        for body in &mut this.bodies {
            body.pc2.patch(NUM_SAMPLES_OFFSET, &samples.to_le_bytes())?;
            body.pc2.close()?;
        }
        let mut paths = Vec::with_capacity(2 * this.bodies.len());
        for body in this.bodies {
            paths.push(body.pc2.commit()?);
            let rest = body.rest.ok_or_else(|| {
                CacheError::Invalid(format!("{}: rest mesh missing", body.rest_path.display())) // frame 0 was written
            })?;
            paths.push(rest.commit()?);
        }
        Ok(paths)
    }
}

/// Reads a PC2 file: returns (numPoints, frames), each frame `numPoints` positions (m).
///
/// # Errors
/// [`CacheError::Io`] if the file cannot be read; [`CacheError::Invalid`] naming the file if
/// the signature, version or counts are wrong or the size does not match the header.
#[allow(clippy::type_complexity)] // the (points, frames) pair is the documented API
pub fn read_pc2(path: impl AsRef<Path>) -> Result<(usize, Vec<Vec<[f32; 3]>>), CacheError> {
    let path = path.as_ref();
    let bad = |what: String| CacheError::Invalid(format!("{}: {what}", path.display()));
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let len = file.metadata().map_err(|e| io_error(path, e))?.len();
    let mut r = BufReader::new(file);
    if len < HEADER {
        return Err(bad(format!("{len} bytes is too short for a PC2 header")));
    }
    let mut header = [0u8; HEADER as usize];
    r.read_exact(&mut header).map_err(|e| io_error(path, e))?;
    let i32_at = |o: usize| i32::from_le_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]);
    if &header[..12] != MAGIC {
        return Err(bad("not a PC2 file (no POINTCACHE2 signature)".into()));
    }
    if i32_at(12) != 1 {
        return Err(bad(format!("unsupported PC2 version {}", i32_at(12))));
    }
    let (points, samples) = (i32_at(16), i32_at(28));
    let (Ok(points), Ok(samples)) = (usize::try_from(points), usize::try_from(samples)) else {
        return Err(bad(format!("negative count (points {points}, samples {samples})")));
    };
    let expected = HEADER as u128 + 12 * points as u128 * samples as u128;
    if expected != len as u128 {
        return Err(bad(format!("{len} bytes, expected {expected} for {samples} samples of {points} points")));
    }
    let mut frames = Vec::with_capacity(samples);
    let mut raw = vec![0u8; 12 * points];
    for _ in 0..samples {
        r.read_exact(&mut raw).map_err(|e| io_error(path, e))?;
        let f32_at = |o: usize| f32::from_le_bytes([raw[o], raw[o + 1], raw[o + 2], raw[o + 3]]);
        frames.push((0..points).map(|k| [f32_at(12 * k), f32_at(12 * k + 4), f32_at(12 * k + 8)]).collect());
    }
    Ok((points, frames))
}
