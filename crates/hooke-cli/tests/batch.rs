//! `hooke batch`: shards that cover every sample once, resuming a killed shard, failed samples
//! recorded with their reason, overrides that change exactly what a hand-edited scene does.

use std::path::Path;
use std::process::{Command, Output};

mod common;

fn hooke(args: &[&str], cwd: &Path) -> Output {
    hooke_env(args, cwd, &[])
}

fn hooke_env(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hooke"));
    c.args(args).current_dir(cwd).env_remove("SLURM_ARRAY_TASK_ID");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("hooke runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A rope pendulum of 12 particles, `frames` frames (in the air of `drape()`, which acts on
/// cloth triangles only, so that the two can be packed into worlds).
fn pendulum(frames: usize) -> String {
    format!(
        "name = \"pendulum\"\n[solver]\nsubsteps = 10\niterations = 4\nframes = {frames}\n[air]\ndrag_coefficient = 1.0\n\
         [materials.cord]\ndensity = 0.2\nstretch_stiffness = 1e5\nradius = 0.004\n\
         [[rope]]\nname = \"pendulum\"\nmaterial = \"cord\"\nstart = [0.0, 2.0, 0.0]\nend = [0.5, 1.134, 0.0]\n\
         particles = 12\nend_mass = 1.0\npin_indices = [0]\n"
    )
}

/// Six samples (a 3 × 2 sweep of stiffness and end mass) and, as sample 0, one that blows up
/// (1 000 m/s² of gravity against a 5 m/s speed limit: the bob swings faster).
const MANIFEST: &str = r#"
out = "data"
[[sample]]
scene = "scenes/pendulum.toml"
set = { "gravity" = [0.0, -1000.0, 0.0], "solver.max_speed" = 5.0 }

[[sweep]]
scene = "scenes/pendulum.toml"
vary = { "materials.cord.stretch_stiffness" = [1e3, 1e4, 1e5], "rope.0.end_mass" = [0.5, 2.0] }
"#;

fn setup(frames: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("scenes")).unwrap();
    std::fs::write(tmp.path().join("scenes/pendulum.toml"), pendulum(frames)).unwrap();
    std::fs::write(tmp.path().join("batch.toml"), MANIFEST).unwrap();
    tmp
}

fn index(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("index.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Names under `dir` that start with a dot (temporary files and folders), recursively.
fn hidden(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            out.push(name);
        } else if e.path().is_dir() {
            out.extend(hidden(&e.path()));
        }
    }
    out
}

/// A sample that cannot be moved into place (here a file stands where its folder goes) fails
/// the run with the path, and leaves no temporary folder behind, however often it is retried.
#[test]
fn a_sample_that_cannot_be_moved_into_place_leaves_nothing() {
    let tmp = setup(5);
    let samples = tmp.path().join("data/samples");
    std::fs::create_dir_all(&samples).unwrap();
    std::fs::write(samples.join("000001"), "in the way").unwrap();
    for _ in 0..2 {
        let o = hooke(&["batch", "batch.toml", "--shard", "1/3"], tmp.path());
        assert!(!o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("000001"), "{}", text(&o));
        assert!(hidden(&tmp.path().join("data")).is_empty(), "{:?}", hidden(&tmp.path().join("data")));
    }
}

/// A shard whose caches cannot fit the disk (here one sample asks for 10¹³ frames through the
/// manifest) is refused before any sample is simulated, with a message that names the shard,
/// the sample and its frame count, and leaves no sample behind.
#[cfg(unix)]
#[test]
fn a_shard_larger_than_the_disk_is_refused_before_simulating() {
    let tmp = setup(5);
    std::fs::write(
        tmp.path().join("big.toml"),
        "out = \"data\"\n[[sample]]\nscene = \"scenes/pendulum.toml\"\n\
         [[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.frames\" = 10000000000000 }\n",
    )
    .unwrap();
    let o = common::hooke_within(&["batch", "big.toml"], tmp.path(), 60);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    for needle in [
        "shard 0/1",
        "the 2 caches need at least",
        "free on the file system of",
        "sample 1 (scenes/pendulum.toml)",
        "solver.frames = 10000000000000",
    ] {
        assert!(t.contains(needle), "no {needle:?} in: {t}");
    }
    let samples = tmp.path().join("data/samples");
    let left: Vec<_> =
        std::fs::read_dir(&samples).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "left {left:?}");
}

