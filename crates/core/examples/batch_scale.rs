//! Measuring driver: the engine's own batch time, without Python. Loads a
//! model, encodes one line as a batch (as `bench/encode.py`'s warm-up
//! does), then times one `encode_batch_flat` over all of a file's lines on
//! `threads` threads and prints the seconds and the id count. Run it in a
//! new process per measurement, alternating thread counts:
//! `cargo run --release --example batch_scale -- MODEL.json LINES.txt THREADS`.
use bpeforge_core::encode::{Encoder, Specials};

#[global_allocator]
static ALLOC: bpeforge_core::memory::alloc::SplitAlloc = bpeforge_core::memory::alloc::SplitAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, model, lines, threads] = args.as_slice() else {
        eprintln!("usage: batch_scale MODEL.json LINES.txt THREADS");
        std::process::exit(2);
    };
    let enc = Encoder::from_model_json(&std::fs::read(model).expect("model file")).expect("model");
    let text = std::fs::read_to_string(lines).expect("lines file");
    let threads: usize = threads.parse().expect("threads: a number");
    let lines: Vec<&str> = text.lines().collect();
    enc.encode_batch_flat(&lines[..1.min(lines.len())], &Specials::Ordinary, threads).expect("warm-up");
    let start = std::time::Instant::now();
    let (ids, _) = enc.encode_batch_flat(&lines, &Specials::Ordinary, threads).expect("batch");
    println!("{:.4} s {} ids", start.elapsed().as_secs_f64(), ids.len());
}
