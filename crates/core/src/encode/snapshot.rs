//! Encoder snapshots: what a pickled `Tokenizer` carries.
//!
//! A snapshot holds exactly what a saved model holds (its JSON, with the
//! merges and their counts as binary arrays: parsing 200k JSON pairs was a
//! fifth of the load) plus the tables the encoder derives from the model at
//! real cost (`Prepared`): every token's bytes and the tokens a whole piece
//! may map to directly (one BPE run per token to find). For a 200k
//! vocabulary those were nearly all the time it took to load. The rest
//! (rank table, token index, pre-tokenizer) is rebuilt.
//!
//! The snapshot is trusted as the encoder's own output: a CRC-32 catches
//! damage, and the tables are checked for shape (token count, lengths, id
//! ranges) so that foreign bytes are an error and never unsafe, but the
//! model's merges are not re-derived. (Pickles are trusted input anyway:
//! unpickling can run arbitrary code.)
//!
//! Layout, little-endian, each section a u64 count then its items:
//! `MAGIC` | model JSON bytes, merges and counts left empty | merges (u32
//! pairs) | merge counts (u64) | token lengths (u32) | token bytes |
//! whole-piece ids (u32) | CRC-32 of all before (u32)

use super::{Arena, Encoder, Prepared};
use crate::error::{Error, Result};
use crate::model::Model;

const MAGIC: &[u8; 8] = b"BPFSNP01";

impl Encoder {
    /// The snapshot bytes (see the module docs).
    pub fn to_snapshot(&self) -> Result<Vec<u8>> {
        let model = self.model();
        let head = Model { merges: Vec::new(), merge_counts: Vec::new(), ..model.clone() };
        let json = head.to_json()?;
        let (data, lengths) = self.raw.parts();
        let whole = self.whole_ids();
        let mut out = Vec::with_capacity(json.len() + data.len() + 4 * (self.raw.len() + whole.len()) + 48);
        out.extend_from_slice(MAGIC);
        put_bytes(&mut out, &json);
        put_u32s(&mut out, model.merges.len(), model.merges.iter().flat_map(|&(a, b)| [a, b]));
        put_count(&mut out, model.merge_counts.len());
        for c in &model.merge_counts {
            out.extend_from_slice(&c.to_le_bytes());
        }
        put_u32s(&mut out, self.raw.len(), lengths);
        put_bytes(&mut out, data);
        put_u32s(&mut out, whole.len(), whole.iter().copied());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// An encoder from `to_snapshot`'s bytes, equal to `Encoder::new` of the
    /// same model. Damaged or foreign bytes are a `ModelFormat` error.
    pub fn from_snapshot(data: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::model(format!("not a bpeforge encoder snapshot: {what}"));
        let body_len = data.len().checked_sub(4).ok_or_else(|| bad("too short"))?;
        let (body, crc) = data.split_at(body_len);
        if !body.starts_with(MAGIC) {
            return Err(bad("wrong header"));
        }
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(bad("checksum mismatch (damaged)"));
        }
        let mut rest = &body[MAGIC.len()..];
        let json = take_bytes(&mut rest).ok_or_else(|| bad("truncated model"))?;
        let merges = take_items(&mut rest, 8).ok_or_else(|| bad("truncated merges"))?;
        let counts = take_items(&mut rest, 8).ok_or_else(|| bad("truncated merge counts"))?;
        let lengths = take_u32s(&mut rest).ok_or_else(|| bad("truncated token lengths"))?;
        let tokens = take_bytes(&mut rest).ok_or_else(|| bad("truncated tokens"))?;
        let whole = take_u32s(&mut rest).ok_or_else(|| bad("truncated whole-piece ids"))?;
        if !rest.is_empty() {
            return Err(bad("trailing bytes"));
        }
        let raw = Arena::from_lengths(tokens.to_vec(), u32s(lengths)).ok_or_else(|| bad("token lengths do not add up"))?;
        let prepared = Prepared { raw, whole: u32s(whole).collect() };
        let mut model = Model::parse_json(json)?;
        let pairs: Vec<u32> = u32s(merges).collect();
        model.merges = pairs.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        model.merge_counts = counts.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        Self::build(model, Some(prepared))
    }
}

