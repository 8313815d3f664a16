//! Small shared pieces of the engine: its hash map, pair packing, a cache
//! prefetch hint, the default thread count and joining scoped threads.
//! Each is written once here so the modules that use them agree.

use crate::error::{Error, Result};
use std::thread::ScopedJoinHandle;

/// hashbrown with foldhash: fast on byte strings, and a fixed seed so runs
/// are reproducible.
pub type Hasher = foldhash::fast::FixedState;
pub type Map<K, V> = hashbrown::HashMap<K, V, Hasher>;

pub fn new_map<K, V>() -> Map<K, V> {
    map_with_capacity(0)
}

/// `new_map` with room for `capacity` entries (no rehashing while filling).
pub fn map_with_capacity<K, V>(capacity: usize) -> Map<K, V> {
    Map::with_capacity_and_hasher(capacity, Hasher::with_seed(0x5eed_b9e_f0a6e))
}

/// A pair of token ids as one 64-bit key (left id in the high half).
#[inline]
pub fn pack(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

/// Hints the CPU to load `slice[i]` into cache (no effect elsewhere).
#[inline(always)]
pub fn prefetch<T>(slice: &[T], i: usize) {
    if let Some(value) = slice.get(i) {
        prefetch_ptr(value);
    }
}

/// Hints the CPU to load the cache line at `value` (no effect elsewhere).
/// Any address will do: a prefetch never faults.
#[inline(always)]
pub fn prefetch_ptr<T>(value: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is only a hint and never faults, nor changes
    // anything the program can observe.
    unsafe {
        std::arch::x86_64::_mm_prefetch(value as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Hints the CPU to load the last byte of `slice[i]`: with `prefetch`, the
/// whole of an element that may straddle two cache lines.
#[inline(always)]
pub(crate) fn prefetch_end<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < slice.len() {
        // SAFETY: as in `prefetch`; the byte is the element's last.
        unsafe {
            let last = (slice.as_ptr().add(i) as *const i8).add(std::mem::size_of::<T>() - 1);
            std::arch::x86_64::_mm_prefetch(last, std::arch::x86_64::_MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}

/// All cores, as the OS reported them when first asked. Asked once: on
/// Linux `available_parallelism` reads the cgroup's files each time (tens
/// of microseconds), and every `encode_batch` call asks (its cache pool, and
/// `threads=None`): a batch of 16 short lines took a fifth longer.
pub fn default_threads() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// The thread count a setting asks for: 0 means "all cores".
pub fn threads_or_default(threads: usize) -> usize {
    if threads == 0 {
        default_threads()
    } else {
        threads
    }
}

/// The error for a worker thread that panicked: always a bug, never bad input.
pub fn worker_crashed() -> Error {
    Error::training("a worker thread crashed (this is a bug in bpeforge; please report it)")
}

/// Joins scoped threads in order; a panicked thread becomes `worker_crashed`.
pub fn join_all<T>(handles: Vec<ScopedJoinHandle<'_, T>>) -> Result<Vec<T>> {
    let joined: Vec<std::thread::Result<T>> = handles.into_iter().map(|h| h.join()).collect();
    joined.into_iter().map(|r| r.map_err(|_| worker_crashed())).collect()
}

/// Runs `f(i)` for every `i` in `0..n`, on one thread each when `n > 1`;
/// the results in order.
pub fn on_threads<T: Send>(n: usize, f: &(dyn Fn(usize) -> T + Sync)) -> Result<Vec<T>> {
    if n == 1 {
        return Ok(vec![f(0)]);
    }
    std::thread::scope(|s| join_all((0..n).map(|t| s.spawn(move || f(t))).collect()))
}

/// More threads than this is a mistake, not a machine: refuse it clearly
/// (spawning thousands of threads fails with a panic in std otherwise).
pub const MAX_THREADS: usize = 256;

/// A user's `threads` setting checked: `None` is all cores (at most
/// `MAX_THREADS`); 0 and more than `MAX_THREADS` are errors.
pub fn check_threads(threads: Option<usize>) -> Result<usize> {
    match threads {
        None => Ok(default_threads().min(MAX_THREADS)),
        Some(0) => Err(Error::parameter("threads must be at least 1 (or None for all cores)")),
        Some(t) if t > MAX_THREADS => {
            Err(Error::parameter(format!("threads={t} is more than {MAX_THREADS}; use None for all cores")))
        }
        Some(t) => Ok(t),
    }
}

/// A linear congruential generator (Knuth's MMIX constants) for tests that
/// need many varied but repeatable inputs.
#[cfg(test)]
pub(crate) struct Lcg(pub(crate) u64);

#[cfg(test)]
impl Lcg {
    /// The next state; use its high bits (the low ones cycle quickly).
    pub(crate) fn step(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0
    }
}
