//! Big arrays that are read at random (the word-count table, the merge
//! arena): allocated with a request for transparent huge pages.
//!
//! With 4 KiB pages a 100 MB table spans 25,000 pages, far more than the
//! TLB holds, so nearly every random probe also walks the page table (and
//! in a virtual machine that walk is itself several memory accesses); a
//! software prefetch cannot hide that. With 2 MiB pages the same table is
//! 50 TLB entries. Where THP is "always" this changes nothing, where it is
//! "madvise" (many distributions and VMs) it is what makes huge pages
//! happen, and where it is "never" the kernel ignores the request.

/// Arrays smaller than this are not worth a system call.
const MIN_BYTES: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// A vector of `len` copies of `value`, whose memory the kernel is asked to
/// back with huge pages *before* it is first written (pages already faulted
/// in as small pages are only merged later, if ever).
pub(crate) fn filled_vec<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    advise_huge(v.as_mut_ptr() as *mut u8, len * std::mem::size_of::<T>());
    v.resize(len, value);
    v
}

/// `len` zeros advised as in `filled_vec`, whose pages are not touched
/// here (fresh zero pages from the allocator): threads that fill their own
/// parts fault their pages in at the same time.
pub(crate) fn zeroed_u16(len: usize) -> Vec<u16> {
    let mut v = vec![0u16; len];
    advise_huge(v.as_mut_ptr() as *mut u8, len * 2);
    v
}

/// An empty vector with room for `cap` elements, advised as in `filled_vec`.
pub(crate) fn vec_with_capacity<T>(cap: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(cap);
    advise_huge(v.as_mut_ptr() as *mut u8, cap * std::mem::size_of::<T>());
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(ptr: *mut u8, bytes: usize) {
    if bytes < MIN_BYTES {
        return;
    }
    // Only whole 2 MiB pages inside the allocation.
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside an allocation we own (`ptr` is the
        // start of a live buffer of at least `bytes` bytes) whose contents
        // are unwritten or zero (every caller advises before writing).
        // MADV_DONTNEED first: the allocator may hand out memory it got back
        // from an earlier, freed table, already faulted in as small pages,
        // which MADV_HUGEPAGE alone would leave small (a run's counts are
        // freed just before the merge arrays are allocated). The dropped
        // pages read as zeros, the value callers expect. MADV_HUGEPAGE only
        // changes how the kernel backs the pages; a failure of either call
        // (e.g. THP disabled) is harmless, so the results are ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_ptr: *mut u8, _bytes: usize) {}

/// Hands the whole pages of elements `from..to` of `v`'s buffer back to the
/// kernel: they read as zeros if touched again, so callers only pass
/// elements they never read again (unused capacity, or plain `Copy` data
/// already consumed). Lets a table that is being emptied shrink its
/// resident memory as it goes, without a copy.
pub(crate) fn release<T>(v: &Vec<T>, from: usize, to: usize) {
    #[cfg(target_os = "linux")]
    {
        let size = std::mem::size_of::<T>();
        let to = to.min(v.capacity());
        if from >= to || (to - from) * size < 1 << 16 {
            return;
        }
        const PAGE: usize = 4096;
        let base = v.as_ptr() as usize;
        let start = (base + from * size).next_multiple_of(PAGE);
        let end = (base + to * size) / PAGE * PAGE;
        if end > start {
            // SAFETY: [start, end) lies inside `v`'s allocation; MADV_DONTNEED
            // only replaces those pages by zero pages (a valid bit pattern for
            // the plain data callers pass, which they never read again), and
            // a failure leaves them as they were.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (v, from, to);
}
