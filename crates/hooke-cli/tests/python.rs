//! The Python bindings' pytest suite (crates/hooke-py/tests), run against this build's
//! `hooke` command. It needs the module installed (`pip install ./crates/hooke-py`, with
//! numpy and pytest; ray for the Ray example): without it the test says so and passes, unless
//! HOOKE_REQUIRE_PY=1 (CI), which makes a missing module an error.

use std::process::Command;

#[test]
fn the_python_bindings_pass_their_pytest_suite() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let probe = Command::new("python3").args(["-c", "import hooke, numpy, pytest"]).output();
    let required = std::env::var("HOOKE_REQUIRE_PY").is_ok_and(|v| v == "1");
    match probe {
        Ok(o) if o.status.success() => {}
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            assert!(!required, "HOOKE_REQUIRE_PY=1 but the module cannot be imported: {why}");
            eprintln!(
                "skipped: the hooke Python module, numpy or pytest is not installed \
                 (pip install ./crates/hooke-py pytest): {why}"
            );
            return;
        }
    }
    let o = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "crates/hooke-py/tests"])
        .current_dir(&root)
        .env("HOOKE_BIN", env!("CARGO_BIN_EXE_hooke"))
        .output()
        .expect("python3 runs");
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    println!("{out}");
    assert!(o.status.success(), "pytest failed:\n{out}");
    assert!(!out.contains(" skipped") || !required, "a Python test was skipped under HOOKE_REQUIRE_PY=1:\n{out}");
}

/// The units (crate, target, mode, profile and platform, with their features) of a build,
/// from cargo's unit graph: `args` are cargo's, run at the workspace root with `--unit-graph`
/// (an unstable flag, let through by `RUSTC_BOOTSTRAP=1`; nothing is built, and `--frozen`
/// keeps it off the network and the lock file as it is). Fails after two minutes rather than
/// wait for ever on another cargo's lock.
fn unit_features(args: &[&str]) -> std::collections::BTreeMap<String, std::collections::BTreeSet<Vec<String>>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = Command::new(cargo)
        .args(args)
        .args(["--release", "--frozen", "--unit-graph", "-Z", "unstable-options"])
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(&root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cargo runs");
    // Read as it comes (a full pipe would stall cargo), with a deadline.
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map(|_| v).unwrap_or_default()
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("cargo waited for") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("cargo {args:?} --unit-graph took over two minutes (waiting on a lock?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "cargo {args:?} --unit-graph failed: {}", String::from_utf8_lossy(&err));
    let graph: serde_json::Value = serde_json::from_slice(&out).expect("a unit graph in JSON");
    let mut units = std::collections::BTreeMap::<_, std::collections::BTreeSet<_>>::new();
    for u in graph["units"].as_array().expect("units") {
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let key = format!(
            "{} {} ({}; profile {}; platform {})",
            text(&u["pkg_id"]),
            text(&u["target"]["name"]),
            text(&u["mode"]),
            u["profile"],
            u["platform"]
        );
        let features = u["features"].as_array().expect("features").iter().map(text).collect();
        units.entry(key).or_default().insert(features);
    }
    units
}

/// `pip install ./crates/hooke-py` (maturin: `cargo build --release -p hooke-py --lib`) and
/// the README's `cargo test --workspace --release` build every crate they share with the same
/// features, so the one reuses what the other built — CI runs both from a clean clone, and
/// without this the shared crates (wgpu, faer, hooke's own libraries, …) were compiled twice.
/// Cargo resolves a single package's features apart from the workspace's, so hooke-py's
/// manifest names the features the workspace's tests turn on in them; this test fails,
/// naming the crate and both feature sets, when a dependency change makes them drift.
#[test]
fn the_python_module_and_the_tests_build_their_shared_crates_alike() {
    let python = unit_features(&["build", "-p", "hooke-py", "--lib", "--features", "pyo3/abi3-py39"]);
    let tests = unit_features(&["test", "--workspace", "--no-run"]);
    let drift: Vec<String> = python
        .iter()
        .filter_map(|(unit, features)| {
            let theirs = tests.get(unit)?;
            (!features.is_subset(theirs)).then(|| format!("{unit}: pip builds {features:?}, the tests {theirs:?}"))
        })
        .collect();
    let shared = python.keys().filter(|u| tests.contains_key(*u)).count();
    assert!(shared > 100, "only {shared} units shared: the graphs were not read as expected");
    assert!(
        drift.is_empty(),
        "{} of {shared} shared units are built with other features by pip (add the tests' features to \
         crates/hooke-py/Cargo.toml's alignment list):\n{}",
        drift.len(),
        drift.join("\n")
    );
}
