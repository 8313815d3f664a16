//! A counting's result before it becomes a table: the table itself, or the
//! sorted runs a count that spilled left on disk. A part for a later sum
//! (a Ray task's shard) is written in the wire form straight from the runs,
//! so the task never holds the merged table and its serialized copy at once.

use super::spilling::SpillDirs;
use super::wire::{WireWriter, COUNTS_HEADER_BYTES};
use super::{ChooseMin, CountStats, WordCounts};
use crate::memory::budget::human;
use crate::error::{Error, Result};
use crate::memory::spill::{RunKey, SpillDir};
use std::sync::Arc;

/// What `count_parallel_output` counted: a table, or spilled runs.
pub enum CountOutput {
    Table(WordCounts),
    Runs(SpilledCounts),
}

/// The runs of a count that spilled, with the stats summed apart from them.
pub struct SpilledCounts {
    pub(super) dirs: Arc<SpillDirs>,
    pub(super) stats: CountStats,
    pub(super) superword_stats: Option<CountStats>,
}

impl CountOutput {
    /// The counts as a table (runs merged, types below `choose_min`'s pick
    /// left out).
    pub fn into_table(self, choose_min: Option<&ChooseMin>) -> Result<WordCounts> {
        match self {
            CountOutput::Table(t) => Ok(t),
            CountOutput::Runs(r) => WordCounts::from_runs(&r.dirs, r.stats, r.superword_stats, choose_min),
        }
    }

    /// The stats of the texts counted (for runs, summed apart from them).
    pub fn stats_mut(&mut self) -> &mut CountStats {
        match self {
            CountOutput::Table(t) => &mut t.stats,
            CountOutput::Runs(r) => &mut r.stats,
        }
    }

    /// The length of the wire form (`WordCounts::to_bytes`): for runs, one
    /// merge pass over them.
    pub fn wire_len(&self) -> Result<usize> {
        match self {
            CountOutput::Table(t) => Ok(table_wire_len(t)),
            CountOutput::Runs(r) => {
                let mut len = runs_wire_len(&r.dirs.main)?.1;
                if let (Some(d), Some(_)) = (r.dirs.superword.as_ref(), r.superword_stats.as_ref()) {
                    len += runs_wire_len(d)?.1;
                }
                Ok(len)
            }
        }
    }

    /// `wire_len`, checked against a memory `budget` before anything is
    /// allocated for it: `copies` of the output (a Ray task's returned
    /// bytes are copied into the object store while they are still held)
    /// must fit in what the process leaves free (with a table, also in what
    /// writing it frees behind the cursor).
    pub fn wire_len_within(&self, budget: u64, copies: u64) -> Result<usize> {
        let len = self.wire_len()?;
        let held = crate::memory::budget::process_rss();
        let freed = match self {
            CountOutput::Table(t) => t.table_bytes(),
            CountOutput::Runs(_) => 0,
        };
        if (len as u64).saturating_mul(copies) > budget.saturating_sub(held).saturating_add(freed) {
            return Err(Error::training(format!(
                "max_memory: this counting task's counts take {} in their serialized form, {} with the copies \
                 held while they are returned ({copies}), more than the {} its \
                 share of max_memory ({}) leaves free (the process already holds {}); raise max_memory, or give \
                 each task more CPUs (num_cpus_per_task) or less text (shard_bytes)",
                human(len as u64),
                human((len as u64).saturating_mul(copies)),
                human(budget.saturating_sub(held)),
                human(budget),
                human(held),
            )));
        }
        Ok(len)
    }

    /// Writes the wire form into `out`, which is `wire_len()` bytes long,
    /// freeing a table behind the cursor; the same bytes as `to_bytes` for
    /// a table, and for runs the same counts (in key order; types whose
    /// keys the runs hold in both forms may come twice, which a sum adds).
    pub fn write_wire(self, out: &mut [u8]) -> Result<()> {
        let mut w = WireWriter::new(out);
        match self {
            CountOutput::Table(mut t) => {
                let units = t.superword.take();
                w.header(&t.stats, t.len() as u64)?;
                t.drain_each(|k, v| w.entry(k, v));
                if let Some(u) = units {
                    w.header(&u.stats, u.len() as u64)?;
                    u.drain_each(|k, v| w.entry(k, v));
                }
            }
            CountOutput::Runs(r) => {
                write_runs(&mut w, &r.dirs.main, &r.stats)?;
                if let (Some(d), Some(st)) = (r.dirs.superword.as_ref(), r.superword_stats.as_ref()) {
                    write_runs(&mut w, d, st)?;
                }
            }
        }
        w.finish()
    }
}

fn table_wire_len(t: &WordCounts) -> usize {
    let mut len = COUNTS_HEADER_BYTES;
    t.for_each(|k, _| len += 12 + k.len());
    len + t.superword.as_deref().map_or(0, table_wire_len)
}

fn run_key_bytes<'a>(k: &RunKey<'a>, short: &'a mut [u8; 16]) -> &'a [u8] {
    match *k {
        RunKey::Short(k) => {
            *short = k.to_le_bytes();
            &short[..short[15] as usize]
        }
        RunKey::Long(k) => k,
    }
}

/// Entries and wire bytes of the merged runs of `dir`.
fn runs_wire_len(dir: &SpillDir) -> Result<(u64, usize)> {
    let (mut n, mut len) = (0u64, COUNTS_HEADER_BYTES);
    dir.merge(|k, _| {
        let mut b = [0u8; 16];
        n += 1;
        len += 12 + run_key_bytes(&k, &mut b).len();
    })?;
    Ok((n, len))
}

fn write_runs(w: &mut WireWriter<'_>, dir: &SpillDir, stats: &CountStats) -> Result<()> {
    let (n, _) = runs_wire_len(dir)?;
    w.header(stats, n)?;
    dir.merge(|k, v| {
        let mut b = [0u8; 16];
        w.entry(run_key_bytes(&k, &mut b), v);
    })
}
