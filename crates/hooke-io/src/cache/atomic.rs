//! Temporary files that become visible under their final name only when complete.
//!
//! An [`AtomicFile`] is written to a hidden sibling `.<name>.tmp-<pid>-<seq>` in the same
//! directory (so the final `rename` never crosses a file system; one moved into a subfolder by
//! [`AtomicFile::retarget`] stays on it unless the subfolder is a mount or a link to another,
//! where the commit fails with the rename's error), flushed and `fsync`ed, then renamed over
//! the final name by [`AtomicFile::commit`]. A scratch file
//! ([`AtomicFile::scratch`]) is never committed. Dropping an uncommitted file removes it, so
//! an error path or a writer dropped without `finish()` leaves nothing behind.
//!
//! A process killed outright (SIGKILL, power loss) cannot clean up; [`sweep_stale`] removes
//! such leftovers — temporary files whose process no longer runs — when the next writer opens
//! the directory (on Linux, where `/proc` tells which processes run).

use super::{CacheError, io_error};
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temporary files of one process (several writers may share a directory).
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Buffer size of every temporary file (bytes).
const BUFFER: usize = 1 << 16;

/// A file being written under a temporary name. See the [module documentation](self).
#[derive(Debug)]
pub(crate) struct AtomicFile {
    /// Where [`AtomicFile::commit`] moves it; `None` for a scratch file.
    final_path: Option<PathBuf>,
    /// The temporary sibling actually written.
    tmp_path: PathBuf,
    /// Open handle, `None` once [`AtomicFile::close`]d.
    file: Option<BufWriter<File>>,
    /// Whether the file was renamed into place (then `Drop` leaves it alone).
    committed: bool,
}

impl AtomicFile {
    /// Starts a file that [`AtomicFile::commit`] will move to `final_path`.
    ///
    /// # Errors
    /// [`CacheError::Io`] if the temporary sibling cannot be created; [`CacheError::Invalid`]
    /// if `final_path` has no file name.
    pub(crate) fn create(final_path: &Path) -> Result<AtomicFile, CacheError> {
        let name = final_path
            .file_name()
            .ok_or_else(|| CacheError::Invalid(format!("{}: not a file path", final_path.display())))?;
        let dir = final_path.parent().unwrap_or(Path::new("."));
        let (tmp_path, file) = open_unique(dir, &name.to_string_lossy())?;
        Ok(AtomicFile { final_path: Some(final_path.to_path_buf()), tmp_path, file: Some(file), committed: false })
    }

    /// Starts a scratch file `.<label>.tmp-<pid>-<seq>` in `dir`, removed when dropped.
    ///
    /// # Errors
    /// [`CacheError::Io`] if it cannot be created.
    pub(crate) fn scratch(dir: &Path, label: &str) -> Result<AtomicFile, CacheError> {
        let (tmp_path, file) = open_unique(dir, label)?;
        Ok(AtomicFile { final_path: None, tmp_path, file: Some(file), committed: false })
    }

    /// The final path (the temporary one for a scratch file).
    pub(crate) fn final_path(&self) -> &Path {
        self.final_path.as_deref().unwrap_or(&self.tmp_path)
    }

    /// Makes [`AtomicFile::commit`] move the file into `dir` under the same name (a scratch
    /// file is left alone). `dir` should be on the temporary file's file system (a subfolder
    /// of the one it was created in, say): the commit is a rename.
    pub(crate) fn retarget(&mut self, dir: &Path) {
        if let Some(name) = self.final_path.as_ref().and_then(|p| p.file_name()) {
            self.final_path = Some(dir.join(name));
        }
    }

    fn handle(&mut self) -> Result<&mut BufWriter<File>, CacheError> {
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(CacheError::Invalid(format!("{}: written after it was closed", self.tmp_path.display()))),
        }
    }

    /// Appends `bytes`.
    ///
    /// # Errors
    /// [`CacheError::Io`] naming the temporary file.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), CacheError> {
        let path = self.tmp_path.clone();
        self.handle()?.write_all(bytes).map_err(|e| io_error(&path, e))
    }

    /// Overwrites `bytes` at `offset` (which must lie inside what was written), then returns
    /// to the end of the file.
    ///
    /// # Errors
    /// [`CacheError::Io`] naming the temporary file.
    pub(crate) fn patch(&mut self, offset: u64, bytes: &[u8]) -> Result<(), CacheError> {
        let path = self.tmp_path.clone();
        let w = self.handle()?;
        let result = (|| {
            w.flush()?;
            let f = w.get_mut();
            f.seek(SeekFrom::Start(offset))?;
            f.write_all(bytes)?;
            f.seek(SeekFrom::End(0))?;
            Ok(())
        })();
        result.map_err(|e| io_error(&path, e))
    }

    /// Appends the byte ranges `ranges` of `self` — (offset, length) pairs within what was
    /// written, in the order given — to `dst`.
    ///
    /// # Errors
    /// [`CacheError::Io`] naming whichever file failed.
    pub(crate) fn copy_ranges_to(&mut self, ranges: &[(u64, u32)], dst: &mut AtomicFile) -> Result<(), CacheError> {
        let path = self.tmp_path.clone();
        let src = self.handle()?;
        src.flush().map_err(|e| io_error(&path, e))?;
        let f = src.get_mut();
        let mut chunk = Vec::new();
        for &(offset, len) in ranges {
            chunk.resize(len as usize, 0);
            f.seek(SeekFrom::Start(offset)).map_err(|e| io_error(&path, e))?;
            f.read_exact(&mut chunk).map_err(|e| io_error(&path, e))?;
            dst.write_all(&chunk)?;
        }
        f.seek(SeekFrom::End(0)).map_err(|e| io_error(&path, e))?;
        Ok(())
    }

    /// Flushes, `fsync`s and closes the handle; the file stays temporary until
    /// [`AtomicFile::commit`]. Closing twice is a no-op.
    ///
    /// # Errors
    /// [`CacheError::Io`] naming the temporary file.
    pub(crate) fn close(&mut self) -> Result<(), CacheError> {
        if let Some(mut w) = self.file.take() {
            let path = &self.tmp_path;
            w.flush().map_err(|e| io_error(path, e))?;
            w.get_ref().sync_all().map_err(|e| io_error(path, e))?;
        }
        Ok(())
    }

    /// Closes the file and renames it to its final path, replacing any file there.
    ///
    /// # Errors
    /// [`CacheError::Io`] if flushing or renaming fails (the temporary file is then removed);
    /// [`CacheError::Invalid`] for a scratch file.
    pub(crate) fn commit(mut self) -> Result<PathBuf, CacheError> {
        self.close()?;
        let Some(final_path) = self.final_path.clone() else {
            return Err(CacheError::Invalid(format!(
                "{}: a scratch file cannot be committed",
                self.tmp_path.display()
            )));
        };
        fs::rename(&self.tmp_path, &final_path).map_err(|e| io_error(&final_path, e))?;
        self.committed = true;
        sync_parent(&final_path);
        Ok(final_path)
    }
}

