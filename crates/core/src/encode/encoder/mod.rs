//! The encoder: its tables built from a model (`build`), its caches, and
//! look-ups of tokens and ids. Encoding itself is in the parts:
//!
//! * `text`: the entry points (texts -> special-token split -> pre-tokens
//!   -> each piece from the cache, the whole-piece table or merging).
//! * `bpe`: exact merging by rank, its short (stack arrays) and long
//!   (heap over a linked list) variants.
//! * `symbols`: a piece's base symbols (bytes or characters).

mod bpe;
mod symbols;
mod text;
#[cfg(test)]
mod tests;

use super::index::TokenIndex;
use super::key::PieceKey;
use super::tables::{PairRanks, PieceIds};
use super::{Arena, Cache, Encoder, Prepared, SentencePieceRules};
use crate::util::{map_with_capacity, new_map, pack};
use crate::error::{Error, Result};
use crate::model::{Model, Scheme, SPACE_MARKER};
use crate::normalize;
use crate::pretok::{PreTokenizer, PreTokenizerSpec, SpecialSplitter};

impl Encoder {
    pub fn new(model: Model) -> Result<Self> {
        Self::build(model, None)
    }

    /// An encoder from a model file's JSON (validated once, while building).
    pub fn from_model_json(json: &[u8]) -> Result<Self> {
        Self::build(Model::parse_json(json)?, None)
    }

    /// Builds the encoder's tables, from the model alone (validating it) or
    /// from a snapshot's `Prepared` tables (see `snapshot`).
    pub(in crate::encode) fn build(model: Model, prepared: Option<Prepared>) -> Result<Self> {
        let (raw, known_whole) = match prepared {
            Some(p) => {
                model.validate_settings()?;
                if p.raw.len() != model.vocab_size() {
                    return Err(Error::model(format!(
                        "the encoder snapshot has {} tokens but its model has {}",
                        p.raw.len(),
                        model.vocab_size()
                    )));
                }
                let whole = checked_whole_ids(p.raw.len(), model.special_tokens.len(), p.whole)?;
                (p.raw, Some(whole))
            }
            None => {
                let tokens = model.validated_tokens()?;
                (Arena::new(tokens.iter().map(Vec::as_slice)), None)
            }
        };
        let normalizer = match &model.scheme {
            Scheme::Chars { normalizer: Some(spec), .. } => Some(spec.compile()?),
            _ => None,
        };
        let (words, normalizer) = normalize::words(&model.pretokenizer, normalizer);
        let pretok = PreTokenizer::new(words)?;
        let all_specials = SpecialSplitter::new(&model.special_tokens)?;
        let first_merge = (model.special_tokens.len() + model.base_len()) as u32;
        let mut ranks = map_with_capacity(model.merges.len());
        for (k, &(a, b)) in model.merges.iter().enumerate() {
            ranks.entry(pack(a, b)).or_insert((k as u32, first_merge + k as u32));
        }
        let triples: Vec<(u32, u32, u32)> = model.merges.iter().enumerate().map(|(k, &(a, b))| (a, b, k as u32)).collect();
        let pair_table = PairRanks::new(&triples);
        let (whitespace, suffix) = match &model.scheme {
            Scheme::Bytes => (model.pretokenizer == PreTokenizerSpec::WHITESPACE, None),
            Scheme::Chars { end_of_word_suffix, .. } => {
                (model.pretokenizer == PreTokenizerSpec::WHITESPACE, end_of_word_suffix.clone())
            }
        };
        let shown = shown_tokens(&model, &raw);
        let token_ids = TokenIndex::new(&raw, 0..raw.len() as u32);
        let mut symbol_ids = new_map();
        if let Some(alpha) = &model.alphabet {
            for (k, s) in alpha.iter().enumerate() {
                symbol_ids.insert(s.clone(), model.base_start() as u32 + k as u32);
            }
        }
        let to_int = model.ids.as_deref().map(internal_ids);
        let sp = sentencepiece_rules(&model);
        let mut enc = Encoder {
            to_ext: model.ids.clone(),
            to_int,
            base_start: model.base_start() as u32,
            unk: model.unk_id(),
            raw,
            shown,
            model,
            pretok,
            all_specials,
            ranks,
            byte_pair_ranks: Vec::new(),
            first_merge,
            token_ids,
            whole: PieceIds::new(std::iter::empty()),
            pair_table,
            symbol_ids,
            whitespace,
            suffix,
            sp,
            normalizer,
            batch_caches: Default::default(),
        };
        if matches!(enc.model.scheme, Scheme::Bytes) {
            enc.add_byte_level_tables(known_whole);
        }
        Ok(enc)
    }

