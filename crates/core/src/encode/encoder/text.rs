//! Encoding entry points: a text (bytes or `str`) -> its special tokens
//! split off -> pre-tokens -> each piece's ids (from the cache, the
//! whole-piece table, or merging), then internal ids -> external.

use crate::encode::key::PieceKey;
use crate::encode::{Cache, Encoder, Merging, Specials, SHORT};
use crate::error::{Error, Result};
use crate::pretok::{utf8_runs, Segment};

impl Encoder {
    /// Encodes `text`, handling special tokens as `specials` says.
    pub fn encode(&self, text: &[u8], specials: &Specials, cache: Option<&mut Cache>) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_into(text, specials, &mut out, cache)?;
        Ok(out)
    }

    pub fn encode_into(&self, text: &[u8], specials: &Specials, out: &mut Vec<u32>, cache: Option<&mut Cache>) -> Result<()> {
        self.encode_with(text, specials, out, &mut Merging::Exact(cache))
    }

    pub(in crate::encode) fn encode_with(&self, text: &[u8], specials: &Specials, out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
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
            match c.get(key, piece) {
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
            c.put(key, piece, &out[start..]);
        }
    }

    /// Encodes one pre-token (a piece the pre-tokenizer produced, e.g. a
    /// counted word type) with exact BPE, appending its ids.
    pub fn encode_pretoken(&self, piece: &[u8], out: &mut Vec<u32>, cache: Option<&mut Cache>) {
        self.encode_piece(piece, &PieceKey::new(piece), out, &mut Merging::Exact(cache));
    }

    /// Encodes text with no special handling, normalized first when the
    /// model has a normalizer.
    pub(super) fn encode_plain(&self, text: &[u8], out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
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
    pub(super) fn encode_normalized(&self, text: &[u8], out: &mut Vec<u32>, how: &mut Merging) -> Result<()> {
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

}
