//! Counting word types: texts -> special-token split -> pre-tokens -> counts.
//!
//! Counting is the embarrassingly parallel half of training. The caller feeds
//! chunks (from files or from Python); `threads` workers each count into a
//! private hash map, and the maps are summed at the end. Sums commute, so the
//! counts (and hence the trained model) never depend on the thread count.
//!
//! Performance notes:
//! * Keys are the raw bytes of each pre-token, inline up to 31 bytes (see
//!   `WordCounts`); longer ones are probed with a borrowed slice
//!   (`entry_ref`), so only the first occurrence of a type allocates.
//! * Inline keys live in our own open-addressing tables (`table::Table`) so
//!   that each key's slot can be prefetched 16 pre-tokens before it is
//!   updated (`table::Batch`): on multi-1m the table is far larger than the
//!   caches and a probe was a cache miss per pre-token. Their memory asks
//!   for huge pages (`memory/mem.rs`).
//! * Keys over 31 bytes (0.4% of multi-1m's pre-tokens): hashbrown with
//!   foldhash (fast on byte strings, fixed seed, so runs are reproducible).
//! * Each counting thread owns its regex cache (`Scratch`).
//! * With `threads == 1` the caller's thread counts inline; no channel.
//!
//! The parts, top-down:
//! * `parallel`: `count_parallel`, counting on threads;
//! * `counter`: `Counter`, the pre-tokens of one text, chunk or record;
//! * `partitioned`: the shared partitions that threads flush into;
//! * `spilling`: keeping within a memory budget (sorted runs on disk);
//! * `wire`: the counts' binary form, between processes;
//! * `output`: a counting's result, a table or spilled runs (written in the
//!   binary form without building the table);
//! * `counts`: the table `WordCounts`;
//! * `table`: the inline-key tables and their prefetching batch.

mod counter;
mod counts;
mod output;
mod parallel;
mod partitioned;
mod spilling;
mod table;
mod wire;

pub use crate::count_stats::CountStats;
pub use counter::{Counter, Scratch};
pub use counts::{Adder, CountMemory, WordCounts};
pub use output::{CountOutput, SpilledCounts};
pub use parallel::{count_parallel, count_parallel_output};
pub use spilling::{ChooseMin, CountLimits};
pub use table::short_key_bytes;
use spilling::SpillDirs;

#[cfg(test)]
mod tests;
