//! Whether a cache fits its disk: a run whose frames cannot fit the output's file system is
//! refused before it simulates (`hooke run`, the Python `bake`), instead of running until it
//! is stopped or the disk fills.

use std::path::{Path, PathBuf};

/// Bytes a cache writes at least for each point of each frame: three `f32`, what PC2 writes
/// (USD and OBJ write the coordinates as text, more).
pub const CACHE_BYTES_PER_POINT: f64 = 12.0;

/// Whether a cache of `frames` frames (and the start) of `points` points fits where `dir` will
/// be: at least [`CACHE_BYTES_PER_POINT`] a point and frame, against the space free (to this
/// user) on the file system of `dir`'s nearest existing ancestor.
///
/// # Errors
/// A sentence giving the size needed and the space free, for the caller to prefix with where
/// the frame count came from (`--frames N`, `solver.frames = N`). Where the free space cannot
/// be read (not Unix, a file system that reports no size), nothing is refused.
pub fn check(dir: &Path, frames: usize, points: usize) -> Result<(), String> {
    let Some((free, on)) = free_space(dir) else { return Ok(()) };
    let need = CACHE_BYTES_PER_POINT * points as f64 * (frames as f64 + 1.0);
    if need <= free as f64 {
        return Ok(());
    }
    Err(format!(
        "the cache needs at least {} ({} bytes a point and frame, {points} points, the start and {frames} frames), \
         more than the {} free on the file system of {}",
        size_text(need),
        CACHE_BYTES_PER_POINT,
        size_text(free as f64),
        on.display()
    ))
}

/// Bytes free to this user on the file system of `dir`'s nearest existing ancestor, and that
/// ancestor; `None` where it cannot be read.
fn free_space(dir: &Path) -> Option<(u64, PathBuf)> {
    // The folder, else its parents, else the working directory; none readable: no answer.
    let relative = dir.is_relative();
    let on = dir
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .chain(relative.then_some(Path::new(".")))
        .find(|p| p.exists())?;
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(on.as_os_str().as_bytes()).ok()?;
        // SAFETY: a plain system call on a NUL-terminated path and a local struct.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 || st.f_blocks == 0 {
            // Not readable, or a file system that does not report its size (some FUSE and
            // network ones): nothing to compare with.
            return None;
        }
        let free = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
        Some((free, std::fs::canonicalize(on).unwrap_or_else(|_| on.to_path_buf())))
    }
    #[cfg(not(unix))]
    {
        let _ = on;
        None
    }
}

/// A byte count with a decimal unit (kB, MB, GB, TB, PB, EB) and three decimals (`1.920 PB`).
fn size_text(bytes: f64) -> String {
    let units = ["bytes", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = bytes;
    let mut k = 0;
    while v >= 1000.0 && k + 1 < units.len() {
        v /= 1000.0;
        k += 1;
    }
    if k == 0 { format!("{v:.0} bytes") } else { format!("{v:.3} {}", units[k]) }
}