fn put_count(out: &mut Vec<u8>, count: usize) {
    out.extend_from_slice(&(count as u64).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_count(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// `count` items, each written as one or more u32s (merges are two).
fn put_u32s(out: &mut Vec<u8>, count: usize, items: impl Iterator<Item = u32>) {
    put_count(out, count);
    for x in items {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn take<'a>(rest: &mut &'a [u8], n: u64) -> Option<&'a [u8]> {
    let n = usize::try_from(n).ok().filter(|&n| n <= rest.len())?;
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Some(head)
}

fn take_count(rest: &mut &[u8]) -> Option<u64> {
    take(rest, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

fn take_bytes<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = take_count(rest)?;
    take(rest, n)
}

/// A section of u32s, as raw bytes (4 per item).
fn take_u32s<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    take_items(rest, 4)
}

/// A section of `size`-byte items, as raw bytes.
fn take_items<'a>(rest: &mut &'a [u8], size: u64) -> Option<&'a [u8]> {
    let n = take_count(rest)?;
    take(rest, n.checked_mul(size)?)
}

fn u32s(raw: &[u8]) -> impl ExactSizeIterator<Item = u32> + '_ {
    raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::Specials;
    use crate::model::Scheme;
    use crate::pretok::PreTokenizerSpec;

    fn sample(scheme: Scheme) -> Encoder {
        let chars = matches!(scheme, Scheme::Chars { .. });
        let specials = if chars { vec!["<unk>".to_string()] } else { vec!["<s>".to_string()] };
        let alphabet = chars.then(|| ["a", "b", "c", " "].map(String::from).to_vec());
        let mut m = Model::new(scheme, PreTokenizerSpec::GPT2, specials, alphabet);
        let base = |ch: u8| if chars { 1 + b"abc ".iter().position(|&x| x == ch).unwrap() as u32 } else { 1 + ch as u32 };
        let (a, b, c) = (base(b'a'), base(b'b'), base(b'c'));
        let first = m.base_start() as u32 + m.base_len() as u32;
        // ca, ab, then "cab" = c+ab: its own bytes merge to ca+b first, so it
        // is not reachable and the snapshot must keep it out; "abc" is.
        m.merges = vec![(c, a), (a, b), (c, first + 1), (first + 1, c), (b, c)];
        Encoder::new(m).unwrap()
    }

    #[test]
    fn round_trip_equals_the_original() {
        let chars = Scheme::Chars {
            unk_token: "<unk>".into(),
            end_of_word_suffix: None,
            character_coverage: 1.0,
            byte_fallback: false,
            fuse_unk: false,
            dummy_prefix: false,
            normalizer: None,
        };
        for enc in [sample(Scheme::Bytes), sample(chars)] {
            let snap = enc.to_snapshot().unwrap();
            let back = Encoder::from_snapshot(&snap).unwrap();
            assert_eq!(back.whole_ids(), enc.whole_ids());
            assert_eq!(back.model().to_json().unwrap(), enc.model().to_json().unwrap());
            for text in ["abc cab abcab", "cabc bcab", "<s>abc"] {
                let ids = |e: &Encoder| e.encode(text.as_bytes(), &Specials::Ordinary, None).unwrap();
                assert_eq!(ids(&back), ids(&enc), "{text}");
                assert_eq!(back.decode_bytes(&ids(&back)).unwrap(), enc.decode_bytes(&ids(&enc)).unwrap());
            }
        }
        let bytes = sample(Scheme::Bytes);
        assert!(!bytes.whole_ids().contains(&259) && bytes.whole_ids().contains(&260));
    }

    #[test]
    fn damaged_snapshots_are_errors_not_panics() {
        let snap = sample(Scheme::Bytes).to_snapshot().unwrap();
        let mut flipped = snap.clone();
        flipped[20] ^= 1;
        let resealed = |mut body: Vec<u8>| {
            let crc = crc32fast::hash(&body);
            body.extend_from_slice(&crc.to_le_bytes());
            body
        };
        // A whole-piece id past the vocabulary, with a valid checksum.
        let mut bad_id = snap[..snap.len() - 8].to_vec();
        bad_id.extend_from_slice(&9999u32.to_le_bytes());
        let bad_id = resealed(bad_id);
        for data in [&b""[..], &snap[..10], &snap[..snap.len() - 1], &flipped, &bad_id, b"BPFSNP01 garbage"] {
            let err = Encoder::from_snapshot(data).err().expect("an error");
            assert_eq!(err.kind(), crate::error::ErrorKind::ModelFormat, "{}", err.message());
        }
    }
}
