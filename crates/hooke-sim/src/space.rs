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
    let need = CACHE_BYTES_PER_POINT * points as f64 * (frames as f64 + 1.0);
    fits(dir, need, &format!("{points} points, the start and {frames} frames"))
        .map_err(|(need, free)| format!("the cache needs at least {need}, more than the {free}"))
}

/// Whether several caches fit where `dir` will be together: `caches` holds each cache's frame
/// count (the start not included) and point count; the estimate and the free space are
/// [`check`]'s.
///
/// # Errors
/// A sentence giving the number of caches, the size they need together and the space free.
pub fn check_all(dir: &Path, caches: &[(usize, usize)]) -> Result<(), String> {
    let point_frames: f64 = caches.iter().map(|&(frames, points)| points as f64 * (frames as f64 + 1.0)).sum();
    let need = CACHE_BYTES_PER_POINT * point_frames;
    fits(dir, need, &format!("{point_frames:.0} point-frames in all")).map_err(|(need, free)| match caches.len() {
        1 => format!("the cache needs at least {need}, more than the {free}"),
        n => format!("the {n} caches need at least {need} together, more than the {free}"),
    })
}

/// `Ok` where `need` bytes fit the file system of `dir` (or its free space cannot be read);
/// else the size needed, with `counted` (what the estimate counts) and the bytes a point and
/// frame, and the space free with the file system's folder, as text.
fn fits(dir: &Path, need: f64, counted: &str) -> Result<(), (String, String)> {
    let Some((free, on)) = free_space(dir) else { return Ok(()) };
    if need <= free as f64 {
        return Ok(());
    }
    Err((
        format!("{} ({} bytes a point and frame, {counted})", size_text(need), CACHE_BYTES_PER_POINT),
        format!("{} free on the file system of {}", size_text(free as f64), on.display()),
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Two caches that each fit in the free space but not together are refused together and
    /// allowed one by one (fails where the caches' sizes are not summed).
    #[test]
    fn caches_are_counted_together() {
        let dir = std::env::temp_dir();
        let (free, _) = free_space(&dir).expect("the temporary folder's file system reports its size");
        // Two caches of 0.6 of the free space each, 10 frames (and the start) apiece.
        let points = (0.6 * free as f64 / (CACHE_BYTES_PER_POINT * 11.0)) as usize;
        assert!(check(&dir, 10, points).is_ok());
        assert!(check_all(&dir, &[(10, points)]).is_ok());
        let e = check_all(&dir, &[(10, points), (10, points)]).expect_err("1.2 × the free space");
        assert!(e.starts_with("the 2 caches need at least") && e.contains("free on the file system of"), "{e}");
    }
}
