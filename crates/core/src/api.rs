//! The core as programs built on it see it: the Python bindings
//! (`crates/python`) use this module and nothing else of the crate, as
//! tiktoken's `py.rs` uses `CoreBPE`. Each name is re-exported from the one
//! module that defines it; `tests/module_map.rs` checks that the bindings
//! name nothing else.

// Errors: one type, whose kinds map to Python's exception classes.
pub use crate::error::{Error, ErrorKind, Result};

// Training: from files, or from chunks fed by the caller (Python iterators,
// Arrow data) through the same steps as files, and from the summed counts of
// a distributed run.
pub use crate::memory::budget::Dropped;
pub use crate::pipeline::{count_fed, count_to_file, language_table, train_counted, train_counts_file, train_files, train_on_counts, CountPacer, CountScope, Counted};
pub use crate::train::counts_file::CountsHeader;
pub use crate::train::stats::ShardedCount;
pub use crate::train::checkpoint::RESULT_OPTIONS;
pub use crate::train::{count_words, train_from_counts, LangSource, TrainConfig, TrainOptions, ValidConfig};

// Language balancing's table and weight scale, for distributed runs.
pub use crate::balance::{LanguageTable, MAX_LANGUAGE_WEIGHT, WEIGHT_SCALE};
// Parity balancing's measure (text units, premiums), for the report.
pub use crate::balance::parity::{premiums_of, text_units};

// Distributed counting: one shard's counts, and their sum.
pub use crate::count::{CountOutput, CountStats, WordCounts};
pub use crate::shard::{count_shard_output, Shard};

// Reading inputs.
pub use crate::input::fields::{FieldSpec, Fields, OnBadRecord};
pub use crate::input::{read_chunks, read_range_chunks, total_size, Chunk, Layout, COMPRESSIONS};

// Models, pre-tokenizers, and merge lists from rank tables.
pub use crate::model::Model;
pub use crate::pretok::{PreTokenizer, PreTokenizerChoice, PreTokenizerSpec, DEFAULT_PRETOKENIZER, PRESETS};
pub use crate::ranks::{merge_splits, unreachable_merges};

// Encoding: texts, batches on threads fed in order, files and Arrow data.
pub use crate::encode::file::{encode_chunks, encode_file, IdFormat};
pub use crate::encode::{Block, BlockIds, Cache, Encoder, PackedIds, Specials, MIN_CACHE_BYTES};
pub use crate::ordered::{Deliver, Host};

// What a caller sees: progress, Ctrl-C, and the progress printer.
pub use crate::clock::{PhaseTime, Stopwatch};
pub use crate::observe::{BalanceRound, CountProgress, EncodeStats, FileProgress, MergeProgress, Observer, ShardProgress, StepProgress};
pub use crate::progress::{eta_seconds, MergeEta, ProgressFormat, ProgressPrinter, TextSink};

// Threads, memory and cache hints.
pub use crate::memory::alloc::{release_free_memory, SplitAlloc};
pub use crate::util::{check_threads, default_threads, prefetch, prefetch_ptr, threads_or_default};
