//! Progress as text: a live line on terminals, JSON lines for logs.
//!
//! Counting reports bytes read, rate and ETA, for the whole input and for
//! the file being read (from on-disk sizes, so compressed inputs get an
//! honest ETA); the merge phase reports its setup steps (word table, pair
//! index) and then merges done, the current pair count and an ETA. Each
//! phase ends with a summary that carries its time, so they can be
//! optimised separately. The text goes to the process's stderr, or to any
//! `TextSink` (the Python bindings pass `sys.stderr` when it is not fd 2).

use crate::clock::PhaseTime;
use crate::count::CountStats;
use crate::observe::{BalanceRound, CountProgress, EncodeStats, MergeProgress, Observer, ShardProgress, StepProgress};
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Where progress text goes. `write` gets whole updates (a live line with
/// its carriage return, or finished lines), one call per update.
pub trait TextSink: Send {
    fn write(&mut self, text: &str);
}

/// The process's stderr (fd 2).
struct Stderr;

impl TextSink for Stderr {
    fn write(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressFormat {
    Off,
    /// A line rewritten in place (`\r`).
    Human,
    /// One JSON object per line.
    Json,
}

impl ProgressFormat {
    /// The format names, the one list: the Python package reads it
    /// (`_native.PROGRESS_FORMATS`) for its checks, messages and CLI choices.
    pub const NAMES: [&'static str; 4] = ["auto", "human", "json", "off"];

    /// One of `NAMES`: "auto" (human on a terminal, JSON otherwise), "human",
    /// "json", "off"; or a name kept for older callers ("bar", "none", "quiet").
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
    /// Characters of the live line now shown (0: none).
    open_line: usize,
    sink: Box<dyn TextSink>,
    /// Erase lines with ANSI codes (a terminal) or by overwriting them with
    /// spaces (notebooks and other streams, which may not know ANSI).
    ansi: bool,
    merge_eta: MergeEta,
}

fn mb(x: u64) -> f64 {
    x as f64 / 1e6
}

/// Seconds left at the rate so far (None before any progress).
pub fn eta_seconds(done: f64, total: f64, elapsed: f64) -> Option<f64> {
    if done <= 0.0 {
        return None;
    }
    Some(elapsed / done * (total - done).max(0.0))
}

/// The merge loop's ETA. Merges get much cheaper as training goes on: a
/// merge's work grows with its pair's count, and the counts fall steeply
/// (on 200k lines of text, the first 1,400 of 32,000 merges took half the
/// time). The average rate since the start (`eta_seconds`) therefore said
/// minutes for a run of seconds, and even the recent rate is far too slow.
///
/// This models the time as proportional to the pair counts merged: between
/// two reports in the last `WINDOW` seconds, the counts are fitted by a power
/// law `count(k) = c * (done / k)^a` (Zipf-like, as pair counts are), the
/// seconds per unit of count come from the counts merged between the
/// reports, and the ETA is that times the counts the law gives the merges
/// left, at most the recent rate's (merges only get cheaper). On 200k lines
/// (32k merges, 7.1 s of merging) the first ETA said 13.5 s, then 7.7 s with
/// 5.8 s left, 2.9 s with 1.3 s left; the average rate said 2m42s. Nothing
/// (None) until two reports `MIN_SPAN` apart; a report with fewer merges
/// than the last (a new balancing round) starts over.
#[derive(Debug, Default, Clone)]
pub struct MergeEta {
    /// (merges done, current pair count, elapsed seconds)
    samples: std::collections::VecDeque<(f64, f64, f64)>,
}

impl MergeEta {
    const WINDOW: f64 = 3.0;
    const MIN_SPAN: f64 = 0.2;

    /// Records a report (`done` merges, the pair now merged has `count`, at
    /// `elapsed` seconds) and returns the seconds left to `target`, if they
    /// can be told yet.
    pub fn update(&mut self, done: f64, target: f64, count: f64, elapsed: f64) -> Option<f64> {
        if self.samples.back().is_some_and(|&(d, _, t)| done < d || elapsed < t) {
            self.samples.clear();
        }
        if done > 0.0 && count > 0.0 {
            self.samples.push_back((done, count, elapsed));
        }
        while self.samples.len() > 2 && self.samples.get(1).is_some_and(|&(_, _, t)| elapsed - t >= Self::WINDOW) {
            self.samples.pop_front();
        }
        let (&(d0, c0, t0), &(d1, c1, t1)) = (self.samples.front()?, self.samples.back()?);
        if t1 - t0 < Self::MIN_SPAN || d1 <= d0 {
            return None;
        }
        // The recent rate: an upper bound, as merges only get cheaper.
        let by_rate = (target - d1).max(0.0) * (t1 - t0) / (d1 - d0);
        let a = (c0 / c1).ln() / (d1 / d0).ln();
        if !(a.is_finite() && a > 0.0) {
            return Some(by_rate);
        }
        // The counts merged from rank x to y under the law through (d1, c1).
        let mass = |x: f64, y: f64| {
            if (a - 1.0).abs() < 1e-3 {
                c1 * d1 * (y / x).ln()
            } else {
                c1 * d1.powf(a) / (1.0 - a) * (y.powf(1.0 - a) - x.powf(1.0 - a))
            }
        };
        let by_counts = (t1 - t0) / mass(d0, d1) * mass(d1, target.max(d1));
        Some(if by_counts.is_finite() { by_counts.min(by_rate) } else { by_rate })
    }
}

fn eta(done: f64, total: f64, elapsed: f64) -> String {
    match eta_seconds(done, total, elapsed) {
        Some(s) if total > done => eta_text(s),
        _ => "-".into(),
    }
}

/// Seconds left as a short text ("4s", "2m05s", "1.5h").
fn eta_text(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1}h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
    } else {
        format!("{s:.0}s")
    }
}

impl ProgressPrinter {
    /// A printer to the process's stderr (ANSI erasing only on a terminal:
    /// a log file gets no escape codes).
    pub fn new(format: ProgressFormat) -> Self {
        Self::with_sink(format, Box::new(Stderr), std::io::stderr().is_terminal())
    }

    /// A printer to `sink`; `ansi` if it is a terminal.
    pub fn with_sink(format: ProgressFormat, sink: Box<dyn TextSink>, ansi: bool) -> Self {
        let interval = if format == ProgressFormat::Json { 2.0 } else { 0.25 };
        ProgressPrinter { format, last: None, interval, open_line: 0, sink, ansi, merge_eta: MergeEta::default() }
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

    /// What erases the live line.
    fn erase(&self) -> String {
        match (self.open_line, self.ansi) {
            (0, _) => String::new(),
            (_, true) => "\r\x1b[2K".into(),
            (n, false) => format!("\r{:n$}\r", ""),
        }
    }

    fn live(&mut self, text: &str) {
        let width = text.chars().count();
        let out = if self.ansi {
            format!("\r\x1b[2K{text}")
        } else {
            format!("\r{text}{:pad$}", "", pad = self.open_line.saturating_sub(width))
        };
        self.sink.write(&out);
        self.open_line = width.max(1);
    }

    fn line(&mut self, text: &str) {
        let out = format!("{}{text}\n", self.erase());
        self.open_line = 0;
        self.sink.write(&out);
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
                let left = p.raw_bytes_total.map_or("-".into(), |t| eta(p.raw_bytes_done as f64, t as f64, p.elapsed));
                let all = format!("{:.1} MB{total} read ({rate:.1} MB/s, ETA {left})", mb(p.raw_bytes_done));
                // The file's name only: the live line must fit a terminal.
                let name = |f: &crate::observe::FileProgress| {
                    let path = std::path::Path::new(&*f.path);
                    path.file_name().map_or(f.path.to_string(), |n| n.to_string_lossy().into_owned())
                };
                let text = match &p.file {
                    // One file: its figures are the total's.
                    Some(f) if f.files == 1 => format!("{phase} {}: {all}", name(f)),
                    Some(f) => format!(
                        "{phase} {} ({}/{}): {:.1} / {:.1} MB ({:.1} MB/s, ETA {}); all: {all}",
                        name(f),
                        f.index + 1,
                        f.files,
                        mb(f.bytes_done),
                        mb(f.bytes_total),
                        mb(f.bytes_done) / f.elapsed.max(1e-9),
                        eta(f.bytes_done as f64, f.bytes_total as f64, f.elapsed)
                    ),
                    None => format!("{phase}: {all}"),
                };
                self.live(&text);
            }
            ProgressFormat::Json => {
                let mut v = serde_json::json!({
                    "phase": phase, "bytes_read": p.raw_bytes_done, "bytes_total": p.raw_bytes_total,
                    "mb_per_s": round(rate, 1), "elapsed_s": round(p.elapsed, 2),
                    "eta_s": p.raw_bytes_total.and_then(|t| eta_seconds(p.raw_bytes_done as f64, t as f64, p.elapsed)).map(|s| round(s, 1)),
                });
                if let Some(f) = &p.file {
                    let extra = serde_json::json!({
                        "file": &*f.path, "file_index": f.index + 1, "files": f.files,
                        "file_bytes_read": f.bytes_done, "file_bytes_total": f.bytes_total,
                        "file_mb_per_s": round(mb(f.bytes_done) / f.elapsed.max(1e-9), 1),
                        "file_eta_s": eta_seconds(f.bytes_done as f64, f.bytes_total as f64, f.elapsed).map(|s| round(s, 1)),
                    });
                    if let (Some(v), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
                        v.extend(e);
                    }
                }
                self.json(v)
            }
            ProgressFormat::Off => {}
        }
    }
}

/// `x` rounded to `digits` decimals (JSON lines stay short).
fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// A count with a magnitude suffix ("17.0M").
fn items(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}

impl Observer for ProgressPrinter {
    fn step(&mut self, p: &StepProgress) {
        if p.finished {
            match self.format {
                ProgressFormat::Human => {
                    let t = PhaseTime { seconds: p.elapsed, cpu_seconds: p.cpu_seconds, threads: p.threads };
                    self.line(&format!("{}: {} {} in {}", p.step, items(p.total), p.unit, t.describe()))
                }
                ProgressFormat::Json => self.json(serde_json::json!({
                    "phase": p.step, "done": true, "items": p.total, "unit": p.unit, "seconds": round(p.elapsed, 3),
                    "cpu_seconds": p.cpu_seconds.map(|c| round(c, 3)), "threads": p.threads,
                })),
                ProgressFormat::Off => {}
            }
            self.last = None;
            return;
        }
        if !self.due() {
            return;
        }
        let rate = p.done as f64 / p.elapsed.max(1e-9);
        match self.format {
            ProgressFormat::Human => self.live(&format!(
                "{}: {} / {} {} ({}/s, ETA {})",
                p.step,
                items(p.done),
                items(p.total),
                p.unit,
                items(rate as u64),
                eta(p.done as f64, p.total as f64, p.elapsed)
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": p.step, "items_done": p.done, "items_total": p.total, "unit": p.unit,
                "elapsed_s": round(p.elapsed, 2),
                "eta_s": eta_seconds(p.done as f64, p.total as f64, p.elapsed).map(|s| round(s, 1)),
            })),
            ProgressFormat::Off => {}
        }
    }

    fn counting(&mut self, p: &CountProgress) {
        self.reading("counting", p)
    }

    fn counted(&mut self, stats: &CountStats, word_types: usize, time: &PhaseTime) {
        match self.format {
            ProgressFormat::Human => self.line(&format!(
                "counted: {:.1} MB, {} texts, {} pre-tokens, {} word types in {}",
                mb(stats.bytes),
                stats.texts,
                stats.pieces,
                word_types,
                time.describe()
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "counting", "done": true, "bytes": stats.bytes, "texts": stats.texts,
                "pretokens": stats.pieces, "word_types": word_types, "count_seconds": round(time.seconds, 3),
                "count_cpu_seconds": time.cpu_seconds.map(|c| round(c, 3)), "threads": time.threads,
            })),
            ProgressFormat::Off => {}
        }
        self.last = None;
    }

    fn merging(&mut self, p: &MergeProgress) {
        // Every report feeds the estimate, shown or not.
        let left = self.merge_eta.update(p.done as f64, p.target as f64, p.pair_count as f64, p.elapsed);
        if !self.due() {
            return;
        }
        match self.format {
            ProgressFormat::Human => self.live(&format!(
                "merging: {}/{} merges, current pair count {}, ETA {}",
                p.done,
                p.target,
                p.pair_count,
                left.map_or("-".into(), eta_text)
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "merging", "merges": p.done, "target": p.target, "pair_count": p.pair_count,
                "elapsed_s": (p.elapsed * 100.0).round() / 100.0,
                "eta_s": left.map(|s| round(s, 1)),
            })),
            ProgressFormat::Off => {}
        }
    }

    fn encoding(&mut self, p: &CountProgress) {
        self.reading("encoding", p)
    }

    fn dropped_for_memory(&mut self, d: &crate::memory::budget::Dropped, budget: u64, pretokens: u64) {
        let share = d.pretokens as f64 / pretokens.max(1) as f64;
        match self.format {
            ProgressFormat::Human => self.line(&format!(
                "memory: the merge phase would not fit max_memory {}: min_word_count raised to {}, dropping the {} rarest word types ({:.3}% of pre-tokens)",
                crate::memory::budget::human(budget),
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
                "balance round {}/{}: {} {:.3} text units/token; worst premium {:.3} ({}); {} language(s) above the band",
                r.round + 1,
                r.rounds + 1,
                r.reference,
                r.reference_units_per_token,
                r.worst_premium,
                r.worst_language,
                r.above
            )),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "balancing", "round": r.round + 1, "rounds": r.rounds + 1, "reference": r.reference,
                "reference_units_per_token": (r.reference_units_per_token * 1e4).round() / 1e4,
                "worst_premium": (r.worst_premium * 1e4).round() / 1e4, "worst_language": r.worst_language,
                "above_band": r.above, "seconds": (r.seconds * 1000.0).round() / 1000.0,
            })),
            ProgressFormat::Off => {}
        }
        self.last = None;
    }

    fn shards(&mut self, p: &ShardProgress) {
        if !p.finished && !self.due() {
            return;
        }
        match self.format {
            ProgressFormat::Human => {
                let text = format!(
                    "{} on Ray: {}/{} shards, {:.1}/{:.1} MB in {:.1}s",
                    p.phase,
                    p.done,
                    p.total,
                    mb(p.bytes_done),
                    mb(p.bytes_total),
                    p.elapsed
                );
                if p.finished {
                    self.line(&text)
                } else {
                    self.live(&text)
                }
            }
            ProgressFormat::Json => {
                let mut v = serde_json::json!({
                    "phase": p.phase, "shards_done": p.done, "shards_total": p.total,
                    "bytes_done": p.bytes_done, "bytes_total": p.bytes_total, "elapsed_s": round(p.elapsed, 2),
                });
                if p.finished {
                    v["done"] = serde_json::Value::Bool(true);
                }
                self.json(v)
            }
            ProgressFormat::Off => {}
        }
        if p.finished {
            self.last = None;
        }
    }

    fn merged(&mut self, merges: usize, time: &PhaseTime) {
        match self.format {
            ProgressFormat::Human => self.line(&format!("merged: {merges} merges in {}", time.describe())),
            ProgressFormat::Json => self.json(serde_json::json!({
                "phase": "merging", "done": true, "merges": merges, "merge_seconds": round(time.seconds, 3),
                "merge_cpu_seconds": time.cpu_seconds.map(|c| round(c, 3)), "threads": time.threads,
            })),
            ProgressFormat::Off => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MergeEta;

    /// Seconds of a run whose merge k costs `c(k)` = 1e6 / k^1.2 micro-units.
    fn run(eta: &mut MergeEta, target: f64, reports: &[f64]) -> Vec<Option<f64>> {
        let count = |k: f64| 1e6 / k.powf(1.2);
        let time = |k: f64| (1..=k as u64).map(|j| count(j as f64)).sum::<f64>() * 1e-6;
        reports.iter().map(|&k| eta.update(k, target, count(k), time(k) + 0.5)).collect()
    }

    #[test]
    fn merge_eta_follows_the_falling_pair_counts() {
        let mut eta = MergeEta::default();
        let target = 30_000.0;
        let count = |k: f64| 1e6 / k.powf(1.2);
        let time = |k: f64| (1..=k as u64).map(|j| count(j as f64)).sum::<f64>() * 1e-6;
        let got = run(&mut eta, target, &[10.0, 200.0, 2000.0]);
        assert_eq!(got[0], None); // one report: nothing to tell yet
        for (k, left) in [(200.0, got[1]), (2000.0, got[2])] {
            let truth = time(target) - time(k);
            let left = left.unwrap();
            assert!((left / truth - 1.0).abs() < 0.25, "at {k}: {left:.2}s said, {truth:.2}s true");
        }
    }

    #[test]
    fn merge_eta_starts_over_with_a_new_round_and_falls_back_to_the_rate() {
        let mut eta = MergeEta::default();
        assert_eq!(eta.update(5.0, 100.0, 10.0, 1.0), None);
        // Flat counts: the recent rate (10 merges/s) bounds it.
        let left = eta.update(15.0, 100.0, 10.0, 2.0).unwrap();
        assert!((left - 8.5).abs() < 1e-9, "{left}");
        assert_eq!(eta.update(1.0, 100.0, 10.0, 0.1), None); // a new round
    }
}