#[test]
fn three_shards_cover_every_sample_once_and_a_blow_up_is_recorded() {
    let tmp = setup(40);
    for i in 0..3 {
        let o = hooke(&["batch", "batch.toml", "--shard", &format!("{i}/3")], tmp.path());
        assert!(o.status.success(), "shard {i}: {}", text(&o));
    }
    let data = tmp.path().join("data");
    // An index that cannot be put in place (a folder in the way) leaves no temporary file; one
    // a killed run left an hour ago is swept, one as new as a shard's that is writing it now
    // (on another machine, say) is not.
    let _ = std::fs::remove_file(data.join("index.jsonl"));
    std::fs::create_dir(data.join("index.jsonl")).unwrap();
    let o = hooke(&["batch", "batch.toml", "--index-only"], tmp.path());
    assert!(!o.status.success() && text(&o).contains("a folder is in the way"), "{}", text(&o));
    assert!(hidden(&data).is_empty(), "temporary files left: {:?}", hidden(&data));
    std::fs::remove_dir(data.join("index.jsonl")).unwrap();
    let old = std::fs::File::create(data.join(".index.jsonl.tmp-17")).unwrap();
    old.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)).unwrap();
    std::fs::write(data.join(".index.jsonl.tmp-18"), "writing").unwrap();
    let o = hooke(&["batch", "batch.toml", "--index-only"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(hidden(&data), [".index.jsonl.tmp-18"], "the old index swept, the new one kept");
    std::fs::remove_file(data.join(".index.jsonl.tmp-18")).unwrap();
    let records = index(&data);
    let samples: Vec<u64> = records.iter().map(|r| r["sample"].as_u64().unwrap()).collect();
    assert_eq!(samples, (0..7).collect::<Vec<_>>(), "each sample exactly once");
    for r in &records {
        let k = r["sample"].as_u64().unwrap();
        assert_eq!(r["shard"], format!("{}/3", k % 3), "sample {k} made by its shard");
    }
    // The blow-up: failed with its reason, no cache kept; its shard (0) went on to samples 3 and 6.
    assert_eq!(records[0]["status"], "failed");
    let reason = records[0]["reason"].as_str().unwrap();
    assert!(reason.contains("blew up") && reason.contains("m/s"), "{reason}");
    assert!(records[0]["files"].as_array().unwrap().is_empty());
    assert_eq!(std::fs::read_dir(data.join("samples/000000")).unwrap().count(), 1, "only sample.json");
    for r in &records[1..] {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["frames"], 41);
        for f in r["files"].as_array().unwrap() {
            assert!(data.join(f.as_str().unwrap()).is_file(), "{f}");
        }
    }
    // The sweep's order: the last key (rope.0.end_mass) varies fastest.
    assert_eq!(records[1]["set"]["materials.cord.stretch_stiffness"], 1e3);
    assert_eq!(records[1]["set"]["rope.0.end_mass"], 0.5);
    assert_eq!(records[2]["set"]["rope.0.end_mass"], 2.0);
    assert_eq!(records[3]["set"]["materials.cord.stretch_stiffness"], 1e4);
    assert!(hidden(&data).is_empty(), "{:?}", hidden(&data));

    // A sample is the scene with its keys set, exactly: sample 4 (1e4 N, 2 kg) against `run`
    // of the scene edited by hand. The softer rope with the heavier bob stretches more.
    let edited = pendulum(40)
        .replace("stretch_stiffness = 1e5", "stretch_stiffness = 1e4")
        .replace("end_mass = 1.0", "end_mass = 2.0");
    std::fs::write(tmp.path().join("edited.toml"), edited).unwrap();
    let o = hooke(&["run", "edited.toml", "--out", "edited"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    let csv = |p: &Path| std::fs::read_to_string(p).unwrap();
    let by_hand = csv(&tmp.path().join("edited/diagnostics.csv"));
    assert!(
        csv(&data.join("samples/000004/diagnostics.csv")) == by_hand,
        "sample 4 differs from the scene edited by hand"
    );
    assert!(csv(&data.join("samples/000003/diagnostics.csv")) != by_hand, "sample 3 is sample 4");
    // Four samples at a time, each on its own thread: the same results.
    let o = hooke(&["batch", "batch.toml", "--jobs", "4", "--out", "data4"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    for k in 1..7 {
        let id = format!("samples/{k:06}/diagnostics.csv");
        assert!(csv(&data.join(&id)) == csv(&tmp.path().join("data4").join(&id)), "sample {k} differs with --jobs 4");
    }
    assert_eq!(index(&tmp.path().join("data4")).len(), 7);
    let strain = |r: &serde_json::Value| r["max_stretch_strain"].as_f64().unwrap();
    assert!(strain(&records[2]) > strain(&records[1]) && strain(&records[1]) > strain(&records[5]));
}

#[test]
fn a_killed_run_resumes_without_duplicates_or_half_written_samples() {
    // About 0.2 s a sample, so that the kill lands in the middle of the batch.
    let tmp = setup(2000);
    let data = tmp.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooke"))
        .args(["batch", "batch.toml", "--threads", "1"])
        .current_dir(tmp.path())
        .env_remove("SLURM_ARRAY_TASK_ID")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !data.join("samples/000002/sample.json").exists() {
        assert!(started.elapsed().as_secs() < 120, "sample 2 never completed");
        assert!(child.try_wait().unwrap().is_none(), "the batch ended before it was killed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let complete = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.join("samples"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        v.sort();
        v
    };
    let before = complete(&data);
    assert!(before.len() < 7, "the kill came after the last sample: {before:?}");
    // Every sample folder present is complete.
    for id in &before {
        assert!(data.join("samples").join(id).join("sample.json").is_file(), "{id}");
    }
    let stamp = std::fs::metadata(data.join("samples/000002/sample.json")).unwrap().modified().unwrap();

    // Again without --resume: refused, naming the flag.
    let o = hooke(&["batch", "batch.toml"], tmp.path());
    assert!(!o.status.success());
    assert!(text(&o).contains("--resume"), "{}", text(&o));

    let o = hooke(&["batch", "batch.toml", "--resume"], tmp.path());
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains(&format!("{} complete already", before.len())), "{t}");
    let records = index(&data);
    let samples: Vec<u64> = records.iter().map(|r| r["sample"].as_u64().unwrap()).collect();
    assert_eq!(samples, (0..7).collect::<Vec<_>>());
    assert_eq!(complete(&data).len(), 7);
    assert!(hidden(&data).is_empty(), "leftovers: {:?}", hidden(&data));
    // What was complete was not made again.
    assert_eq!(std::fs::metadata(data.join("samples/000002/sample.json")).unwrap().modified().unwrap(), stamp);

    // A sample whose cache was deleted since is not taken as complete: refused, naming the
    // file and what to do; done again once its folder is removed.
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("samples/000002/sample.json")).unwrap()).unwrap();
    let file = record["files"][0].as_str().unwrap().to_string();
    std::fs::remove_file(data.join(&file)).unwrap();
    let o = hooke(&["batch", "batch.toml", "--resume"], tmp.path());
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("lists {file}, which is missing")), "{}", text(&o));
    // So is an index of it: it would list the sample as complete.
    let o = hooke(&["batch", "batch.toml", "--index-only"], tmp.path());
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("lists {file}, which is missing")), "{}", text(&o));
    std::fs::remove_dir_all(data.join("samples/000002")).unwrap();
    let o = hooke(&["batch", "batch.toml", "--resume"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    assert!(data.join(&file).is_file(), "sample 2 made again");
    // A cache cut short since (its size no longer the record's) is not complete either.
    let bytes = std::fs::metadata(data.join(&file)).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(data.join(&file)).unwrap();
    f.set_len(bytes / 2).unwrap();
    drop(f);
    let o = hooke(&["batch", "batch.toml", "--resume"], tmp.path());
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(&format!("lists {file} of {bytes} bytes, which has {} now", bytes / 2)), "{}", text(&o));
    std::fs::remove_dir_all(data.join("samples/000002")).unwrap();
    let o = hooke(&["batch", "batch.toml", "--resume"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));

    // A manifest changed under a dataset is refused, naming the sample.
    std::fs::write(tmp.path().join("batch.toml"), MANIFEST.replace("1e3, 1e4", "2e3, 1e4")).unwrap();
    let o = hooke(&["batch", "batch.toml", "--resume"], tmp.path());
    assert!(!o.status.success());
    assert!(text(&o).contains("sample 1 was made from"), "{}", text(&o));
}

