//! USD text (`.usda`) cache writer (read back by [`read_usda`](super::read_usda)).
//!
//! Layout of `<dir>/<scene_name>.usda` (see the [parent module](super) for the reference):
//!
//! ```text
//! #usda 1.0
//! (
//!     defaultPrim = "World"
//!     endTimeCode = 2
//!     framesPerSecond = 30
//!     metersPerUnit = 1
//!     startTimeCode = 0
//!     timeCodesPerSecond = 30
//!     upAxis = "Y"
//! )
//!
//! def Xform "World"
//! {
//!     def Mesh "cloth"
//!     {
//!         int[] faceVertexCounts = [3, 3, …]
//!         int[] faceVertexIndices = [0, 5, 1, …]          (local to the body)
//!         uniform bool doubleSided = 1
//!         uniform token orientation = "rightHanded"
//!         uniform token subdivisionScheme = "none"
//!         texCoord2f[] primvars:st = [(0, 0), …] (      (if the cloth has UVs)
//!             interpolation = "vertex"
//!         )
//!         float3[] extent.timeSamples = { 0: [(min), (max)], … }
//!         point3f[] points.timeSamples = { 0: [(x, y, z), …], 1: […], … }
//!     }
//!     (a cloth that tears — `CacheWriter::set_model` — has its faceVertexCounts,
//!      faceVertexIndices and primvars:st time-sampled instead, one sample at frame 0 and one
//!      at each frame its topology changed; its points change in number with it)
//!     def BasisCurves "rope_1"
//!     {
//!         int[] curveVertexCounts = [7]
//!         uniform token type = "linear"
//!         uniform token wrap = "nonperiodic"
//!         float[] widths = [0.01, …] ( interpolation = "vertex" )
//!         float3[] extent.timeSamples = { … }
//!         point3f[] points.timeSamples = { … }
//!     }
//! }
//! ```
//!
//! While frames arrive, every prim's `points` and `extent` samples are appended to two scratch
//! files shared by all prims (two open files whatever the number of bodies), each sample's
//! place remembered; [`CacheWriter::finish`] writes the header (which needs the last frame),
//! each prim's static part and a copy of its samples to a temporary file, then renames it into
//! place.
//! Floats are printed in Rust's shortest round-trip form, so `f32` values read back exactly.

use super::atomic::AtomicFile;
use super::{BodyOutput, CacheError, CacheSpec, CacheWriter, FrameCounter, body_outputs, usd_identifiers};
use glam::Vec3;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A mesh's topology from a frame on: the frame, and the arrays (`[…]`) of faceVertexCounts,
/// faceVertexIndices and, if it has UVs, primvars:st.
type TopologySample = (usize, String, String, Option<String>);

/// One animated prim: a cloth (`Mesh`) or a rope (`BasisCurves`).
#[derive(Debug)]
struct Prim {
    /// The body's vertices.
    output: BodyOutput,
    /// Half-width of each rope vertex (m), to pad the extent; empty for cloth.
    radius: Vec<f32>,
    /// The `def` line and its `{`.
    def: String,
    /// A mesh's topology from each frame it changed on (frame 0 first): the frame and the
    /// arrays of faceVertexCounts, faceVertexIndices and, if it has UVs, primvars:st. Empty for
    /// a rope.
    topology: Vec<TopologySample>,
    /// The properties that never change (after the mesh topology, before the time samples).
    head: String,
    /// Where each frame's `points` sample lies in the writer's points scratch file (offset,
    /// length in bytes).
    points: Vec<(u64, u32)>,
    /// The same for the `extent` samples.
    extent: Vec<(u64, u32)>,
}

/// A scratch file being appended to, with the number of bytes written so far.
#[derive(Debug)]
struct Scratch {
    file: AtomicFile,
    written: u64,
}

impl Scratch {
    /// Appends `bytes`; returns where they lie (offset, length).
    fn append(&mut self, bytes: &[u8]) -> Result<(u64, u32), CacheError> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| CacheError::Invalid(format!("a time sample of {} bytes (4 GiB at most)", bytes.len())))?;
        self.file.write_all(bytes)?;
        let at = self.written;
        self.written += u64::from(len);
        Ok((at, len))
    }
}

/// Writer of [`Format::Usda`](super::Format::Usda).
#[derive(Debug)]
pub(crate) struct UsdaWriter {
    path: PathBuf,
    scene_name: String,
    fps: f32,
    prims: Vec<Prim>,
    /// Every prim's `points` samples, frame after frame.
    points: Scratch,
    /// Every prim's `extent` samples.
    extent: Scratch,
    counter: FrameCounter,
    buf: String,
    /// Scratch for the points of a body written in file order.
    gathered: Vec<Vec3>,
}

