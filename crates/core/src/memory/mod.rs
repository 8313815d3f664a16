//! Memory: the allocator programs built on this crate declare ([`alloc`]),
//! huge-page arrays for the big tables read at random (`mem`), sorted runs
//! of counts on disk ([`spill`]) and whether they will fit there
//! ([`disk`]), and the run's memory budget, which counting and the merge
//! phase keep to ([`budget`]).

pub mod alloc;
pub mod budget;
pub mod disk;
pub(crate) mod mem;
pub mod spill;
