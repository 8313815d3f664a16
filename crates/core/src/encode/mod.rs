//! Encoding and decoding with a trained model.
//!
//! * `encoder`: exact BPE encoding of one text.
//! * `batch`: many texts on threads (whole, or streamed in blocks).
//! * `dropout`: BPE-dropout (sampled segmentations).
//! * `decode`: ids back to bytes.
//! * `file`: streaming files of any size into ids.
//!
//! The shared types (`Encoder`, its token arena, `Cache`, `Specials`) are
//! declared here, so each part can reach the encoder's tables.
//!
//! Encoding is exact merge-list BPE: in each pre-token, the applicable merge
//! of lowest rank is applied (leftmost first among equal ranks) until none
//! applies, which equals applying the merge list in order.
//!
//! Performance notes:
//! * Pieces of up to `SHORT` symbols use a flat vector with the rank of every
//!   adjacent pair (two rank look-ups per merge, a linear min scan); longer
//!   pieces use a heap over a linked list, O(n log n), so a 1 MB run of one
//!   character does not go quadratic.
//! * A piece whose bytes are a token that encodes to itself (checked once per
//!   model, see `reachable`) needs no merging at all; in running text that is
//!   most pieces.
//! * A bounded cache maps pieces to their ids (`cache`); each batch worker
//!   has its own, so threads never contend, kept from one batch or file to
//!   the next (`pool`). A long-lived one (a Python tokenizer's for `encode`)
//!   starts seeded with the pieces that are one token (`Encoder::new_cache`).
//! * Look-ups in tables of megabytes mostly wait on memory, so they are
//!   fetched ahead: each piece's cache and whole-piece slots a few pieces
//!   before it is encoded, and (for large pair tables) the pair slots a
//!   merge may look up next as soon as a pair's rank is known.
//! * Decoding reads one contiguous byte buffer plus an offsets array.

mod batch;
mod cache;
mod decode;
pub mod dropout;
mod encoder;
mod index;
mod key;
mod pool;
mod snapshot;
mod tables;
pub mod file;

pub use batch::{Block, BlockIds, FlatIds, PackedIds, Text};
pub use cache::{Cache, MIN_CACHE_BYTES};
pub use dropout::Dropout;

use crate::model::Model;
use crate::pretok::{PreTokenizer, SpecialSplitter};
use crate::util::Map;
use index::TokenIndex;

const SHORT: usize = 96;
const NO_RANK: u32 = u32::MAX;

/// How pieces are merged: exact BPE (optionally cached) or with dropout.
enum Merging<'a> {
    Exact(Option<&'a mut Cache>),
    Dropout(&'a mut Dropout),
}

/// Which special tokens may appear in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Specials {
    /// Special-token text is encoded as ordinary text.
    Ordinary,
    /// Allowed specials map to their ids; disallowed ones are an error;
    /// the rest are ordinary text. Indexed by special-token index.
    Rules { allowed: Vec<bool>, disallowed: Vec<bool> },
}

pub struct Encoder {
    model: Model,
    pretok: PreTokenizer,
    all_specials: SpecialSplitter,
    ranks: Map<u64, (u32, u32)>,
    /// Bytes scheme: the rank of every pair of base bytes (`x * 256 + y`),
    /// `NO_RANK` if none; a piece's first pass reads only these, so they
    /// come from a 256 KB table instead of the hash map (empty otherwise).
    byte_pair_ranks: Vec<u32>,
    /// Id of the token the merge of rank 0 makes (rank `r` makes `first_merge + r`).
    first_merge: u32,
    /// Token bytes by id, as stored (`▁`, `</w>` kept).
    raw: Arena,
    /// Token bytes by id as decoded text (`▁` -> space, `</w>` -> space).
    shown: Arena,
    token_ids: TokenIndex,
    /// Pieces that are one token: bytes -> id (bytes scheme only).
    whole: tables::PieceIds,
    /// `ranks` as a flat table (ranks only), where the ids fit it.
    pair_table: Option<tables::PairRanks>,
    /// Chars scheme: base symbol string -> id.
    symbol_ids: Map<String, u32>,
    base_start: u32,
    unk: Option<u32>,
    /// Internal -> external ids, and back (`u32::MAX` for unused external ids).
    to_ext: Option<Vec<u32>>,
    to_int: Option<Vec<u32>>,
    whitespace: bool,
    suffix: Option<String>,
    /// SentencePiece's ways with unknown characters and the text's start.
    sp: SentencePieceRules,
    /// Chars scheme: SentencePiece's normalizer, applied to each text
    /// segment before pre-tokenizing (none: the identity).
    normalizer: Option<crate::normalize::Normalizer>,
    /// The piece caches of batches, kept from one batch to the next, and
    /// the seed new ones start from.
    batch_caches: pool::CachePool,
}

/// Chars scheme: what SentencePiece-style models do beyond plain BPE.
#[derive(Default)]
pub(crate) struct SentencePieceRules {
    /// Byte fallback: byte -> internal id of its `<0xHH>` token.
    byte_ids: Option<Vec<u32>>,
    fuse_unk: bool,
    dummy_prefix: bool,
}

/// All token strings in one buffer plus offsets.
#[derive(Clone)]
struct Arena {
    data: Vec<u8>,
    offsets: Vec<usize>,
}

/// Bytes of slack after the arena's data, so that any token of up to this
/// length can be copied with one fixed-size move (see `decode_bytes`).
const COPY_SLACK: usize = 16;

impl Arena {
    fn new<'a>(items: impl ExactSizeIterator<Item = &'a [u8]>) -> Self {
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(items.len() + 1);
        offsets.push(0);
        for t in items {
            data.extend_from_slice(t);
            offsets.push(data.len());
        }
        data.extend_from_slice(&[0u8; COPY_SLACK]);
        Arena { data, offsets }
    }
    /// The arena of tokens with these `lengths` laid end to end in `data`
    /// (a snapshot's form), or None if they do not add up.
    fn from_lengths(mut data: Vec<u8>, lengths: impl ExactSizeIterator<Item = u32>) -> Option<Self> {
        let mut offsets = Vec::with_capacity(lengths.len() + 1);
        let mut end = 0usize;
        offsets.push(0);
        for len in lengths {
            end = end.checked_add(len as usize)?;
            offsets.push(end);
        }
        if end != data.len() {
            return None;
        }
        data.extend_from_slice(&[0u8; COPY_SLACK]);
        Some(Arena { data, offsets })
    }
    /// The bytes `from_lengths` takes back: all tokens, then their lengths.
    fn parts(&self) -> (&[u8], impl Iterator<Item = u32> + '_) {
        let data = &self.data[..self.data.len() - COPY_SLACK];
        (data, self.offsets.windows(2).map(|w| (w[1] - w[0]) as u32))
    }
    #[inline]
    fn get(&self, id: usize) -> &[u8] {
        &self.data[self.offsets[id]..self.offsets[id + 1]]
    }
    fn len(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// What an encoder derives from its model at real cost, as a snapshot
/// carries it: every token's bytes (rebuilding them is one allocation per
/// token) and the ids `reachable` found (one BPE run per token).
struct Prepared {
    raw: Arena,
    whole: Vec<u32>,
}
