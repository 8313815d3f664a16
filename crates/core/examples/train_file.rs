//! Profiling driver: `cargo run --release --example train_file -- FILE VOCAB THREADS [bytes|chars] [pretok]`.
use bpeforge_core::model::Scheme;
use bpeforge_core::pretok::PreTokenizerSpec;
use bpeforge_core::progress::{ProgressFormat, ProgressPrinter};
use bpeforge_core::train::TrainConfig;
use bpeforge_core::train_files;
use std::path::PathBuf;


#[global_allocator]
static ALLOC: bpeforge_core::memory::alloc::SplitAlloc = bpeforge_core::memory::alloc::SplitAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = PathBuf::from(&args[1]);
    let vocab: usize = args.get(2).map_or(32000, |s| s.parse().unwrap());
    let threads: usize = args.get(3).map_or(1, |s| s.parse().unwrap());
    let scheme = match args.get(4).map(String::as_str) {
        Some("chars") => Scheme::Chars { unk_token: "<unk>".into(), end_of_word_suffix: None, character_coverage: 1.0, byte_fallback: false, fuse_unk: false, dummy_prefix: false, normalizer: None },
        _ => Scheme::Bytes,
    };
    let pretok = PreTokenizerSpec::named(args.get(5).map_or(bpeforge_core::pretok::DEFAULT_PRETOKENIZER, String::as_str)).expect("a preset name");
    let mut config = TrainConfig::new(vocab, scheme, pretok);
    config.threads = threads;
    let mut obs = ProgressPrinter::new(ProgressFormat::Off);
    let t = std::time::Instant::now();
    let model = train_files(&[path], &config.validate().unwrap(), &mut obs).unwrap();
    // A digest of the learned merges and their counts, to compare builds.
    let mut digest = 0xcbf29ce484222325u64;
    for (&(a, b), &c) in model.merges.iter().zip(&model.merge_counts) {
        for v in [a as u64, b as u64, c] {
            digest = (digest ^ v).wrapping_mul(0x100000001b3);
        }
    }
    println!("merges {} digest {digest:016x}", model.merges.len());
    println!("wall {:.3}s {} types {} table {}", t.elapsed().as_secs_f64(), model.metadata["timings"], model.metadata["word_types"], model.metadata["word_table"]);
}
