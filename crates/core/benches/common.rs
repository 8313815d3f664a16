//! Shared input for the micro-benchmarks: the golden corpus (400 lines of
//! multilingual text, tests/data/golden), repeated to a useful size.

use bpeforge_core::count::WordCounts;
use bpeforge_core::input::{Chunk, Layout};
use bpeforge_core::model::Scheme;
use bpeforge_core::observe::Silent;
use bpeforge_core::pretok::PreTokenizerSpec;
use bpeforge_core::train::{count_words, TrainConfig};
use std::sync::Arc;

pub fn corpus(repeat: usize) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/golden/bytes_gpt2/corpus.txt");
    let text = std::fs::read(path).expect("the golden corpus");
    text.repeat(repeat)
}

pub fn config(vocab_size: usize) -> TrainConfig {
    TrainConfig::new(vocab_size, Scheme::Bytes, PreTokenizerSpec::GPT2).threads(1)
}

/// Word counts of `text` (one text per line), on one thread.
pub fn count(text: &[u8], config: &TrainConfig) -> WordCounts {
    count_words(&config.clone().validate().expect("settings"), &mut Silent, |sink, _| {
        sink(Chunk { data: text.to_vec(), layout: Layout::Lines, source: Arc::from("bench"), first_line: 1, langs: Vec::new() })
    })
    .expect("counting the bench corpus")
}
