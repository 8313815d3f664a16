//! Progress on stderr: a live line on terminals, JSON lines for logs.
//!
//! Counting reports bytes read, rate and ETA (from the on-disk size, so
//! compressed inputs get an honest ETA); merging reports merges done, the
//! current pair count and an ETA. Both phases end with a summary that carries
//! their time, so counting and merging can be optimised separately.

use crate::count::CountStats;
use crate::observe::{BalanceRound, CountProgress, EncodeStats, MergeProgress, Observer};
use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressFormat {
    Off,
    /// A line rewritten in place (`\r`).
    Human,
    /// One JSON object per line.
    Json,
}

impl ProgressFormat {
    /// "auto" (human on a terminal, JSON otherwise), "human", "json", "off".
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(if std::io::stderr().is_terminal() { Self::Human } else { Self::Json }),
            "human" | "bar" => Some(Self::Human),
            "json" => Some(Self::Json),
            "off" | "none" | "quiet" => Some(Self::Off),
            _ => None,
        }
    }
}

pub struct ProgressPrinter {
    format: ProgressFormat,
    last: Option<Instant>,
    interval: f64,
    open_line: bool,
}

fn mb(x: u64) -> f64 {
    x as f64 / 1e6
}

fn eta(done: f64, total: f64, elapsed: f64) -> String {
    if done <= 0.0 || total <= done {
        return "-".into();
    }
    let s = elapsed / done * (total - done);
    if s >= 3600.0 {
        format!("{:.1}h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
    } else {
        format!("{s:.0}s")
    }
}

impl ProgressPrinter {
    pub fn new(format: ProgressFormat) -> Self {
        let interval = if format == ProgressFormat::Json { 2.0 } else { 0.25 };
        ProgressPrinter { format, last: None, interval, open_line: false }
    }

    fn due(&mut self) -> bool {
        if self.format == ProgressFormat::Off {
            return false;
        }
        let now = Instant::now();
        match self.last {
            Some(t) if now.duration_since(t).as_secs_f64() < self.interval => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }

    fn live(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{text}");
        let _ = err.flush();
        self.open_line = true;
    }

    fn line(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.open_line {
            let _ = write!(err, "\r\x1b[2K");
            self.open_line = false;
        }
        let _ = writeln!(err, "{text}");
    }

    fn json(&mut self, value: serde_json::Value) {
        self.line(&value.to_string());
    }

    /// Progress of a phase that reads input: bytes read, rate, ETA.
    fn reading(&mut self, phase: &str, p: &CountProgress) {
        if !self.due() {
            return;
        }
        let rate = mb(p.raw_bytes_done) / p.elapsed.max(1e-9);
        match self.format {
            ProgressFormat::Human => {
                let total = p.raw_bytes_total.map_or(String::new(), |t| format!(" / {:.1} MB", mb(t)));
                let eta = p.raw_bytes_total.map_or("-".into(), |t| eta(p.raw_bytes_done as f64, t as f64, p.elapsed));
                self.live(&format!("{phase}: {:.1} MB{total} read ({rate:.1} MB/s, ETA {eta})", mb(p.raw_bytes_done)));
            }
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": phase, "bytes_read": p.raw_bytes_done, "bytes_total": p.raw_bytes_total,
                "mb_per_s": (rate * 10.0).round() / 10.0, "elapsed_s": (p.elapsed * 100.0).round() / 100.0,
            })),
            ProgressFormat::Off => {}
        }
    }
}

impl Observer for ProgressPrinter {
    fn counting(&mut self, p: &CountProgress) {
        self.reading("counting", p)
    }

    fn counted(&mut self, stats: &CountStats, word_types: usize, seconds: f64) {
        match self.format {
            ProgressFormat::Human => self.line(&format!(
                "counted: {:.1} MB, {} texts, {} pre-tokens, {} word types in {:.2}s",
                mb(stats.bytes),
                stats.texts,
                stats.pieces,
                word_types,
                seconds
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "counting", "done": true, "bytes": stats.bytes, "texts": stats.texts,
                "pretokens": stats.pieces, "word_types": word_types, "count_seconds": (seconds * 1000.0).round() / 1000.0,
            })),
            ProgressFormat::Off => {}
        }
        self.last = None;
    }

    fn merging(&mut self, p: &MergeProgress) {
        if !self.due() {
            return;
        }
        match self.format {
            ProgressFormat::Human => self.live(&format!(
                "merging: {}/{} merges, current pair count {}, ETA {}",
                p.done,
                p.target,
                p.pair_count,
                eta(p.done as f64, p.target as f64, p.elapsed)
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "merging", "merges": p.done, "target": p.target, "pair_count": p.pair_count,
                "elapsed_s": (p.elapsed * 100.0).round() / 100.0,
            })),
            ProgressFormat::Off => {}
        }
    }

    fn encoding(&mut self, p: &CountProgress) {
        self.reading("encoding", p)
    }

    fn dropped_for_memory(&mut self, d: &crate::budget::Dropped, budget: u64, pretokens: u64) {
        let share = d.pretokens as f64 / pretokens.max(1) as f64;
        match self.format {
            ProgressFormat::Human => self.line(&format!(
                "memory: the merge phase would not fit max_memory {}: min_word_count raised to {}, dropping the {} rarest word types ({:.3}% of pre-tokens)",
                crate::budget::human(budget),
                d.min_word_count,
                d.types,
                share * 100.0
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "memory", "max_memory": budget, "effective_min_word_count": d.min_word_count,
                "word_types_dropped": d.types, "pretokens_dropped": d.pretokens, "pretoken_share_dropped": share,
            })),
            ProgressFormat::Off => {}
        }
    }

    fn encoded(&mut self, s: &EncodeStats) {
        match self.format {
            ProgressFormat::Human => self.line(&format!(
                "encoded: {} lines, {:.1} MB, {} tokens in {:.2}s ({:.1} MB/s)",
                s.lines,
                mb(s.bytes),
                s.tokens,
                s.seconds,
                mb(s.bytes) / s.seconds.max(1e-9)
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "encoding", "done": true, "lines": s.lines, "bytes": s.bytes, "tokens": s.tokens,
                "seconds": (s.seconds * 1000.0).round() / 1000.0,
            })),
            ProgressFormat::Off => {}
        }
    }

    fn balancing(&mut self, r: &BalanceRound) {
        match self.format {
            ProgressFormat::Human => self.line(&format!(
                "balance round {}/{}: {} {:.3} bytes/token; worst premium {:.3} ({}); {} language(s) above the band",
                r.round + 1,
                r.rounds + 1,
                r.reference,
                r.reference_bytes_per_token,
                r.worst_premium,
                r.worst_language,
                r.above
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "balancing", "round": r.round + 1, "rounds": r.rounds + 1, "reference": r.reference,
                "reference_bytes_per_token": (r.reference_bytes_per_token * 1e4).round() / 1e4,
                "worst_premium": (r.worst_premium * 1e4).round() / 1e4, "worst_language": r.worst_language,
                "above_band": r.above, "seconds": (r.seconds * 1000.0).round() / 1000.0,
            })),
            ProgressFormat::Off => {}
        }
        self.last = None;
    }

    fn merged(&mut self, merges: usize, seconds: f64) {
        match self.format {
            ProgressFormat::Human => self.line(&format!("merged: {merges} merges in {seconds:.2}s")),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "merging", "done": true, "merges": merges, "merge_seconds": (seconds * 1000.0).round() / 1000.0,
            })),
            ProgressFormat::Off => {}
        }
    }
}
