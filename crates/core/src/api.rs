//! The core as programs built on it see it: the Python bindings
//! (`crates/python`) use this module and nothing else of the crate, as
//! tiktoken's `py.rs` uses `CoreBPE`. Each name is re-exported from the one
//! module that defines it, or is one of the `facade`'s requests or groups
//! (a group is one module path: `progress::Event`); `tests/module_map.rs`
//! checks that the bindings name nothing else, and
//! `tests/test_engine_api_size.py` that the names stay at most 30. The
//! pipelines are the core's (the facade takes one typed request per job):
//! the bindings convert types, release the GIL and map errors.

// Errors: one type, whose kinds map to Python's exception classes.
pub use crate::error::{Error, ErrorKind};

// Training: the checked options; what a run trains on (files, a counts
// file, texts a caller feeds, a distributed count's sum) and what one part
// of a distributed count counts; the driver's running sum of the parts.
pub use crate::facade::{count_to_file, language_table, CountOf, Fed, Part, TrainOn};
pub use crate::sum::CountSum;
pub use crate::train::{TrainOptions, ValidConfig};

// Models and encoding: texts, batches on threads delivered in order, ids
// files from text files or fed chunks.
pub use crate::encode::file::IdFormat;
pub use crate::encode::{Cache, Encoder, Specials};
pub use crate::facade::EncodeFrom;
pub use crate::model::Model;

// The groups of types a caller implements or reads: texts it feeds,
// progress (text or events) and Ctrl-C, batches delivered to its thread,
// threads and memory.
pub use crate::facade::{delivery, feed, machine, progress};

// Pre-tokenizers, parity's measure (for the report), merge lists from rank
// tables (for the importers).
pub use crate::balance::parity::{premiums_of, text_units};
pub use crate::pretok::{PreTokenizer, PreTokenizerChoice, PreTokenizerSpec};
pub use crate::ranks::{merge_splits, unreachable_merges};

// The lists the Python package reads from the engine, in one value.
pub use crate::facade::LISTS;
