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
