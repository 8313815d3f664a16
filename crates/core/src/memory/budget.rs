//! The memory budget of a training run (`max_memory`): what it is by
//! default, how counting and the merge phase share it, and the estimate of
//! the merge phase's memory that decides whether rare word types must go.
//!
//! How the budget is kept:
//! * Counting on one thread: the table may use `worker_table`; past it the
//!   table is written to disk as a sorted run and emptied (`crate::memory::spill`).
//!   On several threads the word types are held once, in shared partitions
//!   (`count::partitioned`), beside small thread tables whose rooms together
//!   are at most a quarter of the budget; when the partitions and the rooms
//!   would pass `total`, the partitions are written to disk as a sorted run.
//!   So the peak does not depend on the thread count. At the end the runs
//!   are merged (k-way) into one table.
//! * Before the merge phase: its memory is estimated from the word types
//!   and their symbols (`merge_phase_bytes`, costs measured on the compact
//!   merge). If it does not fit, the rarest word types are dropped
//!   (`min_word_count` raised just enough, `choose_min_count`); if even
//!   that cannot fit, the run fails before allocating anything.
//!
//! Everything is measured against the budget minus what the process
//! already holds when training starts (`process_rss`), so the budget is a
//! bound on the whole process's peak, Python included.

use crate::error::{Error, Result};
use crate::util::{new_map, Map};

/// The default budget's share of the memory available when training starts
/// (MemAvailable, or the room left under a cgroup limit if that is lower):
/// room for the page cache the input streams through and for other programs.
pub const DEFAULT_SHARE: f64 = 0.7;

/// Merge phase cost per word type with at least two symbols, in bytes
/// (word record, pair-index word lists, heap): measured, see docs/guide/whole-corpus.md.
pub const MERGE_BYTES_PER_TYPE: f64 = 40.0;
/// Merge phase cost per symbol of those types (the symbols themselves and
/// their share of the pair index), in bytes: measured, see docs/guide/whole-corpus.md.
pub const MERGE_BYTES_PER_SYMBOL: f64 = 5.5;
/// What the merge phase needs whatever the table (tokens, maps, heap of a
/// small corpus), in bytes.
pub const MERGE_FIXED_BYTES: u64 = 48 << 20;

/// Input buffers in flight while counting, per thread (chunks queued and in
/// progress, each up to 5 MB).
const INPUT_BYTES_PER_THREAD: u64 = 16 << 20;

/// The default budget: `DEFAULT_SHARE` of the memory available now (a run
/// reads it once, when it starts: `TrainConfig::memory_budget`).
pub fn default_budget() -> u64 {
    let available = match (mem_available(), cgroup_room()) {
        (Some(a), Some(c)) => a.min(c),
        (Some(a), None) => a,
        (None, Some(c)) => c,
        // Not Linux: no way to know; a budget nobody reaches.
        (None, None) => return u64::MAX / 4,
    };
    (available as f64 * DEFAULT_SHARE) as u64
}

/// `MemAvailable` from /proc/meminfo, in bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    kib_field(line)
}

fn kib_field(line: &str) -> Option<u64> {
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|k| k * 1024)
}

/// The room left under this process's cgroup memory limit (v2, then v1).
fn cgroup_room() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (limit, usage) = if controllers.is_empty() {
            let dir = format!("/sys/fs/cgroup{path}");
            (read(&format!("{dir}/memory.max")), read(&format!("{dir}/memory.current")))
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = format!("/sys/fs/cgroup/memory{path}");
            (read(&format!("{dir}/memory.limit_in_bytes")), read(&format!("{dir}/memory.usage_in_bytes")))
        } else {
            continue;
        };
        // "max" (v2) does not parse; v1 writes a huge number for no limit.
        if let (Some(limit), Some(usage)) = (limit, usage) {
            if limit < 1 << 60 {
                return Some(limit.saturating_sub(usage));
            }
        }
    }
    None
}

/// Memory a run will take that the process does not hold yet and the
/// count tables' estimates do not see (a decompressor's window), while a
/// `Reserved` lives: counting's room leaves it out.
static RESERVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Reserves `bytes` of the budget until dropped (`reserved`).
pub struct Reserved(u64);

pub fn reserve(bytes: u64) -> Reserved {
    RESERVED.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    Reserved(bytes)
}

