//! Will counting's spill files fit? Checked before any input is read, so a
//! run that would fill the temporary folder an hour in fails at once,
//! naming `TMPDIR`.
//!
//! Counting spills when its tables outgrow their room in the budget
//! ([`super::spill`]). How much it writes depends on how fast new word
//! types arrive, which is unknown before reading; the estimate takes the
//! case that spills most, a corpus whose word types grow with its size
//! (many languages), as measured:
//!
//! | text | `max_memory` | tables per byte of text | spill files per byte of text |
//! |---|---|---:|---:|
//! | 11.4 GB, 100 copies of multi-1m as new languages | 8G | 0.34 | 0.30 |
//! | 70.9 GB, 500 copies of multi-1m as new languages | 16G | - | 0.32 (7 runs, 22.7 GB) |
//!
//! With [`TABLE_PER_TEXT_BYTE`] times the text fitting in the room, no
//! spill is expected and nothing is checked. A corpus in few languages
//! spills far less than the estimate; a check that errs passes a run that
//! the write itself then stops with the same advice.

use super::budget::human;
use crate::error::{Error, Result};
use std::path::Path;

/// Bytes of counting tables per byte of text, at most: 0.34 held, twice
/// that while a table grows (the old slots beside the new). Word types
/// growing with the text; a natural corpus's grow more slowly.
pub const TABLE_PER_TEXT_BYTE: f64 = 0.7;

/// Bytes of spill files per byte of text when counting spills, at most
/// (the same corpus; the hash tables' empty slots are not written).
pub const SPILL_PER_TEXT_BYTE: f64 = 0.35;

/// The spill files counting `text_bytes` of text within `room` bytes of
/// tables may write; 0 when the tables are expected to fit.
pub fn expected_spill_bytes(text_bytes: u64, room: u64) -> u64 {
    let tables = text_bytes as f64 * TABLE_PER_TEXT_BYTE;
    if tables <= room as f64 {
        return 0;
    }
    (text_bytes as f64 * SPILL_PER_TEXT_BYTE) as u64
}

/// Free bytes for an unprivileged writer on the file system of `dir`; None
/// where the platform does not say.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut s = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
        // SAFETY: `c` is a NUL-terminated path and `s` points at a statvfs
        // for the call to fill; nothing is read from it before.
        if unsafe { libc::statvfs(c.as_ptr(), s.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: statvfs succeeded and filled the struct.
        let s = unsafe { s.assume_init() };
        Some(s.f_bavail as u64 * s.f_frsize as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// A clear error, before counting, when the spill files counting `text_bytes`
/// of text within `room` bytes of tables may write do not fit in the
/// temporary folder's free space; the estimate otherwise.
pub fn check_spill_room(text_bytes: u64, room: u64, budget: u64) -> Result<u64> {
    let need = expected_spill_bytes(text_bytes, room);
    if need == 0 {
        return Ok(0);
    }
    let dir = std::env::temp_dir();
    match free_bytes(&dir) {
        Some(free) if free < need => Err(Error::output(format!(
            "not enough disk for counting's spill files: about {} of text within max_memory {} may write up to {} \
             of sorted runs to the temporary folder {} (TMPDIR), which has {} free; point TMPDIR at a disk with \
             room, or raise max_memory",
            human(text_bytes),
            human(budget),
            human(need),
            dir.display(),
            human(free)
        ))),
        _ => Ok(need),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_expected_to_spill_when_the_tables_fit() {
        assert_eq!(expected_spill_bytes(1 << 30, 1 << 30), 0);
        let need = expected_spill_bytes(100 << 30, 8 << 30);
        assert!(need > 30 << 30 && need < 40 << 30, "{need}");
    }

    #[test]
    fn the_temporary_folder_has_a_size() {
        let free = free_bytes(&std::env::temp_dir());
        if cfg!(target_os = "linux") {
            assert!(free.unwrap() > 0);
        }
    }

    #[test]
    fn a_spill_larger_than_the_disk_is_refused_naming_tmpdir() {
        let free = free_bytes(&std::env::temp_dir()).unwrap_or(0);
        if free == 0 {
            return;
        }
        let text = (free as f64 / SPILL_PER_TEXT_BYTE * 2.0) as u64;
        let err = check_spill_room(text, 1 << 30, 2 << 30).unwrap_err().to_string();
        assert!(err.contains("TMPDIR") && err.contains("max_memory"), "{err}");
        assert_eq!(check_spill_room(1 << 20, 1 << 30, 2 << 30).unwrap(), 0);
    }
}
