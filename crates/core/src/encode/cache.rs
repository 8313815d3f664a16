//! The per-thread piece cache: piece bytes -> the ids exact BPE gives them.
//!
//! A direct-mapped table of 64-byte slots, each holding its key (up to
//! `KEY_MAX` bytes) and its ids (up to `IDS_MAX`) inline, so a look-up reads
//! one cache line and a store allocates nothing. It replaced a `HashMap<Box<[u8]>,
//! Box<[u32]>>` that was cleared when full: on held-apart multilingual lines
//! (one piece in five new to the cache) its probes (control bytes, bucket,
//! the key's heap bytes) and its allocations, frees and clears took a fifth
//! of `encode`'s time.
//!
//! A new entry simply overwrites whatever shared its slot; frequent pieces
//! come back at once. The table starts small and doubles (keeping what it
//! holds) after as many stores as it has slots, so a call that encodes a few
//! words never pays for a megabyte of slots.
//!
//! Buckets of two slots (a 128-byte block, the newer entry first) kept
//! more pieces (the 64 MiB table filled a round later) but not time: on
//! fresh o200k_base text through Python (`bench/encode.py --modes
//! encode/fresh`, three runs alternating with this table), CPU-time
//! medians 28.9, 28.7 and 32.0 MB/s against 30.1, 28.1 and 32.1.
//!
//! A long-lived cache (`Encoder::new_cache`: the one a Python tokenizer
//! keeps for `encode`) instead starts holding the pieces that are one token
//! (`seeded_long_lived`), in eight times as many slots as there are such
//! tokens (at most its full size, `long_lived_max_slots`): a piece met for the
//! first time is then mostly found in one read of a slot, where the
//! whole-piece table takes three (slot, offsets, token bytes) and a store. Rust, 50,000 held-apart lines one call each,
//! fresh caches alternating (medians of 16): 2-5% less time on o200k_base,
//! 6% on cl100k_base, 3% on a trained 32k vocabulary. Seeding o200k_base's
//! takes 15-25 ms, so a batch's threads start from copies of one seed that
//! the pool of batch caches keeps (see `CachePool`).

use super::key::{PieceKey, KEY_MAX};
use crate::memory::mem::HugeTable;
use crate::util::prefetch;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
/// Most ids a cached piece may have.
const IDS_MAX: usize = 9;
const FIRST_SLOTS: usize = 1 << 10;
/// 131072 slots of 64 bytes: at most 8 MiB for each thread of a batch (all
/// of it from the start when seeded, else reached only after as many
/// stores). Held-apart multilingual lines bring
/// ~200k new pieces per 50k lines; against 16384 slots, 131072 gave +15%
/// per call on o200k_base (+3% cl100k_base), 524288 nothing more (before
/// caches were seeded). The look-ups are prefetched (`encode_plain`), so a
/// table beyond the caches costs little.
const MAX_SLOTS: usize = 1 << 17;
/// The one cache a tokenizer keeps for `encode` (`Encoder::new_cache`)
/// was made to hold its seed in twice as many slots up to 16 MiB: seeded with o200k_base's ~190k one-token pieces,
/// 131072 slots lost two in five of them to collisions and were full before
/// any text. Per call over 50,000 held-apart lines (fresh tokenizers, the
/// two builds alternating in one process, medians of 12-16 runs): o200k_base
/// 3.7-5.4% less time, cl100k_base 1.7-4.4%. Batch threads keep `MAX_SLOTS`:
/// copying a 16 MiB seed into each took more (o200k_base at 2 threads,
/// 0.142 s against 0.132 s) than the larger table saved.
///
/// That was measured on lines that repeat. On fresh text (consecutive
/// disjoint chunks of multi-1m, 7 rounds of 30,000 lines through one cache,
/// `examples/encode_rounds`, thread CPU time, median of the 6 rounds after
/// the first, medians of 6 runs alternating), a cache that keeps more of the
/// long tail of pieces merges fewer afresh: against 16 MiB, o200k_base
/// encoded 7% faster with 32 MiB, 12% with 64, 17% with 128; cl100k_base
/// 9%, 13%, 14%. A vocabulary of `LARGE_SEED` one-token pieces or more
/// now grows its cache to 64 MiB (starting from at most
/// `LONG_LIVED_START_SLOTS`), the size fastokens' growing table of pieces
/// reaches (2^21 entries of 32 bytes).
const LONG_LIVED_MAX_SLOTS: usize = 1 << 20;

