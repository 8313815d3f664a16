//! Big arrays that are read at random (the word-count table, the merge
//! arena, the encoder's tables and piece caches): allocated with a request
//! for transparent huge pages.
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
    advise_large(v.as_mut_ptr() as *mut u8, len * std::mem::size_of::<T>());
    v.resize(len, value);
    v
}

/// `len` zeros advised as in `filled_vec`, whose pages are not touched
/// here (fresh zero pages from the allocator): threads that fill their own
/// parts fault their pages in at the same time.
pub(crate) fn zeroed_u16(len: usize) -> Vec<u16> {
    let mut v = vec![0u16; len];
    advise_large(v.as_mut_ptr() as *mut u8, len * 2);
    v
}

/// An empty vector with room for `cap` elements, advised as in `filled_vec`.
pub(crate) fn vec_with_capacity<T>(cap: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(cap);
    advise_large(v.as_mut_ptr() as *mut u8, cap * std::mem::size_of::<T>());
    v
}

/// `advise_huge` for buffers of at least `MIN_BYTES`.
fn advise_large(ptr: *mut u8, bytes: usize) {
    if bytes >= MIN_BYTES {
        advise_huge(ptr, bytes);
    }
}

#[cfg(target_os = "linux")]
fn advise_huge(ptr: *mut u8, bytes: usize) {
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

/// A table of fixed length read at random by every look-up of a hot loop
/// (the encoder's pair and whole-piece tables, a piece cache): when it is
/// 2 MiB or more, its memory starts on a 2 MiB boundary and is advised for
/// huge pages before it is filled, so that each whole 2 MiB of it can be
/// one huge page (a 2 MiB table one TLB entry instead of 512). `filled_vec`
/// cannot do that for such tables: the allocator rarely aligns them, and
/// the whole pages inside an unaligned 2-4 MiB block are none or one.
pub(crate) struct HugeTable<T: Copy> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
}

// SAFETY: a `HugeTable` owns its elements as a `Box<[T]>` would.
unsafe impl<T: Copy + Send> Send for HugeTable<T> {}
unsafe impl<T: Copy + Sync> Sync for HugeTable<T> {}

impl<T: Copy> HugeTable<T> {
    /// `len` copies of `value`.
    pub(crate) fn filled(len: usize, value: T) -> Self {
        let table = Self::uninit(len);
        // SAFETY: `uninit` allocated room for `len` elements; `write` does
        // not read the uninitialised memory it overwrites.
        unsafe {
            for i in 0..len {
                table.ptr.as_ptr().add(i).write(value);
            }
        }
        table
    }

    /// Room for `len` elements, none written yet (callers write them all).
    fn uninit(len: usize) -> Self {
        let layout = Self::layout(len);
        if layout.size() == 0 {
            return HugeTable { ptr: std::ptr::NonNull::dangling(), len };
        }
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = std::ptr::NonNull::new(ptr as *mut T) else { std::alloc::handle_alloc_error(layout) };
        if layout.align() == HUGE_PAGE {
            advise_huge(ptr.as_ptr() as *mut u8, layout.size());
        }
        HugeTable { ptr, len }
    }

    /// 2 MiB-aligned from 2 MiB up (whole huge pages), else `T`'s own alignment.
    fn layout(len: usize) -> std::alloc::Layout {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).expect("table size overflows");
        let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { std::mem::align_of::<T>() };
        std::alloc::Layout::from_size_align(bytes, align).expect("table size overflows")
    }
}

impl<T: Copy> Default for HugeTable<T> {
    fn default() -> Self {
        Self::uninit(0)
    }
}

impl<T: Copy> std::ops::Deref for HugeTable<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised elements (or is dangling with len 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for HugeTable<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Clone for HugeTable<T> {
    fn clone(&self) -> Self {
        let copy = Self::uninit(self.len);
        // SAFETY: both hold room for `len` elements and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), copy.ptr.as_ptr(), self.len) };
        copy
    }
}

impl<T: Copy> Drop for HugeTable<T> {
    fn drop(&mut self) {
        let layout = Self::layout(self.len);
        if layout.size() != 0 {
            // SAFETY: allocated in `uninit` with this same layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr() as *mut u8, layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_tables_hold_their_values_and_large_ones_start_on_a_huge_page() {
        let empty: HugeTable<u64> = HugeTable::default();
        assert!(empty.is_empty());
        let small = HugeTable::filled(1000, 7u32);
        assert!(small.iter().all(|&x| x == 7) && small.len() == 1000);
        let mut large = HugeTable::filled(HUGE_PAGE / 8 * 3 + 5, u64::MAX);
        assert_eq!(large.as_ptr() as usize % HUGE_PAGE, 0);
        large[12345] = 1;
        let copy = large.clone();
        large[12345] = 2;
        assert_eq!((copy[12345], copy[0], copy.len()), (1, u64::MAX, large.len()));
        assert_eq!(copy.as_ptr() as usize % HUGE_PAGE, 0);
        #[cfg(target_os = "linux")]
        if std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            assert!(advised_huge(large.as_ptr() as usize), "no MADV_HUGEPAGE on the table's mapping");
        }
    }

    /// Whether the mapping holding `addr` is advised for huge pages (`hg`).
    #[cfg(target_os = "linux")]
    fn advised_huge(addr: usize) -> bool {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split(' ').next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-') {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if inside && line.starts_with("VmFlags:") {
                return line.split_whitespace().any(|flag| flag == "hg");
            }
        }
        false
    }
}
