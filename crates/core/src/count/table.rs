//! The count tables' building blocks: pieces as inline keys, an
//! open-addressing table of them whose slots callers prefetch, and the
//! pipeline (`Batch`) that does the prefetching.
//!
//! Two key sizes share the table: `u128` for pieces of 1..=15 bytes (the
//! great majority) and `MidKey` for 16..=31 bytes (a sixth of the word
//! types of multi-1m, mostly words of scripts with 2- and 3-byte
//! characters). Longer pieces stay in a hash map with boxed keys
//! (`WordCounts`). A probe touches one slot whose address the hash gives,
//! so a miss can be prefetched many pre-tokens ahead; a boxed key's probe is
//! three dependent misses (control bytes, bucket, key) that nothing hides.

use crate::util::prefetch;

pub(super) const SHORT_KEY: usize = 15;
/// The longest piece with an inline `MidKey`.
pub(super) const MID_KEY: usize = 31;

/// The bytes of a short key (see `WordCounts::entries`).
#[inline]
pub fn short_key_bytes(key: &u128) -> ([u8; 16], usize) {
    let b = key.to_le_bytes();
    (b, b[15] as usize)
}

/// The key of a piece of 1..=15 bytes: its bytes in order (little-endian),
/// zeros, and the length in byte 15.
///
/// Built from at most two overlapping loads per half instead of copying the
/// piece into a buffer: reading the buffer back as integers right after a
/// variable-length copy stalled on store forwarding (a tenth of the adder's
/// time on s10).
#[inline(always)]
pub(super) fn short_key(piece: &[u8]) -> u128 {
    let n = piece.len();
    debug_assert!((1..=SHORT_KEY).contains(&n));
    let u64_at = |i: usize| u64::from_le_bytes(piece[i..i + 8].try_into().unwrap_or_default());
    let u32_at = |i: usize| u32::from_le_bytes(piece[i..i + 4].try_into().unwrap_or_default()) as u64;
    let (lo, hi) = if n >= 8 {
        // The last 8 bytes, shifted so that byte 8 lands at bit 0 (nothing
        // left for n = 8: two shifts, as one by 64 would overflow).
        (u64_at(0), u64_at(n - 8) >> (8 * (15 - n)) >> 8)
    } else if n >= 4 {
        // Two loads that overlap when n < 8; the shared bytes are equal.
        (u32_at(0) | u32_at(n - 4) << (8 * (n - 4)), 0)
    } else {
        let b = |i: usize| piece[i] as u64;
        (b(0) | b(n / 2) << (8 * (n / 2)) | b(n - 1) << (8 * (n - 1)), 0)
    };
    (lo as u128) | ((hi | (n as u64) << 56) as u128) << 64
}

/// The key of a piece of 16..=31 bytes: its bytes, zeros, and the length
/// in byte 31. Never all zeros (the length is at least 16), so all zeros
/// marks an empty slot.
pub(super) type MidKey = [u8; 32];