/// A tokenizer's own cache starts with at most this many slots (16 MiB)
/// and grows from there as it stores pieces: a 64 MiB table filled with
/// the seed at the first call took a fifth of a 7-round run's time in
/// zeroing new pages on this project's VM.
const LONG_LIVED_START_SLOTS: usize = 1 << 18;

/// Seeds from which a tokenizer's own cache grows to `LONG_LIVED_MAX_SLOTS`.
const LARGE_SEED: usize = 1 << 16;

/// The most slots of a tokenizer's own cache seeded with `seeds` pieces:
/// `LONG_LIVED_MAX_SLOTS` from `LARGE_SEED` seeds up; else twice the seed
/// (a power of two), at least a batch thread's `MAX_SLOTS`. A small
/// vocabulary's cache grows no larger than before: letting the trained 32k
/// vocabulary's grow to 16 MiB changed nothing measurable (its first 50,000
/// lines in fresh processes, 6 each: 0.255 against 0.252 s) for 8 MiB more
/// memory.
fn long_lived_max_slots(seeds: usize) -> usize {
    if seeds >= LARGE_SEED {
        return LONG_LIVED_MAX_SLOTS;
    }
    spread(seeds, 2).clamp(MAX_SLOTS, LONG_LIVED_MAX_SLOTS)
}

/// Bytes of one slot of a cache.
pub const SLOT_BYTES: usize = std::mem::size_of::<Slot>();

/// The least memory a cache may be bounded to (`FIRST_SLOTS` slots: 64 KiB).
pub const MIN_CACHE_BYTES: usize = FIRST_SLOTS * SLOT_BYTES;

/// The most slots within `max_bytes`: a power of two, at least `FIRST_SLOTS`.
fn slots_for_bytes(max_bytes: usize) -> usize {
    let slots = (max_bytes / SLOT_BYTES).max(FIRST_SLOTS);
    1 << (usize::BITS - 1 - slots.leading_zeros())
}

/// The memory a tokenizer's own cache holds at most by default, for a
/// vocabulary of `seeds` one-token pieces (`long_lived_max_slots`).
pub fn default_cache_bytes(seeds: usize) -> usize {
    long_lived_max_slots(seeds) * SLOT_BYTES
}

/// A tokenizer's own cache starts with this many slots per seed (up to its
/// full size). Starting at twice the seed, as the limit is set, a trained
/// 32k vocabulary's cache (65536 slots for its ~31k one-token pieces) grew
/// to its full 131072 during the first 50,000 lines of per-call encoding:
/// 8 MiB new to the process, filled and rehashed in the middle of the
/// calls. On this project's VM, whose host takes freed memory back (each
/// new page is slow to fault in), perf put that fill at 5.7-7.8% of three
/// passes in five (0.34 s each); with this start, the faults took 0.2-0.9%
/// of four. In new processes (`bench/encode_ab.py --mode line --processes`,
/// medians of 14 and 20 runs) the pass took 0.272 and 0.258 s against
/// 0.274 and 0.264 s, for 4 MiB more memory from the first call. Small
/// vocabularies keep a small cache that grows by use.
const SEED_SPREAD: usize = 8;

/// Slots for a seed of `seeds` pieces at `per_seed` slots each, a power of two.
fn spread(seeds: usize, per_seed: usize) -> usize {
    (per_seed * seeds).next_power_of_two()
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    /// The piece's bytes, zero-padded (`PieceKey::words`).
    key: [u64; KEY_MAX / 8],
    /// The piece's length; 0 marks an empty slot (empty pieces are never stored).
    key_len: u8,
    n_ids: u8,
    ids: [u32; IDS_MAX],
}

