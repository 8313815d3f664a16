//! Counting word types: pre-tokenize and count, one thread (GPT-2 and the
//! whitespace pre-tokenizer).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

mod common;

fn counting(c: &mut Criterion) {
    let text = common::corpus(8);
    let mut group = c.benchmark_group("count");
    group.throughput(Throughput::Bytes(text.len() as u64));
    let gpt2 = common::config(1000);
    group.bench_function("gpt2", |b| b.iter(|| black_box(common::count(&text, &gpt2).len())));
    let mut ws = common::config(1000);
    ws.pretokenizer = bpeforge_core::pretok::PreTokenizerSpec::WHITESPACE;
    group.bench_function("whitespace", |b| b.iter(|| black_box(common::count(&text, &ws).len())));
    group.finish();
}

criterion_group!(benches, counting);
criterion_main!(benches);
