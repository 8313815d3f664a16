//! Counting on several threads with memory that does not grow with them:
//! radix-partitioned aggregation, as analytic databases aggregate.
//!
//! The word types are split by hash into `PARTS` partitions, shared by all
//! threads, each behind its own lock. A thread counts into a small private
//! table (the frequent types, which make most of the pre-tokens, are summed
//! there without any lock); when that table reaches the thread's share of a
//! fixed room, the thread flushes it: its entries are ordered by partition
//! and each run of them is added to its partition, one lock at a time,
//! starting at a different partition on each flush so that threads rarely
//! wait for each other. The rooms of all threads together are an eighth of
//! what the partitions hold (at least `MIN_LOCAL`), so a word type is held
//! once, in its partition, whatever the thread count: the peak no longer
//! holds one table per thread nor a big final sum beside them.
//!
//! Under a budget (`CountBudget`) the partitions are written to disk as one
//! sorted run (`crate::memory::spill`) when they and the threads' rooms would pass
//! it, and the runs are merged at the end as before.
//!
//! At the end the partitions are concatenated, each freed as it is copied,
//! into one packed table (`table::Table::packed`). Sums commute, so the
//! counts never depend on the thread count or on the order of the flushes.

use super::table::{growth_bytes, Batch, Entry, MidSlot, Slot, Table};
use super::{CountStats, SpillDirs, WordCounts};
use crate::error::Result;
use crate::memory::spill::SpillDir;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// log2 of the number of partitions.
const PART_BITS: u32 = 6;
/// Partitions: enough that 16-64 threads rarely flush into the same one at
/// once and that one partition's growth step is small beside the rest.
pub(super) const PARTS: usize = 1 << PART_BITS;

/// The threads' rooms together at least (then an eighth of the partitions).
pub(super) const MIN_LOCAL: u64 = 32 << 20;

/// The partition of a key's hash: bits 40..46, which neither the inline
/// tables (their low bits) nor hashbrown (low bits, top 7) index by, so the
/// keys of one partition still spread over its own table.
#[inline(always)]
fn part_of(hash: u64) -> usize {
    (hash >> 40) as usize & (PARTS - 1)
}

fn long_hash(key: &[u8]) -> u64 {
    crate::util::Hasher::default().hash_one(key)
}

/// One set of partitions (the word types, or SuperBPE's units).
pub(super) struct Partitions {
    parts: Vec<Mutex<WordCounts>>,
    /// Bytes of each partition's tables when last changed, and their sum.
    part_bytes: Vec<AtomicU64>,
    held: AtomicU64,
    /// Each partition's tables as `growth` reads them without its lock:
    /// the short and mid tables' `Table::shape`, the long map's entries and
    /// capacity.
    shapes: Vec<[AtomicUsize; 8]>,
    /// Growth that flushes in progress may still add (`reserve`).
    reserved: AtomicU64,
    /// Flushes so far: each starts at another partition.
    flushes: AtomicUsize,
    /// The counting threads: a spill, which stops them all, sorts the
    /// partitions on as many.
    threads: usize,
}

/// Bytes of a long-key map's bucket (key pointer and length, count, control byte).
const LONG_BUCKET: usize = 16 + 8 + 1;

impl Partitions {
    pub(super) fn new(threads: usize) -> Self {
        let parts: Vec<_> = (0..PARTS).map(|_| Mutex::new(empty_part())).collect();
        let part_bytes: Vec<_> = parts.iter().map(|p| AtomicU64::new(lock(p).table_bytes())).collect();
        let held = part_bytes.iter().map(|b| b.load(Ordering::Relaxed)).sum::<u64>().into();
        let shapes = parts.iter().map(|p| shape_of(&lock(p)).map(AtomicUsize::new)).collect();
        let threads = threads.max(1);
        Partitions { parts, part_bytes, held, shapes, reserved: AtomicU64::new(0), flushes: AtomicUsize::new(0), threads }
    }