/// `MidKey` of a piece, from overlapping 8-byte loads (as `short_key`).
#[inline(always)]
pub(super) fn mid_key(piece: &[u8]) -> MidKey {
    let n = piece.len();
    debug_assert!((SHORT_KEY + 1..=MID_KEY).contains(&n));
    let u64_at = |i: usize| u64::from_le_bytes(piece[i..i + 8].try_into().unwrap_or_default());
    // Bytes 16..n (0..=15 of them) at bit 0 of words 2 and 3: the load
    // ending at byte n, shifted down past the bytes before 16 (in two
    // shifts, as one by 64 would overflow).
    let tail = n - 16;
    let (w2, w3) = if tail >= 8 {
        (u64_at(16), u64_at(n - 8) >> (8 * (15 - tail)) >> 8)
    } else {
        (u64_at(n - 8) >> (8 * (7 - tail)) >> 8, 0)
    };
    let mut key = [0u8; 32];
    for (i, w) in [u64_at(0), u64_at(8), w2, w3 | (n as u64) << 56].into_iter().enumerate() {
        key[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    key
}

/// A piece as the table that counts it keys it: inline up to `MID_KEY`
/// bytes, its own bytes (a boxed key) beyond.
pub(super) enum Keyed<'p> {
    Short(u128),
    Mid(MidKey),
    Long(&'p [u8]),
}

/// The shortest pieces of the mid table.
const MID_FIRST: usize = SHORT_KEY + 1;

/// The key of `piece` in the table its length picks (the one place the
/// lengths are chosen).
#[inline(always)]
pub(super) fn keyed(piece: &[u8]) -> Keyed<'_> {
    match piece.len() {
        0..=SHORT_KEY => Keyed::Short(short_key(piece)),
        MID_FIRST..=MID_KEY => Keyed::Mid(mid_key(piece)),
        _ => Keyed::Long(piece),
    }
}

/// The piece of a `MidKey`.
#[inline]
pub(super) fn mid_key_bytes(key: &MidKey) -> &[u8] {
    &key[..key[31] as usize]
}

/// A slot of a `Table`: a key (all zeros = empty) and its count.
pub(super) trait Entry: Copy + Default + Send + Sync {
    type Key: Copy + Eq + Default;
    fn new(key: Self::Key, count: u64) -> Self;
    fn key(&self) -> Self::Key;
    fn count(&self) -> u64;
    fn count_mut(&mut self) -> &mut u64;
    fn hash(key: &Self::Key) -> u64;
    /// Reads `self.key() == Key::default()` without copying a wide key.
    fn is_empty(&self) -> bool;
}

/// One slot of `ShortTable`: a key (0 = empty) and its count. 32-byte
/// aligned, so a slot never straddles a cache line.
#[derive(Clone, Copy, Default, Debug)]
#[repr(C, align(32))]
pub(super) struct Slot {
    pub key: u128,
    pub count: u64,
}

impl Entry for Slot {
    type Key = u128;
    #[inline(always)]
    fn new(key: u128, count: u64) -> Self {
        Slot { key, count }
    }
    #[inline(always)]
    fn key(&self) -> u128 {
        self.key
    }
    #[inline(always)]
    fn count(&self) -> u64 {
        self.count
    }
    #[inline(always)]
    fn count_mut(&mut self) -> &mut u64 {
        &mut self.count
    }
    #[inline(always)]
    fn hash(key: &u128) -> u64 {
        hash_short(*key)
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.key == 0
    }
}

/// One slot of `MidTable`: 40 bytes, so some slots straddle two cache
/// lines (both are prefetched). A 64-byte slot would never straddle but
/// would take more memory per type than the boxed keys it replaces.
#[derive(Clone, Copy, Default, Debug)]
#[repr(C)]
pub(super) struct MidSlot {
    pub key: MidKey,
    pub count: u64,
}

impl Entry for MidSlot {
    type Key = MidKey;
    #[inline(always)]
    fn new(key: MidKey, count: u64) -> Self {
        MidSlot { key, count }
    }
    #[inline(always)]
    fn key(&self) -> MidKey {
        self.key
    }
    #[inline(always)]
    fn count(&self) -> u64 {
        self.count
    }
    #[inline(always)]
    fn count_mut(&mut self) -> &mut u64 {
        &mut self.count
    }
    #[inline(always)]
    fn hash(key: &MidKey) -> u64 {
        let w = |i: usize| u64::from_le_bytes(key[8 * i..8 * i + 8].try_into().unwrap_or_default());
        fold_mul(fold_mul(w(0) ^ 0x243f_6a88_85a3_08d3, w(1) ^ 0x1319_8a2e_0370_7344) ^ w(2), w(3) ^ 0x082e_fa98_ec4e_6c89)
    }
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.key[31] == 0
    }
}