    /// Byte-level models only: the rank of every pair of bytes, and the
    /// table of pieces that are one whole token (`known_whole` from a
    /// snapshot, else found now: `reachable`).
    fn add_byte_level_tables(&mut self, known_whole: Option<Vec<u32>>) {
        self.byte_pair_ranks = (0..1u32 << 16)
            .map(|xy| self.rank(self.base_start + (xy >> 8), self.base_start + (xy & 0xff)).0)
            .collect();
        let ids = match known_whole {
            Some(ids) => ids,
            None => self.reachable(),
        };
        self.whole = PieceIds::new(ids.iter().map(|&id| (self.raw.get(id as usize), id)));
    }

    /// The piece cache a tokenizer keeps for its many calls of encoding,
    /// seeded with `seed_pieces`.
    pub fn new_cache(&self) -> Cache {
        Cache::seeded_long_lived(self.seed_pieces().into_iter(), None)
    }

    /// `new_cache` holding at most `max_bytes` of slots (rounded down to a
    /// power of two of 64-byte slots, at least `cache::MIN_CACHE_BYTES`).
    pub fn new_cache_bounded(&self, max_bytes: usize) -> Cache {
        Cache::seeded_long_lived(self.seed_pieces().into_iter(), Some(max_bytes))
    }

    /// The memory `new_cache`'s cache may hold at most.
    pub fn default_cache_bytes(&self) -> usize {
        super::cache::default_cache_bytes(self.seed_pieces().len())
    }

    /// What a cache starts with: where pieces are looked up whole
    /// (`plain_bytes`), the pieces of two bytes or more that are one token
    /// (one byte never reaches the cache), highest ids first, so that the
    /// lowest are kept where two share a slot (see `cache`); else none.
    fn seed_pieces(&self) -> Vec<(&[u8], u32)> {
        if !self.plain_bytes() {
            return Vec::new();
        }
        self.whole_ids().iter().rev().map(|&id| (self.raw.get(id as usize), id)).filter(|(bytes, _)| bytes.len() > 1).collect()
    }

    /// Whether a piece's symbols are exactly its bytes (a bytes-scheme model
    /// that adds no space marker), so that `whole` and `byte_pair_ranks` apply.
    #[inline]
    pub(super) fn plain_bytes(&self) -> bool {
        !self.whitespace && !self.byte_pair_ranks.is_empty()
    }

    /// The ids `reachable` found, ascending (what a snapshot stores).
    pub(in crate::encode) fn whole_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.whole.ids().collect();
        ids.sort_unstable();
        ids
    }

    /// Tokens (bytes scheme) whose own bytes encode to exactly themselves.
    fn reachable(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let start = self.model.special_tokens.len();
        let mut syms = Vec::new();
        for i in start..self.raw.len() {
            let t = self.raw.get(i);
            // Long tokens are rare as whole pieces; checking them would cost
            // O(L log L) each (quadratic over a hostile chain of merges).
            if t.len() > 64 {
                continue;
            }
            syms.clear();
            syms.extend(t.iter().map(|&b| self.base_start + b as u32));
            self.bpe(&mut syms);
            if syms.len() == 1 && syms[0] == i as u32 {
                out.push(i as u32);
            }
        }
        out
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// One more than the largest id (external ids may leave gaps).
    pub fn vocab_size(&self) -> usize {
        match &self.to_int {
            Some(inv) => inv.len(),
            None => self.raw.len(),
        }
    }

    /// External id -> internal id, if the id exists.
    #[inline]
    pub(in crate::encode) fn internal(&self, id: u32) -> Option<u32> {
        match &self.to_int {
            Some(inv) => inv.get(id as usize).copied().filter(|&i| i != u32::MAX),
            None => ((id as usize) < self.raw.len()).then_some(id),
        }
    }

    #[inline]
    pub(super) fn external(&self, id: u32) -> u32 {
        match &self.to_ext {
            Some(map) => map[id as usize],
            None => id,
        }
    }

    pub fn id_to_token(&self, id: u32) -> Option<&[u8]> {
        self.internal(id).map(|i| self.raw.get(i as usize))
    }

    pub fn token_to_id(&self, token: &[u8]) -> Option<u32> {
        self.token_ids.get(&self.raw, token).map(|i| self.external(i))
    }

    /// The merges as (left, right) token bytes, in order.
    pub fn merge_bytes(&self) -> Vec<(&[u8], &[u8])> {
        self.model.merges.iter().map(|&(a, b)| (self.raw.get(a as usize), self.raw.get(b as usize))).collect()
    }

    pub fn special_tokens(&self) -> &[String] {
        &self.model.special_tokens
    }


    /// The id of the token `piece` is, if it is one that BPE reaches whole.
    #[inline]
    pub(super) fn whole_piece(&self, piece: &[u8], key: &PieceKey) -> Option<u32> {
        self.whole.get(piece, key, |id| self.raw.get(id as usize))
    }

    /// The bytes of one token as stored (no `▁` replacement).
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.id_to_token(id)
    }
}