    /// Records partition `p`'s bytes and shape (its lock held by the caller).
    fn note(&self, p: usize, part: &WordCounts) {
        let bytes = part.table_bytes();
        let before = self.part_bytes[p].swap(bytes, Ordering::Relaxed);
        self.held.fetch_add(bytes.wrapping_sub(before), Ordering::Relaxed);
        for (a, v) in self.shapes[p].iter().zip(shape_of(part)) {
            a.store(v, Ordering::Relaxed);
        }
    }

    /// The most that flushing `local` can raise the partitions' memory at
    /// any moment, every key of it taken as new (the partitions' tables
    /// grow one at a time, so the old slots of one growth step at most are
    /// held beside the new ones).
    pub(super) fn growth(&self, local: &WordCounts) -> u64 {
        let mut new = vec![[0usize; 3]; PARTS];
        for s in local.short.entries() {
            new[part_of(Slot::hash(&s.key))][0] += 1;
        }
        for s in local.mid.entries() {
            new[part_of(MidSlot::hash(&s.key))][1] += 1;
        }
        for k in local.long.keys() {
            new[part_of(long_hash(k))][2] += 1;
        }
        let (mut stays, mut step) = (0u64, 0u64);
        for (shape, new) in self.shapes.iter().zip(new) {
            let v: Vec<usize> = shape.iter().map(|a| a.load(Ordering::Relaxed)).collect();
            let short = growth_bytes([v[0], v[1], v[2]], new[0], std::mem::size_of::<Slot>());
            let mid = growth_bytes([v[3], v[4], v[5]], new[1], std::mem::size_of::<MidSlot>());
            // hashbrown: buckets for 8/7 of the entries, a power of two, in one step.
            let (len, capacity) = (v[6], v[7]);
            let long = if len + new[2] <= capacity {
                (0, 0)
            } else {
                let buckets = ((len + new[2]) * 8 / 7 + 1).next_power_of_two();
                let old = (capacity * 8 / 7 + 1).next_power_of_two() * LONG_BUCKET;
                ((buckets * LONG_BUCKET).saturating_sub(old) as u64, old as u64)
            };
            stays += short.0 + mid.0 + long.0;
            step = step.max(short.1).max(mid.1).max(long.1);
        }
        stays + step
    }

