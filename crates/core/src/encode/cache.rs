//! The per-thread piece cache: piece bytes -> the ids exact BPE gives them.
//!
//! A table of 64-byte slots, each holding its key (up to `KEY_MAX` bytes)
//! and its ids (up to `IDS_MAX`) inline, so a look-up reads one cache line
//! and a store allocates nothing. It replaced a `HashMap<Box<[u8]>,
//! Box<[u32]>>` that was cleared when full: on held-apart multilingual lines
//! (one piece in five new to the cache) its probes (control bytes, bucket,
//! the key's heap bytes) and its allocations, frees and clears took a fifth
//! of `encode`'s time.
//!
//! Two ways to make room (`Room`), for two uses:
//!
//! * A tokenizer's own cache for its calls of `encode` (`Encoder::new_cache`)
//!   starts holding the pieces that are one token (`seeded_long_lived`), in
//!   eight times as many slots as there are such tokens (at most its full
//!   size, `long_lived_max_slots`): a piece met for the first time is then
//!   mostly found in one read of a slot, where the whole-piece table takes
//!   three (slot, offsets, token bytes) and a store. Rust, 50,000 held-apart
//!   lines one call each, fresh caches alternating (medians of 16): 2-5% less
//!   time on o200k_base, 6% on cl100k_base, 3% on a trained 32k vocabulary.
//!   Each piece has one slot and a new entry overwrites whatever shared it;
//!   frequent pieces come back at once. The table doubles (keeping what it
//!   holds) after as many stores as it has slots.
//! * A batch thread's cache (`for_batch`: lists, whole files) keeps what it
//!   meets: a piece takes the first free slot of the `PROBES` from its home,
//!   the table doubles when half full, up to `BATCH_MAX_SLOTS`, and pieces
//!   that fit no slot go to `LongPieces`. The pool of batch caches
//!   (`pool::CachePool`) keeps them from one batch or file to the next, so a corpus
//!   encoded file after file meets most of its pieces in the cache. It
//!   replaced caches of one slot per piece, 8 MiB each and seeded with the
//!   one-token pieces, which o200k_base's ~190k filled before any text: on
//!   23 MB of multilingual text, 1 in 3 pieces of two bytes or more was
//!   merged afresh on every pass, the same file again included.
//!   `examples/encode_file`, o200k_base, 1 thread, MB per CPU second, two
//!   runs alternating with the old caches: multi-1m cut into ten disjoint
//!   14 MB files encoded one after another, files 2-10 at a median of 28.6
//!   against 24.6; one 5.7 MB file four times, passes 2-4 at 41-63 against
//!   20-26. The first file pays for the table's growth, memory new to the
//!   process: 12-14 against 20-21 on this project's VM, whose host backs
//!   each new page slowly. Seeded like a tokenizer's own, it was no faster
//!   and copied the seed into each thread.
//!
//! Buckets of two slots (a 128-byte block, the newer entry first) in the
//! overwriting table kept more pieces (the 64 MiB table filled a round
//! later) but not time: on fresh o200k_base text through Python
//! (`bench/encode.py --modes encode/fresh`, three runs alternating with this
//! table), CPU-time medians 28.9, 28.7 and 32.0 MB/s against 30.1, 28.1 and
//! 32.1. Seeding o200k_base's takes 15-25 ms.

