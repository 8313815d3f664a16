//! Token bytes -> id, with the keys kept once, in the encoder's token arena.
//!
//! A `Map<Vec<u8>, u32>` holds its own copy of every token: one allocation
//! per token to build and to free, which was most of the time it took to
//! load (or unpickle) a 200k-token vocabulary. Here the table holds only
//! ids; a lookup hashes the piece and compares it with the arena's bytes.

use super::Arena;
use crate::util::Hasher;
use hashbrown::HashTable;
use std::hash::BuildHasher;

pub(super) struct TokenIndex {
    table: HashTable<u32>,
    hasher: Hasher,
}

impl TokenIndex {
    /// Indexes `ids` (tokens of `arena`); the first of equal byte strings wins.
    pub(super) fn new(arena: &Arena, ids: impl ExactSizeIterator<Item = u32>) -> Self {
        let hasher = Hasher::with_seed(0x70ce_41de_c0de);
        let mut table = HashTable::with_capacity(ids.len());
        for id in ids {
            let bytes = arena.get(id as usize);
            let hash = hasher.hash_one(bytes);
            if let hashbrown::hash_table::Entry::Vacant(slot) =
                table.entry(hash, |&other: &u32| arena.get(other as usize) == bytes, |&other: &u32| {
                    hasher.hash_one(arena.get(other as usize))
                })
            {
                slot.insert(id);
            }
        }
        TokenIndex { table, hasher }
    }

    #[inline]
    pub(super) fn get(&self, arena: &Arena, bytes: &[u8]) -> Option<u32> {
        let hash = self.hasher.hash_one(bytes);
        self.table.find(hash, |&id| arena.get(id as usize) == bytes).copied()
    }
}