    /// Reserves `growth` bytes for a flush if the partitions, with what
    /// other flushes reserved, stay within `limit`; false if they would not.
    pub(super) fn reserve(&self, growth: u64, limit: u64) -> bool {
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                (self.held().saturating_add(r).saturating_add(growth) <= limit).then_some(r + growth)
            })
            .is_ok()
    }

    pub(super) fn release(&self, growth: u64) {
        self.reserved.fetch_sub(growth, Ordering::AcqRel);
    }

    /// Bytes the partitions' tables hold.
    pub(super) fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// Adds `local`'s entries (not its stats, which the caller sums) to the
    /// partitions and empties `local`, which keeps its tables' sizes and caps.
    pub(super) fn flush(&self, local: &mut WordCounts) {
        let (short_cap, short_max) = (local.short.slots.len(), local.short.max_slots);
        let (mid_cap, mid_max) = (local.mid.slots.len(), local.mid.max_slots);
        let short = by_part(std::mem::replace(&mut local.short, Table::tiny()));
        let mid = by_part(std::mem::replace(&mut local.mid, Table::tiny()));
        // Dealt out by partition with one hash per key (SuperBPE's units
        // are mostly long keys; sorting them by partition hashed each key
        // at every comparison).
        let mut pending: Vec<Vec<(Box<[u8]>, u64)>> = vec![Vec::new(); PARTS];
        for (k, v) in local.long.drain() {
            pending[part_of(long_hash(&k))].push((k, v));
        }
        let start = self.flushes.fetch_add(1, Ordering::Relaxed).wrapping_mul(PARTS / 2 + 5) % PARTS;
        // Partitions another thread holds are left for a second round.
        let mut busy = Vec::new();
        for i in 0..PARTS {
            let p = (start + i) % PARTS;
            match self.parts[p].try_lock() {
                Ok(mut part) => self.add_to(p, &mut part, &short, &mid, std::mem::take(&mut pending[p])),
                Err(_) => busy.push(p),
            }
        }
        for p in busy {
            let mut part = lock(&self.parts[p]);
            self.add_to(p, &mut part, &short, &mid, std::mem::take(&mut pending[p]));
        }
        local.short = Table::reuse(short.entries, short_cap, short_max);
        local.mid = Table::reuse(mid.entries, mid_cap, mid_max);
    }

    /// Adds partition `p`'s share of a flush to it (locked by the caller).
    fn add_to(&self, p: usize, part: &mut WordCounts, short: &ByPart<Slot>, mid: &ByPart<MidSlot>, long: Vec<(Box<[u8]>, u64)>) {
        add_slots(&mut part.short, short.part(p));
        add_slots(&mut part.mid, mid.part(p));
        part.long.reserve(long.len());
        for (k, v) in long {
            *part.long.entry(k).or_insert(0) += v;
        }
        self.note(p, part);
    }

    /// Every partition, locked (in order, so two callers cannot deadlock).
    fn lock_all(&self) -> Vec<MutexGuard<'_, WordCounts>> {
        self.parts.iter().map(lock).collect()
    }

    /// Writes the partitions' entries to `dir` as one sorted run and empties
    /// them (spilling; their tables are freed).
    pub(super) fn spill_to(&self, dir: &SpillDir) -> Result<()> {
        let mut parts = self.lock_all();
        // Every counting thread waits for the spill: the partitions are
        // sorted on all of them (each key is in one partition, so the run is
        // the same whoever sorts what).
        let mut shorts: Vec<Vec<Slot>> = parts.iter_mut().map(|p| std::mem::replace(&mut p.short, Table::tiny()).into_dense()).collect();
        on_threads(&mut shorts, self.threads, |d| d.sort_unstable_by_key(|s| s.key));
        let mut longers: Vec<Vec<(&[u8], u64)>> = parts.iter().map(|p| p.longer_entries()).collect();
        on_threads(&mut longers, self.threads, |l| l.sort_unstable_by(|a, b| a.0.cmp(b.0)));
        let short_len = shorts.iter().map(Vec::len).sum();
        let longer_len = longers.iter().map(Vec::len).sum();
        let short = Merged::new(shorts.iter().map(|v| v.iter().map(|s| (s.key, s.count))).collect(), short_len);
        let longer = Merged::new(longers.iter().map(|v| v.iter().copied()).collect(), longer_len);
        let written = dir.write_run(short, longer);
        drop((longers, shorts));
        for (p, part) in parts.iter_mut().enumerate() {
            part.mid = Table::tiny();
            part.long = crate::util::new_map();
            self.note(p, part);
        }
        written
    }

    /// The partitions as one table with `stats`: their entries concatenated
    /// into packed tables, each partition freed as it is copied.
    pub(super) fn into_counts(self, stats: CountStats) -> WordCounts {
        let parts: Vec<WordCounts> = self.parts.into_iter().map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner())).collect();
        let shorts: usize = parts.iter().map(|p| p.short.len).sum();
        let mids: usize = parts.iter().map(|p| p.mid.len).sum();
        let longs: usize = parts.iter().map(|p| p.long.len()).sum();
        let mut short: Vec<Slot> = crate::memory::mem::vec_with_capacity(shorts);
        let mut mid: Vec<MidSlot> = crate::memory::mem::vec_with_capacity(mids);
        let mut out = WordCounts::new();
        out.long.reserve(longs);
        for part in parts {
            let WordCounts { short: s, mid: m, long: l, .. } = part;
            short.extend_from_slice(&s.into_dense());
            mid.extend_from_slice(&m.into_dense());
            out.long.extend(l);
        }
        out.short = Table::of_entries(short);
        out.mid = Table::of_entries(mid);
        out.stats = stats;
        out
    }
}