impl Drop for AtomicFile {
    /// Removes the temporary file unless it was committed (errors are ignored: this runs on
    /// error paths).
    fn drop(&mut self) {
        if !self.committed {
            drop(self.file.take());
            let _ = fs::remove_file(&self.tmp_path);
        }
    }
}

/// Creates `dir/.<label>.tmp-<pid>-<seq>` exclusively (never reusing a stranger's file).
fn open_unique(dir: &Path, label: &str) -> Result<(PathBuf, BufWriter<File>), CacheError> {
    let pid = std::process::id();
    let mut attempts = 0;
    loop {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".{label}.tmp-{pid}-{seq}"));
        match OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((path, BufWriter::with_capacity(BUFFER, f))),
            Err(e) if e.kind() == ErrorKind::AlreadyExists && attempts < 64 => attempts += 1,
            Err(e) => return Err(io_error(&path, e)),
        }
    }
}

/// Best effort: makes a rename durable by syncing its directory (Unix only; errors ignored,
/// since the file itself is already complete and synced).
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Removes temporary files `.<name>.tmp-<pid>-<seq>` in `dir` left by processes that no longer
/// run (Linux: no `/proc/<pid>`, or one that is a zombie — a process killed outright stays one
/// until its parent reaps it, which `timeout -s KILL` leaves to init, so a run started at once
/// after it found it still there); returns how many were removed. Files of this process and of
/// running ones are kept; elsewhere than Linux nothing is removed. Errors are ignored (this is
/// housekeeping; a file that cannot be removed stays).
pub(crate) fn sweep_stale(dir: &Path) -> usize {
    if !cfg!(target_os = "linux") || !Path::new("/proc/self").exists() {
        return 0;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let me = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(stale_pid) else {
            continue;
        };
        if pid != me && !running(pid) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether process `pid` runs (Linux): `/proc/<pid>/stat` exists and its state is neither
/// zombie (`Z`) nor dead (`X`, `x`). The state is the field after the command name, which is in
/// parentheses and may itself hold spaces and parentheses.
fn running(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Path::new("/proc").join(pid.to_string()).exists();
    };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X" | "x"))
}

/// The process id in a temporary file name `.<name>.tmp-<pid>-<seq>`, if it is one.
fn stale_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(".tmp-")?;
    let (pid, seq) = tail.split_once('-')?;
    seq.parse::<u64>().ok()?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_parse() {
        assert_eq!(stale_pid(".cloth.usda.tmp-1234-7"), Some(1234));
        assert_eq!(stale_pid(".a.tmp-b.obj.tmp-99-0"), Some(99));
        for other in ["cloth.usda", ".cloth.usda", ".x.tmp-12", ".x.tmp-a-1", ".x.tmp-1-b", "x.tmp-1-2"] {
            assert_eq!(stale_pid(other), None, "{other}");
        }
    }

    /// A process that has exited but not been reaped (a zombie: a run killed outright, its
    /// parent gone or slow) holds no temporary file: its files are swept, a running process's
    /// are kept. (The first version looked only for `/proc/<pid>`, which a zombie still has.)
    #[cfg(target_os = "linux")]
    #[test]
    fn a_zombies_files_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let mut alive = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let mut zombie = std::process::Command::new("true").spawn().unwrap();
        // Not waited for: once it exits it stays a zombie until `wait` below.
        let start = std::time::Instant::now();
        while running(zombie.id()) {
            assert!(start.elapsed().as_secs() < 20, "`true` did not exit");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(Path::new(&format!("/proc/{}", zombie.id())).exists(), "reaped before the test could see it");
        let (dead, live) = (format!(".c.usda.tmp-{}-0", zombie.id()), format!(".c.usda.tmp-{}-0", alive.id()));
        for name in [&dead, &live] {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(sweep_stale(dir.path()), 1);
        assert!(!dir.path().join(&dead).exists() && dir.path().join(&live).exists());
        alive.kill().unwrap();
        alive.wait().unwrap();
        zombie.wait().unwrap();
    }
}
