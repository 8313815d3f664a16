//! Counting on threads (`count_parallel`): the caller feeds chunks, the
//! workers count them, and the counts are summed (in shared partitions on
//! several threads), spilling to disk to keep within a budget.

use super::counter::Counter;
use super::partitioned::Shared;
use super::spilling::{CountLimits, SpillDirs};
use super::output::{CountOutput, SpilledCounts};
use super::WordCounts;
use crate::count_stats::CountStats;
use crate::error::{Error, Result};
use crate::input::Chunk;
use crate::memory::spill::SpillDir;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Runs `feed` on the caller's thread; it hands chunks to `threads` counting
/// workers. Returns the summed counts, or the first error. With `limits`,
/// the tables stay within the budget by spilling sorted runs to disk, and
/// the sum is merged from them (`crate::memory::spill`). On several threads the
/// counts are aggregated in shared partitions (`partitioned`), so memory
/// does not grow with the thread count.
pub fn count_parallel(
    counter: &Counter,
    threads: usize,
    limits: Option<&CountLimits>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<WordCounts> {
    count_parallel_output(counter, threads, limits, feed)?.into_table(limits.and_then(|l| l.choose_min))
}

/// `count_parallel`, leaving a count that spilled as its runs (which
/// `CountOutput` merges into a table or writes in the wire form).
pub fn count_parallel_output(
    counter: &Counter,
    threads: usize,
    limits: Option<&CountLimits>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<CountOutput> {
    if threads > 1 {
        return count_partitioned(counter, threads, limits, feed);
    }
    let mut counts = fresh_counts(counter);
    if let Some(l) = limits {
        counts.cap_table(l.budget.worker_table);
    }
    let dirs = LazyDirs::new(counter);
    let mut scratch = counter.scratch();
    feed(&mut |chunk| {
        counter.count_chunk_with(&chunk, &mut counts, None, &mut scratch)?;
        // A table over its share goes to disk.
        match limits {
            Some(l) if counts.over(l.budget.worker_table) => counts.spill(&*dirs.open()?),
            _ => Ok(()),
        }
    })?;
    let Some(dirs) = dirs.take() else { return Ok(CountOutput::Table(counts)) };
    let superword_stats = counts.superword.as_ref().map(|s| s.stats.clone());
    counts.spill(&dirs)?;
    let stats = std::mem::take(&mut counts.stats);
    drop(counts);
    Ok(CountOutput::Runs(SpilledCounts { dirs, stats, superword_stats }))
}

/// An empty table for one counting thread (with SuperBPE's second table
/// where the counter counts its units).
fn fresh_counts(counter: &Counter) -> WordCounts {
    let mut c = WordCounts::new();
    if counter.superword.is_some() {
        c.superword = Some(Box::new(WordCounts::new()));
    }
    c
}

/// The spill folders of one counting, created at the first spill (a run
/// that never spills touches no disk).
struct LazyDirs {
    dirs: Mutex<Option<std::sync::Arc<SpillDirs>>>,
    superword: bool,
}

impl LazyDirs {
    pub(super) fn new(counter: &Counter) -> Self {
        LazyDirs { dirs: Mutex::new(None), superword: counter.superword.is_some() }
    }

    pub(super) fn open(&self) -> Result<std::sync::Arc<SpillDirs>> {
        let mut slot = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let superword = if self.superword { Some(SpillDir::new()?) } else { None };
            *slot = Some(std::sync::Arc::new(SpillDirs { main: SpillDir::new()?, superword }));
        }
        Ok(slot.clone().expect("just set"))
    }

    pub(super) fn take(&self) -> Option<std::sync::Arc<SpillDirs>> {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// `count_parallel` on several threads (see `partitioned`): each thread
/// counts into a table capped at its room and flushes it into the shared
/// partitions when full; the partitions spill to disk when they and the
/// rooms would pass the budget.
fn count_partitioned(
    counter: &Counter,
    threads: usize,
    limits: Option<&CountLimits>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<CountOutput> {
    let shared = Shared::new(counter.superword.is_some(), threads);
    let total = limits.map_or(u64::MAX, |l| l.budget.total);
    // The threads' rooms take at most a quarter of the budget.
    let most = (total / 4).max(1);
    let dirs = LazyDirs::new(counter);
    let fresh = || {
        let mut c = fresh_counts(counter);
        c.cap_table(shared.thread_room(threads, most));
        c
    };
    let local_peak = std::sync::atomic::AtomicU64::new(0);
    let keep_within = |local: &mut WordCounts| -> Result<()> {
        if !local.over(shared.thread_room(threads, most)) {
            return Ok(());
        }
        if let Some(l) = limits {
            // The partitions and the threads' tables stay within the total,
            // also while a flush grows them (spilled first if it would not
            // fit); and so does the process, as measured now. A thread's
            // table passes its room within a chunk: the largest seen counts.
            let largest = local_peak.fetch_max(local.table_bytes(), Ordering::Relaxed).max(local.table_bytes());
            let rooms = shared.thread_room(threads, most).max(largest) * threads as u64;
            let measured = l.budget.process.saturating_sub(crate::memory::budget::resident_now()).saturating_add(shared.held());
            shared.flush_within(local, total.saturating_sub(rooms).min(measured), &|| dirs.open())?;
        } else {
            shared.flush(local);
        }
        local.cap_table(shared.thread_room(threads, most));
        Ok(())
    };
    // Each thread's last flush, on its own thread (all at once; they start
    // at other partitions); then what it freed goes back to the system
    // before the thread ends (mimalloc would keep an ended thread's blocks).
    let finish = |local: &mut WordCounts| {
        shared.flush(local);
        crate::memory::alloc::release_free_memory();
    };
    let leftovers = count_on_threads(counter, threads, &fresh, &keep_within, Some(&finish), feed)?;
    let mut stats = CountStats::default();
    let mut superword_stats = counter.superword.map(|_| CountStats::default());
    for l in &leftovers {
        stats.add(&l.stats);
        if let (Some(total), Some(s)) = (superword_stats.as_mut(), l.superword.as_ref()) {
            total.add(&s.stats);
        }
    }
    drop(leftovers);
    if let Some(dirs) = dirs.take() {
        shared.spill(&dirs)?;
        drop(shared);
        return Ok(CountOutput::Runs(SpilledCounts { dirs, stats, superword_stats }));
    }
    let Shared { main, superword } = shared;
    let mut out = main.into_counts(stats);
    if let (Some(units), Some(st)) = (superword, superword_stats) {
        out.superword = Some(Box::new(units.into_counts(st)));
    }
    Ok(CountOutput::Table(out))
}

/// Chunks waiting for a counting thread at most: input in flight is this
/// many chunks and one per thread, not two per thread (on 16 threads 0.2 GB
/// of a counting peak that no longer grows with the threads otherwise).
const QUEUED_CHUNKS: usize = 4;

/// The worker threads of `count_parallel`: each counts the chunks it gets
/// into its own table (`fresh`), calling `keep_within` after each chunk
/// and `finish` at the end (unless counting failed).
fn count_on_threads(
    counter: &Counter,
    threads: usize,
    fresh: &(dyn Fn() -> WordCounts + Sync),
    keep_within: &(dyn Fn(&mut WordCounts) -> Result<()> + Sync),
    finish: Option<&(dyn Fn(&mut WordCounts) + Sync)>,
    feed: impl FnOnce(&mut dyn FnMut(Chunk) -> Result<()>) -> Result<()>,
) -> Result<Vec<WordCounts>> {
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let (tx, rx) = crossbeam_channel::bounded::<Chunk>((threads * 2).min(QUEUED_CHUNKS));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let rx = rx.clone();
                let failed = &failed;
                let first_error = &first_error;
                scope.spawn(move || {
                    let mut counts = fresh();
                    let mut scratch = counter.scratch();
                    for chunk in rx.iter() {
                        if failed.load(Ordering::Relaxed) {
                            continue; // drain so the feeder never blocks
                        }
                        let counted = counter
                            .count_chunk_with(&chunk, &mut counts, Some(failed), &mut scratch)
                            .and_then(|()| keep_within(&mut counts));
                        if let Err(e) = counted {
                            if e.kind() == crate::error::ErrorKind::Interrupted {
                                continue; // the feeder stopped; its error is reported
                            }
                            failed.store(true, Ordering::Relaxed);
                            let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                            if slot.is_none() {
                                *slot = Some(e);
                            }
                        }
                    }
                    if let Some(finish) = finish.filter(|_| !failed.load(Ordering::Relaxed)) {
                        finish(&mut counts);
                    }
                    counts
                })
            })
            .collect();
        drop(rx);
        let fed = feed(&mut |chunk| {
            if failed.load(Ordering::Relaxed) {
                return Err(Error::training("counting failed"));
            }
            tx.send(chunk).map_err(|_| Error::training("counting workers stopped"))
        });
        if fed.is_err() {
            // Stop the workers now: queued chunks are skipped, chunks in
            // progress end within a thousand texts (Ctrl-C within a second).
            failed.store(true, Ordering::Relaxed);
        }
        drop(tx);
        let joined = crate::util::join_all(workers);
        // A worker's own error (e.g. invalid UTF-8 naming the line) explains
        // a failed feed better than the feeder's "counting failed".
        if let Some(e) = first_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        fed?;
        joined
    })
}
