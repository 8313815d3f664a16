//! Texts a caller feeds, a chunk at a time (a Python iterator, Arrow
//! data): the trait it implements and the chunk it hands over.

pub use crate::input::{Chunk, Layout};
pub use crate::source::Source;
