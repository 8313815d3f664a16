//! Texts fed by the caller (a Python iterator, Arrow batches): a `Source`
//! hands over the next chunk of texts, pulled on the calling thread while
//! worker threads count or encode the chunks before it. The pipelines that
//! drain one are `pipeline::count_source` and `encode::file::encode_source`.

use crate::error::Result;
use crate::input::Chunk;
use crate::observe::{CountProgress, FileProgress, Observer};
use std::sync::Arc;
use std::time::Instant;

/// Where fed texts come from.
pub trait Source {
    /// The next chunk of texts (`Layout::Ends`; with a language id per
    /// text in `langs` when the run balances languages by a field), or
    /// None at the end. A source that pulls many items per chunk polls
    /// `observer.should_stop()` between them.
    fn next_chunk(&mut self, observer: &mut dyn Observer) -> Result<Option<Chunk>>;

    /// Records the source left out itself (`on_bad_record="skip"` on Arrow
    /// data), counted with the counters' own in `bad_records`.
    fn skipped(&self) -> u64 {
        0
    }

    /// The files the chunks come from, each with its path and the text
    /// bytes expected in it, for the progress line (none: no file is
    /// named). A chunk's `source` ("PATH, row group N") says its file.
    fn files(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

/// The files a source reads, for its progress: each file's path and
/// expected bytes, so the progress names the file being read and has a
/// total and an ETA.
pub(crate) struct FedFiles {
    files: Vec<(Arc<str>, u64)>,
    done: Vec<u64>,
    opened: Vec<Option<Instant>>,
    current: usize,
}

impl FedFiles {
    pub(crate) fn new(files: Vec<(String, u64)>) -> Self {
        let n = files.len();
        FedFiles { files: files.into_iter().map(|(p, b)| (Arc::from(p), b)).collect(), done: vec![0; n], opened: vec![None; n], current: 0 }
    }

    /// `bytes` more were read from the chunk named `source`.
    pub(crate) fn add(&mut self, source: &str, bytes: u64) {
        let here = |(p, _): &(Arc<str>, u64)| source.len() > p.len() && source.starts_with(&**p) && source[p.len()..].starts_with(", ");
        if !self.files.get(self.current).is_some_and(here) {
            if let Some(i) = self.files.iter().position(here) {
                self.current = i;
            }
        }
        if let Some(done) = self.done.get_mut(self.current) {
            *done += bytes;
            self.opened[self.current].get_or_insert_with(Instant::now);
        }
    }

    /// `read` bytes so far at `elapsed` seconds, with the file being read.
    pub(crate) fn progress(&self, read: u64, elapsed: f64) -> CountProgress {
        if self.files.is_empty() {
            return CountProgress { raw_bytes_done: read, raw_bytes_total: None, elapsed, file: None };
        }
        // An estimate below what was read would show more done than total.
        let total: u64 = self.files.iter().zip(&self.done).map(|((_, t), d)| (*t).max(*d)).sum();
        let i = self.current;
        let file = FileProgress {
            path: self.files[i].0.clone(),
            index: i,
            files: self.files.len(),
            bytes_done: self.done[i],
            bytes_total: self.files[i].1.max(self.done[i]),
            elapsed: self.opened[i].map_or(0.0, |t| t.elapsed().as_secs_f64()),
        };
        CountProgress { raw_bytes_done: read, raw_bytes_total: Some(total), elapsed, file: Some(file) }
    }
}
