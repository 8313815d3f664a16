//! The core as programs built on it see it: the Python bindings
//! (`crates/python`) use this module and nothing else of the crate, as
//! tiktoken's `py.rs` uses `CoreBPE`. Each name is re-exported from the one
//! module that defines it; `tests/module_map.rs` checks that the bindings
//! name nothing else. The pipelines are the core's: the bindings convert
//! types, release the GIL and map errors.

// Errors: one type, whose kinds map to Python's exception classes.
pub use crate::error::{Error, ErrorKind, Result};

// Training: the checked options; from files, a counts file, or chunks of
// texts the caller feeds (`Source`: a Python iterator, Arrow data); one
// part of a distributed count, and the driver's sum of the parts.
pub use crate::input::{Chunk, Layout};
pub use crate::pipeline::{count_part, count_source, count_to_file, fed_languages, language_table, train_counted, train_counts_file, train_files, CountScope};
pub use crate::count::CountOutput;
pub use crate::shard::{count_shard_output, Shard};
pub use crate::source::Source;
pub use crate::sum::{summed_languages, CountSum};
pub use crate::train::{TrainOptions, ValidConfig};

// Models and encoding: texts, batches on threads fed in order, files and
// fed chunks.
pub use crate::encode::file::{encode_file, encode_source, IdFormat};
pub use crate::encode::{Block, BlockIds, Cache, Encoder, PackedIds, Specials};
pub use crate::model::Model;
pub use crate::ordered::{Deliver, Host};

// What a caller sees: where progress goes (text or events), and Ctrl-C.
pub use crate::event::{Event, EventSink};
pub use crate::observe::{BatchPacer, Observer, ShardProgress};
pub use crate::progress::{ProgressFormat, ProgressPrinter, TextSink};

// Pre-tokenizers, parity's measure (for the report), merge lists from rank
// tables (for the importers).
pub use crate::balance::parity::{premiums_of, text_units};
pub use crate::pretok::{PreTokenizer, PreTokenizerChoice, PreTokenizerSpec};
pub use crate::ranks::{merge_splits, unreachable_merges};

// The lists the Python package reads from the engine.
pub use crate::encode::MIN_CACHE_BYTES;
pub use crate::input::COMPRESSIONS;
pub use crate::pretok::{DEFAULT_PRETOKENIZER, PRESETS};
pub use crate::train::checkpoint::RESULT_OPTIONS;

// Threads, memory and cache hints.
pub use crate::memory::alloc::{release_free_memory, SplitAlloc};
pub use crate::util::{check_threads, prefetch, prefetch_ptr};
