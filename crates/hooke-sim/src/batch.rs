//! Batch runs: many samples — scenes with parameter overrides — baked one after another into
//! one dataset folder, sliced into shards for a cluster's scheduler (a Slurm job array, Ray),
//! resumable, with per-sample quality checks and a JSON Lines index (issue #13, item 3).
//!
//! # The manifest
//!
//! A TOML file:
//!
//! ```toml
//! out = "out/drapes"              # optional, relative to the manifest; default out/<manifest stem>
//! format = "usda"                 # optional: usda (default), obj or pc2
//!
//! [quality]                       # optional: a sample over a limit is marked failed
//! max_residual_strain = 0.05      # residual stretch strain away from the pins (XPBD/PBD)
//! max_penetration = 0.01          # m, deepest penetration into a collider
//! failed = "mark"                 # "mark" keeps a failed sample's cache, "drop" deletes it
//!
//! [[sample]]                      # one sample: a scene and the keys it changes
//! scene = "../scenes/flag.toml"
//! set = { "solver.frames" = 60, "wind" = [3.0, 0.0, 0.0] }
//!
//! [[sweep]]                       # every combination of the values of `vary`
//! scene = "../scenes/flag.toml"
//! set = { "solver.frames" = 60 }
//! vary = { "materials.nylon.stretch_stiffness" = [1e3, 1e4], "wind" = [[2.0, 0.0, 0.0], [6.0, 0.0, 0.0]] }
//! ```
//!
//! or JSON Lines (`.jsonl`), one sample per line: `{"scene": "scenes/flag.toml", "set":
//! {"solver.frames": 60}}`, with the defaults above. Keys are dotted paths into the scene
//! file (`materials.nylon.stretch_stiffness`; `cloth.0.rows` for the first `[[cloth]]`); a
//! missing table on the way is created, a missing array element is an error, and the scene
//! then rejects keys it does not know as it would in its own file. A table given for one of
//! the scene's tables sets each of its keys (`set = { solver = { substeps = 4 } }`, or TOML's
//! unquoted `solver.substeps = 4`, is `"solver.substeps" = 4`: the rest of `[solver]` stays);
//! given for an array element (`"collider.0" = { shape = "sphere", … }`) it replaces it. The
//! scene's `output` keys cannot be set: a batch writes each sample into its own folder, in
//! the manifest's `format`. Scene paths are relative to the manifest.
//!
//! Samples are numbered from 0: the `[[sample]]` entries in order, then each `[[sweep]]`'s
//! combinations (its keys in alphabetical order, the last varying fastest).
//!
//! # The dataset
//!
//! Sample *k* is written to `samples/<k as 6 digits>/` under the output folder: its cache,
//! `diagnostics.csv` and `sample.json`, the record of what it is and how it went. The folder
//! is built under a temporary name and renamed when complete, so a sample folder is either
//! absent or complete. `index.jsonl` lists every record found, by sample.
//!
//! Shard *i* of *n* takes the samples whose number is *i* modulo *n*; so `--shard 0/3`,
//! `1/3` and `2/3` cover every sample exactly once.

use crate::{Bake, BakeError, BakeSettings, SolverOptions};
use hooke_io::cache::Format;
use hooke_io::scene::Scene;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest manifest read (bytes): about a million samples of JSON Lines.
pub const MAX_MANIFEST_FILE: u64 = 256 << 20;

/// Errors of a batch run that stop it (a sample that blows up or fails its checks does not:
/// it is recorded as failed).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The manifest cannot be read or is invalid; the message names the file, the entry and
    /// the key.
    #[error("{0}")]
    Manifest(String),
    /// A sample's scene cannot be loaded with its overrides.
    #[error("sample {sample} ({scene}): {message}")]
    Scene {
        /// Sample number.
        sample: usize,
        /// Scene file.
        scene: String,
        /// What is wrong.
        message: String,
    },
    /// A file of the dataset cannot be read or written.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The output folder already holds samples of this shard (without `resume`), or a record
    /// that does not match the manifest.
    #[error("{0}")]
    Conflict(String),
    /// A sample's files could not be written (the disk, not the physics).
    #[error("sample {sample}: {source}")]
    Bake {
        /// Sample number.
        sample: usize,
        /// The cause.
        source: BakeError,
    },
    /// The caches of the samples to bake cannot fit the output's file system (checked before
    /// any is simulated; [`crate::space::check_all`]).
    #[error("{0}")]
    Space(String),
    /// Stopped by the caller's flag (Ctrl-C); the samples under way (first, last: one sample,
    /// or a pack) were not kept.
    #[error("interrupted during {}; not kept (run again with --resume)", if .0 == .1 { format!("sample {}", .0) } else { format!("samples {}–{} (a pack)", .0, .1) })]
    Interrupted(usize, usize),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BatchError + '_ {
    move |source| BatchError::Io { path: path.to_path_buf(), source }
}

/// What to do with a sample that fails its quality checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Keep its cache; its record says `failed`.
    #[default]
    Mark,
    /// Delete its cache; its record (`failed`, with the reason) stays.
    Drop,
}

/// Per-sample quality checks. A sample that blows up or has a NaN always fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quality {
    /// Largest residual stretch strain of any body away from its pins (XPBD/PBD), over the run.
    pub max_residual_strain: Option<f32>,
    /// Deepest penetration into a collider (m), over the run.
    pub max_penetration: Option<f32>,
    /// What to do with a failed sample's cache.
    #[serde(default)]
    pub failed: OnFailure,
}

/// One sample: a scene and the keys it changes.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Sample number, from 0.
    pub index: usize,
    /// The scene file, as the manifest names it.
    pub scene: String,
    /// The scene file, resolved against the manifest's folder.
    pub path: PathBuf,
    /// Dotted scene keys and their values.
    pub set: toml::Table,
}

impl Sample {
    /// The sample's folder name: its number in 6 digits.
    pub fn id(&self) -> String {
        format!("{:06}", self.index)
    }

    /// Loads the scene with the sample's overrides.
    ///
    /// # Errors
    /// [`BatchError::Scene`] naming the sample, the scene and the key or value at fault.
    pub fn load(&self, memory_limit: u64) -> Result<Scene, BatchError> {
        load_scene(&self.path, &self.set, memory_limit).map_err(|message| BatchError::Scene {
            sample: self.index,
            scene: self.scene.clone(),
            message,
        })
    }
}

/// Loads the scene file `path` with the dotted keys of `set` changed (see the module's
/// documentation).
///
/// # Errors
/// A message naming the file, or the key set and what is wrong with it, or the scene's own
/// error with the keys applied.
pub fn load_scene(path: &Path, set: &toml::Table, memory_limit: u64) -> Result<Scene, String> {
    let (text, table) = scene_table(path, set)?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scene");
    if set.is_empty() {
        // The file's own text, so that errors give its lines.
        return hooke_io::scene::parse(&text, &path.display().to_string(), stem, path.parent(), memory_limit)
            .map_err(|e| e.to_string());
    }
    // The keys, up to eight of them: an error names the key at fault itself.
    const SHOWN: usize = 8;
    let mut keys: Vec<String> = set.iter().take(SHOWN).map(|(k, v)| format!("{k} = {v}")).collect();
    if set.len() > SHOWN {
        keys.push(format!("and {} more keys", set.len() - SHOWN));
    }
    let file = format!("{} with {}", path.display(), keys.join(", "));
    let meshes = hooke_io::scene::Meshes::new();
    hooke_io::scene::from_table(table, &file, stem, path.parent(), memory_limit, &meshes).map_err(|e| e.to_string())
}

