//! bpeforge-core: byte-pair-encoding training and encoding, without Python.
//!
//! The module map, top-down. A module uses only modules on the bullets
//! below its own, never one on its own bullet or above
//! (`tests/module_map.rs` checks every `crate::` path against this list,
//! and that submodules use each other without a circle):
//!
//! * [`api`]: the core as programs built on it (the Python bindings) see
//!   it, re-exported from the modules below.
//! * [`facade`]: one typed request per job (what to train on, what to count,
//!   what to encode), the engine's lists, and the groups of types a caller
//!   implements or reads; each request assembles its pipeline below.
//! * [`shard`], [`sum`]: one shard of a distributed count (a Ray task),
//!   counted exactly as the pipeline counts those texts; the driver's sum
//!   of the shards' tables, trained on as the pipeline trains.
//! * [`pipeline`]: training from files end to end ([`train_files`]): language
//!   tags, counting, then the plain driver or a balancing method.
//! * [`balance`]: language balancing (temperature weights, parity rounds);
//!   calls the driver.
//! * [`train`]: the options ([`train::TrainOptions`], [`train::TrainConfig`]),
//!   counting for training, the driver as named steps, the word table, the
//!   merge loop ([`train::merge`]), extending a model, SuperBPE, and the
//!   typed record that becomes a model's metadata.
//! * [`encode`], [`progress`], [`steps`]: exact encoding, batches on threads,
//!   BPE-dropout, decoding, and streaming files (or a [`source`]) into ids;
//!   where progress goes (human lines, JSON lines, events to a callback);
//!   the merge phase's setup steps, with their progress.
//! * [`model`], [`count`], [`event`], [`source`]: the model file (loading
//!   checks every field); counting word types; progress as events, the one
//!   schema of the JSON lines and the Python callback; texts fed by the
//!   caller, a chunk at a time.
//! * [`normalize`], [`observe`]: SentencePiece's normalizers; what a caller
//!   sees (progress reports, Ctrl-C).
//! * [`memory`], [`input`], [`ordered`], [`pretok`]: the allocator,
//!   huge-page arrays, sorted runs of counts on disk and the memory budget;
//!   reading (compressed) inputs and the texts inside structured lines
//!   ([`input::fields`]); work on threads fed and drained in order by the
//!   calling thread; the pre-tokenizers and the special-token splitter,
//!   with the table of presets.
//! * [`atomic`], [`util`], `scan`: atomic output files; the hash map,
//!   thread counts and joins; the presets' hand-written scanners.
//! * [`clock`], [`count_stats`], [`error`], [`ranks`]: phase times; what
//!   counting saw; the one error type; merge lists from rank tables.
//!
//! The contract that training and encoding follow is written out in
//! `docs/SEMANTICS.md`; the Python tests check it against a naive trainer.

pub mod api;
pub mod atomic;
pub mod balance;
pub mod clock;
pub mod count;
pub mod count_stats;
pub mod encode;
pub mod error;
pub mod event;
pub mod facade;
pub mod input;
pub mod memory;
pub mod model;
pub mod normalize;
pub mod observe;
pub mod ordered;
pub mod pipeline;
pub mod pretok;
pub mod progress;
pub mod ranks;
mod scan;
pub mod shard;
pub mod source;
pub mod steps;
pub mod sum;
pub mod train;
pub mod util;

pub use pipeline::train_files;

pub use error::{Error, ErrorKind, Result};
