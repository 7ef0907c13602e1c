//! Scene files: TOML parsed into a typed schema ([`schema`]), validated, and built into a
//! [`Model`], a pin schedule and solver settings.
//!
//! Every error names the file, the table and key (or the line and column for syntax errors),
//! and what is wrong.

mod build;
pub mod schema;
mod solver;

pub use build::check_scene_step;

pub use solver::{
    DEFAULT_RESIDUAL_TOLERANCE, FPS_RANGE, MAX_SPEED_FACTOR, MIN_DERIVED_MAX_SPEED, SolverChoice, auto_tolerance,
    check_fps, derived_max_speed,
};

use crate::mesh::VertexMap;
use glam::Vec3;
use hooke::collision::{Motion, Pose};
use hooke::{Control, Model, Pin};
use schema::{OutputSection, SceneFile};
use std::path::Path;
use std::sync::Arc;

/// The built-in default scene: the article's demo (§5.5), a cloth hung by two corners falling
/// onto a sphere in a light wind. Same text as `scenes/cloth_on_sphere.toml`.
pub const DEFAULT_SCENE: &str = include_str!("../../../../scenes/cloth_on_sphere.toml");

/// A scene file error: which file, and what is wrong where.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct SceneError {
    /// The scene file (or `<built-in>`).
    pub file: String,
    /// Where and what: a key path such as `cloth[0] "flag": rows` and the problem, or the
    /// TOML parser's message with line and column.
    pub message: String,
}

/// A pin with the time (s) it is released, if ever, and its motion, if it moves.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduledPin {
    /// The pin.
    pub pin: Pin,
    /// Release time (s).
    pub release_at: Option<f64>,
    /// A moving pin (`[[cloth.pin_groups]]` with keyframes): its particle is held at `rest`
    /// (m, its initial position) moved by the keyframes' translation at each time.
    pub motion: Option<(Arc<Motion>, Vec3)>,
}

/// A parsed, validated and built scene.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Scene name.
    pub name: String,
    /// The model.
    pub model: Arc<Model>,
    /// Solver and its settings.
    pub solver: SolverChoice,
    /// Frames per second.
    pub fps: f32,
    /// Frames to simulate.
    pub frames: usize,
    /// Wind velocity (m/s).
    pub wind: Vec3,
    /// Gusts on top of the wind.
    pub gust: Option<hooke::Gust>,
    /// Wind and gust of worlds 1, 2, … (`[[world]]`; empty with one world).
    pub world_wind: Vec<(Vec3, Option<hooke::Gust>)>,
    /// Pins and their release times.
    pub pins: Vec<ScheduledPin>,
    /// Scripted cuts, by time (s), earliest first.
    pub cuts: Vec<(f64, hooke::tearing::Cut)>,
    /// Keyframed motion of each collider (indexed like [`Model::colliders`]); `None` for a
    /// collider at rest.
    pub collider_motion: Vec<Option<Arc<Motion>>>,
    /// Output settings from the file.
    pub output: OutputSection,
    /// For each body (indexed like [`Model::bodies`]), the map from its mesh file's vertices to
    /// its particles, or `None` (grids, ropes); may be shorter than the body list. Pass it to
    /// [`CacheSpec::vertex_maps`](crate::cache::CacheSpec) so caches line up with the file.
    pub vertex_maps: Vec<Option<VertexMap>>,
    /// Things that are allowed but probably not meant (e.g. μₖ > μₛ on a collider), one
    /// sentence each naming the file's key; callers print them.
    pub warnings: Vec<String>,
    /// The largest residual stretch strain (dimensionless) a body may keep away from its pins
    /// before `hooke run` warns, or fails with `--strict` (`[solver] residual_tolerance`,
    /// default [`DEFAULT_RESIDUAL_TOLERANCE`]; see [`hooke::diagnostics`]).
    pub residual_tolerance: f32,
    /// Whether a tear by strain is made beside the next frame and taken after it
    /// (`[solver] tear_overlap`, default false; `hooke_sim::Tearing`).
    pub tear_overlap: bool,
}

impl Scene {
    /// The [`Control`] in force at time `t` (s): wind, the pins not yet released, and the
    /// colliders' keyframed motions.
    pub fn control_at(&self, t: f64) -> Control {
        let mut control = Control {
            wind: self.wind,
            gust: self.gust,
            pins: self
                .pins
                .iter()
                .filter(|p| p.release_at.is_none_or(|r| t < r))
                .map(|p| match &p.motion {
                    Some((m, rest)) => Pin { target: Some(*rest + m.translation_at(t)), ..p.pin },
                    None => p.pin,
                })
                .collect(),
            colliders: Vec::new(),
            world_wind: self.world_wind.clone(),
        };
        for (k, m) in self.collider_motion.iter().enumerate() {
            if let Some(m) = m {
                control.animate_collider(k, m.clone());
            }
        }
        control
    }

    /// Each collider's pose at time `t` (s), from its keyframes (at rest without).
    pub fn collider_poses_at(&self, t: f64) -> Vec<Pose> {
        self.collider_motion.iter().map(|m| m.as_ref().map_or(Pose::IDENTITY, |m| m.pose_at(t))).collect()
    }
}

