//! Encoding and decoding with a 2,256-token model trained on the corpus:
//! one text with and without the piece cache, a batch on one thread, and
//! decoding the ids back.

use bpeforge_core::encode::{Cache, Encoder, Specials};
use bpeforge_core::observe::Silent;
use bpeforge_core::train::train_from_counts;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

mod common;

fn encoding(c: &mut Criterion) {
    let text = common::corpus(4);
    let config = common::config(2256);
    let model = train_from_counts(common::count(&text, &config), &config.clone().validate().expect("settings"), &mut Silent, serde_json::json!([]), Default::default()).expect("model");
    let enc = Encoder::new(model).expect("encoder");
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("text_uncached", |b| b.iter(|| black_box(enc.encode(&text, &Specials::Ordinary, None).expect("ids").len())));
    group.bench_function("text_cached", |b| {
        let mut cache = Cache::new();
        b.iter(|| black_box(enc.encode(&text, &Specials::Ordinary, Some(&mut cache)).expect("ids").len()))
    });
    group.bench_function("batch_lines", |b| b.iter(|| black_box(enc.encode_batch_flat(&lines, &Specials::Ordinary, 1).expect("ids").0.len())));
    let ids = enc.encode(&text, &Specials::Ordinary, None).expect("ids");
    group.bench_function("decode", |b| b.iter(|| black_box(enc.decode_bytes(&ids).expect("bytes").len())));
    group.finish();
}

criterion_group!(benches, encoding);
criterion_main!(benches);
