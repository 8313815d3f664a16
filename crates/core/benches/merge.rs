//! The merge loop alone (pair index + loop) on a prepared word table, and
//! the whole driver from counts (word table + merges + model).

use bpeforge_core::observe::Silent;
use bpeforge_core::train::merge::{learn_merges, Flow, MergeParams, WordTable};
use bpeforge_core::train::{train_from_counts, TokenLimits};
use bpeforge_core::util::{new_map, Map};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;

mod common;

const MERGES: usize = 2000;

/// Byte tokens, their ids and the word table of `counts` (GPT-2 pieces).
fn setup(counts: &bpeforge_core::count::WordCounts) -> (WordTable, Vec<Vec<u8>>, Map<Vec<u8>, u32>) {
    let tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut ids = new_map();
    for (i, t) in tokens.iter().enumerate() {
        ids.insert(t.clone(), i as u32);
    }
    let mut table = WordTable::new();
    counts.for_each(|piece, n| table.push(piece.iter().map(|&b| b as u32), n).expect("word table"));
    (table, tokens, ids)
}

fn merging(c: &mut Criterion) {
    let text = common::corpus(4);
    let config = common::config(256 + MERGES);
    let counts = common::count(&text, &config);
    let params = MergeParams {
        max_merges: MERGES,
        min_frequency: 2,
        max_token_length: None,
        unk: None,
        limits: TokenLimits::default(),
        threads: 1,
    };
    let mut group = c.benchmark_group("merge");
    group.bench_function("learn_merges", |b| {
        b.iter_batched(
            || setup(&counts),
            |(table, mut tokens, mut ids)| {
                let learned = learn_merges(table, &mut tokens, &mut ids, &params, &mut |_, _| Ok(Flow::Continue));
                black_box(learned.expect("merges").merges.len())
            },
            BatchSize::LargeInput,
        )
    });
    let bytes = counts.to_bytes();
    group.bench_function("train_from_counts", |b| {
        b.iter_batched(
            || bpeforge_core::count::WordCounts::from_bytes(&bytes).expect("counts"),
            |counts| black_box(train_from_counts(counts, &config.clone().validate().expect("settings"), &mut Silent, serde_json::json!([]), Default::default()).expect("model").merges.len()),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, merging);
criterion_main!(benches);