use super::key::{PieceKey, KEY_MAX};
use crate::memory::mem::HugeTable;
use crate::util::prefetch;
/// Most ids a cached piece may have.
const IDS_MAX: usize = 9;
/// Slots a piece of a batch thread's cache may sit in, from its home slot
/// on (see `Room::Probe`): with 4, a table half full had a piece's slots
/// all taken often enough to lose 4% of what it stored.
const PROBES: usize = 8;
const FIRST_SLOTS: usize = 1 << 10;
/// 131072 slots of 64 bytes (8 MiB): the limit of `Cache::new` and the
/// least a tokenizer's own cache may grow to. Measured when each thread of
/// a batch had such a cache: held-apart multilingual lines bring
/// ~200k new pieces per 50k lines; against 16384 slots, 131072 gave +15%
/// per call on o200k_base (+3% cl100k_base), 524288 nothing more (before
/// caches were seeded). The look-ups are prefetched (`encode_plain`), so a
/// table beyond the caches costs little.
const MAX_SLOTS: usize = 1 << 17;
/// A batch thread's cache grows to 2^20 slots (64 MiB, as a tokenizer's
/// own may for a large vocabulary): the 23 MB above hold ~600k distinct
/// pieces of two bytes or more; gigatoken reports ~1.3M in 1 GB of
/// English web text.
const BATCH_MAX_SLOTS: usize = 1 << 20;
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
    room: Room,
    /// Slots in use (`Room::Probe`).
    held: usize,
    /// Stores since the table last grew (`Room::Overwrite`).
    stores: usize,
    /// The most slots the table grows to (a power of two).
    max_slots: usize,
    /// Pieces that do not fit a slot (`Room::Probe` only).
    long: LongPieces,
}

/// A batch thread's pieces that do not fit a slot (longer than `KEY_MAX`
/// bytes, or of more than `IDS_MAX` ids), each with its bytes, up to
/// `LONG_MAX_BYTES`; then no more are kept. Such pieces are few (3 in 100
/// of held-apart multilingual text's pieces are longer than `KEY_MAX`) but
/// long, and merging one afresh costs dozens of look-ups.
#[derive(Clone, Default)]
struct LongPieces {
    /// Piece hash (`PieceKey::hash`) -> its bytes and ids; a piece whose
    /// hash another holds is not kept.
    map: crate::util::Map<u64, LongPiece>,
    bytes: usize,
    /// Whether some piece of at most `KEY_MAX` bytes is here (one of more
    /// than `IDS_MAX` ids), so that a slot's miss must look here too.
    short_ones: bool,
}

/// A long piece's bytes and its ids.
type LongPiece = (Box<[u8]>, Box<[u32]>);

/// The most bytes `LongPieces` keeps (their bytes and ids).
const LONG_MAX_BYTES: usize = 16 << 20;

impl LongPieces {
    #[inline]
    fn get(&self, key: &PieceKey, piece: &[u8]) -> Option<&[u32]> {
        match self.map.get(&key.hash) {
            Some((bytes, ids)) if &bytes[..] == piece => Some(ids),
            _ => None,
        }
    }

    fn put(&mut self, key: &PieceKey, piece: &[u8], ids: &[u32]) {
        let cost = piece.len() + 4 * ids.len() + 64;
        if self.bytes + cost > LONG_MAX_BYTES {
            return;
        }
        if let hashbrown::hash_map::Entry::Vacant(v) = self.map.entry(key.hash) {
            v.insert((piece.into(), ids.into()));
            self.bytes += cost;
            self.short_ones |= key.fits();
        }
    }
}

