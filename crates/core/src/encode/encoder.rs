//! Exact encoding: texts -> special-token split -> pre-tokens -> merges by
//! rank, for one text or a batch on threads.

use super::index::TokenIndex;
use super::key::PieceKey;
use super::tables::{PairRanks, PieceIds};
use super::{Arena, Cache, Encoder, Merging, Prepared, SentencePieceRules, Specials, NO_RANK, SHORT};
use crate::util::{map_with_capacity, new_map, pack};
use crate::error::{Error, Result};
use crate::model::{Model, Scheme, SPACE_MARKER};
use crate::normalize;
use crate::pretok::{utf8_runs, PreTokenizer, PreTokenizerSpec, Segment, SpecialSplitter};
use std::collections::BinaryHeap;
use std::cmp::Reverse;

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
    pub(super) fn build(model: Model, prepared: Option<Prepared>) -> Result<Self> {
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
            Scheme::Bytes => (model.pretokenizer == PreTokenizerSpec::Whitespace, None),
            Scheme::Chars { end_of_word_suffix, .. } => {
                (model.pretokenizer == PreTokenizerSpec::Whitespace, end_of_word_suffix.clone())
            }
        };
        let shown = match &model.scheme {
            // Byte-level tokens decode to their own bytes.
            Scheme::Bytes => raw.clone(),
            Scheme::Chars { end_of_word_suffix, .. } => {
                let shown: Vec<Vec<u8>> = (0..raw.len())
                    .map(|i| {
                        let t = raw.get(i);
                        if i < model.special_tokens.len() {
                            return sentencepiece_surface(&model, i).unwrap_or_else(|| t.to_vec());
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
        };
        let token_ids = TokenIndex::new(&raw, 0..raw.len() as u32);
        let mut symbol_ids = new_map();
        if let Some(alpha) = &model.alphabet {
            for (k, s) in alpha.iter().enumerate() {
                symbol_ids.insert(s.clone(), model.base_start() as u32 + k as u32);
            }
        }
        let to_int = model.ids.as_ref().map(|ids| {
            let n = ids.iter().map(|&e| e as usize + 1).max().unwrap_or(0);
            let mut inv = vec![u32::MAX; n];
            for (i, &e) in ids.iter().enumerate() {
                inv[e as usize] = i as u32;
            }
            inv
        });
        let sp = match &model.scheme {
            Scheme::Chars { fuse_unk, dummy_prefix, .. } => {
                SentencePieceRules { byte_ids: model.byte_token_ids(), fuse_unk: *fuse_unk, dummy_prefix: *dummy_prefix }
            }
            Scheme::Bytes => SentencePieceRules::default(),
        };
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
            enc.byte_pair_ranks = (0..1u32 << 16)
                .map(|xy| enc.rank(enc.base_start + (xy >> 8), enc.base_start + (xy & 0xff)).0)
                .collect();
            let ids = match known_whole {
                Some(ids) => ids,
                None => enc.reachable(),
            };
            let whole = PieceIds::new(ids.iter().map(|&id| (enc.raw.get(id as usize), id)));
            enc.whole = whole;
        }
        Ok(enc)
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

    /// A seeded cache of a batch thread's size (`CachePool` copies it for
    /// a batch's threads).
    pub(super) fn seeded_for_batch(&self) -> Cache {
        Cache::seeded_for_batch(self.seed_pieces().into_iter())
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
    fn plain_bytes(&self) -> bool {
        !self.whitespace && !self.byte_pair_ranks.is_empty()
    }

    /// The ids `reachable` found, ascending (what a snapshot stores).
    pub(super) fn whole_ids(&self) -> Vec<u32> {
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
    pub(super) fn internal(&self, id: u32) -> Option<u32> {
        match &self.to_int {
            Some(inv) => inv.get(id as usize).copied().filter(|&i| i != u32::MAX),
            None => ((id as usize) < self.raw.len()).then_some(id),
        }
    }

    #[inline]
    fn external(&self, id: u32) -> u32 {
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

    /// Applies the model's merges to internal symbol ids in place (exact BPE).
    pub fn apply_merges(&self, syms: &mut Vec<u32>) {
        self.bpe(syms)
    }

    /// Bytes scheme: which adjacent byte pairs `(x, y)` occur inside some
    /// merged token (index `x * 256 + y`). Where a text has a pair that is
    /// not in this set, no merge can ever join the symbols on its two sides,
    /// so the two sides encode independently: exact BPE of the whole equals
    /// the concatenation of the parts' (see `encode_bytes_split`).
    pub fn joinable_byte_pairs(&self) -> Vec<bool> {
        let mut inside = vec![false; 1 << 16];
        let first = self.model.special_tokens.len() + self.model.base_len();
        for id in first..self.raw.len() {
            for w in self.raw.get(id).windows(2) {
                inside[(w[0] as usize) << 8 | w[1] as usize] = true;
            }
        }
        inside
    }

    /// Bytes scheme: exact BPE of the base symbols of `bytes`, appended to
    /// `out` as internal ids. The text is cut wherever the byte pair at the
    /// cut is not in `joinable` (from `joinable_byte_pairs`) and the parts
    /// are encoded one by one (a part that is a token is looked up whole);
    /// the result is the same as encoding the whole, in a fraction of the
    /// time for long texts (the short-piece path is quadratic).
    pub fn encode_bytes_split(&self, bytes: &[u8], joinable: &[bool], out: &mut Vec<u32>, scratch: &mut Vec<u32>) {
        let mut part = |p: &[u8], out: &mut Vec<u32>| {
            if p.len() == 1 {
                out.push(self.base_start + p[0] as u32);
                return;
            }
            if let Some(id) = self.whole_piece(p, &PieceKey::new(p)) {
                out.push(id);
                return;
            }
            scratch.clear();
            scratch.extend(p.iter().map(|&b| self.base_start + b as u32));
            self.bpe(scratch);
            out.extend_from_slice(scratch);
        };
        let mut start = 0;
        for i in 1..bytes.len() {
            if !joinable[(bytes[i - 1] as usize) << 8 | bytes[i] as usize] {
                part(&bytes[start..i], out);
                start = i;
            }
        }
        if start < bytes.len() {
            part(&bytes[start..], out);
        }
    }

    /// Applies merges by rank to `syms` in place.
    fn bpe(&self, syms: &mut Vec<u32>) {
        if syms.len() < 2 {
            return;
        }
        if syms.len() <= SHORT {
            self.bpe_short(syms)
        } else {
            self.bpe_long(syms)
        }
    }

    /// The id of the token `piece` is, if it is one that BPE reaches whole.
    #[inline]
    fn whole_piece(&self, piece: &[u8], key: &PieceKey) -> Option<u32> {
        self.whole.get(piece, key, |id| self.raw.get(id as usize))
    }

    /// The rank of merging `(a, b)` and the id it makes; `(NO_RANK, 0)` if none.
    #[inline]
    pub(super) fn rank(&self, a: u32, b: u32) -> (u32, u32) {
        match &self.pair_table {
            Some(t) => t.get(a, b).map_or((NO_RANK, 0), |r| (r, self.first_merge + r)),
            None => self.ranks.get(&pack(a, b)).copied().unwrap_or((NO_RANK, 0)),
        }
    }

    fn bpe_short(&self, syms: &mut Vec<u32>) {
        let mut r: Vec<(u32, u32)> = syms.windows(2).map(|w| self.rank(w[0], w[1])).collect();
        loop {
            let mut best = NO_RANK;
            let mut at = 0;
            for (i, &(rank, _)) in r.iter().enumerate() {
                if rank < best {
                    best = rank;
                    at = i;
                }
            }
            if best == NO_RANK {
                break;
            }
            syms[at] = r[at].1;
            syms.remove(at + 1);
            r.remove(at);
            if at < r.len() {
                r[at] = self.rank(syms[at], syms[at + 1]);
            }
            if at > 0 {
                r[at - 1] = self.rank(syms[at - 1], syms[at]);
            }
        }
    }

    /// Exact BPE of a bytes-scheme piece of 2..=SHORT bytes, appended to
    /// `out`: `bpe_short` on stack arrays (no allocation), with the first
    /// pass's ranks read from `byte_pair_ranks`. Same merges, same order.
    /// Most such pieces are short: their arrays are a quarter of the size,
    /// since initialising two arrays of SHORT took a tenth of this time.
    fn bpe_bytes_short(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() <= SHORT / 4 {
            self.bpe_bytes_within::<{ SHORT / 4 + LANE }>(piece, out)
        } else {
            self.bpe_bytes_within::<{ SHORT + LANE }>(piece, out)
        }
    }

    /// `bpe_bytes_short` for pieces of 2..=N - LANE bytes (the arrays have
    /// `LANE` spare elements for `remove_at`).
    fn bpe_bytes_within<const N: usize>(&self, piece: &[u8], out: &mut Vec<u32>) {
        let mut len = piece.len();
        debug_assert!((2..=N - LANE).contains(&len));
        let mut syms = [0u32; N];
        let mut ranks = [NO_RANK; N];
        for (i, &b) in piece.iter().enumerate() {
            syms[i] = self.base_start + b as u32;
        }
        for (i, w) in piece.windows(2).enumerate() {
            ranks[i] = self.byte_pair_ranks[(w[0] as usize) << 8 | w[1] as usize];
        }
        let ahead = self.pair_table.as_ref().filter(|t| t.prefetch_pays());
        if let Some(table) = ahead {
            for (i, &rank) in ranks[..len - 1].iter().enumerate() {
                if rank != NO_RANK {
                    prefetch_next_pairs(table, &syms[..len], i, self.first_merge + rank);
                }
            }
        }
        loop {
            // The lowest rank, leftmost among equals (ranks[..len - 1] are live).
            let mut best = NO_RANK;
            let mut at = 0;
            for (i, &rank) in ranks[..len - 1].iter().enumerate() {
                if rank < best {
                    best = rank;
                    at = i;
                }
            }
            if best == NO_RANK {
                break;
            }
            syms[at] = self.first_merge + best;
            remove_at(&mut syms, at + 1, len);
            remove_at(&mut ranks, at, len - 1);
            len -= 1;
            // The pairs on both sides of the new token, read together.
            match (&self.pair_table, at > 0, at + 1 < len) {
                (Some(table), true, true) => {
                    let (left, right) = table.get2((syms[at - 1], syms[at]), (syms[at], syms[at + 1]));
                    ranks[at - 1] = left.unwrap_or(NO_RANK);
                    ranks[at] = right.unwrap_or(NO_RANK);
                    if ahead.is_some() {
                        if let Some(rank) = left {
                            prefetch_next_pairs(table, &syms[..len], at - 1, self.first_merge + rank);
                        }
                        if let Some(rank) = right {
                            prefetch_next_pairs(table, &syms[..len], at, self.first_merge + rank);
                        }
                    }
                }
                _ => {
                    if at + 1 < len {
                        ranks[at] = self.rank(syms[at], syms[at + 1]).0;
                    }
                    if at > 0 {
                        ranks[at - 1] = self.rank(syms[at - 1], syms[at]).0;
                    }
                }
            }
        }
        out.extend_from_slice(&syms[..len]);
    }

    /// Merges the pair `(a, b)` starting at node `i` of the linked list and
    /// queues the two new neighbour pairs (shared by exact BPE and dropout).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn merge_at(
        &self,
        i: u32,
        a: u32,
        b: u32,
        syms: &mut [u32],
        next: &mut [u32],
        prev: &mut [u32],
        alive: &mut [bool],
        heap: &mut BinaryHeap<Reverse<(u32, u32, u32, u32)>>,
    ) {
        let iu = i as usize;
        let j = next[iu];
        let (_, new_id) = self.rank(a, b);
        syms[iu] = new_id;
        alive[j as usize] = false;
        let nj = next[j as usize];
        next[iu] = nj;
        if nj != u32::MAX {
            prev[nj as usize] = i;
            let (r2, _) = self.rank(new_id, syms[nj as usize]);
            if r2 != NO_RANK {
                heap.push(Reverse((r2, i, new_id, syms[nj as usize])));
            }
        }
        let p = prev[iu];
        if p != u32::MAX {
            let (r2, _) = self.rank(syms[p as usize], new_id);
            if r2 != NO_RANK {
                heap.push(Reverse((r2, p, syms[p as usize], new_id)));
            }
        }
    }

    fn bpe_long(&self, syms: &mut Vec<u32>) {
        let n = syms.len();
        let mut next: Vec<u32> = (1..=n as u32).collect();
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        next[n - 1] = u32::MAX;
        let mut heap: BinaryHeap<Reverse<(u32, u32, u32, u32)>> = BinaryHeap::new();
        // (rank, left position, left symbol, right symbol)
        for i in 0..n - 1 {
            let (rank, _) = self.rank(syms[i], syms[i + 1]);
            if rank != NO_RANK {
                heap.push(Reverse((rank, i as u32, syms[i], syms[i + 1])));
            }
        }
        let mut alive = vec![true; n];
        while let Some(Reverse((_, i, a, b))) = heap.pop() {
            let iu = i as usize;
            if !alive[iu] || syms[iu] != a {
                continue;
            }
            let j = next[iu];
            if j == u32::MAX || syms[j as usize] != b {
                continue;
            }
            self.merge_at(i, a, b, syms, &mut next, &mut prev, &mut alive, &mut heap);
        }
        let mut out = Vec::with_capacity(n);
        let mut i = 0u32;
        while i != u32::MAX {
            out.push(syms[i as usize]);
            i = next[i as usize];
        }
        *syms = out;
    }

    /// The base symbols of one pre-token (its raw bytes).
    fn piece_symbols(&self, piece: &[u8], syms: &mut Vec<u32>) {
        syms.clear();
        match &self.model.scheme {
            Scheme::Bytes => {
                if self.whitespace {
                    syms.push(self.base_start + b' ' as u32);
                }
                syms.extend(piece.iter().map(|&b| self.base_start + b as u32));
            }
            Scheme::Chars { .. } => {
                let text = String::from_utf8_lossy(piece);
                let unk = self.unk.unwrap_or(0);
                let mut buf = String::new();
                let lookup = |s: &str| self.symbol_ids.get(s).copied().unwrap_or(unk);
                if self.sp.byte_ids.is_some() || self.sp.fuse_unk {
                    return self.sentencepiece_symbols(&text, syms);
                }
                match &self.suffix {
                    Some(suf) => {
                        let n = text.chars().count();
                        for (i, c) in text.chars().enumerate() {
                            buf.clear();
                            buf.push(c);
                            if i + 1 == n {
                                buf.push_str(suf);
                            }
                            syms.push(lookup(&buf));
                        }
                    }
                    None => {
                        if self.whitespace {
                            syms.push(lookup(SPACE_MARKER));
                        }
                        for c in text.chars() {
                            if c == ' ' {
                                syms.push(lookup(SPACE_MARKER));
                            } else {
                                buf.clear();
                                buf.push(c);
                                syms.push(lookup(&buf));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Chars scheme, `▁` prefix mode, with byte fallback or fused unknowns:
    /// an unknown character becomes its UTF-8 bytes' tokens, or one
    /// `unk_token` for a whole run (as SentencePiece: merges never involve
    /// either, so doing it before merging gives the same ids).
    fn sentencepiece_symbols(&self, text: &str, syms: &mut Vec<u32>) {
        let unk = self.unk.unwrap_or(0);
        let push = |id: Option<u32>, c: char, syms: &mut Vec<u32>| match (id, &self.sp.byte_ids) {
            (Some(id), _) => syms.push(id),
            (None, Some(bytes)) => {
                let mut utf8 = [0u8; 4];
                syms.extend(c.encode_utf8(&mut utf8).bytes().map(|b| bytes[b as usize]));
            }
            (None, None) => {
                if !(self.sp.fuse_unk && syms.last() == Some(&unk)) {
                    syms.push(unk);
                }
            }
        };
        if self.whitespace {
            push(self.symbol_ids.get(SPACE_MARKER).copied(), '\u{2581}', syms);
        }
        let mut buf = String::new();
        for c in text.chars() {
            let id = if c == ' ' {
                self.symbol_ids.get(SPACE_MARKER).copied()
            } else {
                buf.clear();
                buf.push(c);
                self.symbol_ids.get(buf.as_str()).copied()
            };
            push(id, if c == ' ' { '\u{2581}' } else { c }, syms);
        }
    }

    /// Encodes one pre-token (its raw bytes, whose key is `key`) and appends the ids.
    pub(super) fn encode_piece(&self, piece: &[u8], key: &PieceKey, out: &mut Vec<u32>, how: &mut Merging) {
        let cache = match how {
            Merging::Dropout(d) => {
                let mut syms = Vec::with_capacity(piece.len() + 1);
                self.piece_symbols(piece, &mut syms);
                self.bpe_dropout(&mut syms, d);
                out.extend_from_slice(&syms);
                return;
            }
            Merging::Exact(cache) => cache,
        };
        // `whole` is keyed by a piece's own bytes, so it only applies where
        // the symbols are exactly those bytes (no added space marker).
        let plain_bytes = self.plain_bytes();
        if plain_bytes && piece.len() == 1 {
            out.push(self.base_start + piece[0] as u32);
            return;
        }
        // The cache first: its one-line look-up is cheaper than the whole-piece
        // table's three (slot, offsets, token bytes), so whole pieces are
        // cached too.
        if let Some(c) = &cache {
            match c.get(key) {
                // Most pieces are one token: no copy loop (or call) for them.
                Some(&[id]) => return out.push(id),
                Some(ids) => return out.extend_from_slice(ids),
                None => {}
            }
        }
        let start = out.len();
        if plain_bytes {
            if let Some(id) = self.whole_piece(piece, key) {
                out.push(id);
            } else if piece.len() <= SHORT {
                self.bpe_bytes_short(piece, out);
            }
        }
        if out.len() == start {
            let mut syms = Vec::with_capacity(piece.len() + 1);
            self.piece_symbols(piece, &mut syms);
            self.bpe(&mut syms);
            out.extend_from_slice(&syms);
        }
        if let Some(c) = cache {
            c.put(key, &out[start..]);
        }
    }

    /// Encodes one pre-token (a piece the pre-tokenizer produced, e.g. a
    /// counted word type) with exact BPE, appending its ids.
    pub fn encode_pretoken(&self, piece: &[u8], out: &mut Vec<u32>, cache: Option<&mut Cache>) {
        self.encode_piece(piece, &PieceKey::new(piece), out, &mut Merging::Exact(cache));
    }

    /// Encodes text with no special handling, normalized first when the
    /// model has a normalizer.
    fn encode_plain(&self, text: &[u8], out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
        match &self.normalizer {
            Some(n) => self.encode_normalized(n.normalize(text).as_bytes(), out, how),
            None => self.encode_normalized(text, out, how),
        }
    }

    /// Encodes (normalized) text with no special handling (bytes that are
    /// not valid UTF-8 are kept as their own pieces, as in training).
    ///
    /// Each piece is encoded `LOOKAHEAD` pieces after the pre-tokenizer gave
    /// it, and its cache and whole-piece slots are prefetched when it is
    /// given: look-ups in tables of megabytes mostly wait on memory, and
    /// this way several of those waits overlap instead of following each other.
    fn encode_normalized(&self, text: &[u8], out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
        utf8_runs(text, &mut |run| match run {
            Ok(s) => self.encode_run(s, out, how),
            Err(bad) => {
                let mut none = Merging::Exact(None);
                let key = PieceKey::new(bad);
                self.encode_piece(bad, &key, out, if matches!(how, Merging::Dropout(_)) { &mut *how } else { &mut none });
                Ok(())
            }
        })
    }

    /// `encode_normalized` of a run of valid UTF-8 (see there).
    fn encode_run(&self, s: &str, out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
        const LOOKAHEAD: usize = 8;
        let plain_bytes = self.plain_bytes();
        let mut waiting: [(&[u8], PieceKey); LOOKAHEAD] = [(&[], PieceKey::new(&[])); LOOKAHEAD];
        let mut given = 0usize;
        self.pretok.split(s, &mut |piece| {
            let piece = piece.as_bytes();
            let key = PieceKey::new(piece);
            if piece.len() > 1 {
                if let Merging::Exact(Some(cache)) = how {
                    cache.prefetch(&key);
                }
                if plain_bytes {
                    self.whole.prefetch(&key);
                }
            }
            let slot = given % LOOKAHEAD;
            if given >= LOOKAHEAD {
                let (p, k) = &waiting[slot];
                self.encode_piece(p, k, out, how);
            }
            waiting[slot] = (piece, key);
            given += 1;
        })?;
        for k in given.saturating_sub(LOOKAHEAD)..given {
            let (p, key) = &waiting[k % LOOKAHEAD];
            self.encode_piece(p, key, out, how);
        }
        Ok(())
    }

    /// Encodes `text`, handling special tokens as `specials` says.
    pub fn encode(&self, text: &[u8], specials: &Specials, cache: Option<&mut Cache>) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_into(text, specials, &mut out, cache)?;
        Ok(out)
    }

    pub fn encode_into(&self, text: &[u8], specials: &Specials, out: &mut Vec<u32>, cache: Option<&mut Cache>) -> Result<()> {
        self.encode_with(text, specials, out, &mut Merging::Exact(cache))
    }

    pub(super) fn encode_with(&self, text: &[u8], specials: &Specials, out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
        let start = out.len();
        self.encode_internal(text, specials, out, how)?;
        self.externalize(&mut out[start..]);
        Ok(())
    }

    /// Internal ids -> external ids, in place.
    fn externalize(&self, ids: &mut [u32]) {
        if let Some(map) = &self.to_ext {
            for id in ids {
                *id = map[*id as usize];
            }
        }
    }

    /// `encode` of a string: where nothing but the pre-tokenizer looks at
    /// the text (no special token to find, no normalizer, no dummy prefix:
    /// every byte-level model), it skips checking again that the text is
    /// UTF-8, a fiftieth of encoding a line.
    pub fn encode_str(&self, text: &str, specials: &Specials, cache: Option<&mut Cache>) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_str_into(text, specials, &mut out, cache)?;
        Ok(out)
    }

    /// `encode_str`, appending to `out`.
    pub fn encode_str_into(&self, text: &str, specials: &Specials, out: &mut Vec<u32>, cache: Option<&mut Cache>) -> Result<()> {
        let no_specials = matches!(specials, Specials::Ordinary) || self.all_specials.is_empty();
        if !no_specials || self.normalizer.is_some() || self.sp.dummy_prefix {
            return self.encode_into(text.as_bytes(), specials, out, cache);
        }
        let start = out.len();
        self.encode_run(text, out, &mut Merging::Exact(cache))?;
        self.externalize(&mut out[start..]);
        Ok(())
    }

    /// `encode_plain` for the text's first segment: SentencePiece's dummy
    /// prefix (a `▁` before the text, even before a special token) goes there.
    fn encode_start(&self, text: &[u8], out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
        if !self.sp.dummy_prefix {
            return self.encode_plain(text, out, how);
        }
        // SentencePiece adds the prefix to the normalized text.
        let normalized;
        let text = match &self.normalizer {
            Some(n) => {
                normalized = n.normalize(text);
                normalized.as_bytes()
            }
            None => text,
        };
        let mut prefixed = Vec::with_capacity(text.len() + 1);
        prefixed.push(b' ');
        prefixed.extend_from_slice(text);
        self.encode_normalized(&prefixed, out, how)
    }

    fn encode_internal(&self, text: &[u8], specials: &Specials, out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        match specials {
            Specials::Ordinary => self.encode_start(text, out, how),
            Specials::Rules { allowed, disallowed } => {
                if self.all_specials.is_empty() {
                    return self.encode_start(text, out, how);
                }
                // Allowed specials become their ids; disallowed ones are an
                // error; any other special text stays ordinary text.
                let mut pending_start = 0usize;
                let mut pos = 0usize;
                let start = out.len();
                self.all_specials.split::<Error>(text, &mut |seg| {
                    match seg {
                        Segment::Text(t) => pos += t.len(),
                        Segment::Special(k) => {
                            let name = &self.model.special_tokens[k];
                            if allowed.get(k).copied().unwrap_or(false) {
                                if out.len() == start && pending_start == 0 {
                                    self.encode_start(&text[..pos], out, how)?;
                                } else {
                                    self.encode_plain(&text[pending_start..pos], out, how)?;
                                }
                                out.push(k as u32);
                                pending_start = pos + name.len();
                            } else if disallowed.get(k).copied().unwrap_or(false) {
                                return Err(Error::special(format!(
                                    "the text contains the special token {name:?} at byte {pos}; to encode it as its id pass allowed_special={{{name:?}}} (or \"all\"); to encode it as plain text pass disallowed_special=() or use encode_ordinary()"
                                )));
                            }
                            pos += name.len();
                        }
                    }
                    Ok(())
                })?;
                if pending_start == 0 {
                    return self.encode_start(text, out, how);
                }
                self.encode_plain(&text[pending_start..], out, how)
            }
        }
    }

    /// The bytes of one token as stored (no `▁` replacement).
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.id_to_token(id)
    }
}

/// Elements `remove_at` moves at a time.
const LANE: usize = 8;

/// Starts loading the pair-table entries of the two pairs that merging
/// `syms[i]` and `syms[i + 1]` into `merged` would make with its neighbours.
///
/// A merge waits on those look-ups: the table (megabytes) is mostly out of
/// the core's caches by the time a piece is merged, as the piece tables'
/// look-ups for the pieces around it pass through them. Fetched when the
/// pair's rank is first known, the entries of every pair that may merge
/// next are on their way together, and the merges that do happen find most
/// of theirs loaded. Whether a pair merges is not known yet: some of these
/// loads are for nothing. Encoding 50,000 held-apart lines one by one in
/// Rust with o200k_base (fresh caches, alternating, medians of 20-30)
/// took 10-12% less time with these fetches: about half from those made
/// when a piece's byte pairs are ranked, the rest from those made after
/// each merge. Fetching also for merges at a piece's ends gained nothing,
/// and fetching the byte-pair ranks of every piece as it is split cost
/// more than it saved. Smaller tables gain nothing (`prefetch_pays`).
#[inline(always)]
fn prefetch_next_pairs(table: &PairRanks, syms: &[u32], i: usize, merged: u32) {
    if i > 0 {
        table.prefetch(syms[i - 1], merged);
    }
    if let Some(&right) = syms.get(i + 2) {
        table.prefetch(merged, right);
    }
}

/// Removes `a[at]` of the live `a[..len]`, moving the rest down by one,
/// `LANE` elements at a time (whatever follows `len - 1` is left undefined;
/// `len + LANE <= N`). `copy_within` called `memmove` for a few bytes, twice
/// per merge: 7% of `encode`; a lane is one vector load and store.
#[inline(always)]
fn remove_at<const N: usize>(a: &mut [u32; N], at: usize, len: usize) {
    let mut i = at;
    while i + 1 < len {
        let lane: [u32; LANE] = std::array::from_fn(|k| a[i + 1 + k]);
        a[i..i + LANE].copy_from_slice(&lane);
        i += LANE;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretok::PreTokenizerSpec;

    #[test]
    fn byte_fallback_and_fused_unknowns() {
        let chars = |byte_fallback: bool, fuse_unk: bool| {
            let mut specials = vec!["<unk>".to_string()];
            if byte_fallback {
                specials.extend((0..=255u8).map(crate::model::byte_piece));
            }
            let scheme = Scheme::Chars {
                unk_token: "<unk>".into(),
                end_of_word_suffix: None,
                character_coverage: 1.0,
                byte_fallback,
                fuse_unk,
                dummy_prefix: false,
                normalizer: None,
            };
            let alphabet = vec!["\u{2581}".to_string(), "a".to_string()];
            Encoder::new(Model::new(scheme, PreTokenizerSpec::Whitespace, specials, Some(alphabet))).unwrap()
        };
        let ids = |enc: &Encoder, text: &str| enc.encode(text.as_bytes(), &Specials::Ordinary, None).unwrap();
        // "a é€": ▁ a ▁ é(2 bytes) €(3 bytes); ▁ and a are ids 257 and 258.
        let bf = chars(true, false);
        assert_eq!(ids(&bf, "a é€"), vec![257, 258, 257, 1 + 0xC3, 1 + 0xA9, 1 + 0xE2, 1 + 0x82, 1 + 0xAC]);
        assert_eq!(bf.decode_bytes(&ids(&bf, "a é€")).unwrap(), "a é€".as_bytes());
        assert_eq!(ids(&bf, "<0x41>"), ids(&bf, "<0x41>")); // text, never the byte token: no panic either
        let fused = chars(false, true);
        assert_eq!(ids(&fused, "a é€a"), vec![1, 2, 1, 0, 2]);
        assert_eq!(fused.decode_bytes(&[0]).unwrap(), " \u{2047} ".as_bytes());
        assert_eq!(ids(&chars(false, false), "é€"), vec![1, 0, 0]);
    }

    #[test]
    fn seeded_caches_give_the_ids_encoding_without_a_cache_gives() {
        let model = |pretok: PreTokenizerSpec| {
            let mut m = Model::new(Scheme::Bytes, pretok, vec![], None);
            let (a, b, c, sp) = (b'a' as u32, b'b' as u32, b'c' as u32, b' ' as u32);
            // 256 ab, 257 " ab", 258 abc, 259 ba, 260 " a" (after 257, so " ab" is reached whole)
            m.merges = vec![(a, b), (sp, 256), (256, c), (b, a), (sp, a)];
            Encoder::new(m).unwrap()
        };
        let texts = ["ab abc ba abab", " ab ab  cab", "abcabc a b c", "ba ba ba", ""];
        for pretok in [PreTokenizerSpec::Gpt2, PreTokenizerSpec::Whitespace] {
            let enc = model(pretok.clone());
            let mut cache = enc.new_cache();
            // Where pieces are looked up whole, a token's piece is in the cache before any text.
            let seeded = cache.get(&PieceKey::new(b" ab"));
            assert_eq!(seeded, enc.plain_bytes().then_some(&[257u32][..]), "{pretok:?}");
            for _ in 0..2 {
                for text in texts {
                    let uncached = enc.encode(text.as_bytes(), &Specials::Ordinary, None).unwrap();
                    let cached = enc.encode(text.as_bytes(), &Specials::Ordinary, Some(&mut cache)).unwrap();
                    assert_eq!(cached, uncached, "{pretok:?} {text:?}");
                }
            }
        }
    }

    #[test]
    fn long_and_short_paths_agree() {
        // Merges over "ab" repeated: (a,b) -> 256, (256,256) -> 257, ...
        let mut m = Model::new(Scheme::Bytes, PreTokenizerSpec::None, vec![], None);
        let a = b'a' as u32;
        let b = b'b' as u32;
        m.merges = vec![(a, b), (256, 256), (257, 257), (a, a)];
        let enc = Encoder::new(m).unwrap();
        for n in [1usize, 2, 3, 7, 11, 20, 45, 50, 97, 200, 1001] {
            let text: Vec<u8> = b"ab".iter().cycle().take(2 * n).copied().chain(b"aaa".iter().copied()).collect();
            let mut s1: Vec<u32> = text.iter().map(|&c| c as u32).collect();
            let mut s2 = s1.clone();
            enc.bpe_short(&mut s1);
            enc.bpe_long(&mut s2);
            assert_eq!(s1, s2, "n={n}");
            if text.len() <= SHORT {
                let mut s3 = Vec::new();
                enc.bpe_bytes_short(&text, &mut s3);
                assert_eq!(s1, s3, "n={n}");
            }
            assert_eq!(enc.decode_bytes(&s1).unwrap(), text);
        }
    }

    #[test]
    fn split_encoding_equals_whole_encoding() {
        // Merges that make tokens across spaces and punctuation, over a small
        // alphabet, so texts have both joinable and unjoinable byte pairs.
        let mut m = Model::new(Scheme::Bytes, PreTokenizerSpec::None, vec!["<s>".into()], None);
        let id = |c: u8| 1 + c as u32;
        let t = |k: u32| 257 + k;
        m.merges = vec![
            (id(b'a'), id(b'b')),   // t0 ab
            (id(b' '), t(0)),       // t1 " ab"
            (id(b'c'), id(b'.')),   // t2 c.
            (t(1), t(1)),           // t3 " ab ab"
            (id(b'b'), id(b'c')),   // t4 bc
            (t(2), id(b' ')),       // t5 "c. "
            (id(b'a'), id(b'a')),   // t6 aa
            (t(6), id(b'a')),       // t7 aaa
        ];
        let enc = Encoder::new(m).unwrap();
        let joinable = enc.joinable_byte_pairs();
        assert!(joinable[(b'a' as usize) << 8 | b'b' as usize]);
        assert!(!joinable[(b'b' as usize) << 8 | b'a' as usize]);
        let mut state = 7u64;
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        for _ in 0..3000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (state >> 58) as usize + 1;
            let text: Vec<u8> = (0..len).map(|k| b"abc. a"[((state >> (k % 50)) % 6) as usize]).collect();
            let mut whole: Vec<u32> = text.iter().map(|&c| id(c)).collect();
            enc.bpe(&mut whole);
            out.clear();
            enc.encode_bytes_split(&text, &joinable, &mut out, &mut scratch);
            assert_eq!(out, whole, "{:?}", String::from_utf8_lossy(&text));
        }
    }
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