/// The largest scene file read (bytes): a scene is a page of keys; its meshes are files of
/// their own.
pub const MAX_SCENE_FILE: u64 = 64 << 20;

/// Reads and builds a scene file.
///
/// # Errors
/// [`SceneError`] if the file cannot be read or is longer than [`MAX_SCENE_FILE`] (a device
/// such as `/dev/zero` is read only that far), is not valid TOML, has an unknown key or a
/// value out of range, or its model cannot be built (e.g. it would exceed `memory_limit`
/// bytes).
pub fn load(path: &Path, memory_limit: u64) -> Result<Scene, SceneError> {
    let text = read_text(path)?;
    let file = path.display().to_string();
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scene");
    parse(&text, &file, stem, path.parent(), memory_limit)
}

/// The text of the scene file at `path`, read to at most [`MAX_SCENE_FILE`] bytes (a device
/// such as `/dev/zero`, or a pipe that never ends, is read only that far): what [`load`]
/// parses, and what a batch sample's keys are applied to.
///
/// # Errors
/// [`SceneError`] naming the file if it cannot be read, is not UTF-8, or is longer than
/// [`MAX_SCENE_FILE`], and saying what it is if its extension is a mesh's or a cache's (`.obj`,
/// `.pc2`, `.usda`, `.usd`, `.usdc`).
pub fn read_text(path: &Path) -> Result<String, SceneError> {
    use std::io::Read;
    let file = path.display().to_string();
    let cannot =
        |e: std::io::Error| SceneError { file: file.clone(), message: format!("cannot read the scene file: {e}") };
    // What a scene file is often confused with: a mesh, or a cache `hooke run` wrote.
    let other = match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("obj") => Some("an OBJ mesh, not a scene file: name it in a scene's [[cloth]] as `mesh = \"…\"`"),
        Some("pc2") => Some("a PC2 cache, not a scene file"),
        Some("usda" | "usd" | "usdc") => Some("a USD file, not a scene file (`hooke render` draws a .usda cache)"),
        _ => None,
    };
    if let Some(message) = other {
        // (A missing file is said to be missing, whatever its name.)
        if let Err(e) = std::fs::metadata(path) {
            return Err(cannot(e));
        }
        return Err(SceneError { file, message: message.to_string() });
    }
    let mut text = String::new();
    open_scene(path).and_then(|f| f.take(MAX_SCENE_FILE + 1).read_to_string(&mut text)).map_err(cannot)?;
    if text.is_empty() && is_pipe(path) {
        return Err(SceneError { file, message: "a named pipe that nothing wrote to: not a scene file".into() });
    }
    if text.len() as u64 > MAX_SCENE_FILE {
        return Err(SceneError {
            file,
            message: format!("longer than {} MiB: not a scene file", MAX_SCENE_FILE >> 20),
        });
    }
    Ok(text)
}

/// Opens a scene file for reading. A named pipe (FIFO) is opened without waiting for a writer
/// — a plain open blocks until one comes, for ever where none does — and then read as usual:
/// to its end where something writes to it (`hooke run <(…)`), at once and empty where
/// nothing does.
fn open_scene(path: &Path) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    if is_pipe(path) {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
        // SAFETY: fcntl on a descriptor this function owns; it only changes its flags.
        unsafe {
            let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
            if flags < 0 || libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        return Ok(f);
    }
    std::fs::File::open(path)
}

/// Whether `path` is a named pipe (FIFO).
fn is_pipe(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Parses and builds scene text. `file` names it in errors; `default_name` is used when the
/// scene has no `name`; relative mesh paths are resolved against `base_dir`.
///
/// # Errors
/// As [`load`].
pub fn parse(
    text: &str,
    file: &str,
    default_name: &str,
    base_dir: Option<&Path>,
    memory_limit: u64,
) -> Result<Scene, SceneError> {
    let err = |message: String| SceneError { file: file.to_string(), message };
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let message = toml_error(text, &e);
        err(match orphan_subtable(text) {
            Some(hint) => format!("{message}\n{hint}"),
            None => message,
        })
    })?;
    check_f32_range(&table).map_err(err)?;
    // Parsed again from the text, not from the table, so that its errors keep their lines.
    let scene: SceneFile = toml::from_str(text).map_err(|e| err(toml_error(text, &e)))?;
    build::build(&scene, default_name, base_dir, memory_limit, &Meshes::new()).map_err(err)
}

/// Longest line of a TOML error's message shown as the parser writes it (the line of the file
/// with a caret under the place).
const SHOWN_LINE: usize = 200;

/// The message of TOML's error `e` in parsing `text`: the parser's own (the line, a caret under
/// the place, what was expected), unless that quotes a line longer than [`SHOWN_LINE`]
/// characters — a file of one 50 MB line echoed it whole, twice over with the caret's padding —
/// then the line and column and what was expected, without the quote.
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let full = e.to_string().trim_end().to_string();
    if full.lines().all(|l| l.chars().count() <= SHOWN_LINE) {
        return full;
    }
    let Some(span) = e.span() else { return e.message().trim_end().to_string() };
    let before = text.get(..span.start.min(text.len())).unwrap_or("");
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    let length = text[line_start..].split('\n').next().map_or(0, |l| l.chars().count());
    format!(
        "TOML parse error at line {line}, column {column} (a line of {length} characters, not shown): {}",
        e.message().trim_end()
    )
}

