//! A map from token ids to values for the merge loop's per-step count
//! changes: an array indexed by id instead of a hash table.
//!
//! A merge `(a, b) -> r` changes the counts of pairs that share one side
//! with it, `(x, a)`, `(b, y)`, `(x, r)` and `(r, y)`: keyed by the other
//! side alone, each change is one array read and no hashing. On s10 the
//! hash probes of the step maps were about a third of the time spent
//! visiting words.

/// Values by id, in the order their ids were first seen.
pub(super) struct Tally<T> {
    /// `slot[id]`: 1 + the index of `id`'s entry, or 0 for none.
    slot: Vec<u32>,
    entries: Vec<(u32, T)>,
}

impl<T> Tally<T> {
    pub(super) fn new() -> Self {
        Tally { slot: Vec::new(), entries: Vec::new() }
    }

    /// Makes room for ids below `ids` (call before a step; never shrinks).
    pub(super) fn reserve_ids(&mut self, ids: usize) {
        if self.slot.len() < ids {
            self.slot.resize(ids, 0);
        }
    }

    /// The value of `id`, made by `make` if it has none yet.
    #[inline(always)]
    pub(super) fn entry(&mut self, id: u32, make: impl FnOnce() -> T) -> &mut T {
        let slot = &mut self.slot[id as usize];
        if *slot == 0 {
            self.entries.push((id, make()));
            *slot = self.entries.len() as u32;
        }
        let at = *slot as usize - 1;
        &mut self.entries[at].1
    }

    /// The value of `id`, if it has one.
    pub(super) fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        match self.slot.get(id as usize) {
            Some(&s) if s > 0 => Some(&mut self.entries[s as usize - 1].1),
            _ => None,
        }
    }

    /// Every `(id, value)` as a vector, emptying the tally (its slots are kept).
    pub(super) fn take(&mut self) -> Vec<(u32, T)> {
        for &(id, _) in &self.entries {
            self.slot[id as usize] = 0;
        }
        std::mem::take(&mut self.entries)
    }

    /// Every `(id, value)`, emptying the tally (its room is kept).
    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, (u32, T)> {
        for &(id, _) in &self.entries {
            self.slot[id as usize] = 0;
        }
        self.entries.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_sum_per_id_and_drain_resets() {
        let mut t: Tally<u64> = Tally::new();
        t.reserve_ids(10);
        for (id, v) in [(3, 1), (7, 2), (3, 4), (0, 8)] {
            *t.entry(id, || 0) += v;
        }
        assert_eq!(t.get_mut(3).copied(), Some(5));
        assert_eq!(t.get_mut(9), None);
        assert_eq!(t.get_mut(99), None);
        let all: Vec<(u32, u64)> = t.drain().collect();
        assert_eq!(all, vec![(3, 5), (7, 2), (0, 8)]);
        assert_eq!(t.get_mut(3), None);
        *t.entry(7, || 0) += 1;
        assert_eq!(t.drain().collect::<Vec<_>>(), vec![(7, 1)]);
    }
}
