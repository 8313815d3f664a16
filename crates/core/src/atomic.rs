//! Atomic output files: written under a temporary name in the destination's
//! folder, then renamed over it, so a reader sees the old file or the new
//! one, never a mix, and a failed run leaves the old file intact.
//!
//! The temporary file is created with mode 0666 less the process umask, as
//! any ordinary file would be (0644 under umask 022): `mkstemp`'s private
//! 0600 would survive the rename and lock out colleagues and jobs running
//! under another user.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A new temporary file in `dst`'s folder, named `.bpeforge-*.tmp`.
pub fn temp_beside(dst: &Path) -> Result<tempfile::NamedTempFile> {
    if dst.is_dir() {
        return Err(Error::output(format!("cannot write {}: it is a directory", dst.display())));
    }
    let dir = match dst.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(Error::output(format!("cannot write {}: directory {} does not exist", dst.display(), dir.display())));
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(".bpeforge-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(&dir).map_err(|e| Error::output(format!("cannot write {}: {e}", dst.display())))
}

/// Renames a finished temporary file over `dst`.
pub fn persist(tmp: tempfile::NamedTempFile, dst: &Path) -> Result<()> {
    tmp.persist(dst).map_err(|e| Error::output(format!("cannot write {}: {}", dst.display(), e.error)))?;
    Ok(())
}

/// Writes `data` to `path` atomically (synced before the rename).
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let fail = |what: &str, e: &dyn std::fmt::Display| Error::output(format!("cannot write {}: {what}: {e}", path.display()));
    let mut tmp = temp_beside(path)?;
    tmp.write_all(data).map_err(|e| fail("write failed", &e))?;
    tmp.as_file().sync_all().map_err(|e| fail("sync failed", &e))?;
    persist(tmp, path)
}
