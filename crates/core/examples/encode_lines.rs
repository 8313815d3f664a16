//! Profiling driver: per-line `encode_str` over a file's lines, one piece
//! cache per pass (as one Python `encode` call after another does), each
//! pass timed: `cargo run --release --example encode_lines -- MODEL.json LINES.txt [passes]`.
use bpeforge_core::encode::{Cache, Encoder, Specials};

#[global_allocator]
static ALLOC: bpeforge_core::memory::alloc::SplitAlloc = bpeforge_core::memory::alloc::SplitAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let enc = Encoder::from_model_json(&std::fs::read(&args[1]).expect("model file")).expect("model");
    let text = std::fs::read_to_string(&args[2]).expect("lines file");
    let passes: usize = args.get(3).map_or(1, |p| p.parse().expect("passes"));
    let lines: Vec<&str> = text.lines().collect();
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    for _ in 0..passes {
        let mut cache = Cache::new();
        let t = std::time::Instant::now();
        let tokens: usize = lines.iter().map(|l| enc.encode_str(l, &Specials::Ordinary, Some(&mut cache)).expect("encode").len()).sum();
        let s = t.elapsed().as_secs_f64();
        println!("{:.1} MB/s {:.3} s {tokens} tokens", bytes as f64 / s / 1e6, s);
    }
}