/// The text of the scene file `path` and its keys as a table, with the dotted keys of `set`
/// changed.
///
/// # Errors
/// A message naming the file, or the key set and what is wrong with it.
pub fn scene_table(path: &Path, set: &toml::Table) -> Result<(String, toml::Table), String> {
    let text = hooke_io::scene::read_text(path).map_err(|e| e.to_string())?;
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), hooke_io::scene::toml_error(&text, &e)))?;
    // Two keys of which one holds the other ("solver" and "solver.frames") would be applied in
    // an order the manifest does not show: refused.
    // (Each key's dotted prefixes looked up: linear in the keys' length, where comparing every
    // pair took minutes for a manifest line of 300 000 keys.)
    for b in set.keys() {
        let mut dots = b.match_indices('.').map(|(i, _)| i);
        if let Some(a) = dots.find_map(|i| set.get_key_value(&b[..i]).map(|(a, _)| a)) {
            return Err(format!("set {a:?} and {b:?}: the first holds the second; set one of them"));
        }
    }
    for (key, value) in set {
        set_key(&mut table, key, value.clone()).map_err(|m| format!("set {key:?}: {m}"))?;
    }
    // A material key that no body's material is would change nothing: a misspelt name, most
    // likely (the scene itself only warns of a material no body names). Not where the keys
    // give a body another material: a sweep over both a body's material and one material's
    // keys has samples where that material is not used.
    let reassigned = set.keys().any(|k| k.ends_with(".material"));
    let materials = set
        .keys()
        .filter(|_| !reassigned)
        .filter_map(|key| Some((key, key.strip_prefix("materials.")?.split('.').next()?)));
    let mut used = None;
    for (key, name) in materials {
        let used = used.get_or_insert_with(|| material_names(&table));
        if !used.iter().any(|u| u == name) {
            return Err(format!(
                "set {key:?}: no cloth or rope of {} has the material {name:?} (theirs: {used:?}); the key would change nothing",
                path.display()
            ));
        }
    }
    Ok((text, table))
}

/// `set` with every non-empty table among its values replaced by its keys, dotted onto the
/// table's (`{ solver = { substeps = 4 } }` → `{ "solver.substeps" = 4 }`): what two spellings
/// of a sample's keys are compared as. (A key given both ways is kept once.)
fn leaves(set: &toml::Table) -> toml::Table {
    fn add(out: &mut toml::Table, key: String, value: &toml::Value) {
        match value {
            toml::Value::Table(t) if !t.is_empty() => t.iter().for_each(|(k, v)| add(out, format!("{key}.{k}"), v)),
            v => {
                out.insert(key, v.clone());
            }
        }
    }
    let mut out = toml::Table::new();
    for (key, value) in set {
        add(&mut out, key.clone(), value);
    }
    out
}

/// Sets `key` of the table `t` to `value`, merging where both are tables: each key of `value`
/// set in the scene's table in turn, the others left as they are (TOML's unquoted
/// `solver.substeps = 4` is the table `{ solver = { substeps = 4 } }`, which replaced the whole
/// `[solver]`); an empty table makes sure the table is there (`air = {}`: the default air).
/// Anything else — a value, an array, a table where the scene has none or an array element —
/// replaces what is there.
fn merge(t: &mut toml::Table, key: &str, value: toml::Value) {
    match (t.get_mut(key), value) {
        (Some(toml::Value::Table(old)), toml::Value::Table(new)) => {
            for (k, v) in new {
                merge(old, &k, v);
            }
        }
        (_, value) => {
            t.insert(key.to_string(), value);
        }
    }
}

/// Whether the dotted scene key `key` is, or is inside, the scene's `[output]` table, which a
/// batch sample, a world of `--vary` or Python's `bake` cannot set: they write where and how
/// they are told, not where the scene says.
pub fn is_output_key(key: &str) -> bool {
    key == "output" || key.starts_with("output.")
}