/// The manifest that `docs/SCALE.md` shows is shipped as `examples/drapes.toml`, the same text,
/// and every sample of it loads (`--dry-run` from any folder: its scenes are found from the
/// manifest's own).
#[test]
fn the_documented_manifest_is_shipped_and_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/SCALE.md")).unwrap();
    let start = doc.find("```toml\n# drapes.toml\n").expect("SCALE.md shows drapes.toml") + "```toml\n".len();
    let block = &doc[start..start + doc[start..].find("```").unwrap()];
    let shipped = std::fs::read_to_string(root.join("examples/drapes.toml")).unwrap();
    assert_eq!(block, shipped, "examples/drapes.toml is not the manifest SCALE.md shows");
    let tmp = tempfile::tempdir().unwrap();
    let manifest = root.join("examples/drapes.toml");
    let o = hooke(&["batch", manifest.to_str().unwrap(), "--dry-run"], tmp.path());
    assert!(o.status.success() && text(&o).contains("7 samples of 7 in shard 0/1, every scene loaded"), "{}", text(&o));
}

#[test]
fn slurm_picks_the_shard_and_bad_manifests_name_what_is_wrong() {
    let tmp = setup(10);
    let env = [("SLURM_ARRAY_TASK_ID", "5"), ("SLURM_ARRAY_TASK_MIN", "4"), ("SLURM_ARRAY_TASK_COUNT", "3")];
    let o = hooke_env(&["batch", "batch.toml"], tmp.path(), &env);
    assert!(o.status.success(), "{}", text(&o));
    let records = index(&tmp.path().join("data"));
    let samples: Vec<u64> = records.iter().map(|r| r["sample"].as_u64().unwrap()).collect();
    assert_eq!(samples, [1, 4], "task 5 of the array 4–6 is shard 1/3");

    let cases: [(&str, &str, &str); 17] = [
        ("bad1.toml", "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.substep\" = 4 }\n", "substep"),
        ("bad2.toml", "[[sample]]\nscene = \"scenes/nope.toml\"\n", "nope.toml"),
        (
            "bad3.toml",
            "[[sweep]]\nscene = \"scenes/pendulum.toml\"\nvary = { \"solver.substeps\" = [] }\n",
            "solver.substeps",
        ),
        ("bad4.toml", "colour = 3\n[[sample]]\nscene = \"scenes/pendulum.toml\"\n", "colour"),
        (
            "bad5.toml",
            "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"rope.3.particles\" = 4 }\n",
            "no element 3",
        ),
        (
            "bad6.jsonl",
            "{\"scene\": \"scenes/pendulum.toml\", \"set\": {\"materials.cord.density\": -1.0}}\n",
            "density",
        ),
        // A line that is an array, not one sample's object (serde read it as fields in order).
        ("bad7.jsonl", "[{\"scene\": \"scenes/pendulum.toml\"}]\n", "line 1: each line is one sample, a JSON object"),
        ("bad7c.jsonl", "{\"scene\": \"scenes/pendulum.toml\"}\n# a comment\n", "line 2: JSON Lines has no comments"),
        // A key given twice in one object: JSON kept the last value silently.
        (
            "bad10.jsonl",
            "{\"scene\": \"scenes/pendulum.toml\"}\n{\"scene\": \"scenes/pendulum.toml\", \"set\": {\"solver.frames\": 3, \"solver.frames\": 4}}\n",
            "line 2: the key \"set\".\"solver.frames\" is given twice",
        ),
        // An index written with a leading zero: the same element as another key's "rope.0".
        (
            "bad11.toml",
            "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"rope.00.particles\" = 4, \"rope.0.particles\" = 5 }\n",
            "\"00\" is not an index as written: write 0",
        ),
        // A value listed twice: two samples of the same run.
        (
            "bad12.toml",
            "[[sweep]]\nscene = \"scenes/pendulum.toml\"\nvary = { \"gravity\" = [[0.0, -9.81, 0.0], [0.0, -1.0, 0.0], [0, -9.81, 0]] }\n",
            "gives the same value twice ([0.0, -9.81, 0.0] and [0, -9.81, 0], its values 1 and 3)",
        ),
        // The same scene with the same keys set twice, in any spelling of the values, and a
        // sweep that makes a sample given before: the same run twice.
        (
            "bad13.toml",
            "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.frames\" = 3 }\n[[sample]]\nscene = \"scenes/pendulum.toml\"\n\
             [[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.frames\" = 3.0 }\n",
            "[[sample]] 2 is the same run as [[sample]] 0 (the scene \"scenes/pendulum.toml\" with the same keys set)",
        ),
        (
            "bad14.toml",
            "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { gravity = [0.0, -2.0, 0.0] }\n\
             [[sweep]]\nscene = \"scenes/pendulum.toml\"\nvary = { gravity = [[0.0, -1.0, 0.0], [0, -2, 0]] }\n",
            "[[sweep]] 0 (its combination 1) is the same run as [[sample]] 0",
        ),
        (
            "bad15.jsonl",
            "{\"scene\": \"scenes/pendulum.toml\"}\n{\"scene\": \"scenes/pendulum.toml\", \"set\": {\"solver.frames\": 3}}\n{\"scene\": \"scenes/pendulum.toml\"}\n",
            "line 3 is the same run as line 1",
        ),
        // A misspelt material: the sweep would vary nothing (every sample the same).
        (
            "bad8.toml",
            "[[sweep]]\nscene = \"scenes/pendulum.toml\"\nvary = { \"materials.cordd.density\" = [0.1, 0.2] }\n",
            "no cloth or rope of",
        ),
        // Two keys, one inside the other: which wins would depend on their order.
        (
            "bad9.toml",
            "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver\" = { frames = 3 }, \"solver.frames\" = 4 }\n",
            "the first holds the second",
        ),
        // The scene's [output] is not where a batch writes (it was set and ignored).
        (
            "bad17.toml",
            "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"output.format\" = \"obj\" }\n",
            "[[sample]] 0: \"output.format\" cannot be set",
        ),
    ];
    for (name, manifest, needle) in cases {
        std::fs::write(tmp.path().join(name), manifest).unwrap();
        let o = hooke(&["batch", name, "--out", "bad"], tmp.path());
        let t = text(&o);
        assert!(!o.status.success(), "{name}: {t}");
        assert!(t.contains(needle), "{name}: {t}");
        assert!(!tmp.path().join("bad/samples").exists() || hidden(&tmp.path().join("bad")).is_empty(), "{name}");
        assert!(!tmp.path().join("bad/samples/000000").exists(), "{name}: a sample was written");
        // `hooke validate` checks a manifest as `batch --dry-run` does (it said "unknown field
        // `sample`", reading it as a scene).
        let o = hooke(&["validate", name], tmp.path());
        assert!(!o.status.success() && text(&o).contains(needle), "validate {name}: {}", text(&o));
    }
    let listing = || {
        let mut l: Vec<_> =
            std::fs::read_dir(tmp.path().join("data")).unwrap().map(|e| e.unwrap().file_name()).collect();
        l.sort();
        l
    };
    let before = listing();
    let o = hooke(&["validate", "batch.toml"], tmp.path());
    assert!(
        o.status.success() && text(&o).contains("batch.toml: ok — batch manifest of 7 samples, every scene loaded"),
        "{}",
        text(&o)
    );
    assert_eq!(listing(), before, "validate writes nothing");
    // The samples' scenes' warnings are shown, each once (they were not).
    std::fs::write(
        tmp.path().join("warned.toml"),
        "[[sweep]]\nscene = \"scenes/pendulum.toml\"\nset = { \"rope.0.pin_indices\" = [] }\nvary = { \"rope.0.release_pins_at\" = [1.0, 2.0] }\n",
    )
    .unwrap();
    let o = hooke(&["validate", "warned.toml"], tmp.path());
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("warning: sample 0 and 1 other: rope[0]") && t.contains("has no pins"),
        "{t}"
    );
    assert_eq!(t.matches("has no pins").count(), 1, "{t}");
    // The same scene file named as written and through "./" is the same run.
    std::fs::write(
        tmp.path().join("dot.toml"),
        "[[sample]]\nscene = \"./scenes/pendulum.toml\"\n[[sample]]\nscene = \"scenes/pendulum.toml\"\n",
    )
    .unwrap();
    for name in ["dot.toml", "./dot.toml"] {
        let o = hooke(&["validate", name], tmp.path());
        assert!(
            !o.status.success() && text(&o).contains("[[sample]] 1 is the same run as [[sample]] 0"),
            "{}",
            text(&o)
        );
    }
    // A scene read through a pipe is still validated as a scene (the check for a manifest
    // must not read it first).
    #[cfg(unix)]
    {
        let scene = std::fs::read(tmp.path().join("scenes/pendulum.toml")).unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hooke"))
            .args(["validate", "/dev/stdin"])
            .current_dir(tmp.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), &scene).unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success() && text(&o).contains("ok — scene"), "{}", text(&o));
    }
    // A device read as a manifest is read only so far (it grew to 15 GB before).
    if Path::new("/dev/zero").exists() {
        let o = hooke(&["batch", "/dev/zero", "--dry-run"], tmp.path());
        assert!(!o.status.success() && text(&o).contains("/dev/zero: longer than 256 MiB"), "{}", text(&o));
    }
    // A sweep over a body's material and one material's keys: the samples where the body has
    // the other material are not refused (that material's keys change nothing there, by design).
    let scene = std::fs::read_to_string(tmp.path().join("scenes/pendulum.toml")).unwrap();
    let two = scene.replacen(
        "[materials.cord]",
        "[materials.twine]\ndensity = 0.3\nstretch_stiffness = 1e5\nradius = 0.004\n[materials.cord]",
        1,
    );
    std::fs::write(tmp.path().join("scenes/two.toml"), two).unwrap();
    std::fs::write(
        tmp.path().join("both.toml"),
        "[[sweep]]\nscene = \"scenes/two.toml\"\nvary = { \"rope.0.material\" = [\"cord\", \"twine\"], \"materials.twine.density\" = [0.1, 0.2] }\n",
    )
    .unwrap();
    let o = hooke(&["batch", "both.toml", "--dry-run"], tmp.path());
    assert!(o.status.success() && text(&o).contains("4 samples of 4"), "{}", text(&o));
    let o = hooke(&["batch", "batch.toml", "--shard", "3/3"], tmp.path());
    assert!(!o.status.success() && text(&o).contains("--shard"), "{}", text(&o));
}

