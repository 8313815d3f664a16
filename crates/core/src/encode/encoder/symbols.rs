//! A piece's base symbols, the ids merging starts from: its bytes (bytes
//! scheme) or its characters (chars scheme, with SentencePiece's byte
//! fallback and fused unknowns).

use crate::encode::Encoder;
use crate::model::{Scheme, SPACE_MARKER};

impl Encoder {

    /// The base symbols of one pre-token (its raw bytes).
    pub(super) fn piece_symbols(&self, piece: &[u8], syms: &mut Vec<u32>) {
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
}