/// The `material` names of the scene table's `[[cloth]]` and `[[rope]]` entries.
fn material_names(table: &toml::Table) -> Vec<String> {
    let mut names: Vec<String> = ["cloth", "rope"]
        .iter()
        .filter_map(|section| table.get(*section)?.as_array())
        .flatten()
        .filter_map(|body| Some(body.get("material")?.as_str()?.to_string()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Sets the dotted `key` (`a.b.0.c`) of `table` to `value`.
fn set_key(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("a key is dotted names, none of them empty".into());
    }
    let (last, path) = parts.split_last().expect("split gives at least one part");
    // Worked on as a value (tables and arrays alike), put back whatever happens.
    let mut root = toml::Value::Table(std::mem::take(table));
    let result = set_in(&mut root, &parts, path, last, value);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
    result
}

fn set_in(root: &mut toml::Value, parts: &[&str], path: &[&str], last: &str, value: toml::Value) -> Result<(), String> {
    let mut node = root;
    for (depth, part) in path.iter().enumerate() {
        let here = parts[..depth].join(".");
        node = match node {
            toml::Value::Table(t) => {
                t.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let i = index(part).map_err(|m| format!("{here:?} is an array: {m}"))?;
                let n = a.len();
                a.get_mut(i).ok_or_else(|| {
                    format!("{here:?} has {n} element{}, no element {i}", if n == 1 { "" } else { "s" })
                })?
            }
            _ => return Err(format!("{here:?} is a value, not a table")),
        };
    }
    match node {
        toml::Value::Table(t) => {
            merge(t, last, value);
            Ok(())
        }
        toml::Value::Array(a) => {
            let i = index(last).map_err(|m| format!("{m} of an array"))?;
            let n = a.len();
            *a.get_mut(i).ok_or_else(|| {
                format!("the array has {n} element{}, no element {i}", if n == 1 { "" } else { "s" })
            })? = value;
            Ok(())
        }
        _ => Err(format!("{:?} is a value, not a table", path.join("."))),
    }
}

/// The first value of `values` that equals an earlier one, as (its index, the earlier one's;
/// both 0-based), found in one pass, where an integer equals the float of its value (`1` and `1.0`, `[0, -9.81, 0]` and
/// `[0.0, -9.81, 0.0]` set the same scene).
pub fn repeated(values: &[toml::Value]) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::new();
    values.iter().enumerate().find_map(|(i, v)| seen.insert(canonical(v), i).map(|j| (i, j)))
}

/// `value` written so that two values that set the same thing are written alike: integers as
/// the floats they equal, tables with their keys in order.
fn canonical(value: &toml::Value) -> String {
    match value {
        toml::Value::Integer(x) => format!("{:?}", *x as f64),
        toml::Value::Float(x) => format!("{x:?}"),
        toml::Value::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        toml::Value::Table(t) => {
            let mut entries: Vec<String> = t.iter().map(|(k, v)| format!("{k:?}={}", canonical(v))).collect();
            entries.sort();
            format!("{{{}}}", entries.join(","))
        }
        other => other.to_string(),
    }
}

/// An array index in a dotted key, written as the number alone (`0`, `12`): `00` or `+0` would
/// name the same element as `0` under another key, which the checks for a key given twice or
/// one key inside another would not see.
fn index(part: &str) -> Result<usize, String> {
    match part.parse::<usize>() {
        Ok(i) if i.to_string() == part => Ok(i),
        Ok(i) => Err(format!("{part:?} is not an index as written: write {i}")),
        Err(_) => Err(format!("{part:?} is not an index")),
    }
}

/// A batch manifest, read by [`Manifest::read`].
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The manifest file.
    pub path: PathBuf,
    /// Every sample, by number.
    pub samples: Vec<Sample>,
    /// Cache format.
    pub format: Format,
    /// Quality checks.
    pub quality: Quality,
    /// Output folder (resolved against the manifest's folder): the manifest's `out`, else
    /// `out/<manifest stem>`.
    pub out: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestFile {
    out: Option<String>,
    format: Option<String>,
    #[serde(default)]
    quality: Quality,
    #[serde(default)]
    sample: Vec<SampleEntry>,
    #[serde(default)]
    sweep: Vec<SweepEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleEntry {
    scene: String,
    #[serde(default)]
    set: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepEntry {
    scene: String,
    #[serde(default)]
    set: toml::Table,
    vary: toml::Table,
}

/// The most samples a manifest may make, all entries together (a sweep's combinations
/// multiply; each sample is held in memory while the batch runs, about 1 KB).
pub const MAX_SAMPLES: usize = 1_000_000;

impl Manifest {
    /// Reads a manifest: TOML, or JSON Lines if its name ends in `.jsonl`.
    ///
    /// # Errors
    /// [`BatchError::Manifest`] naming the file, the entry (`[[sweep]] 2`, line 5) and what is
    /// wrong: unknown keys, an empty `vary` list, a sweep of more than [`MAX_SAMPLES`], no
    /// samples at all, a key given twice in one object of a JSON Lines line.
    pub fn read(path: &Path) -> Result<Manifest, BatchError> {
        let file = path.display().to_string();
        let err = |m: String| BatchError::Manifest(format!("{file}: {m}"));
        let mut text = String::new();
        {
            use std::io::Read;
            std::fs::File::open(path)
                .and_then(|f| f.take(MAX_MANIFEST_FILE + 1).read_to_string(&mut text))
                .map_err(|e| err(format!("cannot read the manifest: {e}")))?;
        }
        if text.len() as u64 > MAX_MANIFEST_FILE {
            // A device such as /dev/zero is read only this far.
            return Err(err(format!(
                "longer than {} MiB: not a manifest (split its samples over several)",
                MAX_MANIFEST_FILE >> 20
            )));
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("batch");
        let mut samples: Vec<Sample> = Vec::new();
        // Where each sample comes from, for the message on two that are the same run.
        let mut origin: Vec<Origin> = Vec::new();
        let mut push = |samples: &mut Vec<Sample>, scene: String, set: toml::Table, from: Origin| {
            let index = samples.len();
            samples.push(Sample { index, path: base.join(&scene), scene, set });
            origin.push(from);
        };
        let (out, format, quality);
        // A byte-order mark, as some editors write.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("jsonl")) {
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                if line.trim_start().starts_with(['#', '/']) {
                    return Err(err(format!(
                        "line {}: JSON Lines has no comments (each line is one sample, a JSON object); remove the line",
                        n + 1
                    )));
                }
                let value: serde_json::Value =
                    serde_json::from_str(line).map_err(|e| err(format!("line {}: {e}", n + 1)))?;
                // A line is one sample: an object. (An array was read as a struct's fields in
                // order: "invalid type: map, expected a string".)
                if !value.is_object() {
                    let what = match value {
                        serde_json::Value::Array(_) => "an array",
                        serde_json::Value::String(_) => "a string",
                        serde_json::Value::Number(_) => "a number",
                        _ => "not an object",
                    };
                    return Err(err(format!(
                        "line {}: each line is one sample, a JSON object such as {{\"scene\": \"scenes/flag.toml\"}}; \
                         this one is {what}",
                        n + 1
                    )));
                }
                if let Some(key) = crate::json_keys::duplicated_key(line) {
                    return Err(err(format!(
                        "line {}: the key {key} is given twice (JSON keeps only the last value); give each key once",
                        n + 1
                    )));
                }
                let entry: SampleEntry =
                    serde_json::from_value(value).map_err(|e| err(format!("line {}: {e}", n + 1)))?;
                if samples.len() >= MAX_SAMPLES {
                    return Err(err(format!("more than {MAX_SAMPLES} samples")));
                }
                push(&mut samples, entry.scene, entry.set, Origin::Line(n + 1));
            }
            (out, format, quality) = (None, None, Quality::default());
        } else {
            let m: ManifestFile = toml::from_str(text).map_err(|e| err(hooke_io::scene::toml_error(text, &e)))?;
            if m.sample.len() > MAX_SAMPLES {
                return Err(err(format!("more than {MAX_SAMPLES} samples")));
            }
            for (k, entry) in m.sample.into_iter().enumerate() {
                push(&mut samples, entry.scene, entry.set, Origin::Sample(k));
            }
            for (k, sweep) in m.sweep.into_iter().enumerate() {
                let axes: Vec<(&String, &Vec<toml::Value>)> = sweep
                    .vary
                    .iter()
                    .map(|(key, v)| match v {
                        toml::Value::Array(values) if !values.is_empty() => Ok((key, values)),
                        _ => Err(err(format!("[[sweep]] {k}: vary.{key:?} must be a list of one value or more"))),
                    })
                    .collect::<Result<_, _>>()?;
                if axes.is_empty() {
                    return Err(err(format!("[[sweep]] {k}: vary has no keys")));
                }
                if let Some((key, _)) = axes.iter().find(|(key, _)| sweep.set.contains_key(*key)) {
                    return Err(err(format!("[[sweep]] {k}: {key:?} is both set and varied")));
                }
                // A value listed twice makes samples that are the same run: a slip, most likely.
                for (key, values) in &axes {
                    if let Some((i, j)) = repeated(values) {
                        return Err(err(format!(
                            "[[sweep]] {k}: vary.{key:?} gives the same value twice ({} and {}, its values {} and \
                             {}): their samples would be the same run",
                            values[j],
                            values[i],
                            j + 1,
                            i + 1
                        )));
                    }
                }
                let room = MAX_SAMPLES - samples.len().min(MAX_SAMPLES);
                let total = axes.iter().try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()).filter(|&n| n <= room));
                let total = total.ok_or_else(|| {
                    err(format!("[[sweep]] {k}: its combinations bring the manifest over {MAX_SAMPLES} samples"))
                })?;
                for c in 0..total {
                    let mut set = sweep.set.clone();
                    let mut rest = c;
                    for (key, values) in axes.iter().rev() {
                        set.insert((*key).clone(), values[rest % values.len()].clone());
                        rest /= values.len();
                    }
                    push(&mut samples, sweep.scene.clone(), set, Origin::Sweep(k, c));
                }
            }
            (out, format, quality) = (m.out, m.format, m.quality);
        }
        if samples.is_empty() {
            return Err(err("no samples: add [[sample]] or [[sweep]] entries (or lines, in JSON Lines)".into()));
        }
        if samples.len() > MAX_SAMPLES {
            return Err(err(format!("more than {MAX_SAMPLES} samples")));
        }
        // The scene's `[output]` is not the batch's: it would be ignored.
        for (s, from) in samples.iter().zip(&origin) {
            if let Some(key) = s.set.keys().find(|k| is_output_key(k)) {
                return Err(err(format!(
                    "{from}: {key:?} cannot be set: a batch writes each sample into its own folder under the output \
                     folder, in the manifest's format (`format = \"usda\"`, \"obj\" or \"pc2\" at the top of the manifest)"
                )));
            }
        }
        // Two samples of the same scene file with the same keys set are the same run (as a
        // value listed twice in a sweep): a slip, most likely. The file is compared as the file
        // system resolves it (however the manifest or the sample spells its path), or, where it
        // cannot (a missing file, refused later), as written without its "." steps.
        let mut files = std::collections::HashMap::new();
        let mut seen = std::collections::HashMap::with_capacity(samples.len());
        for (i, s) in samples.iter().enumerate() {
            let file = files.entry(&s.path).or_insert_with(|| {
                std::fs::canonicalize(&s.path)
                    .unwrap_or_else(|_| s.path.components().filter(|c| *c != std::path::Component::CurDir).collect())
            });
            // (A table among the keys sets its keys: compared as the dotted keys it sets.)
            let set = leaves(&s.set);
            let key = (file.clone(), canonical(&toml::Value::Table(set)));
            if let Some(j) = seen.insert(key, i) {
                return Err(err(format!(
                    "{} is the same run as {} (the scene {:?} with the same keys set): give each sample once",
                    origin[i], origin[j], s.scene
                )));
            }
        }
        let format = match format {
            Some(f) => f.parse().map_err(|e| err(format!("format: {e}")))?,
            None => Format::default(),
        };
        for (name, v) in
            [("max_residual_strain", quality.max_residual_strain), ("max_penetration", quality.max_penetration)]
        {
            if let Some(v) = v
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(err(format!("quality.{name} must be finite and ≥ 0, got {v}")));
            }
        }
        let out = match out {
            Some(o) if o.trim().is_empty() => return Err(err("out: an empty folder name".into())),
            Some(o) => base.join(o),
            None => Path::new("out").join(stem),
        };
        Ok(Manifest { path: path.to_path_buf(), samples, format, quality, out })
    }

    /// The samples of `shard`.
    pub fn shard(&self, shard: Shard) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(move |s| s.index % shard.count == shard.index)
    }
}

/// Where a sample of a manifest comes from, as its messages name it.
#[derive(Clone, Copy)]
enum Origin {
    /// `[[sample]]` number k.
    Sample(usize),
    /// `[[sweep]]` number k, its combination c.
    Sweep(usize, usize),
    /// A JSON Lines line, from 1.
    Line(usize),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Sample(k) => write!(f, "[[sample]] {k}"),
            Origin::Sweep(k, c) => write!(f, "[[sweep]] {k} (its combination {c})"),
            Origin::Line(n) => write!(f, "line {n}"),
        }
    }
}

