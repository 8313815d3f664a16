//! Progress as text: a live line on terminals, JSON lines for logs.
//!
//! Counting reports bytes read, rate and ETA, for the whole input and for
//! the file being read (from on-disk sizes, so compressed inputs get an
//! honest ETA); the merge phase reports its setup steps (word table, pair
//! index) and then merges done, the current pair count and an ETA. Each
//! phase ends with a summary that carries its time, so they can be
//! optimised separately. The text goes to the process's stderr, or to any
//! `TextSink` (the Python bindings pass `sys.stderr` when it is not fd 2).
//! JSON lines are the events of `crate::event`, serialized; the same events
//! go to an `EventSink` (the Python callback), so both carry one schema.

use crate::clock::PhaseTime;
use crate::count::CountStats;
use crate::event::{eta_seconds, Event, EventSink, Events, MergeEta};
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

/// Where a run's progress goes: a live line and summaries (human), JSON
/// lines, events to an `EventSink`, or nowhere; and what stops the run
/// (`stop_when`).
pub struct ProgressPrinter {
    output: Output,
    stop: Option<Box<dyn FnMut() -> bool + Send>>,
}

enum Output {
    Off,
    Human(HumanLines),
    Events(EventOutput),
}

impl ProgressPrinter {
    /// A printer to the process's stderr (ANSI erasing only on a terminal:
    /// a log file gets no escape codes).
    pub fn new(format: ProgressFormat) -> Self {
        Self::with_sink(format, Box::new(Stderr), std::io::stderr().is_terminal())
    }

    /// A printer to `sink`; `ansi` if it is a terminal.
    pub fn with_sink(format: ProgressFormat, sink: Box<dyn TextSink>, ansi: bool) -> Self {
        let output = match format {
            ProgressFormat::Off => Output::Off,
            ProgressFormat::Human => Output::Human(HumanLines::new(sink, ansi)),
            ProgressFormat::Json => Output::Events(EventOutput::new(Box::new(JsonLines(sink)), JSON_INTERVAL)),
        };
        ProgressPrinter { output, stop: None }
    }

    /// Every event to `sink`: each phase's last one and the others, live
    /// updates at most every `CALLBACK_INTERVAL`.
    pub fn to_events(sink: Box<dyn EventSink>) -> Self {
        ProgressPrinter { output: Output::Events(EventOutput::new(sink, CALLBACK_INTERVAL)), stop: None }
    }

    /// Stops the run when `stop` says so (polled every few milliseconds).
    pub fn stop_when(mut self, stop: Box<dyn FnMut() -> bool + Send>) -> Self {
        self.stop = Some(stop);
        self
    }

    fn output(&mut self) -> Option<&mut dyn Observer> {
        match &mut self.output {
            Output::Off => None,
            Output::Human(h) => Some(h),
            Output::Events(e) => Some(e),
        }
    }
}

impl Observer for ProgressPrinter {
    fn should_stop(&mut self) -> bool {
        self.stop.as_mut().is_some_and(|stop| stop())
    }
    fn counting(&mut self, p: &CountProgress) {
        if let Some(o) = self.output() {
            o.counting(p)
        }
    }
    fn counted(&mut self, stats: &CountStats, word_types: usize, time: &PhaseTime) {
        if let Some(o) = self.output() {
            o.counted(stats, word_types, time)
        }
    }
    fn step(&mut self, p: &StepProgress) {
        if let Some(o) = self.output() {
            o.step(p)
        }
    }
    fn merging(&mut self, p: &MergeProgress) {
        if let Some(o) = self.output() {
            o.merging(p)
        }
    }
    fn merged(&mut self, merges: usize, time: &PhaseTime) {
        if let Some(o) = self.output() {
            o.merged(merges, time)
        }
    }
    fn encoding(&mut self, p: &CountProgress) {
        if let Some(o) = self.output() {
            o.encoding(p)
        }
    }
    fn encoded(&mut self, stats: &EncodeStats) {
        if let Some(o) = self.output() {
            o.encoded(stats)
        }
    }
    fn balancing(&mut self, round: &BalanceRound) {
        if let Some(o) = self.output() {
            o.balancing(round)
        }
    }
    fn dropped_for_memory(&mut self, dropped: &crate::memory::budget::Dropped, budget: u64, pretokens: u64) {
        if let Some(o) = self.output() {
            o.dropped_for_memory(dropped, budget, pretokens)
        }
    }
    fn shards(&mut self, p: &ShardProgress) {
        if let Some(o) = self.output() {
            o.shards(p)
        }
    }
}