/// Calls `f` on every item on up to `threads` threads, each taking a
/// contiguous share (the partitions are about equal in size).
fn on_threads<T: Send>(items: &mut [T], threads: usize, f: impl Fn(&mut T) + Sync) {
    let share = items.len().div_ceil(threads.max(1)).max(1);
    if share >= items.len() {
        items.iter_mut().for_each(&f);
        return;
    }
    std::thread::scope(|scope| {
        for chunk in items.chunks_mut(share) {
            let f = &f;
            scope.spawn(move || chunk.iter_mut().for_each(f));
        }
    });
}

/// A partition's table before anything is added: tiny tables, as many
/// partitions stay small on a small input (`WordCounts::new`'s would take
/// 18 MB for the 64 of them).
fn empty_part() -> WordCounts {
    WordCounts {
        short: Table::tiny(),
        mid: Table::tiny(),
        long: crate::util::new_map(),
        stats: CountStats::default(),
        superword: None,
        memory: Default::default(),
    }
}

/// A partition's tables as `Partitions::shapes` keeps them.
fn shape_of(part: &WordCounts) -> [usize; 8] {
    let ([a, b, c], [d, e, f]) = (part.short.shape(), part.mid.shape());
    [a, b, c, d, e, f, part.long.len(), part.long.capacity()]
}

fn lock(m: &Mutex<WordCounts>) -> MutexGuard<'_, WordCounts> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A table's entries ordered by partition, with where each partition starts.
struct ByPart<S> {
    entries: Vec<S>,
    cuts: Vec<usize>,
}

impl<S> ByPart<S> {
    fn part(&self, p: usize) -> &[S] {
        &self.entries[self.cuts[p]..self.cuts[p + 1]]
    }
}

/// Dealt out in place by partition (an American flag sort: each swap puts
/// one entry in its partition for good), hashing each key once; a
/// comparison sort by partition hashed both keys at every comparison.
fn by_part<S: Entry>(table: Table<S>) -> ByPart<S> {
    const { assert!(PARTS <= 256, "a partition must fit in a u8") };
    let mut entries = table.into_dense();
    let mut parts: Vec<u8> = entries.iter().map(|s| part_of(S::hash(&s.key())) as u8).collect();
    let mut cuts = vec![0usize; PARTS + 1];
    for &p in &parts {
        cuts[p as usize + 1] += 1;
    }
    for p in 0..PARTS {
        cuts[p + 1] += cuts[p];
    }
    let mut next = cuts[..PARTS].to_vec();
    for p in 0..PARTS {
        while next[p] < cuts[p + 1] {
            let (i, home) = (next[p], parts[next[p]] as usize);
            if home != p {
                entries.swap(i, next[home]);
                parts.swap(i, next[home]);
            }
            next[home] += 1;
        }
    }
    ByPart { entries, cuts }
}

fn add_slots<S: Entry>(table: &mut Table<S>, slots: &[S]) {
    let mut batch = Batch::on_table(table);
    for s in slots {
        batch.push(s.key(), s.count());
    }
}

/// Sorted sequences merged into one (their keys are disjoint: each key
/// lives in one partition).
struct Merged<K: Ord, I: Iterator<Item = (K, u64)>> {
    inputs: Vec<std::iter::Peekable<I>>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(K, usize)>>,
    left: usize,
}

impl<K: Ord + Copy, I: Iterator<Item = (K, u64)>> Merged<K, I> {
    fn new(inputs: Vec<I>, len: usize) -> Self {
        let mut inputs: Vec<_> = inputs.into_iter().map(Iterator::peekable).collect();
        let mut heap = std::collections::BinaryHeap::with_capacity(inputs.len());
        for (i, input) in inputs.iter_mut().enumerate() {
            if let Some(&(k, _)) = input.peek() {
                heap.push(std::cmp::Reverse((k, i)));
            }
        }
        Merged { inputs, heap, left: len }
    }
}

