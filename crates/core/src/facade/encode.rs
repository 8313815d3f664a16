//! What to encode into an ids file, one request for text files and for
//! texts a caller feeds.

use crate::encode::file::{encode_file, encode_source, IdFormat};
use crate::encode::{Encoder, Specials};
use crate::error::Result;
use crate::observe::{EncodeStats, Observer};
use crate::source::Source;
use std::path::{Path, PathBuf};

/// The texts an ids file is written from.
pub enum EncodeFrom<'a> {
    /// Every line of text files (with `text_field`, that field of each
    /// line's JSON object).
    Files { paths: &'a [PathBuf], text_field: Option<&'a str> },
    /// The chunks of a caller's source, pulled on the calling thread
    /// between the blocks written; `total`: the input's bytes, if known,
    /// for the progress.
    Source { source: &'a mut dyn Source, total: Option<u64> },
}

impl EncodeFrom<'_> {
    /// Encodes the texts into `dst` in `format` (text `i` of the output
    /// is text `i` of the input; see `encode::file`).
    pub fn encode(self, enc: &Encoder, dst: &Path, format: IdFormat, specials: &Specials, threads: usize, observer: &mut dyn Observer) -> Result<EncodeStats> {
        match self {
            EncodeFrom::Files { paths, text_field } => encode_file(enc, paths, dst, format, specials, threads, text_field, observer),
            EncodeFrom::Source { source, total } => encode_source(enc, dst, format, specials, threads, observer, source, total),
        }
    }
}
