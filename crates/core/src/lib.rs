//! bpeforge-core: byte-pair-encoding training and encoding, without Python.
//!
//! * [`train`]: counting word types in parallel and the O(M log N) merge loop
//!   ([`merge`]), producing a [`model::Model`].
//! * [`encode`]: exact rank-based encoding, batch encoding on threads, and
//!   decoding through a contiguous table.
//! * [`pretok`]: the pre-tokenizers (GPT-2, cl100k, o200k, whitespace, none,
//!   custom regex) and the special-token splitter.
//!
//! The contract that training and encoding follow is written out in
//! `docs/SEMANTICS.md`; the Python tests check it against a naive trainer.

pub mod balance;
pub mod count;
pub mod encode;
pub mod encode_file;
pub mod error;
pub mod input;
pub mod merge;
mod mem;
pub mod model;
pub mod pretok;
pub mod progress;
mod scan;
pub mod train;

pub use error::{Error, ErrorKind, Result};