impl<K: Ord + Copy, I: Iterator<Item = (K, u64)>> Iterator for Merged<K, I> {
    type Item = (K, u64);
    fn next(&mut self) -> Option<(K, u64)> {
        let std::cmp::Reverse((_, i)) = self.heap.pop()?;
        let item = self.inputs[i].next()?;
        if let Some(&(k, _)) = self.inputs[i].peek() {
            self.heap.push(std::cmp::Reverse((k, i)));
        }
        self.left -= 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<K: Ord + Copy, I: Iterator<Item = (K, u64)>> ExactSizeIterator for Merged<K, I> {}

/// The shared partitions of a counting: the word types, and SuperBPE's
/// units where it counts them.
pub(super) struct Shared {
    pub main: Partitions,
    pub superword: Option<Partitions>,
}

impl Shared {
    pub(super) fn new(superword: bool, threads: usize) -> Self {
        Shared { main: Partitions::new(threads), superword: superword.then(|| Partitions::new(threads)) }
    }

    pub(super) fn held(&self) -> u64 {
        self.main.held() + self.superword.as_ref().map_or(0, Partitions::held)
    }

    /// Flushes a thread's table (and its SuperBPE units) into the partitions.
    pub(super) fn flush(&self, local: &mut WordCounts) {
        if let (Some(units), Some(parts)) = (local.superword.as_deref_mut(), self.superword.as_ref()) {
            parts.flush(units);
        }
        self.main.flush(local);
    }

    /// `Partitions::growth` of flushing `local` (and its SuperBPE units).
    pub(super) fn growth(&self, local: &WordCounts) -> u64 {
        let units = match (local.superword.as_deref(), self.superword.as_ref()) {
            (Some(u), Some(parts)) => parts.growth(u),
            _ => 0,
        };
        self.main.growth(local) + units
    }

    /// Flushes `local` into the partitions, first writing them to disk if
    /// what the flush could add would take them past `limit` bytes; if even
    /// the emptied partitions have no room for it, `local` goes to disk as
    /// a sorted run of its own. So the partitions never grow past `limit`.
    pub(super) fn flush_within(&self, local: &mut WordCounts, limit: u64, dirs: &dyn Fn() -> Result<std::sync::Arc<SpillDirs>>) -> Result<()> {
        let room = |s: &Self| limit.saturating_sub(s.superword.as_ref().map_or(0, Partitions::held));
        let mut growth = self.growth(local);
        if !self.main.reserve(growth, room(self)) {
            self.spill(&*dirs()?)?;
            // What the tables held goes back to the system, not to the
            // allocator's cache, so the process's memory follows them.
            crate::memory::alloc::release_free_memory();
            growth = self.growth(local);
            if !self.main.reserve(growth, room(self)) {
                return local.spill(&*dirs()?);
            }
        }
        self.flush(local);
        self.main.release(growth);
        Ok(())
    }

    pub(super) fn spill(&self, dirs: &SpillDirs) -> Result<()> {
        if let (Some(parts), Some(dir)) = (self.superword.as_ref(), dirs.superword.as_ref()) {
            parts.spill_to(dir)?;
        }
        self.main.spill_to(&dirs.main)
    }

    /// The room of each of `threads` threads' tables: an eighth of what the
    /// partitions hold now (at least `MIN_LOCAL`, at most `most`) over the
    /// threads.
    pub(super) fn thread_room(&self, threads: usize, most: u64) -> u64 {
        (self.held() / 8).max(MIN_LOCAL).min(most) / threads.max(1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dealing_by_part_keeps_every_entry_in_its_partition() {
        for n in [0u64, 1, 5, 3_000, 50_000] {
            let mut table: Table<Slot> = Table::with_capacity(0);
            for i in 0..n {
                table.add_one(u128::from(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) << 3 | 1, i + 1);
            }
            let mut before: Vec<(u128, u64)> = table.entries().map(|s| (s.key, s.count)).collect();
            let dealt = by_part(table);
            assert_eq!(dealt.cuts.len(), PARTS + 1);
            let mut after = Vec::new();
            for p in 0..PARTS {
                for s in dealt.part(p) {
                    assert_eq!(part_of(Slot::hash(&s.key)), p);
                    after.push((s.key, s.count));
                }
            }
            before.sort_unstable();
            after.sort_unstable();
            assert_eq!(after, before, "{n} entries");
        }
    }
}