impl Drop for Reserved {
    fn drop(&mut self) {
        RESERVED.fetch_sub(self.0, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What `reserve` holds now, in bytes.
pub fn reserved() -> u64 {
    RESERVED.load(std::sync::atomic::Ordering::Relaxed)
}

/// This process's resident memory now (VmRSS), in bytes (0 if unknown).
/// Freed memory the allocator still holds is handed back first (see
/// `alloc::release_free_memory`), so that what is measured is what is in use.
pub fn process_rss() -> u64 {
    crate::memory::alloc::release_free_memory();
    resident_now()
}

/// Bytes in a human form for messages ("1.50 GiB").
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    }
}

/// How counting divides a budget of `room` bytes (the budget less what the
/// process held when counting started).
#[derive(Debug, Clone, Copy)]
pub struct CountBudget {
    /// What all of counting may hold: the tables (and, on several threads,
    /// the shared partitions), then the final table.
    pub total: u64,
    /// Counting on one thread: its table at most (half the total over the
    /// threads).
    pub worker_table: u64,
    /// The whole process's budget (`max_memory`; `u64::MAX`: none): on
    /// several threads the shared partitions spill before a flush would take
    /// the process's resident memory past it, whatever the estimates above
    /// left out (the threads' tables past their rooms, input buffers,
    /// memory the allocator keeps).
    pub process: u64,
}

impl CountBudget {
    pub fn new(room: u64, threads: usize, process: u64) -> Self {
        let total = room.saturating_sub(INPUT_BYTES_PER_THREAD * (threads as u64 + 1));
        CountBudget { total, worker_table: total / 2 / threads.max(1) as u64, process }
    }
}

/// This process's resident memory now (VmRSS), in bytes, without handing
/// freed memory back first (`process_rss` does): cheap enough for every
/// flush of a counting thread.
pub fn resident_now() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(kib_field))
        .unwrap_or(0)
}

/// The least a count table is given before it goes to disk, in bytes.
const MIN_TABLE_BYTES: u64 = 4 << 20;

/// What a run needs besides what the process holds, whatever its corpus:
/// a smallest table beside counting's input buffers or, when the merge
/// phase runs in this process (`merges_here`), beside its fixed part (the
/// two phases do not overlap).
pub fn run_floor(threads: usize, merges_here: bool) -> u64 {
    let counting = INPUT_BYTES_PER_THREAD * (threads as u64 + 1);
    MIN_TABLE_BYTES + if merges_here { counting.max(MERGE_FIXED_BYTES) } else { counting }
}

/// Refuses, before any input is read, a budget below what the process
/// holds (`held`) plus `run_floor`: no corpus could fit it, and finding that
/// out after counting would cost the whole count.
pub fn check_floor(budget: u64, held: u64, threads: usize, merges_here: bool) -> Result<()> {
    let floor = run_floor(threads, merges_here);
    let least = held.saturating_add(floor);
    if budget >= least {
        return Ok(());
    }
    let merge = if merges_here { format!(", or the merge phase's {}", human(MERGE_FIXED_BYTES)) } else { String::new() };
    Err(Error::parameter(format!(
        "max_memory {} is below what any corpus needs: the process holds {} already{}, and training needs {} more \
         (a smallest count table of {} beside {} of input buffers for {threads} thread(s){merge}); give at least {} \
         (more for a large corpus, or its rarest word types are dropped)",
        human(budget),
        human(held),
        if reserved() > 0 { format!(" (with {} for decompressing the input)", human(reserved())) } else { String::new() },
        human(floor),
        human(MIN_TABLE_BYTES),
        human(INPUT_BYTES_PER_THREAD * (threads as u64 + 1)),
        human(least.div_ceil(1 << 20) << 20),
    )))
}

/// The merge phase's memory for word types with these totals.
pub fn merge_phase_bytes(types: u64, symbols: u64) -> u64 {
    MERGE_FIXED_BYTES + (types as f64 * MERGE_BYTES_PER_TYPE + symbols as f64 * MERGE_BYTES_PER_SYMBOL) as u64
}

/// The count table's memory for `types` word types (slots at 3/8 to 3/4
/// load, rounded up to a power of two).
pub fn count_table_bytes(types: u64) -> u64 {
    (types * 4 / 3 + 1).next_power_of_two() * 32
}

/// The `min_word_count` the merge phase runs with: `config`'s, or higher if
/// its word types (`hist`) would not fit `room` bytes; with what was
/// dropped beyond the asked count. `also_counts` adds the count table (for
/// counts still to be built from runs).
pub fn fit_merge_phase(hist: &CountHistogram, asked: u64, room: u64, budget: u64, also_counts: bool) -> Result<(u64, Option<Dropped>)> {
    let cost = |t: u64, s: u64| {
        let merge = merge_phase_bytes(t, s);
        if also_counts { merge.max(count_table_bytes(t)) } else { merge }
    };
    let chosen = choose_min_count(hist, asked, room, budget, cost)?;
    if chosen == asked {
        return Ok((asked, None));
    }
    let (types, _, pieces) = hist.kept(asked);
    let (kept, _, kept_pieces) = hist.kept(chosen);
    Ok((chosen, Some(Dropped { min_word_count: chosen, types: types - kept, pretokens: pieces - kept_pieces })))
}

