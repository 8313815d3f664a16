//! The memory allocator for programs built on this crate (the Python module
//! and the examples declare it with `#[global_allocator]`): mimalloc for
//! small blocks, the system allocator for large ones.
//!
//! Why: the merge loop makes and frees millions of small word lists, and
//! counting boxes its long keys. With glibc's malloc, `malloc`, `realloc`
//! and `free` were about 8% of an s10 training run; with this allocator the
//! merge phase took ~13% less (measured 2026-11-27; docs/design-notes.md). But
//! mimalloc keeps freed memory mapped for a while and in its own segments,
//! which raised s10's peak by up to 0.3 GB when the big tables (the count
//! table as it grows, the pair index's parts) went through it too. glibc
//! gives such large blocks their own mappings and unmaps them on `free`,
//! so they stay with it, and the peak stays that of the tables themselves.
//!
//! Which allocator owns a block follows from its size alone, which every
//! `dealloc` and `realloc` is told, so no block is ever freed by the other.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of at least this many bytes go to the system allocator.
pub const LARGE_BYTES: usize = 1 << 20;

/// See the module documentation.
pub struct SplitAlloc;

fn is_large(bytes: usize) -> bool {
    bytes >= LARGE_BYTES
}

/// Sets both allocators up, once, before the first block: counting on
/// many threads otherwise left a few hundred MB resident that nothing used
/// (multi-1m at 16 threads: a 500 MB counting peak, 310 MB with these).
///
/// * glibc maps every block of `LARGE_BYTES` or more on its own (and unmaps
///   it on `free`). By default it raises that threshold each time it frees
///   a mapped block (up to 32 MB), after which blocks of that size come from
///   its heaps, one per thread, where freed ones stay resident: counting's
///   4 MB input chunks, made on one thread and freed on another.
/// * mimalloc commits its arenas' memory as it is used (`arena_eager_commit`
///   0; on Linux its default commits them whole), so that purging freed
///   pages hands them back to the system (`MADV_DONTNEED`) instead of
///   leaving them counted in the resident size.
fn configure() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.load(Ordering::Relaxed) || DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    // SAFETY: `mi_option_set` only stores an option's value (it allocates
    // nothing); `mimalloc.h`'s `mi_option_arena_eager_commit` is 4.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) };
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes glibc's malloc settings; it takes no
    // pointers. A failure leaves the default, which is harmless.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE_BYTES as libc::c_int);
    }
}

/// `mi_option_arena_eager_commit` of `mimalloc.h` (not named by the crate).
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

// SAFETY: every call is forwarded to the allocator that owns blocks of the
// layout's size (both uphold `GlobalAlloc`); a `realloc` that crosses
// `LARGE_BYTES` allocates in the other one, copies the bytes both sizes
// hold, and frees the old block with the allocator that made it.
unsafe impl GlobalAlloc for SplitAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size()) {
            configure();
            System.alloc(layout)
        } else {
            configure();
            mimalloc::MiMalloc.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size()) {
            configure();
            System.alloc_zeroed(layout)
        } else {
            configure();
            mimalloc::MiMalloc.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(layout.size()) {
            System.dealloc(ptr, layout)
        } else {
            mimalloc::MiMalloc.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (is_large(layout.size()), is_large(new_size)) {
            (true, true) => {
                configure();
                System.realloc(ptr, layout, new_size)
            }
            (false, false) => mimalloc::MiMalloc.realloc(ptr, layout, new_size),
            _ => {
                // SAFETY: the caller guarantees `new_size`, rounded up to
                // the alignment, does not overflow `isize`.
                let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

/// Hands memory that was freed back to the operating system: what mimalloc
/// keeps for reuse (blocks freed, also by threads that have ended), and what
/// glibc keeps (a freed block in the middle of a heap or in a worker
/// thread's arena is not returned on its own). Called before the memory
/// budget reads the process's resident size (`budget::process_rss`), which
/// that memory would inflate; between the phases of training whose tables
/// are freed before the next phase allocates its own (mostly large, freshly
/// mapped arrays that cannot reuse those blocks), so peak RSS is what the
/// next phase holds, not that plus the last phase's leftovers; and by the
/// Python module when a run ends. Harmless where `SplitAlloc` is not the
/// global allocator (mimalloc then holds nothing).
pub fn release_free_memory() {
    // SAFETY: `mi_collect` takes no pointers and may be called at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks grown and shrunk across `LARGE_BYTES` keep their bytes and
    /// are freed by the allocator that made them (a wrong one would crash).
    #[test]
    fn blocks_keep_their_bytes_across_the_size_boundary() {
        let a = SplitAlloc;
        for align in [1, 8, 64, 4096] {
            let small = Layout::from_size_align(1000, align).unwrap();
            unsafe {
                let p = a.alloc(small);
                assert!(!p.is_null() && p as usize % align == 0);
                for i in 0..1000 {
                    *p.add(i) = (i % 251) as u8;
                }
                let big = a.realloc(p, small, 3 * LARGE_BYTES);
                assert!(!big.is_null() && big as usize % align == 0);
                assert!((0..1000).all(|i| *big.add(i) == (i % 251) as u8));
                *big.add(3 * LARGE_BYTES - 1) = 7;
                let big_layout = Layout::from_size_align(3 * LARGE_BYTES, align).unwrap();
                let bigger = a.realloc(big, big_layout, 5 * LARGE_BYTES);
                assert_eq!(*bigger.add(3 * LARGE_BYTES - 1), 7);
                let bigger_layout = Layout::from_size_align(5 * LARGE_BYTES, align).unwrap();
                let back = a.realloc(bigger, bigger_layout, 500);
                assert!((0..500).all(|i| *back.add(i) == (i % 251) as u8));
                a.dealloc(back, Layout::from_size_align(500, align).unwrap());
                let z = a.alloc_zeroed(big_layout);
                assert!((0..3 * LARGE_BYTES).step_by(4093).all(|i| *z.add(i) == 0));
                a.dealloc(z, big_layout);
            }
        }
    }
}
