//! Profiling driver: a whole file to ids as `Tokenizer.encode_file` does it
//! (`.npy` output), each pass timed
//! (wall and process CPU time):
//! `cargo run --release --example encode_file -- MODEL.json LINES.txt[,MORE.txt...] [threads] [passes]`
//! (pass `k` reads the `k`-th file, round and round).
use bpeforge_core::encode::{file, Encoder, Specials};
use bpeforge_core::clock::process_cpu_seconds;
use bpeforge_core::observe::Silent;

#[global_allocator]
static ALLOC: bpeforge_core::memory::alloc::SplitAlloc = bpeforge_core::memory::alloc::SplitAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let enc = Encoder::from_model_json(&std::fs::read(&args[1]).expect("model file")).expect("model");
    let sources: Vec<std::path::PathBuf> = args[2].split(',').map(std::path::PathBuf::from).collect();
    let threads: usize = args.get(3).map_or(1, |p| p.parse().expect("threads"));
    let passes: usize = args.get(4).map_or(1, |p| p.parse().expect("passes"));
    let dst = std::env::temp_dir().join("encode_file_example.npy");
    for pass in 0..passes {
        let src = &sources[pass % sources.len()];
        let bytes = std::fs::metadata(src).expect("lines file").len();
        let (t, cpu) = (std::time::Instant::now(), process_cpu_seconds().unwrap_or(0.0));
        let stats = file::encode_file(&enc, std::slice::from_ref(src), &dst, file::IdFormat::Npy, &Specials::Ordinary, threads, None, &mut Silent)
            .expect("encode");
        let (s, c) = (t.elapsed().as_secs_f64(), process_cpu_seconds().unwrap_or(0.0) - cpu);
        println!("{:.1} MB/s {:.3} s wall, {:.1} MB per CPU second, {} tokens", bytes as f64 / s / 1e6, s, bytes as f64 / c / 1e6, stats.tokens);
    }
}