/// Word types by count: for each count, the types with it, their symbols
/// (bytes of the key: the bytes scheme's symbols, an upper bound for the
/// chars scheme's) and their occurrences.
#[derive(Debug, Default, Clone)]
pub struct CountHistogram {
    by_count: Map<u64, Bucket>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Bucket {
    types: u64,
    symbols: u64,
}

impl CountHistogram {
    pub fn new() -> Self {
        CountHistogram { by_count: new_map() }
    }

    #[inline]
    pub fn add(&mut self, key_len: usize, count: u64) {
        let b = self.by_count.entry(count).or_default();
        b.types += 1;
        // Types of one symbol never reach the pair index; their cost is the
        // count table's, not the merge phase's.
        if key_len >= 2 {
            b.symbols += key_len as u64;
        }
    }

    /// Buckets from the most frequent count down.
    fn descending(&self) -> Vec<(u64, Bucket)> {
        let mut v: Vec<(u64, Bucket)> = self.by_count.iter().map(|(&c, &b)| (c, b)).collect();
        v.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
        v
    }

    /// Types, symbols and occurrences of the types counted at least `min` times.
    pub fn kept(&self, min: u64) -> (u64, u64, u64) {
        self.by_count.iter().filter(|(&c, _)| c >= min).fold((0, 0, 0), |(t, s, o), (&c, b)| {
            (t + b.types, s + b.symbols, o + c * b.types)
        })
    }
}

/// What keeping to the budget cost: the `min_word_count` the merge phase
/// ran with and what it dropped beyond the one asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    pub min_word_count: u64,
    pub types: u64,
    pub pretokens: u64,
}

/// The smallest `min_word_count` (at least `asked`) whose word types fit
/// `room` bytes, as estimated by `cost(types, symbols)`; an error naming the
/// budget when not even the most frequent types fit.
pub fn choose_min_count(
    hist: &CountHistogram,
    asked: u64,
    room: u64,
    budget: u64,
    cost: impl Fn(u64, u64) -> u64,
) -> Result<u64> {
    let (types, symbols, _) = hist.kept(asked);
    if cost(types, symbols) <= room {
        return Ok(asked);
    }
    // Add counts from the most frequent down while the estimate fits.
    let (mut types, mut symbols) = (0u64, 0u64);
    let mut fits: Option<u64> = None;
    for (count, b) in hist.descending() {
        if count < asked {
            break;
        }
        if cost(types + b.types, symbols + b.symbols) > room {
            break;
        }
        types += b.types;
        symbols += b.symbols;
        fits = Some(count);
    }
    fits.ok_or_else(|| {
        Error::training(format!(
            "max_memory {} is too small for this corpus: even its most frequent word types would need about {} \
             (the process already holds {}); raise max_memory",
            human(budget),
            human(hist.descending().first().map_or(0, |(_, b)| cost(b.types, b.symbols))),
            human(budget.saturating_sub(room)),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_count_that_fits_is_chosen() {
        let mut h = CountHistogram::new();
        for (count, n) in [(1u64, 1000), (2, 100), (5, 10), (50, 1)] {
            for _ in 0..n {
                h.add(4, count);
            }
        }
        let cost = |t: u64, _s: u64| t;
        assert_eq!(choose_min_count(&h, 1, 2000, 2000, cost).unwrap(), 1);
        assert_eq!(choose_min_count(&h, 1, 111, 111, cost).unwrap(), 2);
        assert_eq!(choose_min_count(&h, 3, 111, 111, cost).unwrap(), 3);
        assert_eq!(choose_min_count(&h, 1, 110, 110, cost).unwrap(), 5);
        assert_eq!(choose_min_count(&h, 1, 1, 1, cost).unwrap(), 50);
        let err = choose_min_count(&h, 1, 0, 0, cost).unwrap_err();
        assert!(err.message().contains("max_memory"), "{}", err.message());
        // The need named is the most frequent types' with their symbols.
        let err = choose_min_count(&h, 1, 0, 0, |t, s| (t + s) << 20).unwrap_err();
        assert!(err.message().contains("would need about 5 MiB"), "{}", err.message());
        assert_eq!(h.kept(2), (111, 444, 200 + 50 + 50));
    }

    #[test]
    fn the_default_budget_is_a_share_of_what_is_available() {
        let b = default_budget();
        assert!(b > 0);
        if let Some(a) = mem_available() {
            assert!(b <= a);
        }
    }
}
