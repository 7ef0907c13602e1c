//! Helpers shared by the command's test binaries.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `hooke args` in `cwd` (without a Slurm task in the environment), killed — and the test
/// failed — if it is still running after `seconds`: for checks that refuse a run which, were
/// the check broken, would go on for hours.
pub fn hooke_within(args: &[&str], cwd: &Path, seconds: u64) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooke"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hooke runs");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() > seconds {
            child.kill().unwrap();
            panic!("{args:?} was still running after {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