impl UsdaWriter {
    pub(crate) fn new(spec: &CacheSpec) -> Result<UsdaWriter, CacheError> {
        let model = spec.model;
        let file_name = format!("{}.usda", spec.scene_name);
        let path = spec.dir.join(&file_name);
        let names = usd_identifiers(model.bodies().iter().map(|b| b.name.as_str()));
        let mut prims = Vec::with_capacity(names.len());
        for (output, name) in body_outputs(spec)?.into_iter().zip(names) {
            let range = output.range.clone();
            let mut head = String::new();
            let mut radius = Vec::new();
            let mut topology = Vec::new();
            let def;
            if output.cloth {
                def = format!("    def Mesh \"{name}\"\n    {{\n");
                let (counts, indices, uvs) = mesh_arrays(&output);
                topology.push((0, counts, indices, uvs));
                head.push_str(
                    "        uniform bool doubleSided = 1\n        uniform token orientation = \"rightHanded\"\n        \
                     uniform token subdivisionScheme = \"none\"\n",
                );
            } else {
                def = format!("    def BasisCurves \"{name}\"\n    {{\n");
                radius = model.particle_radius()[range.clone()].to_vec();
                let _ = write!(
                    head,
                    "        int[] curveVertexCounts = [{}]\n        \
                     uniform token type = \"linear\"\n        uniform token wrap = \"nonperiodic\"\n        \
                     float[] widths = [",
                    range.len()
                );
                join_floats(&mut head, radius.iter().map(|r| 2.0 * r));
                head.push_str("] (\n            interpolation = \"vertex\"\n        )\n");
            }
            prims.push(Prim { output, radius, def, topology, head, points: Vec::new(), extent: Vec::new() });
        }
        let points = Scratch { file: AtomicFile::scratch(spec.dir, &format!("{file_name}.points"))?, written: 0 };
        let extent = Scratch { file: AtomicFile::scratch(spec.dir, &format!("{file_name}.extent"))?, written: 0 };
        Ok(UsdaWriter {
            points,
            extent,
            counter: FrameCounter::new(path.clone(), model.particle_count()),
            path,
            scene_name: spec.scene_name.to_string(),
            fps: spec.fps,
            prims,
            buf: String::new(),
            gathered: Vec::new(),
        })
    }
}

impl CacheWriter for UsdaWriter {
    fn write_frame(&mut self, frame: usize, positions: &[Vec3]) -> Result<(), CacheError> {
        self.counter.begin(frame, positions)?;
        let buf = &mut self.buf;
        for prim in &mut self.prims {
            let pts = prim.output.points(positions, &mut self.gathered);
            buf.clear();
            let _ = write!(buf, "            {frame}: [");
            for (i, p) in pts.iter().enumerate() {
                if i > 0 {
                    buf.push_str(", ");
                }
                push_vec3(buf, *p);
            }
            buf.push_str("],\n");
            prim.points.push(self.points.append(buf.as_bytes())?);

            let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
            for (i, &p) in pts.iter().enumerate() {
                // UsdGeomCurves extents include the half-widths; mesh extents are the points'.
                let r = Vec3::splat(prim.radius.get(i).copied().unwrap_or(0.0));
                lo = lo.min(p - r);
                hi = hi.max(p + r);
            }
            if pts.is_empty() {
                (lo, hi) = (Vec3::ZERO, Vec3::ZERO);
            }
            buf.clear();
            let _ = write!(buf, "            {frame}: [");
            push_vec3(buf, lo);
            buf.push_str(", ");
            push_vec3(buf, hi);
            buf.push_str("],\n");
            prim.extent.push(self.extent.append(buf.as_bytes())?);
        }
        self.counter.end();
        Ok(())
    }

    fn set_model(&mut self, model: &hooke::Model) -> Result<(), CacheError> {
        let old: Vec<BodyOutput> = self.prims.iter().map(|p| p.output.clone()).collect();
        let outputs = super::retopologized(model, &old)?;
        let frame = self.counter.frames();
        for (prim, output) in self.prims.iter_mut().zip(outputs) {
            if output.cloth {
                let (counts, indices, uvs) = mesh_arrays(&output);
                let last = prim.topology.last().map(|(_, c, i, u)| (c, i, u));
                if last != Some((&counts, &indices, &uvs)) {
                    // A change at a frame already sampled replaces that sample.
                    prim.topology.retain(|(f, ..)| *f != frame);
                    prim.topology.push((frame, counts, indices, uvs));
                }
            }
            prim.output = output;
        }
        self.counter.set_particles(model.particle_count());
        Ok(())
    }

    fn redirect(&mut self, dir: &Path) {
        if let Some(name) = self.path.file_name() {
            self.path = dir.join(name);
        }
    }

