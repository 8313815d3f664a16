//! Profiling driver for pre-tokenization alone:
//! `cargo run --profile quick --example pretok_speed -- FILE.txt [preset] [repeats]`
//! (a plain-text file). Prints MB/s of the scanner and of the regex path
//! (a fourth argument `scanner` or `regex` runs only that one, for `perf`).
//! Times are this thread's CPU time: on a shared machine wall time mostly
//! measures the other jobs.
use bpeforge_core::pretok::{PreTokenizer, PreTokenizerSpec};

#[global_allocator]
static ALLOC: bpeforge_core::memory::alloc::SplitAlloc = bpeforge_core::memory::alloc::SplitAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("a readable UTF-8 file");
    let spec = PreTokenizerSpec::named(args.get(2).map_or(bpeforge_core::pretok::DEFAULT_PRETOKENIZER, String::as_str)).expect("a preset name");
    let repeats: usize = args.get(3).map_or(5, |s| s.parse().expect("a number of repeats"));
    let only = args.get(4).map(String::as_str);
    let lines: Vec<&str> = text.split('\n').collect();
    for (name, p) in [
        ("scanner", PreTokenizer::new(spec.clone()).unwrap()),
        ("regex", PreTokenizer::regex_reference(spec.clone()).unwrap()),
    ] {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let mut best = f64::MAX;
        let mut pieces = 0usize;
        for _ in 0..repeats {
            let t = cpu_seconds();
            pieces = 0;
            for line in &lines {
                p.split(line, &mut |_| pieces += 1).unwrap();
            }
            best = best.min(cpu_seconds() - t);
        }
        println!("{name:10} {:7.1} MB/s  {pieces} pieces", text.len() as f64 / 1e6 / best);
    }
}

fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
