//! The core's front for programs built on it (the Python bindings): one
//! typed request per job (what to train on, what to count, what to
//! encode), the engine's lists, and the groups of types a caller
//! implements or reads (texts it feeds, progress, batches delivered to its
//! thread, threads and memory). `api` re-exports from here; each request
//! assembles its pipeline from the modules below, so a caller converts its
//! values, chooses a request and runs it, and assembles nothing itself.

pub mod delivery;
mod encode;
pub mod feed;
mod lists;
pub mod machine;
pub mod progress;
mod train;

pub use encode::EncodeFrom;
pub use lists::{Lists, LISTS};
pub use train::{count_to_file, language_table, CountOf, Fed, Part, TrainOn};
