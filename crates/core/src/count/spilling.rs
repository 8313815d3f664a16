//! Keeping counting within a memory budget: table sizes, spilling to sorted
//! runs on disk, and merging the runs back with a low peak.

use super::table::{keyed, mid_key_bytes, Batch, Keyed, MidTable, ShortTable};
use super::WordCounts;
use crate::memory::budget::{CountBudget, CountHistogram, Dropped};
use crate::count_stats::CountStats;
use crate::error::Result;
use crate::memory::spill::{RunKey, SpillDir};

/// Keeping counting within a memory budget: table sizes, spilling to
/// sorted runs, merging runs and thread tables with a low peak.
impl WordCounts {
    /// The table's memory, cheaply (long keys at an average allocation).
    pub fn table_bytes(&self) -> u64 {
        let long = self.long.capacity() * (16 + 8 + 1) + self.long.len() * 40;
        (self.short.bytes() + self.mid.bytes() + long) as u64 + self.superword.as_ref().map_or(0, |s| s.table_bytes())
    }

    /// Caps the inline tables' growth at `bytes` (with room for the one
    /// growth step, which holds the old and the new table): the short table
    /// alone may take it all, the mid table (a sixth of the types or fewer
    /// in the languages we measured) half of it.
    pub(super) fn cap_table(&mut self, bytes: u64) {
        self.short.cap_bytes(bytes as usize);
        self.mid.cap_bytes(bytes as usize / 2);
        if let Some(s) = self.superword.as_deref_mut() {
            s.cap_table(bytes);
        }
    }

    pub(super) fn over(&self, bytes: u64) -> bool {
        let full = |c: &WordCounts| c.short.full || c.mid.full;
        full(self) || self.superword.as_deref().is_some_and(full) || self.table_bytes() > bytes
    }

    /// Writes the table to `dirs` as a sorted run and empties it (its stats
    /// stay: they are summed apart from the runs).
    pub(super) fn spill(&mut self, dirs: &SpillDirs) -> Result<()> {
        if let (Some(s), Some(d)) = (self.superword.as_deref_mut(), dirs.superword.as_ref()) {
            s.spill_to(d)?;
        }
        self.spill_to(&dirs.main)
    }

    pub(super) fn spill_to(&mut self, dir: &SpillDir) -> Result<()> {
        let mut short = std::mem::replace(&mut self.short, ShortTable::with_capacity(0));
        let (max_slots, cap) = (short.max_slots, short.slots.len());
        let mut dense = short.into_dense();
        dense.sort_unstable_by_key(|s| s.key);
        let mut longer = self.longer_entries();
        longer.sort_unstable_by(|a, b| a.0.cmp(b.0));
        dir.write_run(dense.iter().map(|s| (s.key, s.count)), longer.into_iter())?;
        drop(dense);
        self.long.clear();
        // Fresh tables of the same sizes (their pages are faulted in again
        // as they fill, and the old ones' are freed now).
        short = ShortTable::with_capacity(cap);
        short.max_slots = max_slots;
        self.short = short;
        let mut mid = MidTable::with_capacity(self.mid.slots.len());
        mid.max_slots = self.mid.max_slots;
        self.mid = mid;
        Ok(())
    }

    /// Calls `f(bytes, count)` for every word type, consuming the table and
    /// freeing its memory behind the cursor: the word table being built
    /// from it grows as the counts shrink.
    pub fn drain_each(self, mut f: impl FnMut(&[u8], u64)) {
        let WordCounts { short, mid, long, .. } = self;
        let slots = short.slots;
        const BLOCK: usize = 1 << 16;
        for start in (0..slots.len()).step_by(BLOCK) {
            let end = (start + BLOCK).min(slots.len());
            for s in &slots[start..end] {
                if s.key != 0 {
                    let b = s.key.to_le_bytes();
                    f(&b[..b[15] as usize], s.count);
                }
            }
            crate::memory::mem::release(&slots, start, end);
        }
        drop(slots);
        for s in mid.entries() {
            f(mid_key_bytes(&s.key), s.count);
        }
        drop(mid);
        for (k, v) in long {
            f(&k, v);
        }
    }

