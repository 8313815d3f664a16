//! Profiling driver for fresh text: a tokenizer's own seeded piece cache
//! (`Encoder::new_cache`, as Python's `encode` keeps one) over consecutive
//! disjoint chunks of a file's lines, one `encode_str` call per line, each
//! round timed: `cargo run --release --example encode_rounds -- MODEL.json
//! LINES.txt ROUND_LINES ROUNDS [CACHE_MIB]` (CACHE_MIB bounds the cache,
//! `Encoder::new_cache_bounded`; default: the default bound). Each round
//! gives wall and thread-CPU seconds: on a shared VM whose host takes the
//! CPU away, the CPU time is the steadier figure.
use bpeforge_core::encode::{Encoder, Specials};

#[global_allocator]
static ALLOC: bpeforge_core::memory::alloc::SplitAlloc = bpeforge_core::memory::alloc::SplitAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let enc = Encoder::from_model_json(&std::fs::read(&args[1]).expect("model file")).expect("model");
    let text = std::fs::read_to_string(&args[2]).expect("lines file");
    let round_lines: usize = args[3].parse().expect("ROUND_LINES");
    let rounds: usize = args[4].parse().expect("ROUNDS");
    let mut cache = match args.get(5) {
        Some(mib) => enc.new_cache_bounded(mib.parse::<usize>().expect("CACHE_MIB") << 20),
        None => enc.new_cache(),
    };
    println!("cache bound {} MiB", cache.max_bytes() >> 20);
    let lines: Vec<&str> = text.lines().collect();
    for (r, chunk) in lines.chunks(round_lines).take(rounds).enumerate() {
        let bytes: usize = chunk.iter().map(|l| l.len()).sum();
        let (t, cpu) = (std::time::Instant::now(), thread_cpu_seconds());
        let tokens: usize = chunk.iter().map(|l| enc.encode_str(l, &Specials::Ordinary, Some(&mut cache)).expect("encode").len()).sum();
        let (s, cpu) = (t.elapsed().as_secs_f64(), thread_cpu_seconds() - cpu);
        println!("round {} {:.1} MB/s {:.3} s {tokens} tokens; CPU {:.1} MB/s {:.3} s", r + 1, bytes as f64 / s / 1e6, s, bytes as f64 / cpu / 1e6, cpu);
    }
}

/// CPU seconds this thread has run.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
