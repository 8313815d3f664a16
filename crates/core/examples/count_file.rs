//! Profiling driver for counting alone: `cargo run --release --example count_file -- FILE THREADS [pretok]`.
use bpeforge_core::input::read_chunks;
use bpeforge_core::model::Scheme;
use bpeforge_core::pretok::PreTokenizerSpec;
use bpeforge_core::observe::Silent;
use bpeforge_core::train::{count_words, TrainConfig};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

#[global_allocator]
static ALLOC: bpeforge_core::memory::alloc::SplitAlloc = bpeforge_core::memory::alloc::SplitAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = PathBuf::from(&args[1]);
    let threads: usize = args.get(2).map_or(1, |s| s.parse().unwrap());
    let pretok = PreTokenizerSpec::named(args.get(3).map_or(bpeforge_core::pretok::DEFAULT_PRETOKENIZER, String::as_str)).expect("a preset name");
    let mut config = TrainConfig::new(32000, Scheme::Bytes, pretok);
    config.threads = threads;
    let t = std::time::Instant::now();
    let config = config.validate().unwrap();
    let counts = count_words(&config, &mut Silent, |sink, _| {
        read_chunks(std::slice::from_ref(&path), &config.text_mode, Arc::new(AtomicU64::new(0)), sink)
    })
    .unwrap();
    let counted = t.elapsed().as_secs_f64();
    // A checksum of the counts, independent of iteration order.
    let mut sum = 0u64;
    counts.for_each(|k, v| {
        let mut h = 0xcbf29ce484222325u64;
        for &b in k {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        sum = sum.wrapping_add(h.wrapping_mul(v | 1));
    });
    println!(
        "count {counted:.3}s types {} pieces {} bytes {} checksum {sum:016x}",
        counts.len(),
        counts.stats.pieces,
        counts.stats.bytes
    );
}