/// Counts of inline keys: open addressing, linear probing.
///
/// Why not hashbrown: with 1.7M word types (multi-1m) the short table is
/// ~64 MB, far beyond the caches, and a hashbrown probe is two dependent
/// cache misses (control bytes, then the bucket) whose address is known
/// only inside the probe. Here the slot address is `hash & mask`, so callers
/// can prefetch it many pre-tokens ahead (see `Batch`), and a probe touches
/// one slot. The all-zero key never occurs (it would have length 0), so it
/// marks empty slots. No deletions: `retain` rebuilds.
#[derive(Debug, Clone)]
pub(super) struct Table<S> {
    pub slots: Vec<S>,
    pub len: usize,
    /// Grow when `len` would exceed this (3/4 of the capacity).
    limit: usize,
    /// The memory budget's cap on `slots.len()`: at the cap the table fills
    /// up to 7/8 instead of growing and says it is `full` (its owner spills
    /// it to disk); only past 7/8 does it grow regardless, to stay correct.
    pub max_slots: usize,
    pub full: bool,
    /// `slots` holds exactly the entries (the sum of the partitions of a
    /// counting on several threads: half the memory of a hash table). Iterable but not searchable: `Batch::on_table`
    /// and `add_one` (every way to add) first rebuild the hash table
    /// (`make_searchable`).
    pub packed: bool,
}

/// Pieces of 1..=15 bytes.
pub(super) type ShortTable = Table<Slot>;
/// Pieces of 16..=31 bytes.
pub(super) type MidTable = Table<MidSlot>;

const MIN_CAPACITY: usize = 1 << 12;

#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = a as u128 * b as u128;
    (p as u64) ^ ((p >> 64) as u64)
}

/// Hash of a short key: two folded multiplies (the mixing of foldhash and
/// wyhash). Fixed constants: counts and their iteration order are
/// reproducible (and the model never depends on that order anyway).
#[inline(always)]
fn hash_short(key: u128) -> u64 {
    let (lo, hi) = (key as u64, (key >> 64) as u64);
    fold_mul(fold_mul(lo ^ 0x243f_6a88_85a3_08d3, hi ^ 0x1319_8a2e_0370_7344) ^ 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89)
}

impl<S: Entry> Table<S> {
    pub fn with_capacity(cap: usize) -> Self {
        let cap = cap.max(MIN_CAPACITY).next_power_of_two();
        Table {
            slots: crate::memory::mem::filled_vec(cap, S::default()),
            len: 0,
            limit: cap / 4 * 3,
            max_slots: usize::MAX,
            full: false,
            packed: false,
        }
    }

    /// An empty table of a few slots (a partition of a counting on several
    /// threads, many of which stay small on a small input).
    pub fn tiny() -> Self {
        const TINY: usize = 64;
        Table { slots: vec![S::default(); TINY], len: 0, limit: TINY / 4 * 3, max_slots: usize::MAX, full: false, packed: false }
    }

    /// An empty table of `cap` slots (a power of two) in the buffer of
    /// `slots` (a table's own, emptied by `into_dense` and read), so that a
    /// table flushed again and again is not allocated again each time.
    pub fn reuse(mut slots: Vec<S>, cap: usize, max_slots: usize) -> Self {
        debug_assert!(cap.is_power_of_two());
        slots.clear();
        slots.resize(cap, S::default());
        Table { slots, len: 0, limit: cap / 4 * 3, max_slots, full: false, packed: false }
    }

    #[inline(always)]
    fn index(&self, hash: u64) -> usize {
        hash as usize & (self.slots.len() - 1)
    }