/// Least seconds between two live JSON lines.
const JSON_INTERVAL: f64 = 2.0;
/// Least seconds between two live events to a callback.
const CALLBACK_INTERVAL: f64 = 0.1;

/// Events to a sink, live ones at most every `interval` seconds.
struct EventOutput {
    events: Events,
    sink: Box<dyn EventSink>,
    interval: f64,
    last_live: Option<Instant>,
}

impl EventOutput {
    fn new(sink: Box<dyn EventSink>, interval: f64) -> Self {
        EventOutput { events: Events::default(), sink, interval, last_live: None }
    }

    fn send(&mut self, event: Event) {
        if event.live {
            let now = Instant::now();
            if self.last_live.is_some_and(|t| now.duration_since(t).as_secs_f64() < self.interval) {
                return;
            }
            self.last_live = Some(now);
        } else {
            self.last_live = None;
        }
        self.sink.event(&event);
    }
}

impl Observer for EventOutput {
    fn counting(&mut self, p: &CountProgress) {
        let e = self.events.counting(p);
        self.send(e)
    }
    fn counted(&mut self, stats: &CountStats, word_types: usize, time: &PhaseTime) {
        let e = self.events.counted(stats, word_types, time);
        self.send(e)
    }
    fn step(&mut self, p: &StepProgress) {
        let e = self.events.step(p);
        self.send(e)
    }
    fn merging(&mut self, p: &MergeProgress) {
        let e = self.events.merging(p);
        self.send(e)
    }
    fn merged(&mut self, merges: usize, time: &PhaseTime) {
        let e = self.events.merged(merges, time);
        self.send(e)
    }
    fn encoding(&mut self, p: &CountProgress) {
        let e = self.events.encoding(p);
        self.send(e)
    }
    fn encoded(&mut self, stats: &EncodeStats) {
        let e = self.events.encoded(stats);
        self.send(e)
    }
    fn balancing(&mut self, round: &BalanceRound) {
        let e = self.events.balancing(round);
        self.send(e)
    }
    fn dropped_for_memory(&mut self, dropped: &crate::memory::budget::Dropped, budget: u64, pretokens: u64) {
        let e = self.events.dropped_for_memory(dropped, budget, pretokens);
        self.send(e)
    }
    fn shards(&mut self, p: &ShardProgress) {
        let e = self.events.shards(p);
        self.send(e)
    }
}

/// Events as JSON lines, one object per event.
struct JsonLines(Box<dyn TextSink>);

impl EventSink for JsonLines {
    fn event(&mut self, event: &Event) {
        // An event always serializes (plain fields, finite or null numbers).
        if let Ok(mut line) = serde_json::to_string(event) {
            line.push('\n');
            self.0.write(&line);
        }
    }
}

/// The human format: a live line rewritten in place (`\r`), and a line per
/// finished phase.
struct HumanLines {
    last: Option<Instant>,
    /// Characters of the live line now shown (0: none).
    open_line: usize,
    sink: Box<dyn TextSink>,
    /// Erase lines with ANSI codes (a terminal) or by overwriting them with
    /// spaces (notebooks and other streams, which may not know ANSI).
    ansi: bool,
    merge_eta: MergeEta,
}

/// Least seconds between two live line updates.
const HUMAN_INTERVAL: f64 = 0.25;

