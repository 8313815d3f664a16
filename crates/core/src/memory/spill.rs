//! Sorted runs of word counts on disk (external aggregation): a counting
//! table over its share of the memory budget is written out sorted and
//! emptied, and at the end the runs are merged k ways, so text far larger
//! than memory streams through with one table's worth of RAM.
//!
//! A run file: `n_short: u64`, `n_long: u64`, then the short keys
//! (`u128` LE, count `u64` LE; ascending by key) and the long keys
//! (`len: u32`, bytes, count `u64`; ascending by bytes). Short and long keys
//! never equal each other (their lengths differ), so they merge apart.
//!
//! The runs live in a fresh folder under the system's temporary folder
//! (`TMPDIR`), removed when the `SpillDir` is dropped: on success, on error
//! and on Ctrl-C (an interrupt is an error that unwinds through it). Only a
//! killed process leaves it behind; its name starts with `bpeforge-spill-`.

use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const IO_BUFFER: usize = 1 << 20;

/// The folder of one counting's runs and their list.
#[derive(Debug)]
pub struct SpillDir {
    dir: tempfile::TempDir,
    next: AtomicUsize,
    runs: Mutex<Vec<PathBuf>>,
    bytes: std::sync::atomic::AtomicU64,
}

fn io_error(what: &str, path: &std::path::Path, e: std::io::Error) -> Error {
    Error::output(format!(
        "cannot {what} the counting spill file {} ({e}); the memory budget (max_memory) makes counting spill \
         to the temporary folder: free space there, point TMPDIR elsewhere or raise max_memory",
        path.display()
    ))
}