    fn finish(self: Box<Self>) -> Result<Vec<PathBuf>, CacheError> {
        let mut this = *self;
        this.counter.check_finish()?;
        let mut out = AtomicFile::create(&this.path)?;
        let fps = this.fps;
        let mut head = String::new();
        let _ = write!(
            head,
            "#usda 1.0\n(\n    defaultPrim = \"World\"\n    doc = \"{}\"\n    endTimeCode = {}\n    \
             framesPerSecond = {fps}\n    metersPerUnit = 1\n    startTimeCode = 0\n    \
             timeCodesPerSecond = {fps}\n    upAxis = \"Y\"\n)\n\ndef Xform \"World\"\n{{\n",
            usd_escape(&format!("hooke cache of scene \"{}\"", this.scene_name)),
            this.counter.frames() - 1,
        );
        out.write_all(head.as_bytes())?;
        for prim in &mut this.prims {
            out.write_all(prim.def.as_bytes())?;
            out.write_all(topology_text(&prim.topology).as_bytes())?;
            out.write_all(prim.head.as_bytes())?;
            out.write_all(b"        float3[] extent.timeSamples = {\n")?;
            this.extent.file.copy_ranges_to(&prim.extent, &mut out)?;
            out.write_all(b"        }\n        point3f[] points.timeSamples = {\n")?;
            this.points.file.copy_ranges_to(&prim.points, &mut out)?;
            out.write_all(b"        }\n    }\n")?;
        }
        out.write_all(b"}\n")?;
        let path = out.commit()?;
        Ok(vec![path])
        // `this` drops here, removing the scratch files.
    }
}

/// A mesh's faceVertexCounts, faceVertexIndices and primvars:st arrays (`[…]`).
fn mesh_arrays(output: &BodyOutput) -> (String, String, Option<String>) {
    let tris = &output.triangles;
    let (mut counts, mut indices) = (String::from("["), String::from("["));
    join(&mut counts, tris.iter().map(|_| 3u32));
    join(&mut indices, tris.iter().flatten().copied());
    counts.push(']');
    indices.push(']');
    let uvs = output.uvs.as_ref().map(|uvs| {
        let mut s = String::from("[");
        for (i, uv) in uvs.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "({:?}, {:?})", uv.x, uv.y);
        }
        s.push(']');
        s
    });
    (counts, indices, uvs)
}

/// A mesh's topology properties: plain values when it never changed, time samples when it did.
fn topology_text(topology: &[TopologySample]) -> String {
    let mut s = String::new();
    match topology {
        [] => {}
        [(_, counts, indices, uvs)] => {
            let _ =
                write!(s, "        int[] faceVertexCounts = {counts}\n        int[] faceVertexIndices = {indices}\n");
            if let Some(uvs) = uvs {
                // One UV per point (the texture does not move on the cloth).
                let _ = write!(
                    s,
                    "        texCoord2f[] primvars:st = {uvs} (\n            interpolation = \"vertex\"\n        )\n"
                );
            }
        }
        samples => {
            let block = |s: &mut String, declaration: &str, pick: &dyn Fn(&TopologySample) -> Option<String>| {
                let _ = writeln!(s, "        {declaration}.timeSamples = {{");
                for sample in samples {
                    if let Some(v) = pick(sample) {
                        let _ = writeln!(s, "            {}: {v},", sample.0);
                    }
                }
                s.push_str("        }\n");
            };
            block(&mut s, "int[] faceVertexCounts", &|t| Some(t.1.clone()));
            block(&mut s, "int[] faceVertexIndices", &|t| Some(t.2.clone()));
            if samples[0].3.is_some() {
                s.push_str("        texCoord2f[] primvars:st (\n            interpolation = \"vertex\"\n        )\n");
                block(&mut s, "texCoord2f[] primvars:st", &|t| t.3.clone());
            }
        }
    }
    s
}

fn push_vec3(buf: &mut String, p: Vec3) {
    // `{:?}` is Rust's shortest round-trip form, with an exponent for very large or small
    // values (never a long run of zeros) and always a `.` or `e` (never read as an integer).
    let _ = write!(buf, "({:?}, {:?}, {:?})", p.x, p.y, p.z);
}

fn join(buf: &mut String, values: impl Iterator<Item = u32>) {
    for (i, v) in values.enumerate() {
        if i > 0 {
            buf.push_str(", ");
        }
        let _ = write!(buf, "{v}");
    }
}

fn join_floats(buf: &mut String, values: impl Iterator<Item = f32>) {
    for (i, v) in values.enumerate() {
        if i > 0 {
            buf.push_str(", ");
        }
        let _ = write!(buf, "{v:?}");
    }
}

/// Escapes a string for a double-quoted USD string literal.
fn usd_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push('_'),
            c => out.push(c),
        }
    }
    out
}
