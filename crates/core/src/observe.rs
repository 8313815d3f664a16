//! What a caller sees while the engine works: progress reports, and a way
//! to stop a run (Ctrl-C). Plain data, one trait and a batch's pacing; this
//! module depends on nothing but the counting statistics, phase times and
//! the error type, so training, encoding, balancing and the progress
//! printer can all name it without depending on each other.

use crate::clock::PhaseTime;
use crate::count_stats::CountStats;
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::Instant;

/// Progress while counting (or encoding a file).
#[derive(Debug, Clone)]
pub struct CountProgress {
    pub raw_bytes_done: u64,
    pub raw_bytes_total: Option<u64>,
    pub elapsed: f64,
    /// The file being read, when the input is a list of files.
    pub file: Option<FileProgress>,
}

/// One input file's progress: on-disk bytes, so a compressed file's ETA
/// comes from the compressed bytes read against its size.
#[derive(Debug, Clone)]
pub struct FileProgress {
    pub path: Arc<str>,
    /// 0-based position in the input list, and the list's length.
    pub index: usize,
    pub files: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
    /// Seconds since this file was opened.
    pub elapsed: f64,
}

/// A setup step of the merge phase ("word table", "pair index"): items
/// done of `total`, reported live and once more with `finished` set.
#[derive(Debug, Clone)]
pub struct StepProgress {
    pub step: &'static str,
    /// What the items are ("word types", "words").
    pub unit: &'static str,
    pub done: u64,
    pub total: u64,
    pub elapsed: f64,
    /// The process's CPU seconds in the step (set when `finished`, where known).
    pub cpu_seconds: Option<f64>,
    /// Threads the step runs on.
    pub threads: usize,
    pub finished: bool,
}

/// Progress while merging.
#[derive(Debug, Clone)]
pub struct MergeProgress {
    pub done: usize,
    pub target: usize,
    pub pair_count: u64,
    pub elapsed: f64,
}

/// What the caller sees during training.
///
/// `Send`: while the merge phase sets up, a watcher thread reports the
/// setup steps (`crate::steps`), so the observer must be able to move there.
pub trait Observer: Send {
    /// Polled every few milliseconds on the training thread; `true` stops the
    /// run with an `Interrupted` error.
    fn should_stop(&mut self) -> bool {
        false
    }
    fn counting(&mut self, _p: &CountProgress) {}
    fn counted(&mut self, _stats: &CountStats, _word_types: usize, _time: &PhaseTime) {}
    /// A setup step of the merge phase (see `crate::steps`).
    fn step(&mut self, _p: &StepProgress) {}
    fn merging(&mut self, _p: &MergeProgress) {}
    /// The merge phase ended (word table and pair index included).
    fn merged(&mut self, _merges: usize, _time: &PhaseTime) {}
    /// Progress of `encode_file`.
    fn encoding(&mut self, _p: &CountProgress) {}
    fn encoded(&mut self, _stats: &EncodeStats) {}
    /// A round of parity balancing ended (`balance::parity`).
    fn balancing(&mut self, _round: &BalanceRound) {}
    /// The merge phase would not fit `max_memory` (`budget` bytes): it runs
    /// with a higher `min_word_count`, dropping the rarest word types.
    fn dropped_for_memory(&mut self, _dropped: &crate::memory::budget::Dropped, _budget: u64, _pretokens: u64) {}
    /// Shards done by a run spread over tasks (`bpeforge.distributed`).
    fn shards(&mut self, _p: &ShardProgress) {}
}

/// An observer that sees nothing and never stops.
pub struct Silent;
impl Observer for Silent {}

/// A round's measurements, reported to the observer and kept in metadata.
#[derive(Debug, Clone)]
pub struct BalanceRound {
    pub round: usize,
    pub rounds: usize,
    pub reference: String,
    pub reference_units_per_token: f64,
    /// The worst premium among the balanced languages, and whose it is.
    pub worst_premium: f64,
    pub worst_language: String,
    /// Balanced languages above the band whose weight can still grow.
    pub above: usize,
    pub seconds: f64,
}

/// What an encode run did.
#[derive(Debug, Clone, Default)]
pub struct EncodeStats {
    pub lines: u64,
    pub tokens: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// Bytes per id in `npy`/`bin` output (2 or 4).
    pub id_bytes: usize,
}

/// Progress of a run spread over Ray tasks (`bpeforge.distributed`): shards
/// done, reported as they finish and once more with `finished` set.
#[derive(Debug, Clone)]
pub struct ShardProgress<'a> {
    /// What the tasks do ("counting", "encoding").
    pub phase: &'a str,
    pub done: u64,
    pub total: u64,
    /// On-disk bytes of the shards done, and of all of them.
    pub bytes_done: u64,
    pub bytes_total: u64,
    pub elapsed: f64,
    pub finished: bool,
}

/// Bytes of text per progress report of a batch of texts (at least; a
/// hundredth of the batch when that is more).
const BATCH_SLICE_BYTES: u64 = 1 << 20;

/// A batch's progress (`encode_batch`): a report after each slice of
/// `slice_bytes` of text (`BATCH_SLICE_BYTES`, or a hundredth of the batch
/// when that is more) and at the end, and a stop honoured at each.
pub struct BatchPacer {
    start: Instant,
    total: u64,
    slice_bytes: u64,
    reported: u64,
    done: u64,
    tokens: u64,
}

impl BatchPacer {
    /// A batch of `total` bytes of text.
    pub fn new(total: u64) -> Self {
        let slice_bytes = (total / 100).max(BATCH_SLICE_BYTES);
        BatchPacer { start: Instant::now(), total, slice_bytes, reported: 0, done: 0, tokens: 0 }
    }

    /// Counts `bytes` of text encoded into `tokens` ids; reports (or stops)
    /// once a slice's worth has been done since the last report.
    pub fn advance(&mut self, bytes: u64, tokens: u64, observer: &mut dyn Observer) -> Result<()> {
        self.done += bytes;
        self.tokens += tokens;
        if self.done - self.reported < self.slice_bytes && self.done < self.total {
            return Ok(());
        }
        self.reported = self.done;
        if observer.should_stop() {
            return Err(Error::interrupted());
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        observer.encoding(&CountProgress { raw_bytes_done: self.done, raw_bytes_total: Some(self.total), elapsed, file: None });
        Ok(())
    }

    /// The final report, for a batch of `lines` texts.
    pub fn finish(&self, lines: u64, observer: &mut dyn Observer) {
        let seconds = self.start.elapsed().as_secs_f64();
        observer.encoded(&EncodeStats { lines, tokens: self.tokens, bytes: self.total, seconds, id_bytes: 4 });
    }
}