impl SpillDir {
    pub fn new() -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("bpeforge-spill-").tempdir().map_err(|e| {
            Error::output(format!(
                "cannot create a folder for counting spill files under {} ({e}); set TMPDIR to a writable folder",
                std::env::temp_dir().display()
            ))
        })?;
        Ok(SpillDir { dir, next: AtomicUsize::new(0), runs: Mutex::new(Vec::new()), bytes: 0.into() })
    }

    /// Writes one run: `short` ascending by key, `long` ascending by bytes
    /// (the caller sorts, in place where it can).
    pub fn write_run<'a>(
        &self,
        short: impl ExactSizeIterator<Item = (u128, u64)>,
        long: impl ExactSizeIterator<Item = (&'a [u8], u64)>,
    ) -> Result<()> {
        let path = self.dir.path().join(format!("run-{:06}", self.next.fetch_add(1, Ordering::Relaxed)));
        let file = File::create(&path).map_err(|e| io_error("create", &path, e))?;
        let mut w = BufWriter::with_capacity(IO_BUFFER, file);
        let mut size = 16u64;
        let written = (|| -> std::io::Result<()> {
            w.write_all(&(short.len() as u64).to_le_bytes())?;
            w.write_all(&(long.len() as u64).to_le_bytes())?;
            for (k, v) in short {
                w.write_all(&k.to_le_bytes())?;
                w.write_all(&v.to_le_bytes())?;
                size += 24;
            }
            for (k, v) in long {
                w.write_all(&(k.len() as u32).to_le_bytes())?;
                w.write_all(k)?;
                w.write_all(&v.to_le_bytes())?;
                size += 12 + k.len() as u64;
            }
            w.flush()
        })();
        written.map_err(|e| io_error("write", &path, e))?;
        self.bytes.fetch_add(size, Ordering::Relaxed);
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).push(path);
        Ok(())
    }

    pub fn run_count(&self) -> usize {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Bytes written to runs so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn paths(&self) -> Vec<PathBuf> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Calls `f` for every distinct key of all runs with its counts summed:
    /// the short keys ascending, then the long keys ascending.
    pub fn merge(&self, mut f: impl FnMut(RunKey<'_>, u64)) -> Result<()> {
        let paths = self.paths();
        let mut cursors = Vec::with_capacity(paths.len());
        for p in &paths {
            cursors.push(RunCursor::open(p)?);
        }
        // Short keys.
        let mut heap = BinaryHeap::new();
        for (i, c) in cursors.iter_mut().enumerate() {
            if let Some((k, v)) = c.next_short()? {
                heap.push(Reverse((k, i, v)));
            }
        }
        let mut current: Option<(u128, u64)> = None;
        while let Some(Reverse((k, i, v))) = heap.pop() {
            match current.as_mut() {
                Some((ck, cv)) if *ck == k => *cv += v,
                _ => {
                    if let Some((ck, cv)) = current.take() {
                        f(RunKey::Short(ck), cv);
                    }
                    current = Some((k, v));
                }
            }
            if let Some((k, v)) = cursors[i].next_short()? {
                heap.push(Reverse((k, i, v)));
            }
        }
        if let Some((ck, cv)) = current {
            f(RunKey::Short(ck), cv);
        }
        // Long keys.
        let mut heap = BinaryHeap::new();
        for (i, c) in cursors.iter_mut().enumerate() {
            c.start_long()?;
            if let Some((k, v)) = c.next_long()? {
                heap.push(Reverse((k, i, v)));
            }
        }
        let mut current: Option<(Vec<u8>, u64)> = None;
        while let Some(Reverse((k, i, v))) = heap.pop() {
            match current.as_mut() {
                Some((ck, cv)) if *ck == k => *cv += v,
                _ => {
                    if let Some((ck, cv)) = current.take() {
                        f(RunKey::Long(&ck), cv);
                    }
                    current = Some((k, v));
                }
            }
            if let Some((k, v)) = cursors[i].next_long()? {
                heap.push(Reverse((k, i, v)));
            }
        }
        if let Some((ck, cv)) = current {
            f(RunKey::Long(&ck), cv);
        }
        Ok(())
    }
}

/// A key of a run: short (`count::short_key`) or long (its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKey<'a> {
    Short(u128),
    Long(&'a [u8]),
}

/// Reads one run file: its short section, then its long section.
struct RunCursor {
    path: PathBuf,
    r: BufReader<File>,
    short_left: u64,
    long_left: u64,
}

impl RunCursor {
    fn open(path: &PathBuf) -> Result<Self> {
        let file = File::open(path).map_err(|e| io_error("read", path, e))?;
        let mut c = RunCursor { path: path.clone(), r: BufReader::with_capacity(IO_BUFFER / 4, file), short_left: 0, long_left: 0 };
        c.short_left = c.u64()?;
        c.long_left = c.u64()?;
        Ok(c)
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<()> {
        self.r.read_exact(buf).map_err(|e| io_error("read", &self.path, e))
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn next_short(&mut self) -> Result<Option<(u128, u64)>> {
        if self.short_left == 0 {
            return Ok(None);
        }
        self.short_left -= 1;
        let mut k = [0u8; 16];
        self.read(&mut k)?;
        Ok(Some((u128::from_le_bytes(k), self.u64()?)))
    }

    /// Skips what is left of the short section.
    fn start_long(&mut self) -> Result<()> {
        let skip = self.short_left * 24;
        self.short_left = 0;
        self.r.seek(SeekFrom::Current(skip as i64)).map_err(|e| io_error("read", &self.path, e))?;
        Ok(())
    }

    fn next_long(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        if self.long_left == 0 {
            return Ok(None);
        }
        self.long_left -= 1;
        let mut len = [0u8; 4];
        self.read(&mut len)?;
        let mut key = vec![0u8; u32::from_le_bytes(len) as usize];
        self.read(&mut key)?;
        Ok(Some((key, self.u64()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_into_summed_sorted_counts_and_the_folder_goes_away() {
        let spill = SpillDir::new().unwrap();
        let folder = spill.dir.path().to_path_buf();
        let (a, z): (&[u8], &[u8]) = (b"aaaaaaaaaaaaaaaaaa", b"zzzzzzzzzzzzzzzzzz");
        spill.write_run([(3, 2), (5, 1)].into_iter(), [(z, 1)].into_iter()).unwrap();
        spill.write_run([(3, 10), (9, 1)].into_iter(), [(a, 4), (z, 2)].into_iter()).unwrap();
        spill.write_run(std::iter::empty(), std::iter::empty()).unwrap();
        let (mut s, mut l) = (Vec::new(), Vec::new());
        spill
            .merge(|k, v| match k {
                RunKey::Short(k) => s.push((k, v)),
                RunKey::Long(k) => l.push((k.to_vec(), v)),
            })
            .unwrap();
        assert_eq!(s, vec![(3, 12), (5, 1), (9, 1)]);
        assert_eq!(l, vec![(b"aaaaaaaaaaaaaaaaaa".to_vec(), 4), (b"zzzzzzzzzzzzzzzzzz".to_vec(), 3)]);
        assert!(folder.exists());
        drop(spill);
        assert!(!folder.exists());
    }
}
