//! The word counts' compact binary form (`WordCounts::to_bytes`), for
//! sending counts between processes (Ray tasks), and adding it back.

use super::WordCounts;
use crate::count_stats::CountStats;
use crate::error::{Error, Result};

/// Version 2 adds `bad_records` to the stats; version 1 is still read.
const COUNTS_MAGIC: &[u8; 8] = b"BPFCNT02";
const COUNTS_MAGIC_V1: &[u8; 8] = b"BPFCNT01";
/// A table's header: the magic, 5 stats and the number of entries.
pub(super) const COUNTS_HEADER_BYTES: usize = 56;

/// Writes the wire form into a buffer of its exact length (computed first,
/// so the output is allocated once, e.g. as a Python `bytes`).
pub(super) struct WireWriter<'a> {
    out: &'a mut [u8],
    at: usize,
    overflow: bool,
}

impl<'a> WireWriter<'a> {
    pub(super) fn new(out: &'a mut [u8]) -> Self {
        WireWriter { out, at: 0, overflow: false }
    }

    fn put(&mut self, bytes: &[u8]) {
        match self.out.get_mut(self.at..self.at + bytes.len()) {
            Some(dst) if !self.overflow => {
                dst.copy_from_slice(bytes);
                self.at += bytes.len();
            }
            _ => self.overflow = true,
        }
    }

    /// A table's header, with `entries` entries to follow.
    pub(super) fn header(&mut self, s: &CountStats, entries: u64) -> Result<()> {
        self.put(COUNTS_MAGIC);
        for v in [s.bytes, s.texts, s.pieces, s.specials, s.bad_records, entries] {
            self.put(&v.to_le_bytes());
        }
        self.check()
    }

    pub(super) fn entry(&mut self, key: &[u8], count: u64) {
        self.put(&(key.len() as u32).to_le_bytes());
        self.put(key);
        self.put(&count.to_le_bytes());
    }

    fn check(&self) -> Result<()> {
        if self.overflow {
            return Err(Error::output("word counts: the wire form is longer than its computed length"));
        }
        Ok(())
    }

    /// Checks that the buffer was filled exactly.
    pub(super) fn finish(self) -> Result<()> {
        self.check()?;
        if self.at != self.out.len() {
            return Err(Error::output("word counts: the wire form is shorter than its computed length"));
        }
        Ok(())
    }
}

impl WordCounts {
    /// A compact binary form (for sending counts between processes, e.g. Ray
    /// tasks): magic, 5 stats, the number of types, then `len u32, bytes,
    /// count u64` per type; then, for SuperBPE, the stage-2 table
    /// (`superword`) in the same form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(COUNTS_HEADER_BYTES + self.len() * 20);
        // Writing into a Vec cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// Writes the `to_bytes` form to `out` as it goes (a counts file is
    /// written without a second copy of the table in memory).
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(COUNTS_MAGIC)?;
        let s = &self.stats;
        for v in [s.bytes, s.texts, s.pieces, s.specials, s.bad_records, self.len() as u64] {
            out.write_all(&v.to_le_bytes())?;
        }
        let mut result = Ok(());
        self.for_each(|k, v| {
            if result.is_ok() {
                result = out
                    .write_all(&(k.len() as u32).to_le_bytes())
                    .and_then(|_| out.write_all(k))
                    .and_then(|_| out.write_all(&v.to_le_bytes()));
            }
        });
        result?;
        if let Some(units) = &self.superword {
            units.write_to(out)?;
        }
        Ok(())
    }

    /// Reads `to_bytes` output, checking every length.
    pub fn from_bytes(data: &[u8]) -> Result<WordCounts> {
        let mut counts = WordCounts::new();
        counts.add_bytes(data, 1)?;
        Ok(counts)
    }

    /// Adds a table in `to_bytes` form, every count times `factor`
    /// (saturating), without building that table first: a running sum of
    /// many tables holds only itself and the bytes being added. On an error
    /// (data not from `to_bytes`) part of the table may have been added.
    pub fn add_bytes(&mut self, data: &[u8], factor: u64) -> Result<()> {
        let bad = || Error::input("word counts: the data is truncated or not from WordCounts::to_bytes");
        let v2 = data.get(..8) == Some(&COUNTS_MAGIC[..]);
        if data.len() < 48 || !(v2 || &data[..8] == COUNTS_MAGIC_V1) {
            return Err(bad());
        }
        let u64_at = |p: usize| -> Result<u64> {
            data.get(p..p + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).ok_or_else(bad)
        };
        let bad_records = if v2 { u64_at(40)? } else { 0 };
        self.stats.add(&CountStats { bytes: u64_at(8)?, texts: u64_at(16)?, pieces: u64_at(24)?, specials: u64_at(32)?, bad_records });
        let header = if v2 { 48 } else { 40 };
        let n = u64_at(header)?;
        let mut p = header + 8;
        let mut adder = self.adder();
        for _ in 0..n {
            let len = data.get(p..p + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))).ok_or_else(bad)? as usize;
            p += 4;
            let key = data.get(p..p + len).ok_or_else(bad)?;
            p += len;
            let v = u64_at(p)?;
            p += 8;
            adder.add(key, v.saturating_mul(factor));
        }
        drop(adder);
        if p < data.len() {
            self.superword.get_or_insert_with(Default::default).add_bytes(&data[p..], factor)?;
        }
        Ok(())
    }
}
