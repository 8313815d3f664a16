//! Threads and memory: the allocator a program installs, handing freed
//! memory back to the system after a run, and the checked thread count.

pub use crate::memory::alloc::{release_free_memory, SplitAlloc};
pub use crate::util::check_threads;