const EMPTY: Slot = Slot { key: [0; KEY_MAX / 8], key_len: 0, n_ids: 0, ids: [0; IDS_MAX] };

/// A per-thread cache of piece -> ids (see the module notes).
#[derive(Clone)]
pub struct Cache {
    /// On huge pages from 2 MiB up (see `tables`).
    slots: HugeTable<Slot>,
    /// Stores since the table last grew.
    stores: usize,
    /// The most slots the table grows to (a power of two).
    max_slots: usize,
}

impl Default for Cache {
    fn default() -> Self {
        Cache::new()
    }
}

impl Cache {
    /// An empty cache that grows to `MAX_SLOTS`.
    pub fn new() -> Self {
        Cache::with_max_slots(MAX_SLOTS)
    }

    /// An empty cache that grows to `max_slots` (a power of two).
    /// The most memory its slots may take (they are allocated as it grows).
    pub fn max_bytes(&self) -> usize {
        self.max_slots * SLOT_BYTES
    }

    pub(super) fn with_max_slots(max_slots: usize) -> Self {
        debug_assert!(max_slots.is_power_of_two() && max_slots >= FIRST_SLOTS);
        Cache { slots: HugeTable::default(), stores: 0, max_slots }
    }

    /// The cache a tokenizer keeps for its calls of `encode`, seeded with
    /// `pieces` (see `seeded`), up to `long_lived_max_slots`.
    /// It starts with `SEED_SPREAD` times as many slots as seeds (at most
    /// its full size, and at most `LONG_LIVED_START_SLOTS`), and grows as it
    /// stores pieces.
    ///
    /// `max_bytes` bounds its memory instead (`slots_for_bytes`); `None`
    /// keeps the default (`long_lived_max_slots`: 8 MiB, or 64 MiB for a
    /// vocabulary of 65,536 one-token pieces or more).
    pub(super) fn seeded_long_lived<'a>(pieces: impl ExactSizeIterator<Item = (&'a [u8], u32)>, max_bytes: Option<usize>) -> Self {
        let max_slots = max_bytes.map_or_else(|| long_lived_max_slots(pieces.len()), slots_for_bytes);
        let slots = spread(pieces.len(), SEED_SPREAD).clamp(FIRST_SLOTS, max_slots.min(LONG_LIVED_START_SLOTS));
        Cache::seeded(pieces, slots, max_slots)
    }

    /// A batch thread's cache seeded with `pieces` (see `seeded`), in all
    /// of its `MAX_SLOTS` from the start, so it never grows during a batch.
    /// With no pieces (a model whose pieces are not looked up whole: see
    /// `Encoder::seed_pieces`) it starts empty and grows as a new one does.
    /// A 32k vocabulary's seed in 65536 slots grew within the first batch's
    /// first 15,000 lines: 8 MiB more memory new to the process, filled and
    /// rehashed on each thread while it encoded. On this project's VM,
    /// whose host takes back freed memory, perf put `grow`'s fill at up to
    /// 25-30 ms of a 2-thread batch of 50,000 lines (0.11-0.2 s).
    pub(super) fn seeded_for_batch<'a>(pieces: impl ExactSizeIterator<Item = (&'a [u8], u32)>) -> Self {
        Cache::seeded(pieces, MAX_SLOTS, MAX_SLOTS)
    }

    /// A cache holding each of `pieces` as its one id (where two share a
    /// slot, the later one is kept), in `slots` slots (a power of two, at
    /// most `max_slots`); it grows as a new one does from there.
    fn seeded<'a>(pieces: impl ExactSizeIterator<Item = (&'a [u8], u32)>, slots: usize, max_slots: usize) -> Self {
        if pieces.len() == 0 {
            return Cache::with_max_slots(max_slots);
        }
        let mut cache = Cache { slots: HugeTable::filled(slots, EMPTY), ..Cache::with_max_slots(max_slots) };
        for (bytes, id) in pieces {
            cache.put(&PieceKey::new(bytes), &[id]);
        }
        cache.stores = 0;
        cache
    }

    /// The slot of a piece; `None` if it is too long (or empty) to be
    /// cached, or the table has no slots yet.
    #[inline]
    fn place(&self, key: &PieceKey) -> Option<usize> {
        if key.len == 0 || !key.fits() || self.slots.is_empty() {
            return None;
        }
        Some((key.hash >> 40) as usize & (self.slots.len() - 1))
    }

    /// The ids stored for the piece of `key`, if any.
    #[inline]
    pub(super) fn get(&self, key: &PieceKey) -> Option<&[u32]> {
        let slot = &self.slots[self.place(key)?];
        if slot.key_len as usize == key.len && slot.key == key.words {
            Some(&slot.ids[..slot.n_ids as usize])
        } else {
            None
        }
    }

    /// Starts loading the slot of the piece of `key` (see `encode_normalized`).
    #[inline]
    pub(super) fn prefetch(&self, key: &PieceKey) {
        if let Some(i) = self.place(key) {
            prefetch(&self.slots, i);
        }
    }

    /// Doubles the table, moving what it holds into the new slots (where two
    /// land on one slot, the later wins). Dropping it instead, as the table
    /// grew from empty to its full size during the first 50k lines, cost 5%
    /// more pieces merged afresh at one thread and 7-9% at two (each thread
    /// warming its own cache).
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, HugeTable::filled(n, EMPTY));
        self.stores = 0;
        for slot in old.iter().filter(|s| s.key_len != 0) {
            if let Some(i) = self.place(&PieceKey::from_words(slot.key, slot.key_len as usize)) {
                self.slots[i] = *slot;
            }
        }
    }

    /// Stores `ids` for the piece of `key` (nothing if either is too long to keep).
    #[inline]
    pub(super) fn put(&mut self, key: &PieceKey, ids: &[u32]) {
        if ids.len() > IDS_MAX || key.len == 0 || !key.fits() {
            return;
        }
        if self.stores >= self.slots.len() && self.slots.len() < self.max_slots {
            self.grow();
        }
        self.stores += 1;
        let Some(i) = self.place(key) else { return };
        let slot = &mut self.slots[i];
        slot.key = key.words;
        slot.key_len = key.len as u8;
        slot.n_ids = ids.len() as u8;
        slot.ids[..ids.len()].copy_from_slice(ids);
    }
}