/// Shard `index` of `count` (0 ≤ index < count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl Shard {
    /// The whole batch.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Reads `i/n`.
    ///
    /// # Errors
    /// A message if it is not two numbers with `i < n`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("a shard is i/n with 0 ≤ i < n, got {s:?}");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The shard of a Slurm job array's task: `SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN`
    /// of `SLURM_ARRAY_TASK_COUNT`; `None` outside a job array.
    ///
    /// # Errors
    /// A message if the variables are there but do not make a shard.
    pub fn from_slurm(var: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, String> {
        let Some(id) = var("SLURM_ARRAY_TASK_ID") else { return Ok(None) };
        let num = |name: &str, v: String| {
            v.trim().parse::<usize>().map_err(|_| match v.trim().parse::<i64>() {
                Ok(n) if n < 0 => format!("{name}={v:?} is negative"),
                _ => format!("{name}={v:?} is not a number"),
            })
        };
        let id = num("SLURM_ARRAY_TASK_ID", id)?;
        let min = var("SLURM_ARRAY_TASK_MIN").map(|v| num("SLURM_ARRAY_TASK_MIN", v)).transpose()?.unwrap_or(0);
        let count = var("SLURM_ARRAY_TASK_COUNT")
            .ok_or("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not (give --shard i/n)")?;
        let count = num("SLURM_ARRAY_TASK_COUNT", count)?;
        if count == 0 {
            return Err("SLURM_ARRAY_TASK_COUNT=0: an empty job array".into());
        }
        if let Some(step) = var("SLURM_ARRAY_TASK_STEP")
            && num("SLURM_ARRAY_TASK_STEP", step.clone())? != 1
        {
            return Err(format!(
                "SLURM_ARRAY_TASK_STEP={step}: a job array with a step does not map onto shards; give --shard i/n"
            ));
        }
        // An array 0-N (step 1) runs tasks min..min+count.
        if id < min || id - min >= count {
            return Err(format!(
                "SLURM_ARRAY_TASK_ID={id} is not in the array {min}–{} (a job array with a step other than 1? \
                 give --shard i/n)",
                min + count.saturating_sub(1)
            ));
        }
        Ok(Some(Shard { index: id - min, count }))
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A sample's record: `sample.json` in its folder and a line of `index.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Sample number.
    pub sample: usize,
    /// The scene file, as the manifest names it.
    pub scene: String,
    /// FNV-1a (64-bit, hex) of the scene file's bytes when the sample was made.
    #[serde(default)]
    pub scene_digest: Option<String>,
    /// The keys it changes and their values, as the manifest writes them: dotted keys
    /// (`"solver.substeps": 4`) or tables of keys (`"solver": {"substeps": 4}`), which are not
    /// rewritten as dotted keys because the two differ where a table replaces an array element
    /// (`"collider.0": {...}` is a whole new collider, its dotted keys would change the old one).
    pub set: serde_json::Map<String, serde_json::Value>,
    /// `ok` or `failed`.
    pub status: Status,
    /// Why it failed: the blow-up, the NaN, the check over its limit.
    pub reason: Option<String>,
    /// The sample's folder, relative to the output folder.
    pub dir: String,
    /// The cache's files, relative to the output folder (empty if dropped).
    pub files: Vec<String>,
    /// `diagnostics.csv`, relative to the output folder (absent if dropped).
    pub diagnostics: Option<String>,
    /// The sizes (bytes) of `files`, then of `diagnostics`, when the sample was made: a file
    /// cut short or changed since is not taken as complete (`--resume`, the index). Empty in
    /// records made before they were kept (then only the files' presence is checked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bytes: Vec<u64>,
    /// Frames written, frame 0 included.
    pub frames: usize,
    /// Simulated time reached (s).
    pub time_s: f64,
    /// Largest stretch strain over the run.
    pub max_stretch_strain: f32,
    /// Largest residual stretch strain of any body away from its pins (absent where the
    /// solver measures none).
    pub max_residual_strain: Option<f32>,
    /// Deepest penetration into a collider (m).
    pub max_penetration_m: f32,
    /// Most NaN particles in a frame.
    pub nan_count: usize,
    /// Wall-clock time of the simulation (s).
    pub seconds: f64,
    /// The shard that made it (`i/n`).
    pub shard: String,
    /// The run's warnings: each body whose residual exceeded the scene's `residual_tolerance`,
    /// with what would help.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// When it was solved packed with other samples into one model of worlds: how many
    /// (then `seconds` is the whole pack's, and the diagnostics' contact columns are empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worlds: Option<usize>,
}

/// Whether a sample passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Complete, and within the quality checks.
    Ok,
    /// Blew up, had a NaN, or exceeded a quality check (see [`Record::reason`]).
    Failed,
}

/// The overrides of a sample as JSON.
fn set_json(set: &toml::Table) -> serde_json::Map<String, serde_json::Value> {
    set.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null))).collect()
}

/// The folder of the samples under `out`.
fn samples_dir(out: &Path) -> PathBuf {
    out.join("samples")
}

/// Reads the record of sample `id` under `out`, if it is complete.
fn read_record(out: &Path, id: &str) -> Result<Option<Record>, BatchError> {
    let folder = samples_dir(out).join(id);
    if !folder.is_dir() {
        return Ok(None);
    }
    let path = folder.join("sample.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| BatchError::Conflict(format!("{}: not a sample record: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(BatchError::Io { path, source: e }),
    }
}