#[test]
fn a_dataset_is_checked_against_its_manifest_and_scene_files() {
    let tmp = setup(10);
    let o = hooke(&["batch", "batch.toml", "--shard", "0/2"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    // Stray files and odd names in samples/ are not samples, and break nothing.
    let samples = tmp.path().join("data/samples");
    std::fs::write(samples.join("notes.txt"), "mine").unwrap();
    std::fs::write(samples.join("abcdefghijké_x"), "").unwrap();
    std::fs::create_dir(samples.join(".1000001.tmp-1")).unwrap();
    let o = hooke(&["batch", "batch.toml", "--index-only"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(index(&tmp.path().join("data")).len(), 4);
    // A record edited to list a file outside its folder, or no cache for a sample that passed:
    // refused (the index listed /etc/passwd as the sample's cache). Sample 2 passed (sample 0
    // blows up).
    let record = samples.join("000002/sample.json");
    let kept = std::fs::read_to_string(&record).unwrap();
    let outside = std::env::current_exe().unwrap();
    let size = std::fs::metadata(&outside).unwrap().len();
    for (files, says) in [
        (serde_json::json!([outside.to_str().unwrap()]), "which is not a file in samples/000002"),
        (serde_json::json!(["samples/000002/../../../x.usda"]), "which is not a file in samples/000002"),
        (serde_json::json!([]), "no cache file for a sample that passed"),
    ] {
        let mut r: serde_json::Value = serde_json::from_str(&kept).unwrap();
        let n = files.as_array().unwrap().len();
        r["files"] = files;
        let diagnostics = r["bytes"].as_array().unwrap().last().cloned().unwrap();
        r["bytes"] = serde_json::Value::Array([vec![serde_json::json!(size); n], vec![diagnostics]].concat());
        std::fs::write(&record, r.to_string()).unwrap();
        let o = hooke(&["batch", "batch.toml", "--index-only"], tmp.path());
        assert!(!o.status.success() && text(&o).contains(says), "{r}: {}", text(&o));
    }
    std::fs::write(&record, kept).unwrap();
    // A manifest that is not the dataset's: refused, naming the sample.
    std::fs::write(tmp.path().join("other.toml"), "[[sample]]\nscene = \"scenes/pendulum.toml\"\n").unwrap();
    let o = hooke(&["batch", "other.toml", "--out", "data", "--index-only"], tmp.path());
    assert!(!o.status.success() && text(&o).contains("is not in"), "{}", text(&o));
    // The scene file edited under the dataset: refused on resume.
    let scene = tmp.path().join("scenes/pendulum.toml");
    std::fs::write(&scene, std::fs::read_to_string(&scene).unwrap().replace("particles = 12", "particles = 7"))
        .unwrap();
    let o = hooke(&["batch", "batch.toml", "--resume"], tmp.path());
    assert!(!o.status.success() && text(&o).contains("another version"), "{}", text(&o));
    // --dry-run loads every scene: a bad key is found without simulating.
    std::fs::write(
        tmp.path().join("typo.toml"),
        "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.substep\" = 4 }\n",
    )
    .unwrap();
    let o = hooke(&["batch", "typo.toml", "--dry-run"], tmp.path());
    assert!(!o.status.success() && text(&o).contains("substep"), "{}", text(&o));
    // So is a sample that tears written to PC2, which holds a fixed vertex count, and the run
    // refuses it too, before any sample (it recorded the sample as failed and exited 0).
    std::fs::write(
        tmp.path().join("scenes/torn.toml"),
        "[materials.m]\ntear_strain = 0.1\n[[cloth]]\nmaterial = \"m\"\nrows = 4\ncolumns = 4\nspacing = 0.1\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("pc2.toml"), "format = \"pc2\"\n[[sample]]\nscene = \"scenes/torn.toml\"\n")
        .unwrap();
    for args in [&["batch", "pc2.toml", "--dry-run"][..], &["batch", "pc2.toml", "--out", "pc2"]] {
        let o = hooke(args, tmp.path());
        assert!(!o.status.success() && text(&o).contains("PC2, holds a fixed vertex count"), "{args:?}: {}", text(&o));
    }
    assert!(!tmp.path().join("pc2/samples/000000").exists(), "a sample was written");
    // A Slurm array with a step does not map onto shards.
    let env = [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_COUNT", "3"), ("SLURM_ARRAY_TASK_STEP", "2")];
    let o = hooke_env(&["batch", "batch.toml", "--out", "stepped"], tmp.path(), &env);
    assert!(!o.status.success() && text(&o).contains("SLURM_ARRAY_TASK_STEP"), "{}", text(&o));
}

/// A cloth dropped on a ball in the wind: the solver of `pendulum()`, so that both pack.
fn drape(frames: usize) -> String {
    format!(
        "name = \"drape\"\n[solver]\nsubsteps = 10\niterations = 4\nframes = {frames}\n[air]\ndrag_coefficient = 1.0\n\
         [materials.cotton]\ndensity = 0.2\nstretch_stiffness = 2000.0\nthickness = 0.01\n\
         [[cloth]]\nname = \"sheet\"\nmaterial = \"cotton\"\nrows = 10\ncolumns = 10\nspacing = 0.05\ncenter = [0.0, 1.0, 0.0]\n\
         [[collider]]\nname = \"ball\"\nshape = \"sphere\"\ncenter = [0.0, 0.5, 0.0]\nradius = 0.2\nstatic_friction = 0.4\nkinetic_friction = 0.3\n"
    )
}

#[test]
fn samples_packed_into_worlds_are_their_own_runs_bit_for_bit() {
    let tmp = setup(60);
    std::fs::write(tmp.path().join("scenes/drape.toml"), drape(60)).unwrap();
    // Five drapes (ball moved, wind, gravity) and two pendulums: one model of worlds. Each
    // world has its own ball, wind and gravity; their balls overlap in space.
    let manifest = r#"
format = "pc2"
[[sweep]]
scene = "scenes/drape.toml"
vary = { "collider.0.center" = [[0.0, 0.5, 0.0], [0.1, 0.3, 0.0], [3.0, 0.5, 0.0]], "wind" = [[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]] }
[[sweep]]
scene = "scenes/drape.toml"
vary = { "gravity" = [[0.0, -3.7, 0.0]] }
[[sample]]
scene = "scenes/drape.toml"
set = { "cloth.0.pin_groups" = [{ indices = [0], keyframes = [{ time = 0.0 }, { time = 0.1, translation = [1000.0, 0.0, 0.0] }] }] }
[[sweep]]
scene = "scenes/pendulum.toml"
set = { "solver.frames" = 60 }
vary = { "rope.0.end_mass" = [0.5, 2.0] }
"#;
    std::fs::write(tmp.path().join("packs.toml"), manifest).unwrap();
    let o = hooke(&["batch", "packs.toml", "--out", "alone"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    let o = hooke(&["batch", "packs.toml", "--out", "packed", "--worlds", "5"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    same_as_alone(tmp.path(), "alone", "packed");
    // The same on the GPU: packed into one GPU model, each sample's caches are its GPU run's
    // alone. Skipped without an adapter unless HOOKE_REQUIRE_GPU is set.
    let o = hooke(&["batch", "packs.toml", "--out", "gpu_alone", "--backend", "gpu", "--worlds", "1"], tmp.path());
    if !o.status.success() && text(&o).contains("adapter") && std::env::var_os("HOOKE_REQUIRE_GPU").is_none() {
        println!("skipped on the GPU: no adapter ({})", text(&o).lines().last().unwrap_or(""));
    } else {
        assert!(o.status.success(), "{}", text(&o));
        let o = hooke(&["batch", "packs.toml", "--out", "gpu_packed", "--worlds", "5", "--backend", "gpu"], tmp.path());
        assert!(o.status.success(), "{}", text(&o));
        same_as_alone(tmp.path(), "gpu_alone", "gpu_packed");
    }
    // Only samples that share their solver are packed together: the pendulums with other
    // substeps make a pack of their own, between the drapes, which are cut around them.
    std::fs::write(
        tmp.path().join("mixed.toml"),
        "[[sample]]\nscene = \"scenes/drape.toml\"\n[[sample]]\nscene = \"scenes/drape.toml\"\nset = { gravity = [0.0, -5.0, 0.0] }\n\
         [[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.substeps\" = 11 }\n\
         [[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.substeps\" = 11, \"rope.0.end_mass\" = 2.0 }\n\
         [[sample]]\nscene = \"scenes/drape.toml\"\nset = { gravity = [0.0, -9.0, 0.0] }\n",
    )
    .unwrap();
    let o = hooke(&["batch", "mixed.toml", "--out", "mixed", "--worlds", "4", "--dry-run"], tmp.path());
    assert!(o.status.success() && text(&o).contains("in 2 packs of up to 4 worlds (1 alone)"), "{}", text(&o));
    let o = hooke(&["batch", "mixed.toml", "--out", "mixed", "--worlds", "4"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    let worlds: Vec<_> = index(&tmp.path().join("mixed")).iter().map(|r| r["worlds"].as_u64()).collect();
    assert_eq!(worlds, [Some(2), Some(2), Some(2), Some(2), None]);
    // On the GPU packing is the default, but not for a Jacobi solve that estimates its ω and ρ
    // (they would be the whole pack's); asked for, it is refused with the way out.
    let gpu = |extra: &[&str]| {
        let mut args = vec!["batch", "mixed.toml", "--out", "j", "--backend", "gpu", "--dry-run"];
        args.extend_from_slice(extra);
        hooke(&args, tmp.path())
    };
    let o = gpu(&[]);
    assert!(o.status.success() && text(&o).contains("in 2 packs of up to 256 worlds (1 alone)"), "{}", text(&o));
    let o = gpu(&["--gpu-solve", "jacobi"]);
    assert!(o.status.success() && !text(&o).contains("packs"), "{}", text(&o));
    let o = gpu(&["--gpu-solve", "jacobi", "--worlds", "2"]);
    assert!(
        !o.status.success() && text(&o).contains("--relaxation") && text(&o).contains("--worlds 1"),
        "{}",
        text(&o)
    );
}

/// The samples of `packs.toml` baked alone into `alone` and packed by 5 into `packed` (both
/// under `root`) have the same records and byte-identical caches, the blow-up of sample 0
/// included.
fn same_as_alone(root: &Path, alone_name: &str, packed_name: &str) {
    let (alone_dir, packed_dir) = (root.join(alone_name), root.join(packed_name));
    let (alone, packed) = (index(&alone_dir), index(&packed_dir));
    assert_eq!(packed.len(), 10);
    // Sample 0 (the [[sample]] entry) drags a pin at 10 km/s: it blows up alone and packed,
    // and its pack is made again without it.
    for r in [&alone[0], &packed[0]] {
        assert_eq!(r["status"], "failed");
        assert!(r["reason"].as_str().unwrap().contains("blew up"), "{r}");
    }
    // Its record is its own run's, made alone: the same reason, in its own numbering.
    for key in ["reason", "max_stretch_strain", "frames", "time_s"] {
        assert_eq!(alone[0][key], packed[0][key], "{key}");
    }
    assert!(packed[0].get("worlds").is_none_or(|w| w.is_null()), "{}", packed[0]);
    for (a, p) in alone.iter().zip(&packed).skip(1) {
        let k = a["sample"].as_u64().unwrap();
        assert_eq!(p["worlds"], if k < 5 { 4 } else { 5 }, "sample {k}");
        assert!(a["files"] == p["files"], "sample {k}");
        for f in a["files"].as_array().unwrap() {
            let f = f.as_str().unwrap();
            let (x, y) = (std::fs::read(alone_dir.join(f)), std::fs::read(packed_dir.join(f)));
            assert!(x.unwrap() == y.unwrap(), "sample {k}: {f} differs packed ({packed_name})");
        }
        for key in ["max_stretch_strain", "max_residual_strain", "max_penetration_m", "status"] {
            assert_eq!(a[key], p[key], "sample {k}: {key} ({packed_name})");
        }
    }
}

/// `hooke run SCENE --worlds N --vary KEY=[…]` packs N copies of a scene, world k with the k-th
/// value of each varied key, and bakes them as one scene: each world's cache is byte for byte
/// the batch sample made alone from the same scene and keys.
#[test]
fn run_with_worlds_bakes_each_world_as_its_scene_alone() {
    let tmp = setup(40);
    std::fs::write(tmp.path().join("scenes/drape.toml"), drape(40)).unwrap();
    let gravity = "[[0.0, -9.81, 0.0], [0.0, -1.62, 0.0], [1.0, -3.7, 0.0]]";
    let centers = "[[0.0, 0.5, 0.0], [0.1, 0.3, 0.0], [3.0, 0.5, 0.0]]";
    let o = hooke(
        &[
            "run",
            "scenes/drape.toml",
            "--worlds",
            "3",
            "--vary",
            &format!("gravity={gravity}"),
            "--vary",
            &format!("collider.0.center={centers}"),
            "--format",
            "pc2",
            "--out",
            "packed",
        ],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let manifest = "format = \"pc2\"\n[[sample]]\nscene = \"scenes/drape.toml\"\nset = { \"gravity\" = [0.0, -9.81, 0.0], \"collider.0.center\" = [0.0, 0.5, 0.0] }\n\
         [[sample]]\nscene = \"scenes/drape.toml\"\nset = { \"gravity\" = [0.0, -1.62, 0.0], \"collider.0.center\" = [0.1, 0.3, 0.0] }\n\
         [[sample]]\nscene = \"scenes/drape.toml\"\nset = { \"gravity\" = [1.0, -3.7, 0.0], \"collider.0.center\" = [3.0, 0.5, 0.0] }\n";
    std::fs::write(tmp.path().join("three.toml"), manifest).unwrap();
    let o = hooke(&["batch", "three.toml", "--out", "alone"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    let read = |p: &str| std::fs::read(tmp.path().join(p)).unwrap();
    for k in 0..3 {
        let packed = read(&format!("packed/w{k}_sheet.pc2"));
        assert!(packed == read(&format!("alone/samples/{k:06}/sheet.pc2")), "world {k} differs from its scene alone");
    }
    assert!(read("packed/w0_sheet.pc2") != read("packed/w1_sheet.pc2"), "the worlds were not varied");
    // (A 300² cloth: 65 536 copies need terabytes.)
    std::fs::write(tmp.path().join("scenes/big.toml"), "[[cloth]]\nrows = 300\ncolumns = 300\nspacing = 0.01\n")
        .unwrap();
    // Refused, with a message that names the flag, the key as written and the world: a list of
    // the wrong length, a key with no list, the default scene, a key the scene does not know,
    // a bad value in one world, a key that cannot vary, a key given twice.
    for (args, needle) in [
        (vec!["run", "scenes/drape.toml", "--worlds", "2", "--vary", "gravity=[[0.0, -1.0, 0.0]]"], "--vary gravity"),
        (vec!["run", "scenes/drape.toml", "--vary", "gravity=[0.0"], "--vary gravity"),
        (vec!["run", "--worlds", "2"], "--worlds"),
        (vec!["run", "scenes/drape.toml", "--vary", "nosuchtable.x=[1, 2]"], "world 0"),
        (vec!["run", "scenes/drape.toml", "--vary", "materials.cotton.density=[0.1, \"abc\"]"], "world 1"),
        (vec!["run", "scenes/drape.toml", "--vary", "materials.cotton.nosuch=[1, 2]"], "materials.cotton.nosuch"),
        (vec!["run", "scenes/drape.toml", "--vary", "name=[\"a\", \"b\"]"], "cannot vary"),
        (
            vec!["run", "scenes/drape.toml", "--vary", "gravity=[[0, -1, 0]]", "--vary", "gravity=[[0, -2, 0]]"],
            "given twice",
        ),
        // Two worlds alike in every varied key (an integer and its float are alike).
        (
            vec!["run", "scenes/drape.toml", "--vary", "gravity=[[0, -1, 0], [0.0, -2.0, 0.0], [0.0, -1.0, 0.0]]"],
            "worlds 0 and 2 get the same value",
        ),
    ] {
        let o = hooke(&args, tmp.path());
        assert!(!o.status.success(), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(needle), "{args:?}: wanted {needle:?} in {}", text(&o));
    }
    // More copies than memory holds: refused from the first world's size, at once (it loaded
    // every copy first: for this cloth, hours).
    let o = common::hooke_within(&["run", "scenes/big.toml", "--worlds", "65536"], tmp.path(), 60);
    assert!(
        !o.status.success()
            && text(&o).contains("--worlds 65536: 65536 copies")
            && text(&o).contains("more than the memory limit"),
        "{}",
        text(&o)
    );
    assert!(!tmp.path().join("out").exists(), "a refused run wrote output");
    // One world without --vary is the scene itself: a scene that is cut (which cannot be packed
    // with others) runs, and bakes what it bakes without --worlds (it was refused).
    let cut = format!(
        "{}[[cut]]\ntime = 0.05\npoints = [[0.0, 0.5, 0.0], [0.0, 1.5, 0.0]]\ndirection = [0.0, 0.0, 1.0]\n",
        drape(6)
    );
    std::fs::write(tmp.path().join("scenes/cut.toml"), cut).unwrap();
    for (args, out) in [(vec!["--worlds", "1"], "one"), (vec![], "plain")] {
        let o =
            hooke(&[&["run", "scenes/cut.toml", "--format", "obj", "--out", out][..], &args[..]].concat(), tmp.path());
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    let objs = |dir: &str| {
        let mut files: Vec<_> = std::fs::read_dir(tmp.path().join(dir)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "obj"))
            .map(|p| std::fs::read(p).unwrap())
            .collect::<Vec<_>>()
    };
    let (one, plain) = (objs("one"), objs("plain"));
    assert!(!one.is_empty() && one == plain, "--worlds 1 differs from the scene run alone");
    let vertices = |obj: &[u8]| String::from_utf8_lossy(obj).lines().filter(|l| l.starts_with("v ")).count();
    assert!(vertices(&one[one.len() - 1]) > vertices(&one[0]), "the blade split no particle");
}

/// A reader that stops early (`hooke batch M --dry-run | head -1`) ends hooke quietly, by the
/// closed pipe's signal, not with a panic.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_listing_without_a_panic() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let tmp = setup(10);
    // 1 600 samples, ~130 kB of listing: more than a pipe holds once its reader is gone.
    let masses: Vec<String> = (1..=40).map(|k| format!("{:.3}", 0.1 * k as f64)).collect();
    let gravities: Vec<String> = (1..=40).map(|k| format!("[0.0, {:.2}, 0.0]", -0.5 * k as f64)).collect();
    let many = format!(
        "[[sweep]]\nscene = \"scenes/pendulum.toml\"\nvary = {{ \"rope.0.end_mass\" = [{}], \"gravity\" = [{}] }}\n",
        masses.join(", "),
        gravities.join(", ")
    );
    std::fs::write(tmp.path().join("many.toml"), many).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooke"))
        .args(["batch", "many.toml", "--dry-run"])
        .current_dir(tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // The reader is gone: the next line hooke prints meets a closed pipe.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(first.starts_with("000000"), "{first}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success() || out.status.signal() == Some(13), "{:?} {stderr}", out.status);
}

/// A table among a sample's keys sets each of its keys in the scene's table (TOML's unquoted
/// dotted key `solver.substeps = 4` is such a table), leaving the rest of it as it is: it
/// replaced the whole `[solver]`, so that the sample ran 240 frames instead of its scene's 10.
/// An empty table makes the table (`air = {}`: the default air), and a table for an array
/// element replaces the element (a plane collider made a sphere, none of its keys left).
/// A sample's folder without its record is reported before anything runs (a resumed shard
/// stopped on it after simulating, with an I/O error), and `--index-only` refuses
/// `--dry-run` and `--resume`, which it ignored.
#[test]
fn a_table_in_set_sets_its_keys_and_a_stray_sample_folder_is_named() {
    let tmp = setup(10);
    std::fs::write(
        tmp.path().join("tables.toml"),
        "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { solver.substeps = 4 }\n\
         [[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { solver = { frames = 3 } }\n",
    )
    .unwrap();
    let o = hooke(&["batch", "tables.toml", "--out", "t"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    let records = index(&tmp.path().join("t"));
    let frames: Vec<u64> = records.iter().map(|r| r["frames"].as_u64().unwrap()).collect();
    // The records count the initial frame too.
    assert_eq!(frames, [11, 4], "the scene's 10 frames kept, then 3 set: {records:?}");
    // The same keys as a hand-written override give the same sample: the first is the scene
    // with "solver.substeps" = 4, bit for bit.
    std::fs::write(
        tmp.path().join("dotted.toml"),
        "[[sample]]\nscene = \"scenes/pendulum.toml\"\nset = { \"solver.substeps\" = 4 }\n",
    )
    .unwrap();
    let o = hooke(&["batch", "dotted.toml", "--out", "d"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));
    let read = |p: &str| std::fs::read(tmp.path().join(p)).unwrap();
    assert_eq!(read("t/samples/000000/pendulum.usda"), read("d/samples/000000/pendulum.usda"));

    std::fs::write(
        tmp.path().join("scenes/floor.toml"),
        "[solver]\nframes = 2\n[[cloth]]\nrows = 4\ncolumns = 4\nspacing = 0.1\n\
         [[collider]]\nshape = \"plane\"\npoint = [0.0, -1.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("whole.toml"),
        "[[sample]]\nscene = \"scenes/floor.toml\"\n\
         set = { air = {}, \"collider.0\" = { shape = \"sphere\", center = [0.0, -1.0, 0.0], radius = 0.3 } }\n",
    )
    .unwrap();
    // (Merged into the plane's keys, the sphere was refused: "point" does not apply to it.)
    let o = hooke(&["batch", "whole.toml", "--out", "w"], tmp.path());
    assert!(o.status.success(), "{}", text(&o));

    std::fs::remove_file(tmp.path().join("t/samples/000001/sample.json")).unwrap();
    let o = hooke(&["batch", "tables.toml", "--out", "t", "--resume"], tmp.path());
    let t = text(&o);
    assert!(!o.status.success() && t.contains("samples/000001: sample 1 has no sample.json there"), "{t}");
    assert!(t.contains("remove it to run the sample again"), "{t}");
    for extra in ["--dry-run", "--resume"] {
        let o = hooke(&["batch", "tables.toml", "--out", "t", "--index-only", extra], tmp.path());
        assert!(!o.status.success() && text(&o).contains("cannot be used with"), "{extra}: {}", text(&o));
    }
}
