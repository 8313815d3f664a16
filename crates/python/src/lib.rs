//! PyO3 bindings of bpeforge: the `_native` module's registration. Each
//! entry point lives in the module of its job (training, encoding, Arrow
//! data, distributed counting, progress, errors); none holds an algorithm,
//! they convert types, release the GIL and map errors (see `bpeforge-core`).

use pyo3::prelude::*;

mod args;
mod arrow;
mod balance;
mod errors;
mod ints;
mod lists;
mod pretokenize;
mod progress;
mod ranks;
mod settings;
mod shards;
mod texts;
mod tokenizer;
mod tokenizer_base;
mod training;

/// mimalloc for the engine's small blocks, the system allocator for its
/// large tables (see `bpeforge_core::memory::alloc`). Only Rust's own allocations
/// go through it; Python objects keep Python's allocator.
#[global_allocator]
static ALLOC: bpeforge_core::api::machine::SplitAlloc = bpeforge_core::api::machine::SplitAlloc;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::bind_classes(m.py())?;
    m.add_function(wrap_pyfunction!(training::train_files, m)?)?;
    m.add_function(wrap_pyfunction!(training::train_iterator, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::train_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(ranks::merge_splits, m)?)?;
    m.add_function(wrap_pyfunction!(ranks::unreachable_merges, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::count_arrow_shard, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::encode_arrow_file, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::encode_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(training::count_files, m)?)?;
    m.add_function(wrap_pyfunction!(training::count_to_file, m)?)?;
    m.add_function(wrap_pyfunction!(training::train_counts_file, m)?)?;
    m.add_function(wrap_pyfunction!(shards::language_table, m)?)?;
    m.add_function(wrap_pyfunction!(shards::count_shard, m)?)?;
    m.add_function(wrap_pyfunction!(shards::train_count_sum, m)?)?;
    m.add_class::<shards::CountSum>()?;
    m.add_class::<tokenizer_base::TokenizerBase>()?;
    m.add_function(wrap_pyfunction!(pretokenize::pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize::_pretokenize_reference, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize::_pretokenize_count, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize::preset_name, m)?)?;
    m.add_function(wrap_pyfunction!(training::train_option_names, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize::script_of, m)?)?;
    m.add_function(wrap_pyfunction!(balance::text_units, m)?)?;
    m.add_function(wrap_pyfunction!(balance::premiums, m)?)?;
    m.add_class::<tokenizer::NativeTokenizer>()?;
    m.add_class::<settings::TrainSettings>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let lists = &bpeforge_core::api::LISTS;
    m.add("DEFAULT_PRETOKENIZER", lists.default_pretokenizer)?;
    m.add("RESULT_OPTIONS", pyo3::types::PyTuple::new(m.py(), lists.result_options)?)?;
    m.add("PRESETS", pretokenize::presets(m.py())?)?;
    m.add("PROGRESS_FORMATS", pyo3::types::PyTuple::new(m.py(), lists.progress_formats)?)?;
    m.add_class::<progress::ShardReporter>()?;
    m.add("COMPRESSIONS", pyo3::types::PyTuple::new(m.py(), lists.compressions)?)?;
    Ok(())
}