/// Stored whole-piece ids, refusing any that is not a non-special token (a
/// snapshot is checksummed, so this only meets a foreign file).
fn checked_whole_ids(vocab: usize, specials: usize, ids: Vec<u32>) -> Result<Vec<u32>> {
    match ids.iter().find(|&&id| (id as usize) < specials || id as usize >= vocab) {
        Some(id) => Err(Error::model(format!("the encoder snapshot names token {id}, which is not a merged token of the model"))),
        None => Ok(ids),
    }
}
/// What each token decodes to: byte-level tokens are their own bytes; a
/// chars token shows `▁` (and the end-of-word suffix) as spaces, and a
/// special token its SentencePiece surface where it has one.
fn shown_tokens(model: &Model, raw: &Arena) -> Arena {
    let Scheme::Chars { end_of_word_suffix, .. } = &model.scheme else { return raw.clone() };
    let shown: Vec<Vec<u8>> = (0..raw.len())
        .map(|i| {
            let t = raw.get(i);
            if i < model.special_tokens.len() {
                return sentencepiece_surface(model, i).unwrap_or_else(|| t.to_vec());
            }
            let s = String::from_utf8_lossy(t).replace(SPACE_MARKER, " ");
            match end_of_word_suffix {
                Some(suf) => s.replace(suf.as_str(), " ").into_bytes(),
                None => s.into_bytes(),
            }
        })
        .collect();
    Arena::new(shown.iter().map(Vec::as_slice))
}

/// The SentencePiece rules a chars model keeps (byte fallback's ids, fused
/// unknowns, the dummy prefix); none for byte-level models.
fn sentencepiece_rules(model: &Model) -> SentencePieceRules {
    match &model.scheme {
        Scheme::Chars { fuse_unk, dummy_prefix, .. } => {
            SentencePieceRules { byte_ids: model.byte_token_ids(), fuse_unk: *fuse_unk, dummy_prefix: *dummy_prefix }
        }
        Scheme::Bytes => SentencePieceRules::default(),
    }
}

/// The inverse of a model's `ids` table: external id to internal index
/// (`u32::MAX` where no token has that id).
fn internal_ids(ids: &[u32]) -> Vec<u32> {
    let n = ids.iter().map(|&e| e as usize + 1).max().unwrap_or(0);
    let mut inv = vec![u32::MAX; n];
    for (i, &e) in ids.iter().enumerate() {
        inv[e as usize] = i as u32;
    }
    inv
}


/// How a special token reads back in SentencePiece-style models: a byte
/// token is its byte, a fused `unk_token` SentencePiece's ` ⁇ `.
fn sentencepiece_surface(model: &Model, i: usize) -> Option<Vec<u8>> {
    let Scheme::Chars { byte_fallback, fuse_unk, .. } = &model.scheme else { return None };
    let name = &model.special_tokens[i];
    if *fuse_unk && model.unk_id() == Some(i as u32) {
        return Some(" \u{2047} ".as_bytes().to_vec());
    }
    if *byte_fallback {
        return crate::model::piece_byte(name).map(|b| vec![b]);
    }
    None
}