    /// Prefetches the slot where a probe for `hash` starts (both of its
    /// cache lines, where it straddles two).
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let i = self.index(hash);
        prefetch(&self.slots, i);
        if 64 % std::mem::size_of::<S>() != 0 {
            crate::util::prefetch_end(&self.slots, i);
        }
    }

    /// Adds `n` to `key`'s count, outside a `Batch` (a packed table is
    /// made searchable first: probing one, which has no empty slot, would
    /// never end).
    #[inline]
    pub fn add_one(&mut self, key: S::Key, n: u64) {
        if self.packed {
            self.make_searchable();
        }
        self.add(key, S::hash(&key), n);
    }

    /// Adds `n` to `key`'s count; `hash` is `S::hash(&key)`. The table must
    /// not be packed.
    #[inline(always)]
    fn add(&mut self, key: S::Key, hash: u64, n: u64) {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let s = &mut self.slots[i];
            if s.key() == key {
                *s.count_mut() += n;
                return;
            }
            if s.is_empty() {
                *s = S::new(key, n);
                self.len += 1;
                if self.len > self.limit {
                    self.on_full();
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// `len` passed `limit`: grow, or (at the budget's cap) fill further.
    #[cold]
    fn on_full(&mut self) {
        let cap = self.slots.len();
        if cap * 2 > self.max_slots && self.len < cap / 8 * 7 {
            self.full = true;
            self.limit = cap / 8 * 7;
        } else {
            self.grow(cap * 2);
        }
    }

    #[cold]
    fn grow(&mut self, cap: usize) {
        let mut bigger = Table::with_capacity(cap);
        bigger.max_slots = self.max_slots;
        for s in self.slots.iter().filter(|s| !s.is_empty()) {
            bigger.insert_new(s.key(), s.count());
        }
        *self = bigger;
    }

    /// Moves the entries to the front of the slots (the table is no longer
    /// searchable) and hands back the pages behind them: the entries at
    /// one slot each instead of the table's 4/3 to 8/3.
    pub fn into_dense(mut self) -> Vec<S> {
        let mut w = 0;
        for r in 0..self.slots.len() {
            if !self.slots[r].is_empty() {
                self.slots[w] = self.slots[r];
                w += 1;
            }
        }
        let cap = self.slots.len();
        self.slots.truncate(w);
        crate::memory::mem::release(&self.slots, w, cap);
        self.slots
    }

    /// A packed table (see `packed`) as a hash table again.
    #[cold]
    pub fn make_searchable(&mut self) {
        let packed = std::mem::take(&mut self.slots);
        let mut table = Table::with_capacity(self.len * 4 / 3 + 1);
        table.max_slots = self.max_slots;
        for s in &packed {
            table.insert_new(s.key(), s.count());
        }
        *self = table;
    }

    /// Inserts a key known to be absent, without checking the load.
    fn insert_new(&mut self, key: S::Key, count: u64) {
        let mask = self.slots.len() - 1;
        let mut i = S::hash(&key) as usize & mask;
        while !self.slots[i].is_empty() {
            i = (i + 1) & mask;
        }
        self.slots[i] = S::new(key, count);
        self.len += 1;
    }

    /// The entries, in slot order.
    pub fn entries(&self) -> impl Iterator<Item = &S> + '_ {
        self.slots.iter().filter(|s| !s.is_empty())
    }

    pub fn iter(&self) -> impl Iterator<Item = (S::Key, u64)> + '_ {
        self.entries().map(|s| (s.key(), s.count()))
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut u64> + '_ {
        self.slots.iter_mut().filter(|s| !s.is_empty()).map(|s| s.count_mut())
    }

    pub fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let kept = self.iter().filter(|&(_, v)| keep(v)).count();
        let mut out = Table::with_capacity(kept * 4 / 3 + 1);
        for (k, v) in self.iter().filter(|&(_, v)| keep(v)) {
            out.insert_new(k, v);
        }
        *self = out;
    }

    /// Adds every entry of `other`, prefetching a few entries ahead.
    pub fn absorb(&mut self, other: &Table<S>) {
        if self.len + other.len > self.limit {
            self.grow(((self.len + other.len) * 4 / 3 + 1).next_power_of_two());
        }
        let mut batch = Batch::on_table(self);
        for (k, v) in other.iter() {
            batch.push(k, v);
        }
    }

    /// Its size as `growth_bytes` reads it: entries, entries before it
    /// grows, slots.
    pub fn shape(&self) -> [usize; 3] {
        [self.len, if self.packed { 0 } else { self.limit }, self.slots.len()]
    }

    /// The table's memory in bytes.
    pub fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<S>()
    }

    /// Caps the table's growth at `bytes` (see `max_slots`; with room for
    /// the one growth step, which holds the old and the new table).
    pub fn cap_bytes(&mut self, bytes: usize) {
        let most = (bytes / std::mem::size_of::<S>() * 2 / 3).max(MIN_CAPACITY);
        self.max_slots = 1usize << most.ilog2();
        if self.len == 0 && self.slots.len() > self.max_slots {
            // An emptied table (flushed or spilled) under a smaller cap.
            *self = Table { max_slots: self.max_slots, ..Table::with_capacity(0) };
        }
    }

    /// A packed table of exactly these entries.
    pub fn of_entries(slots: Vec<S>) -> Self {
        Table { len: slots.len(), slots, limit: 0, max_slots: usize::MAX, full: false, packed: true }
    }
}

