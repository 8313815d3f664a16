//! What a caller sees of a run: where progress goes (text lines or
//! events, the one schema of both), what the engine reports to and polls
//! for a stop (Ctrl-C), a batch's pacing, and the shards of a distributed
//! run reported by the caller.

pub use crate::event::{Event, EventSink};
pub use crate::observe::{BatchPacer, Observer, ShardProgress};
pub use crate::progress::{ProgressFormat, ProgressPrinter, TextSink};