/// An encoder's caches between batches: each thread of a batch takes one
/// (or a new one) and gives it back when the batch ends, so a program that
/// encodes its corpus one batch after another (a few thousand lines each)
/// no longer starts every batch with empty caches. At most one idle cache
/// per core is kept (each at most 8 MiB).
///
/// A new cache is a copy of a seeded one the pool makes at the first and
/// keeps: copying o200k_base's takes 1-5 ms, seeding it 15-25 ms. But the
/// last cache the pool will keep (the one that makes a cache per core) is
/// that seed itself, not a copy of it: on a 2-core VM, a 2-thread batch
/// run after a 1-thread one (the bench's warm-up) had its helper thread
/// copy the seed into 8 MiB new to the process, which took 2-24 ms there
/// (the host backing the new pages), against 1.1-1.3 ms with a cache at
/// hand; and a process holds one cache fewer. A cache wanted after that
/// (more threads than cores) is a copy of a seed made again.
#[derive(Default)]
pub(crate) struct CachePool {
    idle: Mutex<Vec<Cache>>,
    /// What new caches are copied from, until it is given away.
    seed: Mutex<Option<Arc<Cache>>>,
    /// New caches made so far.
    made: AtomicUsize,
}

impl CachePool {
    /// An idle cache, or a new one (see `CachePool`) from `seeded`, which
    /// makes a seeded cache; given back when the `Pooled` is dropped.
    pub(crate) fn take(&self, seeded: impl FnOnce() -> Cache) -> Pooled<'_> {
        let cache = self.lock().and_then(|mut idle| idle.pop()).unwrap_or_else(|| self.new_cache(seeded));
        Pooled { pool: self, cache: Some(cache) }
    }

    fn new_cache(&self, seeded: impl FnOnce() -> Cache) -> Cache {
        let give_away = self.made.fetch_add(1, Ordering::Relaxed) + 1 == crate::util::default_threads();
        // The lock is never held while a cache is seeded or copied.
        let kept = {
            let mut seed = self.seed.lock().unwrap_or_else(|e| e.into_inner());
            if give_away { seed.take() } else { seed.clone() }
        };
        let seed = kept.unwrap_or_else(|| {
            let seed = Arc::new(seeded());
            if !give_away {
                self.seed.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| Arc::clone(&seed));
            }
            seed
        });
        // The seed itself if no other thread is copying it or keeps it.
        Arc::try_unwrap(seed).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The idle caches, unless another thread holds them: the lock is only
    /// held for a push or a pop, and never waiting on it means a process
    /// forked while another thread held it cannot hang on it (the caller
    /// then makes a new cache, or drops the one it would give back).
    fn lock(&self) -> Option<std::sync::MutexGuard<'_, Vec<Cache>>> {
        match self.idle.try_lock() {
            Ok(idle) => Some(idle),
            // A thread that panicked while holding the lock left a valid list.
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// A cache taken from a `CachePool`, given back when dropped.
pub(crate) struct Pooled<'a> {
    pool: &'a CachePool,
    cache: Option<Cache>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Cache;
    fn deref(&self) -> &Cache {
        self.cache.as_ref().expect("a pooled cache is held until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Cache {
        self.cache.as_mut().expect("a pooled cache is held until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let (Some(cache), Some(mut idle)) = (self.cache.take(), self.pool.lock()) else { return };
        if idle.len() < crate::util::default_threads() {
            idle.push(cache);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(piece: &[u8]) -> PieceKey {
        PieceKey::new(piece)
    }

    #[test]
    fn stores_and_finds_pieces_and_never_confuses_them() {
        let mut cache = Cache::new();
        assert_eq!(cache.get(&k(b"ab")), None);
        // Pieces that differ only in trailing zero bytes or length.
        cache.put(&k(b"ab"), &[1, 2]);
        cache.put(&k(b"ab\0"), &[3]);
        assert_eq!(cache.get(&k(b"ab")), Some(&[1u32, 2][..]));
        assert_eq!(cache.get(&k(b"ab\0")), Some(&[3u32][..]));
        assert_eq!(cache.get(&k(b"a")), None);
        // Too long to keep: silently not stored.
        cache.put(&k(&[b'x'; KEY_MAX + 1]), &[1]);
        assert_eq!(cache.get(&k(&[b'x'; KEY_MAX + 1])), None);
        cache.put(&k(b"many"), &[0; IDS_MAX + 1]);
        assert_eq!(cache.get(&k(b"many")), None);
        cache.put(&k(&[b'y'; KEY_MAX]), &[7; IDS_MAX]);
        assert_eq!(cache.get(&k(&[b'y'; KEY_MAX])), Some(&[7u32; IDS_MAX][..]));
        // Many stores: the table grows; whatever it answers is what was stored.
        for n in 0..300_000u32 {
            let piece = format!("p{n}");
            cache.put(&k(piece.as_bytes()), &[n, n + 1]);
        }
        assert_eq!(cache.slots.len(), MAX_SLOTS);
        let mut found = 0;
        for n in 0..300_000u32 {
            if let Some(ids) = cache.get(&k(format!("p{n}").as_bytes())) {
                assert_eq!(ids, &[n, n + 1]);
                found += 1;
            }
        }
        assert!(found > MAX_SLOTS / 2, "{found}");
        // Pieces that differ only in their last byte(s) land in different slots.
        for len in [2usize, 7, 8, 15, 16, 24] {
            let slots: std::collections::HashSet<usize> = (0..=255u8)
                .map(|b| {
                    let mut piece = vec![b'a'; len];
                    piece[len - 1] = b;
                    cache.place(&k(&piece)).unwrap_or(0)
                })
                .collect();
            assert!(slots.len() > 200, "len {len}: {} slots", slots.len());
        }
    }

    #[test]
    fn each_cache_grows_to_its_own_limit() {
        let fill = |cache: &mut Cache| {
            for n in 0..(3 * LONG_LIVED_MAX_SLOTS as u32) {
                cache.put(&k(format!("p{n}").as_bytes()), &[n]);
            }
        };
        let (mut batch, mut long_lived) = (Cache::new(), Cache::with_max_slots(LONG_LIVED_MAX_SLOTS));
        fill(&mut batch);
        fill(&mut long_lived);
        assert_eq!(batch.slots.len(), MAX_SLOTS);
        assert_eq!(long_lived.slots.len(), LONG_LIVED_MAX_SLOTS);
        // A seed larger than the limit is cut to it, and what it keeps is right.
        let pieces: Vec<(Vec<u8>, u32)> = (0..MAX_SLOTS as u32).map(|n| (format!("s{n}").into_bytes(), n)).collect();
        let seed = || pieces.iter().map(|(b, id)| (b.as_slice(), *id));
        let (small, large) = (Cache::seeded_for_batch(seed()), Cache::seeded_long_lived(seed(), None));
        assert_eq!((small.slots.len(), large.slots.len()), (MAX_SLOTS, LONG_LIVED_START_SLOTS));
        assert_eq!(large.max_slots, LONG_LIVED_MAX_SLOTS);
        let kept = |cache: &Cache| pieces.iter().filter(|(b, id)| cache.get(&k(b)) == Some(&[*id][..])).count();
        assert!(kept(&large) > kept(&small), "{} {}", kept(&large), kept(&small));
        assert!(pieces.iter().all(|(b, id)| [None, Some(&[*id][..])].contains(&large.get(&k(b)))));
        // A small seed: a batch thread's cache has all its slots from the
        // start (it never grows during a batch), a tokenizer's own eight
        // times the seed; a seed of a 32k vocabulary's size fills its whole.
        let few = || pieces[..1000].iter().map(|(b, id)| (b.as_slice(), *id));
        let (batch, own) = (Cache::seeded_for_batch(few()), Cache::seeded_long_lived(few(), None));
        assert_eq!((batch.slots.len(), own.slots.len()), (MAX_SLOTS, 8192));
        let trained = Cache::seeded_long_lived(pieces[..31_000].iter().map(|(b, id)| (b.as_slice(), *id)), None);
        assert_eq!((trained.slots.len(), trained.max_slots), (MAX_SLOTS, MAX_SLOTS));
        // A tokenizer's own cache: larger only where its seed needs it.
        assert_eq!(long_lived_max_slots(0), MAX_SLOTS);
        assert_eq!(long_lived_max_slots(30_000), MAX_SLOTS);
        assert_eq!(long_lived_max_slots(60_000), 1 << 17);
        assert_eq!(long_lived_max_slots(100_000), LONG_LIVED_MAX_SLOTS);
        assert_eq!(long_lived_max_slots(200_000), LONG_LIVED_MAX_SLOTS);
    }

    /// A bound in bytes: the largest power of two of slots within it (at
    /// least `MIN_CACHE_BYTES`), kept as the cache grows.
    #[test]
    fn a_bound_in_bytes_limits_the_slots() {
        assert_eq!(SLOT_BYTES, 64);
        assert_eq!(slots_for_bytes(0), FIRST_SLOTS);
        assert_eq!(slots_for_bytes(64 << 20), 1 << 20);
        assert_eq!(slots_for_bytes((64 << 20) - 1), 1 << 19);
        let pieces: Vec<(Vec<u8>, u32)> = (0..50_000u32).map(|n| (format!("s{n}").into_bytes(), n)).collect();
        let seed = || pieces.iter().map(|(b, id)| (b.as_slice(), *id));
        let mut small = Cache::seeded_long_lived(seed(), Some(1 << 20));
        assert_eq!((small.slots.len(), small.max_bytes()), (1 << 14, 1 << 20));
        for n in 0..100_000u32 {
            small.put(&k(format!("p{n}").as_bytes()), &[n]);
        }
        assert_eq!(small.slots.len() * SLOT_BYTES, 1 << 20);
        let large = Cache::seeded_long_lived(seed(), Some(128 << 20));
        assert_eq!(large.slots.len(), LONG_LIVED_START_SLOTS);
        assert_eq!(large.max_bytes(), 128 << 20);
        let kept = |cache: &Cache| pieces.iter().filter(|(b, id)| cache.get(&k(b)) == Some(&[*id][..])).count();
        assert!(kept(&large) > 40_000 && kept(&large) > kept(&small), "{} {}", kept(&large), kept(&small));
        assert!(pieces.iter().all(|(b, id)| [None, Some(&[*id][..])].contains(&large.get(&k(b)))));
        assert_eq!(Cache::seeded_long_lived(seed(), None).max_bytes(), default_cache_bytes(pieces.len()));
    }

    /// The pool seeds once; its last keepable cache (one per core) is the
    /// seed itself, the others copies; a cache wanted beyond those is a
    /// copy of a seed made again. Every one holds the seed's pieces.
    #[test]
    fn a_pool_copies_its_seed_and_gives_it_away_last() {
        let pool = CachePool::default();
        let seedings = std::cell::Cell::new(0);
        let seeded = || {
            seedings.set(seedings.get() + 1);
            Cache::seeded_for_batch([(&b"seed"[..], 7u32), (b"ed", 9)].into_iter())
        };
        let holds_seed = |cache: &Cache| cache.get(&k(b"seed")) == Some(&[7u32][..]) && cache.get(&k(b"ed")) == Some(&[9u32][..]);
        let cores = crate::util::default_threads();
        // Held at once, so none comes back from the idle list.
        let mut held: Vec<_> = (0..cores).map(|_| pool.take(seeded)).collect();
        assert_eq!(seedings.get(), 1);
        assert!(held.iter().all(|c| holds_seed(c)));
        assert!(pool.seed.lock().unwrap().is_none(), "the last cache is the seed itself");
        held.push(pool.take(seeded));
        held.push(pool.take(seeded));
        assert_eq!(seedings.get(), 2);
        assert!(held.iter().all(|c| holds_seed(c)));
        assert!(pool.seed.lock().unwrap().is_some());
        // The batch ends: one idle cache per core is kept, and taken again.
        drop(held);
        assert_eq!(pool.lock().unwrap().len(), cores);
        let again: Vec<_> = (0..cores).map(|_| pool.take(seeded)).collect();
        assert_eq!(seedings.get(), 2);
        assert!(again.iter().all(|c| holds_seed(c)));
    }

    #[test]
    fn a_pool_hands_back_what_a_batch_left() {
        let pool = CachePool::default();
        {
            let mut cache = pool.take(Cache::new);
            cache.put(&k(b"piece"), &[4, 2]);
        }
        assert_eq!(pool.take(Cache::new).get(&k(b"piece")), Some(&[4u32, 2][..]));
        // Two at once: the second is a new one; both come back.
        let (first, second) = (pool.take(Cache::new), pool.take(Cache::new));
        assert!(first.get(&k(b"piece")).is_some() != second.get(&k(b"piece")).is_some());
        drop((first, second));
        let idle = pool.lock().map(|idle| idle.len());
        assert_eq!(idle, Some(2.min(crate::util::default_threads())));
    }
}