    /// Word types by count, for the budget's estimate.
    pub fn histogram(&self) -> CountHistogram {
        let mut h = CountHistogram::new();
        for (k, v) in self.short.iter() {
            h.add(k.to_le_bytes()[15] as usize, v);
        }
        self.for_each_longer(|k, v| h.add(k.len(), v));
        h
    }

    /// The sum of the runs in `dirs` (and of `stats`): types counted fewer
    /// than the count `choose_min` picks from the runs' histogram are left
    /// out (and recorded in `memory.dropped`); SuperBPE's units likewise,
    /// in the room the word types' table leaves.
    pub(super) fn from_runs(dirs: &SpillDirs, stats: CountStats, superword_stats: Option<CountStats>, choose_min: Option<&ChooseMin>) -> Result<WordCounts> {
        let mut out = WordCounts::new();
        out.add_fitted_runs(&dirs.main, choose_min, 0)?;
        out.stats = stats;
        out.memory.spill_runs = dirs.main.run_count();
        out.memory.spill_bytes = dirs.main.bytes_written();
        if let (Some(d), Some(st)) = (dirs.superword.as_ref(), superword_stats) {
            let mut s = WordCounts::new();
            s.add_fitted_runs(d, choose_min, out.table_bytes())?;
            s.stats = st;
            s.memory.spill_runs = d.run_count();
            s.memory.spill_bytes = d.bytes_written();
            out.superword = Some(Box::new(s));
        }
        Ok(out)
    }

    /// Adds the merged runs of `dir`, the types counted at least as often as
    /// `choose_min` picks from their histogram (`held`: the bytes of tables
    /// already built beside this one), recording what that left out.
    fn add_fitted_runs(&mut self, dir: &SpillDir, choose_min: Option<&ChooseMin>, held: u64) -> Result<()> {
        let Some(choose) = choose_min else {
            return self.add_runs(dir, 1);
        };
        let mut h = CountHistogram::new();
        dir.merge(|k, v| h.add(run_key_len(k), v))?;
        let (chosen, dropped) = choose(&h, held)?;
        let kept = h.kept(chosen).0;
        self.short = ShortTable::with_capacity(kept as usize * 4 / 3 + 1);
        self.memory.dropped = dropped;
        self.memory.types_left_out = h.kept(1).0 - kept;
        self.add_runs(dir, chosen)
    }

    /// Adds the merged runs of `dir`, the types counted at least `min` times.
    pub(super) fn add_runs(&mut self, dir: &SpillDir, min: u64) -> Result<()> {
        let WordCounts { short, mid, long, .. } = self;
        let (mut short, mut mid) = (Batch::on_table(short), Batch::on_table(mid));
        dir.merge(|k, v| match k {
            _ if v < min => {}
            RunKey::Short(k) => short.push(k, v),
            RunKey::Long(k) => match keyed(k) {
                Keyed::Short(k) => short.push(k, v),
                Keyed::Mid(k) => mid.push(k, v),
                Keyed::Long(k) => {
                    long.insert(k.into(), v);
                }
            },
        })
    }
}

fn run_key_len(k: RunKey) -> usize {
    match k {
        RunKey::Short(k) => k.to_le_bytes()[15] as usize,
        RunKey::Long(k) => k.len(),
    }
}

/// Picks the `min_word_count` for merged runs from their histogram and the
/// bytes of the tables already built beside them (SuperBPE's units come
/// after the word types), and what it drops beyond the one asked for.
pub type ChooseMin<'a> = dyn Fn(&CountHistogram, u64) -> Result<(u64, Option<Dropped>)> + Sync + 'a;

/// The memory limits of one counting (`count_parallel`).
pub struct CountLimits<'a> {
    pub budget: CountBudget,
    /// Final counts (not a part for a later sum): merged runs may drop the
    /// rarest types to fit, as this decides.
    pub choose_min: Option<&'a ChooseMin<'a>>,
}

/// Where the runs of a counting go: the word types and SuperBPE's units.
pub(super) struct SpillDirs {
    pub(super) main: SpillDir,
    pub(super) superword: Option<SpillDir>,
}
