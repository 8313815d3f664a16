//! What counting saw (`CountStats`): plain numbers that counting fills and
//! that training's record and a caller's progress read. It sits below both
//! `count` and `observe`, so neither needs the other for it.

/// What counting saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountStats {
    /// Bytes of text (after decompression, without line terminators).
    pub bytes: u64,
    /// Number of texts (lines, records, items).
    pub texts: u64,
    /// Number of pre-tokens (word occurrences).
    pub pieces: u64,
    /// Occurrences of special tokens (not trained on).
    pub specials: u64,
    /// Lines skipped for having no text where the fields mode says
    /// (`OnBadRecord::Skip`).
    pub bad_records: u64,
}

impl CountStats {
    pub(crate) fn add(&mut self, o: &CountStats) {
        self.bytes += o.bytes;
        self.texts += o.texts;
        self.pieces += o.pieces;
        self.specials += o.specials;
        self.bad_records += o.bad_records;
    }
}