/// A header `[[a.b]]` (or `[a.b]`) before the first `[[a]]` of a text that has `[[a]]`s: TOML
/// then makes `a` a table, and the later `[[a]]` fails as a "duplicate key", at its own line.
/// Names the header, its line, and where it belongs.
fn orphan_subtable(text: &str) -> Option<String> {
    let header = |line: &str| {
        let t = line.trim();
        let inner = t
            .strip_prefix("[[")
            .and_then(|r| r.split("]]").next())
            .or_else(|| t.strip_prefix('[').and_then(|r| r.split(']').next()))?;
        Some(inner.trim().to_string())
    };
    let arrays: Vec<(usize, String)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("[["))
        .filter_map(|(k, l)| Some((k, header(l)?)))
        .collect();
    for (k, line) in text.lines().enumerate() {
        let Some(name) = header(line) else { continue };
        let Some((parent, _)) = name.split_once('.') else { continue };
        let parent = parent.trim();
        let first = arrays.iter().find(|(_, a)| a == parent).map(|(l, _)| *l);
        if let Some(first) = first
            && first > k
        {
            return Some(format!(
                "(`{}` at line {} comes before any `[[{parent}]]`: it belongs to the `[[{parent}]]` above it — move it \
                 after the {parent} it is for; the `[[{parent}]]` at line {} is then no longer a duplicate)",
                line.trim(),
                k + 1,
                first + 1
            ));
        }
    }
    None
}

/// Refuses a number that is not zero but below f32's smallest normal magnitude (1.18·10⁻³⁸),
/// naming its key: the simulation runs in f32, where such a value is subnormal or rounds to
/// 0 — and a thread that flushes subnormals to zero, as `hooke run`'s do for speed, reads it as
/// 0, so the same file passed `hooke validate` and failed `hooke run` with "got 0". Refuses a
/// finite number beyond f32's largest (3.4·10³⁸) too: it would be read as infinity, which a
/// key may take with another meaning (`tear_strain = 1e300` read as "never tears"); `inf`
/// says that where it is meant.
fn check_f32_range(table: &toml::Table) -> Result<(), String> {
    fn walk(value: &toml::Value, path: &str) -> Result<(), String> {
        match value {
            toml::Value::Float(f) if *f != 0.0 && f.is_finite() && ((*f as f32).abs() < f32::MIN_POSITIVE) => {
                Err(format!(
                    "{path}: {f:e} is too small for f32 (below {:e}); use a larger value, or 0 where the key takes it",
                    f32::MIN_POSITIVE
                ))
            }
            toml::Value::Float(f) if f.is_finite() && (*f as f32).is_infinite() => Err(format!(
                "{path}: {f:e} is too large for f32 (above {:e}); use a smaller value, or inf where the key takes it",
                f32::MAX
            )),
            toml::Value::Table(t) => t
                .iter()
                .try_for_each(|(k, v)| walk(v, &if path.is_empty() { k.clone() } else { format!("{path}.{k}") })),
            toml::Value::Array(a) => a.iter().enumerate().try_for_each(|(i, v)| walk(v, &format!("{path}[{i}]"))),
            _ => Ok(()),
        }
    }
    table.iter().try_for_each(|(k, v)| walk(v, k))
}

/// Builds a scene from its keys as a TOML table (a scene file's content, made by a program:
/// the Python bindings, the batch runner). `file` names it in errors; `default_name` and
/// `base_dir` are as for [`parse`]. A `[[cloth]]` whose `mesh` names one of `meshes` takes it
/// (welded, scaled and placed as a file's would be) instead of reading a file: this is how the
/// Python bindings build a cloth from NumPy arrays through the very code that builds a
/// scene's.
///
/// # Errors
/// As [`load`]; unknown keys and bad values are named by their key.
pub fn from_table(
    table: toml::Table,
    file: &str,
    default_name: &str,
    base_dir: Option<&Path>,
    memory_limit: u64,
    meshes: &Meshes,
) -> Result<Scene, SceneError> {
    let err = |message: String| SceneError { file: file.to_string(), message };
    check_f32_range(&table).map_err(err)?;
    // The path of a bad key (`materials.cloth.density`) with the message: there are no lines.
    let scene: SceneFile = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(
        |e: serde_path_to_error::Error<toml::de::Error>| {
            let path = e.path().to_string();
            let message = e.inner().message().trim_end().to_string();
            err(if path == "." { message } else { format!("{path}: {message}") })
        },
    )?;
    build::build(&scene, default_name, base_dir, memory_limit, meshes).map_err(err)
}

/// Meshes held in memory, by the name a cloth's `mesh` key gives them (see [`from_table`]).
pub type Meshes = std::collections::BTreeMap<String, crate::mesh::ObjMesh>;