/// The most that adding `new` keys it does not hold yet can raise the
/// memory of a table of this `shape` (see `Table::shape`) with slots of
/// `slot` bytes: as `Table::add` grows it, it doubles until the entries
/// fit 3/4 of it, and its last step holds the old slots beside the new.
/// Returns (the growth that stays, the old slots of the last step).
pub(super) fn growth_bytes([len, limit, slots]: [usize; 3], new: usize, slot: usize) -> (u64, u64) {
    if len + new <= limit {
        return (0, 0);
    }
    let mut cap = slots.max(MIN_CAPACITY / 2);
    while cap / 4 * 3 < len + new {
        cap *= 2;
    }
    (((cap - slots.min(cap)) * slot) as u64, (cap / 2 * slot) as u64)
}

/// How many pre-tokens are in flight between hashing (and prefetching
/// their slot) and adding them.
const BATCH_AHEAD: usize = 16;

/// A short pipeline in front of a `Table`: each key's slot is prefetched
/// when the key arrives and the key is added `BATCH_AHEAD` keys later, when
/// the line is (usually) in cache. Turns one cache miss per pre-token into
/// overlapped misses. Adds the keys still in flight on drop.
pub(super) struct Batch<'a, S: Entry> {
    table: &'a mut Table<S>,
    keys: [S::Key; BATCH_AHEAD],
    hashes: [u64; BATCH_AHEAD],
    ns: [u64; BATCH_AHEAD],
    /// Index of the oldest pending key; `len` keys are pending.
    head: usize,
    len: usize,
}

impl<'a, S: Entry> Batch<'a, S> {
    pub fn on_table(table: &'a mut Table<S>) -> Self {
        if table.packed {
            table.make_searchable();
        }
        Batch {
            table,
            keys: [S::Key::default(); BATCH_AHEAD],
            hashes: [0; BATCH_AHEAD],
            ns: [0; BATCH_AHEAD],
            head: 0,
            len: 0,
        }
    }

    #[inline(always)]
    pub fn push(&mut self, key: S::Key, n: u64) {
        let h = S::hash(&key);
        self.table.prefetch(h);
        let slot = if self.len == BATCH_AHEAD {
            let old = self.head;
            self.table.add(self.keys[old], self.hashes[old], self.ns[old]);
            self.head = (self.head + 1) % BATCH_AHEAD;
            old
        } else {
            self.len += 1;
            (self.head + self.len - 1) % BATCH_AHEAD
        };
        self.keys[slot] = key;
        self.hashes[slot] = h;
        self.ns[slot] = n;
    }

    fn flush(&mut self) {
        while self.len > 0 {
            let i = self.head;
            self.table.add(self.keys[i], self.hashes[i], self.ns[i]);
            self.head = (self.head + 1) % BATCH_AHEAD;
            self.len -= 1;
        }
    }
}

impl<S: Entry> Drop for Batch<'_, S> {
    fn drop(&mut self) {
        self.flush();
    }
}