/// How a cache makes room for a new piece.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Room {
    /// Each piece has one slot, and a new piece overwrites what was there;
    /// the table doubles after as many stores as it has slots. For a
    /// tokenizer's own cache, seeded with the one-token pieces.
    Overwrite,
    /// A piece sits in the first free one of `PROBES` slots from its home
    /// (the home slot is overwritten only when all are taken); the table
    /// doubles when half full. For a batch thread's cache, which keeps
    /// what it met until it reaches its largest.
    Probe,
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

    /// The most memory it may take (allocated as it grows): its slots, and
    /// a batch thread's long pieces.
    pub fn max_bytes(&self) -> usize {
        self.max_slots * SLOT_BYTES + if self.room == Room::Probe { LONG_MAX_BYTES } else { 0 }
    }

    /// An empty cache that grows to `max_slots` (a power of two).
    pub(super) fn with_max_slots(max_slots: usize) -> Self {
        Cache::empty(max_slots, Room::Overwrite)
    }

    fn empty(max_slots: usize, room: Room) -> Self {
        debug_assert!(max_slots.is_power_of_two() && max_slots >= FIRST_SLOTS);
        Cache { slots: HugeTable::default(), room, held: 0, stores: 0, max_slots, long: LongPieces::default() }
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

    /// A batch thread's cache: empty, growing to `BATCH_MAX_SLOTS` as it
    /// stores pieces (see `BATCH_MAX_SLOTS`).
    pub(super) fn for_batch() -> Self {
        Cache::empty(BATCH_MAX_SLOTS, Room::Probe)
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
            cache.put(&PieceKey::new(bytes), bytes, &[id]);
        }
        cache.stores = 0;
        cache
    }

    /// The home slot of a piece; `None` if it is too long (or empty) to be
    /// cached, or the table has no slots yet.
    #[inline]
    fn place(&self, key: &PieceKey) -> Option<usize> {
        if key.len == 0 || !key.fits() || self.slots.is_empty() {
            return None;
        }
        Some((key.hash >> 40) as usize & (self.slots.len() - 1))
    }

    /// The slots a piece may sit in, from its home slot on (see `Room`).
    #[inline]
    fn window(&self, home: usize) -> impl Iterator<Item = usize> {
        let mask = self.slots.len() - 1;
        let probes = if self.room == Room::Probe { PROBES } else { 1 };
        (0..probes).map(move |i| (home + i) & mask)
    }

    /// The ids stored for `piece` (whose key is `key`), if any.
    #[inline]
    pub(super) fn get(&self, key: &PieceKey, piece: &[u8]) -> Option<&[u32]> {
        if let Some(home) = self.place(key) {
            for i in self.window(home) {
                let slot = &self.slots[i];
                if slot.key_len as usize == key.len && slot.key == key.words {
                    return Some(&slot.ids[..slot.n_ids as usize]);
                }
                // Pieces fill their window from its start and are never
                // removed, so an empty slot ends the search.
                if slot.key_len == 0 {
                    break;
                }
            }
            if !self.long.short_ones {
                return None;
            }
        }
        if self.long.map.is_empty() {
            return None;
        }
        self.long.get(key, piece)
    }

    /// Starts loading the home slot of the piece of `key` (see `encode_normalized`).
    #[inline]
    pub(super) fn prefetch(&self, key: &PieceKey) {
        if let Some(i) = self.place(key) {
            prefetch(&self.slots, i);
        }
    }

    /// Whether the table may still double.
    #[inline]
    fn can_grow(&self) -> bool {
        self.slots.len() < self.max_slots
    }

    /// Doubles the table, moving what it holds into the new slots (a piece
    /// whose window there is full is dropped: rare, at most half full).
    /// Dropping it instead, as the table grew from empty to its full size
    /// during the first 50k lines, cost 5% more pieces merged afresh at one
    /// thread and 7-9% at two (each thread warming its own cache).
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, HugeTable::filled(n, EMPTY));
        (self.held, self.stores) = (0, 0);
        for slot in old.iter().filter(|s| s.key_len != 0) {
            let key = PieceKey::from_words(slot.key, slot.key_len as usize);
            self.store(&key, *slot);
        }
    }

    /// Writes `slot` into the first free slot of its window (or over the
    /// same piece); `false` if the window is full of other pieces.
    #[inline]
    fn store(&mut self, key: &PieceKey, slot: Slot) -> bool {
        let Some(home) = self.place(key) else { return true };
        for i in self.window(home) {
            let here = &mut self.slots[i];
            if here.key_len == 0 || (here.key_len as usize == key.len && here.key == key.words) {
                self.held += (here.key_len == 0) as usize;
                *here = slot;
                return true;
            }
        }
        false
    }

    /// Stores `ids` for `piece` (whose key is `key`); a piece that does
    /// not fit a slot only in a batch thread's cache (`LongPieces`).
    #[inline]
    pub(super) fn put(&mut self, key: &PieceKey, piece: &[u8], ids: &[u32]) {
        if ids.len() > IDS_MAX || !key.fits() {
            if self.room == Room::Probe && key.len > 0 {
                self.long.put(key, piece, ids);
            }
            return;
        }
        if key.len == 0 {
            return;
        }
        let full = match self.room {
            Room::Overwrite => self.stores >= self.slots.len(),
            Room::Probe => 2 * self.held >= self.slots.len(),
        };
        if full && self.can_grow() {
            self.grow();
        }
        self.stores += 1;
        let mut slot = Slot { key: key.words, key_len: key.len as u8, n_ids: ids.len() as u8, ids: [0; IDS_MAX] };
        slot.ids[..ids.len()].copy_from_slice(ids);
        if self.store(key, slot) {
            return;
        }
        // A full window: the new piece takes its home slot.
        if let Some(home) = self.place(key) {
            self.slots[home] = slot;
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
        assert_eq!(cache.get(&k(b"ab"), b"ab"), None);
        // Pieces that differ only in trailing zero bytes or length.
        cache.put(&k(b"ab"), b"ab", &[1, 2]);
        cache.put(&k(b"ab\0"), b"ab\0", &[3]);
        assert_eq!(cache.get(&k(b"ab"), b"ab"), Some(&[1u32, 2][..]));
        assert_eq!(cache.get(&k(b"ab\0"), b"ab\0"), Some(&[3u32][..]));
        assert_eq!(cache.get(&k(b"a"), b"a"), None);
        // Too long to keep: silently not stored.
        cache.put(&k(&[b'x'; KEY_MAX + 1]), &[b'x'; KEY_MAX + 1], &[1]);
        assert_eq!(cache.get(&k(&[b'x'; KEY_MAX + 1]), &[b'x'; KEY_MAX + 1]), None);
        cache.put(&k(b"many"), b"many", &[0; IDS_MAX + 1]);
        assert_eq!(cache.get(&k(b"many"), b"many"), None);
        cache.put(&k(&[b'y'; KEY_MAX]), &[b'y'; KEY_MAX], &[7; IDS_MAX]);
        assert_eq!(cache.get(&k(&[b'y'; KEY_MAX]), &[b'y'; KEY_MAX]), Some(&[7u32; IDS_MAX][..]));
        // Many stores: the table grows; whatever it answers is what was stored.
        for n in 0..300_000u32 {
            let piece = format!("p{n}");
            cache.put(&k(piece.as_bytes()), piece.as_bytes(), &[n, n + 1]);
        }
        assert_eq!(cache.slots.len(), MAX_SLOTS);
        let mut found = 0;
        for n in 0..300_000u32 {
            if let Some(ids) = cache.get(&k(format!("p{n}").as_bytes()), format!("p{n}").as_bytes()) {
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
                cache.put(&k(format!("p{n}").as_bytes()), format!("p{n}").as_bytes(), &[n]);
            }
        };
        let (mut batch, mut long_lived) = (Cache::new(), Cache::with_max_slots(LONG_LIVED_MAX_SLOTS));
        fill(&mut batch);
        fill(&mut long_lived);
        assert_eq!(batch.slots.len(), MAX_SLOTS);
        assert_eq!(long_lived.slots.len(), LONG_LIVED_MAX_SLOTS);
        // A seed of half its first slots: most of it is kept (a piece takes
        // the slot of an earlier one that shared it), and every piece it
        // answers is right.
        let pieces: Vec<(Vec<u8>, u32)> = (0..MAX_SLOTS as u32).map(|n| (format!("s{n}").into_bytes(), n)).collect();
        let seed = || pieces.iter().map(|(b, id)| (b.as_slice(), *id));
        let large = Cache::seeded_long_lived(seed(), None);
        assert_eq!((large.slots.len(), large.max_slots), (LONG_LIVED_START_SLOTS, LONG_LIVED_MAX_SLOTS));
        let kept = |cache: &Cache| pieces.iter().filter(|(b, id)| cache.get(&k(b), b) == Some(&[*id][..])).count();
        assert!(kept(&large) > pieces.len() * 3 / 4, "{}", kept(&large));
        assert!(pieces.iter().all(|(b, id)| [None, Some(&[*id][..])].contains(&large.get(&k(b), b))));
        // A small seed: a tokenizer's own cache starts at eight times the
        // seed; a seed of a 32k vocabulary's size fills its whole. A batch
        // thread's starts empty.
        let few = || pieces[..1000].iter().map(|(b, id)| (b.as_slice(), *id));
        let (batch, own) = (Cache::for_batch(), Cache::seeded_long_lived(few(), None));
        assert_eq!((batch.slots.len(), batch.max_slots, own.slots.len()), (0, BATCH_MAX_SLOTS, 8192));
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
            small.put(&k(format!("p{n}").as_bytes()), format!("p{n}").as_bytes(), &[n]);
        }
        assert_eq!(small.slots.len() * SLOT_BYTES, 1 << 20);
        let large = Cache::seeded_long_lived(seed(), Some(128 << 20));
        assert_eq!(large.slots.len(), LONG_LIVED_START_SLOTS);
        assert_eq!(large.max_bytes(), 128 << 20);
        let kept = |cache: &Cache| pieces.iter().filter(|(b, id)| cache.get(&k(b), b) == Some(&[*id][..])).count();
        assert!(kept(&large) > 40_000 && kept(&large) > kept(&small), "{} {}", kept(&large), kept(&small));
        assert!(pieces.iter().all(|(b, id)| [None, Some(&[*id][..])].contains(&large.get(&k(b), b))));
        assert_eq!(Cache::seeded_long_lived(seed(), None).max_bytes(), default_cache_bytes(pieces.len()));
    }

    /// A batch thread's cache keeps what it stores while it may grow (a
    /// direct-mapped table of the same size lost a sixth of these to
    /// collisions), and at its largest still answers only what was stored.
    #[test]
    fn a_batch_cache_keeps_what_it_stores() {
        let mut cache = Cache::for_batch();
        let n = (BATCH_MAX_SLOTS * 3 / 8) as u32;
        for i in 0..n {
            cache.put(&k(format!("p{i}").as_bytes()), format!("p{i}").as_bytes(), &[i, i + 1]);
        }
        assert_eq!(cache.slots.len(), BATCH_MAX_SLOTS);
        let kept = (0..n).filter(|&i| cache.get(&k(format!("p{i}").as_bytes()), format!("p{i}").as_bytes()) == Some(&[i, i + 1][..])).count();
        assert!(kept > n as usize * 97 / 100, "{kept} of {n}");
        for i in n..4 * n {
            cache.put(&k(format!("p{i}").as_bytes()), format!("p{i}").as_bytes(), &[i]);
        }
        assert_eq!(cache.slots.len(), BATCH_MAX_SLOTS);
        for i in 0..4 * n {
            let want: &[u32] = if i < n { &[i, i + 1] } else { &[i] };
            assert!([None, Some(want)].contains(&cache.get(&k(format!("p{i}").as_bytes()), format!("p{i}").as_bytes())), "{i}");
        }
    }

    /// A batch thread's cache also keeps pieces that do not fit a slot,
    /// with their bytes, up to `LONG_MAX_BYTES`; a tokenizer's own does not.
    #[test]
    fn a_batch_cache_keeps_long_pieces_within_its_bound() {
        let long: Vec<Vec<u8>> = (0..40_000u32).map(|i| format!("{i:0>40}").into_bytes()).collect();
        let many_ids: Vec<u32> = (0..IDS_MAX as u32 + 3).collect();
        let (mut batch, mut own) = (Cache::for_batch(), Cache::new());
        for cache in [&mut batch, &mut own] {
            cache.put(&k(b"short"), b"short", &many_ids);
            for (i, p) in long.iter().enumerate() {
                cache.put(&k(p), p, &[i as u32, 7]);
            }
        }
        assert_eq!(batch.get(&k(b"short"), b"short"), Some(&many_ids[..]));
        assert_eq!(batch.get(&k(&long[5]), &long[5]), Some(&[5u32, 7][..]));
        assert_eq!((own.get(&k(b"short"), b"short"), own.get(&k(&long[5]), &long[5])), (None, None));
        // A piece with another's hash is not taken for it.
        assert_eq!(batch.get(&k(&long[5]), &long[6]), None);
        assert!(batch.long.bytes <= LONG_MAX_BYTES);
        let mut bounded = Cache::for_batch();
        let huge = vec![b'z'; 1 << 20];
        for n in 0..40 {
            let piece = [&huge[..], &[n as u8]].concat();
            bounded.put(&k(&piece), &piece, &[1]);
        }
        assert!(bounded.long.bytes <= LONG_MAX_BYTES && bounded.long.map.len() < 40, "{}", bounded.long.map.len());
    }
}
