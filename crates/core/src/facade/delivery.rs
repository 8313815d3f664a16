//! Encoded batches delivered in order to the caller's thread, block by
//! block, while later blocks are encoded on other threads (the caller
//! cuts the blocks and takes their ids: Python lists, numpy's layout), and
//! the cache hints for turning ids into the caller's objects.

pub use crate::encode::{Block, BlockIds, PackedIds};
pub use crate::ordered::{Deliver, Host};
pub use crate::util::{prefetch, prefetch_ptr};
