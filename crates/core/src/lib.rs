//! bpeforge-core: byte-pair-encoding training and encoding, without Python.
//!
//! Read top-down (each module depends only on the ones below it):
//!
//! * [`pipeline`]: training from files end to end ([`train_files`]): language
//!   tags, counting, then the plain driver or a balancing method.
//! * [`balance`]: language balancing (temperature weights, parity rounds);
//!   calls the driver.
//! * [`train`]: the options ([`train::TrainOptions`], [`train::TrainConfig`]),
//!   counting for training, the driver as named steps, the word table, the
//!   merge loop ([`train::merge`]), extending a model, SuperBPE, and the
//!   typed record that becomes a model's metadata.
//! * [`encode`]: exact encoding, batches on threads, BPE-dropout, decoding,
//!   and streaming files into ids.
//! * [`model`]: the model file (loading checks every field).
//! * [`count`], [`input`], [`pretok`]: counting word types, reading
//!   (compressed) inputs, the pre-tokenizers and the special-token splitter.
//!   (`pretok` is over 600 lines: the presets and their published-regex
//!   equivalence tests belong together.)
//! * [`observe`], [`steps`] and [`progress`]: what a caller sees (progress,
//!   Ctrl-C), the merge phase's setup steps, and the progress printer;
//!   [`util`]: the hash map, thread counts and joins; [`ordered`]: work on
//!   threads fed and drained in order by the calling thread;
//!   [`error`]: the one error type.
//!
//! The contract that training and encoding follow is written out in
//! `docs/SEMANTICS.md`; the Python tests check it against a naive trainer.

pub mod alloc;
pub mod atomic;
pub mod balance;
pub mod budget;
pub mod clock;
pub mod count;
pub mod encode;
pub mod error;
pub mod fields;
pub mod input;
mod mem;
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
pub mod steps;
pub mod spill;
pub mod train;
pub mod util;

pub use pipeline::train_files;

pub use error::{Error, ErrorKind, Result};