/// Checks that every file record `r` (in folder `at` under `out`) lists is there, before a
/// resumed shard skips its sample as complete.
///
/// # Errors
/// [`BatchError::Conflict`] naming the first missing file and the folder to remove for the
/// sample to be run again.
fn check_files(out: &Path, r: &Record, at: &Path) -> Result<(), BatchError> {
    let incomplete = |what: String| {
        BatchError::Conflict(format!(
            "{}: sample {} lists {what}: the sample is not complete; remove {} to run it again",
            at.join("sample.json").display(),
            r.sample,
            at.display()
        ))
    };
    // Every file inside the sample's own folder: a record edited to list a file elsewhere
    // (`../../etc/passwd`) is not the sample's cache, and an index would list it as one.
    let folder = format!("samples/{}", at.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    if r.dir != folder {
        return Err(incomplete(format!("the folder {:?}, not its own {folder:?}", r.dir)));
    }
    let inside = |f: &String| {
        let p = Path::new(f);
        p.starts_with(&folder)
            && p != Path::new(&folder)
            && p.components().all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    if let Some(outside) = r.files.iter().chain(&r.diagnostics).find(|f| !inside(f)) {
        return Err(incomplete(format!("{outside:?}, which is not a file in {folder}")));
    }
    if r.status == Status::Ok && r.files.is_empty() {
        return Err(incomplete("no cache file for a sample that passed".to_string()));
    }
    if let Some(missing) = r.files.iter().chain(&r.diagnostics).find(|f| !out.join(f).is_file()) {
        return Err(incomplete(format!("{missing}, which is missing")));
    }
    if r.bytes.is_empty() {
        return Ok(());
    }
    let listed: Vec<&String> = r.files.iter().chain(&r.diagnostics).collect();
    if listed.len() != r.bytes.len() {
        return Err(incomplete(format!("{} files and {} sizes", listed.len(), r.bytes.len())));
    }
    for (f, &bytes) in listed.into_iter().zip(&r.bytes) {
        let path = out.join(f);
        let now = std::fs::metadata(&path).map_err(io(&path))?.len();
        if now != bytes {
            return Err(incomplete(format!("{f} of {bytes} bytes, which has {now} now (cut short or changed)")));
        }
    }
    Ok(())
}

/// FNV-1a (64-bit) of a scene file's bytes, as hex: what a record remembers of its scene, so
/// that a scene edited under a dataset is noticed.
fn scene_digest(path: &Path) -> Result<String, BatchError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    Ok(format!("{h:016x}"))
}

/// Checks that record `r` (in folder `at`) is of a sample of `m`, made from the same scene file
/// (by name and content) with the same keys.
fn check_record(m: &Manifest, r: &Record, at: &Path) -> Result<(), BatchError> {
    let Some(sample) = m.samples.get(r.sample) else {
        return Err(BatchError::Conflict(format!(
            "{}: sample {} is not in {} ({} samples): the folder holds another batch",
            at.display(),
            r.sample,
            m.path.display(),
            m.samples.len()
        )));
    };
    if r.scene != sample.scene || r.set != set_json(&sample.set) {
        return Err(BatchError::Conflict(format!(
            "{}: sample {} was made from {} with {}, but the manifest now says {} with {}: the manifest changed \
             since; write to another folder",
            at.display(),
            sample.index,
            r.scene,
            serde_json::Value::Object(r.set.clone()),
            sample.scene,
            serde_json::Value::Object(set_json(&sample.set))
        )));
    }
    if let Some(digest) = &r.scene_digest
        && *digest != scene_digest(&sample.path)?
    {
        return Err(BatchError::Conflict(format!(
            "{}: sample {} was made from another version of {} (the file changed since): write to another folder",
            at.display(),
            sample.index,
            sample.scene
        )));
    }
    Ok(())
}

/// How [`run_shard`] runs its samples.
#[derive(Clone, Debug)]
pub struct BatchSettings {
    /// Output folder.
    pub out: PathBuf,
    /// Which slice of the samples.
    pub shard: Shard,
    /// Skip samples already complete (else their presence is an error).
    pub resume: bool,
    /// Where and how each sample's solver runs.
    pub options: SolverOptions,
    /// Memory a model may use (bytes).
    pub memory_limit: u64,
    /// Samples run at the same time (≥ 1), each on one thread of its own: small scenes, which
    /// keep one core busy each, are baked `jobs` times as fast on `jobs` cores. Results do not
    /// depend on it.
    pub jobs: usize,
    /// Samples packed into one model of worlds and solved together ([`crate::worlds`]; 1: each
    /// alone). Results do not depend on it (but on the CPU for a rope whose tension the
    /// tension limit answers in a run alone: see [`crate::worlds`]); every sample of a pack
    /// shares its `[solver]`.
    pub worlds: usize,
}

/// What a shard did.
#[derive(Clone, Debug, Default)]
pub struct ShardSummary {
    /// Samples of the shard.
    pub samples: usize,
    /// Skipped as complete already (`resume`).
    pub skipped: usize,
    /// Run and passed.
    pub ok: usize,
    /// Run and failed, with their records.
    pub failed: Vec<Record>,
}

/// Runs the samples of `settings.shard`, one after another, each into its own folder. Every
/// sample's scene is loaded first, so a bad key stops the shard before it simulates. A sample
/// that blows up or fails a quality check is recorded as failed and the shard carries on;
/// `on_sample` is called with each record. `stop` (Ctrl-C) ends the shard after the current
/// frame, keeping nothing of that sample.
///
/// # Errors
/// [`BatchError`] for a scene that does not load, samples present without `resume`, a record
/// that does not match the manifest, files that cannot be written, and interruption.
pub fn run_shard(
    manifest: &Manifest,
    settings: &BatchSettings,
    stop: &AtomicBool,
    mut on_sample: impl FnMut(&Record),
) -> Result<ShardSummary, BatchError> {
    let out = &settings.out;
    let dir = samples_dir(out);
    let mine: Vec<&Sample> = manifest.shard(settings.shard).collect();
    let mut summary = ShardSummary { samples: mine.len(), ..ShardSummary::default() };
    // What is there already: complete samples (checked against the manifest), leftovers.
    let mut todo = Vec::new();
    let mut done = 0;
    for sample in &mine {
        match read_record(out, &sample.id())? {
            Some(record) => {
                let at = samples_dir(out).join(sample.id());
                check_record(manifest, &record, &at)?;
                if settings.resume {
                    check_files(out, &record, &at)?;
                }
                done += 1;
            }
            None => {
                let at = samples_dir(out).join(sample.id());
                if at.symlink_metadata().is_ok() {
                    // Not ours: a sample's folder is renamed into place with its record.
                    return Err(BatchError::Conflict(format!(
                        "{}: sample {} has no sample.json there: not a complete sample (its folder is renamed into \
                         place with its record); remove it to run the sample again",
                        at.display(),
                        sample.index
                    )));
                }
                todo.push(*sample)
            }
        }
    }
    if done > 0 && !settings.resume {
        return Err(BatchError::Conflict(format!(
            "{} already holds {done} of the {} samples of shard {}: resume (--resume, or resume=True) to skip them, or write to another \
             folder",
            out.display(),
            mine.len(),
            settings.shard
        )));
    }
    summary.skipped = done;
    // Loaded up front: a typo in a key costs no simulation time, and neither does a shard
    // whose caches cannot fit the disk.
    let mut particles = Vec::with_capacity(todo.len());
    let mut caches = Vec::with_capacity(todo.len());
    for sample in &todo {
        let scene = sample.load(settings.memory_limit)?;
        // What the bake would refuse: a manifest mistake, not a sample to record as failed.
        check_sample_format(sample, &scene, manifest.format)?;
        particles.push(scene.model.particle_count());
        caches.push((scene.frames, scene.model.particle_count()));
    }
    crate::space::check_all(&dir, &caches).map_err(|e| {
        let largest = (0..todo.len()).max_by_key(|&k| caches[k].0 as u128 * caches[k].1 as u128);
        let largest = largest.map_or(String::new(), |k| {
            let (sample, (frames, points)) = (todo[k], caches[k]);
            let which = format!("sample {} ({})", sample.index, sample.scene);
            let which = if todo.len() > 1 { format!("the largest, {which},") } else { which };
            format!("; {which} has {points} points and solver.frames = {frames}")
        });
        BatchError::Space(format!("{e}{largest}"))
    })?;
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    sweep_leftovers(&dir, &todo)?;
    let mut tally = |record: &Record| {
        match record.status {
            Status::Ok => summary.ok += 1,
            Status::Failed => summary.failed.push(record.clone()),
        }
        on_sample(record);
    };
    if settings.worlds > 1 {
        for pack in pack_groups(&todo, &particles, settings.worlds)? {
            if let [alone] = pack.as_slice() {
                tally(&run_sample(manifest, alone, settings, stop)?);
                continue;
            }
            for record in run_pack(manifest, &pack, settings, stop)? {
                tally(&record);
            }
        }
        return Ok(summary);
    }
    if settings.jobs <= 1 {
        for sample in todo {
            tally(&run_sample(manifest, sample, settings, stop)?);
        }
        return Ok(summary);
    }
    // `jobs` workers take the next sample in turn and send its record here, where `on_sample`
    // sees them one at a time; the first error stops them all.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // The workers compute in the caller's floating-point environment (see `hooke::fp`).
    let flush = hooke::fp::flushes_subnormals();
    let (send, receive) = std::sync::mpsc::channel::<Result<Record, BatchError>>();
    let mut error = None;
    std::thread::scope(|scope| {
        for _ in 0..settings.jobs.min(todo.len()) {
            let send = send.clone();
            let (next, failed, todo) = (&next, &failed, &todo);
            scope.spawn(move || {
                if flush {
                    hooke::fp::flush_subnormals();
                }
                loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    if k >= todo.len() || failed.load(Ordering::SeqCst) {
                        return;
                    }
                    let result = run_sample(manifest, todo[k], settings, stop);
                    failed.fetch_or(result.is_err(), Ordering::SeqCst);
                    if send.send(result).is_err() {
                        return;
                    }
                }
            });
        }
        drop(send);
        for result in receive {
            match result {
                Ok(record) => tally(&record),
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
    });
    match error {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// Whether `sample` (its `scene` loaded) can be written in the manifest's `format`: a scene
/// that tears cannot be PC2, whose vertex count is fixed ([`crate::check_format`]). Checked
/// for every sample before any runs, by the run and by `hooke batch --dry-run`.
///
/// # Errors
/// [`BatchError::Scene`] naming the sample, the scene and the format.
pub fn check_sample_format(sample: &Sample, scene: &Scene, format: Format) -> Result<(), BatchError> {
    crate::check_format(scene, format).map_err(|_| BatchError::Scene {
        sample: sample.index,
        scene: sample.scene.clone(),
        message: format!(
            "scene {:?} tears (a cloth has a tear_strain or tear_energy, or the scene a [[cut]]) and the manifest's \
             format, PC2, holds a fixed vertex count: write usda or obj",
            scene.name
        ),
    })
}

/// Removes the temporary folders (`.<id>.tmp-*`) of `samples`: a killed run's, since each
/// sample belongs to one shard.
fn sweep_leftovers(dir: &Path, samples: &[&Sample]) -> Result<(), BatchError> {
    let ids: std::collections::HashSet<String> = samples.iter().map(|s| s.id()).collect();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        // `.<id>.tmp-<pid>`; any other name (not UTF-8 included) is left alone.
        let name = entry.file_name();
        let Some(id) =
            name.to_str().and_then(|n| n.strip_prefix('.')).and_then(|n| n.split_once(".tmp-")).map(|(id, _)| id)
        else {
            continue;
        };
        if ids.contains(id) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let path = entry.path();
            std::fs::remove_dir_all(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}

/// Bakes one sample into a temporary folder, checks it, writes its record and renames the
/// folder into place.
fn run_sample(
    manifest: &Manifest,
    sample: &Sample,
    settings: &BatchSettings,
    stop: &AtomicBool,
) -> Result<Record, BatchError> {
    let tmp = fresh_folder(settings, sample)?;
    let mut scene = sample.load(settings.memory_limit)?;
    // Several samples at once: each on its own thread (the results are the same).
    scene.solver.set_parallel(settings.jobs <= 1 && rayon_threads() > 1);
    let bake_settings = BakeSettings {
        dir: tmp.clone(),
        format: manifest.format,
        options: settings.options.clone(),
        strict: false,
        failed_dir: None,
    };
    let mut record = new_record(sample, settings)?;
    let baked = Bake::new(&mut scene, bake_settings).and_then(|bake| bake.run(stop, |_, _| {}));
    let keep = match baked {
        Ok(baked) => {
            if let Some(f) = &baked.failure
                && f.interrupted
            {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(BatchError::Interrupted(sample.index, sample.index));
            }
            let outcome = Outcome {
                frames: baked.frames_written,
                time: baked.time,
                worst: &baked.worst,
                residual: baked.monitor.worst_residual(),
                seconds: baked.seconds,
                warnings: baked.monitor.summary().1,
                files: &baked.files,
                diagnostics: &baked.diagnostics,
                failure: baked.failure.as_ref().map(|f| match f.tear {
                    Some(_) => format!("stopped by a tear it could not make: {f}"),
                    None => format!("blew up: {f}"),
                }),
            };
            judge(&mut record, &outcome, &manifest.quality)
        }
        // The disk, not the physics: the shard stops.
        Err(e @ (BakeError::Io { .. } | BakeError::Cache(_) | BakeError::CutShort(_))) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(BatchError::Bake { sample: sample.index, source: e });
        }
        // A solver that refuses the scene: this sample fails. (A tear that cannot be made stops
        // the bake as a blow-up does: judged above, recorded as failed with its reason.)
        Err(e) => {
            record.status = Status::Failed;
            record.reason = Some(e.to_string());
            false
        }
    };
    commit(settings, sample, &tmp, record, keep)
}

/// Most particles in one pack: about where one pack fills an H200 (256 scenes of 64², 10⁶
/// particles, ran 44× faster packed than one after another); more would only add memory.
pub const PACK_PARTICLES: usize = 1 << 20;

/// The packs `samples` (in order, with `particles[k]` particles each) are baked in with at most
/// `worlds` samples per pack: runs of consecutive samples that may be packed together (equal
/// `[solver]` and `[air]`, see [`crate::worlds::pack_key`]), cut at `worlds` samples or
/// [`PACK_PARTICLES`] particles; a sample that cannot be packed is a pack of its own.
///
/// # Errors
/// [`BatchError::Scene`] for a scene file that cannot be read or a key that cannot be set.
pub fn pack_groups<'a>(
    samples: &[&'a Sample],
    particles: &[usize],
    worlds: usize,
) -> Result<Vec<Vec<&'a Sample>>, BatchError> {
    let mut groups: Vec<Vec<&'a Sample>> = Vec::new();
    let mut current: Vec<&'a Sample> = Vec::new();
    let (mut key, mut count) = (None, 0usize);
    for (k, &sample) in samples.iter().enumerate() {
        let mine = crate::worlds::pack_key(&sample.path, &sample.set).map_err(|message| BatchError::Scene {
            sample: sample.index,
            scene: sample.scene.clone(),
            message,
        })?;
        let n = particles.get(k).copied().unwrap_or(0);
        let joins = mine.is_some() && mine == key && current.len() < worlds && count + n <= PACK_PARTICLES;
        if !joins && !current.is_empty() {
            groups.push(std::mem::take(&mut current));
            count = 0;
        }
        current.push(sample);
        count += n;
        key = mine;
    }
    if !current.is_empty() {
        groups.push(current);
    }
    Ok(groups)
}

/// Bakes `samples` packed into one model of as many worlds (see [`crate::worlds`]); a sample
/// that blows up is recorded as failed and the others are baked again without it (their
/// results do not depend on the company they keep).
fn run_pack(
    manifest: &Manifest,
    samples: &[&Sample],
    settings: &BatchSettings,
    stop: &AtomicBool,
) -> Result<Vec<Record>, BatchError> {
    let mut records = Vec::new();
    let mut left = samples.to_vec();
    while !left.is_empty() {
        match bake_pack(manifest, &left, settings, stop)? {
            PackOutcome::Done(done) => {
                records.extend(done);
                break;
            }
            PackOutcome::BlewUp(k) => {
                // Its own run, alone, makes its record: its blow-up in its own numbering.
                records.push(run_sample(manifest, left[k], settings, stop)?);
                left.remove(k);
            }
        }
    }
    records.sort_by_key(|r| r.sample);
    Ok(records)
}

enum PackOutcome {
    /// Every sample's record.
    Done(Vec<Record>),
    /// The k-th sample blew up; nothing was kept.
    BlewUp(usize),
}

/// One world of a pack while it runs.
struct Member<'a> {
    sample: &'a Sample,
    /// The sample's scene alone: its caches and diagnostics are written as its own run's.
    scene: Scene,
    tmp: PathBuf,
    writer: Box<dyn hooke_io::cache::CacheWriter>,
    csv: crate::bake::CsvWriter,
    monitor: crate::ConvergenceMonitor,
    worst: hooke::Diagnostics,
    residuals: hooke::diagnostics::ConstraintResiduals,
}

fn bake_pack(
    manifest: &Manifest,
    samples: &[&Sample],
    settings: &BatchSettings,
    stop: &AtomicBool,
) -> Result<PackOutcome, BatchError> {
    use hooke::diagnostics::{BodyConvergence, ConstraintResiduals, pinned_particles};
    let first = samples[0];
    let inputs: Vec<(&Path, &toml::Table)> = samples.iter().map(|s| (s.path.as_path(), &s.set)).collect();
    let mut packed = crate::worlds::pack(&inputs, settings.memory_limit).map_err(|(k, message)| BatchError::Scene {
        sample: samples[k].index,
        scene: format!("packed into worlds with samples {}–{}", first.index, samples[samples.len() - 1].index),
        message,
    })?;
    packed.scene.solver.set_parallel(rayon_threads() > 1);
    let pack_error = |message: String| BatchError::Scene {
        sample: first.index,
        scene: format!("samples {}–{} packed into worlds", first.index, samples[samples.len() - 1].index),
        message,
    };
    let crate::MadeSolver { mut solver, .. } =
        crate::make_solver(&packed.scene, &settings.options).map_err(|e| pack_error(e.to_string()))?;
    let solver_name = solver.info().name.to_string();
    let mut state = hooke::State::from_model(&packed.scene.model);
    solver.read_state(&mut state);
    let bake_error = |sample: &Sample| {
        let index = sample.index;
        move |source: BakeError| BatchError::Bake { sample: index, source }
    };
    let mut members = Vec::with_capacity(samples.len());
    for &sample in samples {
        let tmp = fresh_folder(settings, sample)?;
        let scene = sample.load(settings.memory_limit)?;
        let spec = hooke_io::cache::CacheSpec {
            dir: &tmp,
            scene_name: &scene.name,
            fps: scene.fps,
            model: &scene.model,
            vertex_maps: &scene.vertex_maps,
        };
        let writer = hooke_io::cache::create(manifest.format, &spec).map_err(|e| bake_error(sample)(e.into()))?;
        let names: Vec<&str> = scene.model.bodies().iter().map(|b| b.name.as_str()).collect();
        let mut csv =
            crate::bake::CsvWriter::create(&tmp.join("diagnostics.csv"), &names).map_err(bake_error(sample))?;
        csv.self_collision = scene.model.bodies().iter().any(|b| b.self_collision());
        let monitor = crate::ConvergenceMonitor::new(&scene, &solver_name);
        members.push(Member {
            sample,
            scene,
            tmp,
            writer,
            csv,
            monitor,
            worst: hooke::Diagnostics::default(),
            residuals: ConstraintResiduals::default(),
        });
    }
    let (mut pinned, mut bodies, mut residuals) = (Vec::new(), Vec::new(), ConstraintResiduals::default());
    // Each world's distance constraints, in the packed order (its own model's order), found
    // once: the packed set is ordered by colour, so a world's constraints are scattered in it.
    let set = packed.scene.model.distance();
    let mut world_of_body = vec![usize::MAX; packed.scene.model.bodies().len()];
    for (k, r) in packed.bodies.iter().enumerate() {
        world_of_body[r.clone()].fill(k);
    }
    let mut world_constraints = vec![Vec::new(); samples.len()];
    for c in 0..set.len() {
        if let Some(&k) = set.body_of(c).and_then(|b| world_of_body.get(b))
            && k < samples.len()
        {
            world_constraints[k].push(c);
        }
    }
    // Frame 0, and every frame after each step: each world's slice of the state, measured and
    // written against its own scene.
    let mut record_frame = |members: &mut [Member],
                            state: &hooke::State,
                            frame: usize,
                            control_time: f64,
                            time: f64,
                            measured: Option<&ConstraintResiduals>|
     -> Result<(), BatchError> {
        for (k, m) in members.iter_mut().enumerate() {
            let r = packed.particles[k].clone();
            let (x, v) = (&state.particle_position[r.clone()], &state.particle_velocity[r]);
            let model = &m.scene.model;
            let d = hooke::Diagnostics::measure(model, x, v, time, &m.scene.collider_poses_at(time));
            pinned_particles(model, &m.scene.control_at(control_time), &mut pinned);
            let mine = measured.map(|all| {
                // The world's constraints, in the packed order: its own model's order.
                m.residuals.clear();
                for &c in &world_constraints[k] {
                    m.residuals.strain.push(all.strain[c]);
                    m.residuals.compliance_dominated.push(all.compliance_dominated[c]);
                }
                &m.residuals
            });
            BodyConvergence::measure(model, x, &pinned, mine, &mut bodies);
            m.monitor.record(frame, time, &bodies);
            if frame == 0 {
                m.worst = d;
            }
            m.worst.max_stretch_strain = m.worst.max_stretch_strain.max(d.max_stretch_strain);
            m.worst.max_penetration = m.worst.max_penetration.max(d.max_penetration);
            m.worst.nan_count = m.worst.nan_count.max(d.nan_count);
            m.worst.time = d.time;
            m.writer.write_frame(frame, x).map_err(|e| bake_error(m.sample)(e.into()))?;
            let counts = if frame == 0 { [Some(0); 5] } else { [None, None, Some(0), Some(0), None] };
            m.csv.row(frame, &d, counts, &bodies).map_err(bake_error(m.sample))?;
        }
        Ok(())
    };
    record_frame(&mut members, &state, 0, 0.0, 0.0, None)?;
    let dt = 1.0 / packed.scene.fps;
    let started = std::time::Instant::now();
    let clean = |members: &[Member]| {
        for m in members {
            let _ = std::fs::remove_dir_all(&m.tmp);
        }
    };
    for frame in 1..=packed.scene.frames {
        if stop.load(Ordering::SeqCst) {
            clean(&members);
            return Err(BatchError::Interrupted(first.index, samples[samples.len() - 1].index));
        }
        let t0 = solver.time();
        let control = packed.scene.control_at(t0);
        if let Err(e) = solver.step(&control, dt) {
            // The world that blew up fails; the others are made again without it.
            let k = match &e {
                hooke::SolverError::BlowUp { particle, .. } => {
                    packed.particles.iter().position(|r| r.contains(&(*particle as usize)))
                }
                _ => None,
            };
            clean(&members);
            let Some(k) = k else { return Err(pack_error(format!("frame {frame}: {e}"))) };
            return Ok(PackOutcome::BlewUp(k));
        }
        solver.read_state(&mut state);
        let measured = solver.constraint_residuals(&mut residuals).then_some(&residuals);
        record_frame(&mut members, &state, frame, t0, solver.time(), measured)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut records = Vec::with_capacity(members.len());
    for m in members {
        let files = m.writer.finish().map_err(|e| bake_error(m.sample)(e.into()))?;
        let diagnostics = m.csv.finish().map_err(bake_error(m.sample))?;
        let mut record = new_record(m.sample, settings)?;
        record.worlds = Some(samples.len());
        let outcome = Outcome {
            frames: packed.scene.frames + 1,
            time: solver.time(),
            worst: &m.worst,
            residual: m.monitor.worst_residual(),
            seconds,
            warnings: m.monitor.summary().1,
            files: &files,
            diagnostics: &diagnostics,
            failure: None,
        };
        let keep = judge(&mut record, &outcome, &manifest.quality);
        records.push(commit(settings, m.sample, &m.tmp, record, keep)?);
    }
    Ok(PackOutcome::Done(records))
}

/// The sample's temporary folder, made empty.
fn fresh_folder(settings: &BatchSettings, sample: &Sample) -> Result<PathBuf, BatchError> {
    let tmp = samples_dir(&settings.out).join(format!(".{}.tmp-{}", sample.id(), std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
    }
    std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    Ok(tmp)
}

/// A record of `sample` before it runs.
fn new_record(sample: &Sample, settings: &BatchSettings) -> Result<Record, BatchError> {
    let id = sample.id();
    Ok(Record {
        sample: sample.index,
        scene: sample.scene.clone(),
        scene_digest: Some(scene_digest(&sample.path)?),
        set: set_json(&sample.set),
        status: Status::Ok,
        reason: None,
        dir: format!("samples/{id}"),
        files: Vec::new(),
        diagnostics: None,
        bytes: Vec::new(),
        frames: 0,
        time_s: 0.0,
        max_stretch_strain: 0.0,
        max_residual_strain: None,
        max_penetration_m: 0.0,
        nan_count: 0,
        seconds: 0.0,
        shard: settings.shard.to_string(),
        warnings: Vec::new(),
        worlds: None,
    })
}

/// What a sample's run made, for its record.
struct Outcome<'a> {
    frames: usize,
    time: f64,
    worst: &'a hooke::Diagnostics,
    residual: f32,
    seconds: f64,
    warnings: Vec<String>,
    files: &'a [PathBuf],
    diagnostics: &'a Path,
    /// Why it stopped early (a blow-up, a tear that could not be made), if it did: the
    /// record's reason.
    failure: Option<String>,
}

/// Fills `record` from `outcome` and the quality checks; returns whether its files are kept.
fn judge(record: &mut Record, outcome: &Outcome, quality: &Quality) -> bool {
    let relative =
        |p: &Path| format!("{}/{}", record.dir, p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    record.frames = outcome.frames;
    record.time_s = outcome.time;
    record.max_stretch_strain = outcome.worst.max_stretch_strain;
    record.max_residual_strain = (!outcome.residual.is_nan()).then_some(outcome.residual);
    record.max_penetration_m = outcome.worst.max_penetration;
    record.nan_count = outcome.worst.nan_count;
    record.seconds = outcome.seconds;
    record.warnings = outcome.warnings.clone();
    record.files = outcome.files.iter().map(|p| relative(p)).collect();
    record.diagnostics = Some(relative(outcome.diagnostics));
    let mut keep = true;
    let reason = if let Some(f) = &outcome.failure {
        // A run that stopped early keeps no cache: its frames are not data.
        keep = false;
        Some(f.clone())
    } else if outcome.worst.nan_count > 0 {
        keep = false;
        Some(format!("NaN positions in {} particles", outcome.worst.nan_count))
    } else if let (Some(limit), Some(r)) = (quality.max_residual_strain, record.max_residual_strain)
        && r > limit
    {
        Some(format!("residual stretch strain {r} over quality.max_residual_strain = {limit}"))
    } else if let Some(limit) = quality.max_penetration
        && record.max_penetration_m > limit
    {
        Some(format!("penetration {} m over quality.max_penetration = {limit} m", record.max_penetration_m))
    } else {
        None
    };
    if let Some(reason) = reason {
        record.status = Status::Failed;
        record.reason = Some(reason);
        keep &= quality.failed == OnFailure::Mark;
    }
    keep
}

/// Writes the record into the temporary folder `tmp` (emptied first unless `keep`) and
/// renames it into place.
fn commit(
    settings: &BatchSettings,
    sample: &Sample,
    tmp: &Path,
    mut record: Record,
    keep: bool,
) -> Result<Record, BatchError> {
    if !keep {
        for f in std::fs::read_dir(tmp).map_err(io(tmp))? {
            let path = f.map_err(io(tmp))?.path();
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
        record.files.clear();
        record.diagnostics = None;
    }
    // Each file is in `tmp` under its name (the record names it in the sample's folder).
    record.bytes = record
        .files
        .iter()
        .chain(&record.diagnostics)
        .map(|f| {
            let path = tmp.join(Path::new(f).file_name().unwrap_or_default());
            std::fs::metadata(&path).map(|m| m.len()).map_err(io(&path))
        })
        .collect::<Result<_, _>>()?;
    let json = serde_json::to_string_pretty(&record).expect("a record serialises");
    let path = tmp.join("sample.json");
    std::fs::write(&path, json + "\n").map_err(io(&path))?;
    let last = samples_dir(&settings.out).join(sample.id());
    if let Err(source) = std::fs::rename(tmp, &last) {
        // The sample is not done: nothing of it stays (a retry would add another folder).
        let _ = std::fs::remove_dir_all(tmp);
        return Err(BatchError::Io { path: last, source });
    }
    Ok(record)
}

/// The threads of the global pool.
fn rayon_threads() -> usize {
    rayon::current_num_threads()
}

/// Writes `index.jsonl` under `out`: every complete sample's record, by sample number, one
/// per line (written to a temporary file and renamed). Returns its path and the records.
///
/// # Errors
/// [`BatchError::Io`] if the folder cannot be read or the file written;
/// [`BatchError::Conflict`] for a `sample.json` that is not a record, or whose files are not
/// all there.
pub fn write_index(out: &Path, manifest: Option<&Manifest>) -> Result<(PathBuf, Vec<Record>), BatchError> {
    let dir = samples_dir(out);
    if !dir.is_dir() {
        return Err(BatchError::Conflict(format!(
            "{} holds no samples (no {} folder): is it the batch's output folder?",
            out.display(),
            dir.display()
        )));
    }
    let mut records = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
        let entry = entry.map_err(io(&dir))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
        // Sample folders only: temporary ones, stray files and other names are not samples.
        if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if let Some(r) = read_record(out, &name)? {
            if r.dir != format!("samples/{name}") {
                return Err(BatchError::Conflict(format!(
                    "{}: the record is of sample {} ({}), not of this folder",
                    dir.join(&name).display(),
                    r.sample,
                    r.dir
                )));
            }
            if let Some(m) = manifest {
                check_record(m, &r, &dir.join(&name))?;
            }
            // An index lists what is there: a record whose files are gone is refused, as
            // `--resume` refuses it.
            check_files(out, &r, &dir.join(&name))?;
            records.insert(r.sample, r);
        }
    }
    let mut text = String::new();
    for r in records.values() {
        text += &serde_json::to_string(r).expect("a record serialises");
        text.push('\n');
    }
    std::fs::create_dir_all(out).map_err(io(out))?;
    let path = out.join("index.jsonl");
    if path.is_dir() {
        return Err(io(&path)(std::io::Error::other("a folder is in the way of the index")));
    }
    // A killed run's temporary index is removed once it is older than any index takes to
    // write (by age, not by process: shards on other machines of a shared file system write
    // theirs into the same folder); this run's is removed if it cannot be put in place.
    remove_stale_indexes(out);
    let tmp = out.join(format!(".index.jsonl.tmp-{}", std::process::id()));
    let written =
        std::fs::write(&tmp, text).map_err(io(&tmp)).and_then(|()| std::fs::rename(&tmp, &path).map_err(io(&path)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    Ok((path, records.into_values().collect()))
}

/// How old (s) a temporary index must be for [`write_index`] to take it for a killed run's.
const STALE_INDEX_S: u64 = 600;

/// Removes the temporary indexes (`.index.jsonl.tmp-*`) under `out` last written more than
/// [`STALE_INDEX_S`] ago. Housekeeping: errors are ignored.
fn remove_stale_indexes(out: &Path) {
    let Ok(entries) = std::fs::read_dir(out) else { return };
    for e in entries.flatten() {
        let stale = e.file_name().to_str().is_some_and(|n| n.starts_with(".index.jsonl.tmp-"))
            && e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > std::time::Duration::from_secs(STALE_INDEX_S)));
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample's scene is read to at most the scene loader's limit: `/dev/zero` (or a pipe
    /// that never ends) is refused as no scene file, where it was read until memory ran out.
    #[cfg(unix)]
    #[test]
    fn an_endless_scene_file_is_refused() {
        let e = load_scene(Path::new("/dev/zero"), &toml::Table::new(), 1 << 30).unwrap_err();
        assert!(e.contains("/dev/zero: longer than 64 MiB: not a scene file"), "{e}");
        let mut set = toml::Table::new();
        set.insert("solver.frames".into(), 2.into());
        let e = load_scene(Path::new("/dev/zero"), &set, 1 << 30).unwrap_err();
        assert!(e.contains("not a scene file"), "{e}");
    }

    #[test]
    fn keys_are_set_through_tables_and_arrays() {
        let mut t: toml::Table =
            toml::from_str("[solver]\nsubsteps = 4\n[[cloth]]\nrows = 3\n[[cloth]]\nrows = 5\n").unwrap();
        set_key(&mut t, "solver.substeps", toml::Value::Integer(9)).unwrap();
        set_key(&mut t, "cloth.1.rows", toml::Value::Integer(7)).unwrap();
        set_key(&mut t, "air.drag_coefficient", toml::Value::Float(1.5)).unwrap();
        assert_eq!(t["solver"]["substeps"].as_integer(), Some(9));
        assert_eq!(t["cloth"][0]["rows"].as_integer(), Some(3));
        assert_eq!(t["cloth"][1]["rows"].as_integer(), Some(7));
        assert_eq!(t["air"]["drag_coefficient"].as_float(), Some(1.5));
        let e = set_key(&mut t, "cloth.2.rows", toml::Value::Integer(1)).unwrap_err();
        assert!(e.contains("2 elements"), "{e}");
        let e = set_key(&mut t, "solver.substeps.x", toml::Value::Integer(1)).unwrap_err();
        assert!(e.contains("not a table"), "{e}");
        assert!(set_key(&mut t, "solver..x", toml::Value::Integer(1)).is_err());
        // Nothing was lost on the way.
        assert_eq!(t["cloth"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_records_keys_read_back_equal_to_the_manifests() {
        // 0.1 + 0.01·2 is 0.12000000000000001, which a float parser that is not correctly
        // rounded reads back as 0.12: the sample would look changed on --resume.
        let mut set = toml::Table::new();
        set.insert("materials.cloth.density".into(), toml::Value::Float(0.1 + 0.01 * 2.0));
        set.insert("wind".into(), toml::Value::Array(vec![toml::Value::Float(1.0 / 3.0)]));
        let json = serde_json::to_string(&set_json(&set)).unwrap();
        let back: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, set_json(&set));
    }

    #[test]
    fn shards_split_by_the_remainder_and_slurm_gives_the_task() {
        assert_eq!(Shard::parse("1/3"), Ok(Shard { index: 1, count: 3 }));
        for bad in ["3/3", "1", "a/3", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let env = |id: &'static str, min: Option<&'static str>, count: Option<&'static str>| {
            move |k: &str| match k {
                "SLURM_ARRAY_TASK_ID" => Some(id.to_string()),
                "SLURM_ARRAY_TASK_MIN" => min.map(str::to_string),
                "SLURM_ARRAY_TASK_COUNT" => count.map(str::to_string),
                _ => None,
            }
        };
        assert_eq!(Shard::from_slurm(env("5", Some("4"), Some("3"))), Ok(Some(Shard { index: 1, count: 3 })));
        assert_eq!(Shard::from_slurm(env("2", None, Some("3"))), Ok(Some(Shard { index: 2, count: 3 })));
        assert!(Shard::from_slurm(env("2", None, None)).is_err());
        assert!(Shard::from_slurm(env("9", Some("0"), Some("3"))).is_err());
        // A negative task is called negative, not "not a number".
        let e = Shard::from_slurm(env("-1", None, Some("3"))).unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_ID=\"-1\" is negative"), "{e}");
        let e = Shard::from_slurm(env("x", None, Some("3"))).unwrap_err();
        assert!(e.contains("is not a number"), "{e}");
        assert_eq!(Shard::from_slurm(|_: &str| None), Ok(None));
    }
}