fn mb(x: u64) -> f64 {
    x as f64 / 1e6
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

/// A count with a magnitude suffix ("17.0M").
fn items(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}

impl HumanLines {
    fn new(sink: Box<dyn TextSink>, ansi: bool) -> Self {
        HumanLines { last: None, open_line: 0, sink, ansi, merge_eta: MergeEta::default() }
    }

    fn due(&mut self) -> bool {
        let now = Instant::now();
        match self.last {
            Some(t) if now.duration_since(t).as_secs_f64() < HUMAN_INTERVAL => false,
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

    /// Progress of a phase that reads input: bytes read, rate, ETA.
    fn reading(&mut self, phase: &str, p: &CountProgress) {
        if !self.due() {
            return;
        }
        let rate = mb(p.raw_bytes_done) / p.elapsed.max(1e-9);
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
}

impl Observer for HumanLines {
    fn step(&mut self, p: &StepProgress) {
        if p.finished {
            let t = PhaseTime { seconds: p.elapsed, cpu_seconds: p.cpu_seconds, threads: p.threads };
            self.line(&format!("{}: {} {} in {}", p.step, items(p.total), p.unit, t.describe()));
            self.last = None;
            return;
        }
        if !self.due() {
            return;
        }
        let rate = p.done as f64 / p.elapsed.max(1e-9);
        self.live(&format!(
            "{}: {} / {} {} ({}/s, ETA {})",
            p.step,
            items(p.done),
            items(p.total),
            p.unit,
            items(rate as u64),
            eta(p.done as f64, p.total as f64, p.elapsed)
        ))
    }

    fn counting(&mut self, p: &CountProgress) {
        self.reading("counting", p)
    }

    fn counted(&mut self, stats: &CountStats, word_types: usize, time: &PhaseTime) {
        self.line(&format!(
            "counted: {:.1} MB, {} texts, {} pre-tokens, {} word types in {}",
            mb(stats.bytes),
            stats.texts,
            stats.pieces,
            word_types,
            time.describe()
        ));
        self.last = None;
    }

    fn merging(&mut self, p: &MergeProgress) {
        // Every report feeds the estimate, shown or not.
        let left = self.merge_eta.update(p.done as f64, p.target as f64, p.pair_count as f64, p.elapsed);
        if !self.due() {
            return;
        }
        self.live(&format!(
            "merging: {}/{} merges, current pair count {}, ETA {}",
            p.done,
            p.target,
            p.pair_count,
            left.map_or("-".into(), eta_text)
        ))
    }

    fn encoding(&mut self, p: &CountProgress) {
        self.reading("encoding", p)
    }

    fn dropped_for_memory(&mut self, d: &crate::memory::budget::Dropped, budget: u64, pretokens: u64) {
        let share = d.pretokens as f64 / pretokens.max(1) as f64;
        self.line(&format!(
            "memory: the merge phase would not fit max_memory {}: min_word_count raised to {}, dropping the {} rarest word types ({:.3}% of pre-tokens)",
            crate::memory::budget::human(budget),
            d.min_word_count,
            d.types,
            share * 100.0
        ))
    }

    fn encoded(&mut self, s: &EncodeStats) {
        self.line(&format!(
            "encoded: {} lines, {:.1} MB, {} tokens in {:.2}s ({:.1} MB/s)",
            s.lines,
            mb(s.bytes),
            s.tokens,
            s.seconds,
            mb(s.bytes) / s.seconds.max(1e-9)
        ))
    }

    fn balancing(&mut self, r: &BalanceRound) {
        self.line(&format!(
            "balance round {}/{}: {} {:.3} text units/token; worst premium {:.3} ({}); {} language(s) above the band",
            r.round + 1,
            r.rounds + 1,
            r.reference,
            r.reference_units_per_token,
            r.worst_premium,
            r.worst_language,
            r.above
        ));
        self.last = None;
    }

    fn shards(&mut self, p: &ShardProgress) {
        if !p.finished && !self.due() {
            return;
        }
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
            self.line(&text);
            self.last = None;
        } else {
            self.live(&text)
        }
    }

    fn merged(&mut self, merges: usize, time: &PhaseTime) {
        self.line(&format!("merged: {merges} merges in {}", time.describe()))
    }
}
