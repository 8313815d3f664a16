//! Progress as events: each report of the engine (`Observer`) becomes one
//! typed record, `Event`, the one schema of progress. The JSON progress
//! lines are its serialization and the Python callback's dicts its fields,
//! so both carry the same keys and values (`docs/guide/progress.md` lists
//! them per phase).

use crate::memory::budget::Dropped;
use crate::clock::PhaseTime;
use crate::count_stats::CountStats;
use crate::observe::{BalanceRound, CountProgress, EncodeStats, MergeProgress, ShardProgress, StepProgress};
use serde::Serialize;

/// One progress update: the keys every phase has, then its own (`Info`,
/// flattened into the same object).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub phase: &'static str,
    /// Units done so far; within one run of a phase it never decreases.
    pub done: u64,
    /// Units in all (None while unknown, e.g. an iterator's bytes).
    pub total: Option<u64>,
    pub unit: &'static str,
    /// Seconds since the phase started.
    pub elapsed: f64,
    /// `done / elapsed`.
    pub rate: f64,
    /// Seconds left (None while unknown; 0 once finished).
    pub eta: Option<f64>,
    /// True on the phase's last event.
    pub finished: bool,
    #[serde(flatten)]
    pub info: Option<Info>,
    /// A live update, which an output may skip when one came moments ago
    /// (every other event is always delivered). Not part of the schema.
    #[serde(skip)]
    pub live: bool,
}

/// What a phase reports besides the common keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Info {
    /// Reading a list of files: the file being read (`file_index` from 0).
    File { file: String, file_index: usize, files: usize, file_done: u64, file_total: u64, file_rate: f64, file_eta: Option<f64> },
    /// Counting ended: the process's CPU seconds in it (None where
    /// unknown), its threads, and what was counted (`text_bytes`: UTF-8
    /// bytes of text, after decompression).
    Counted { cpu_seconds: Option<f64>, threads: usize, texts: u64, pretokens: u64, word_types: usize, text_bytes: u64 },
    /// A setup step of the merge phase ended.
    Step { cpu_seconds: Option<f64>, threads: usize },
    /// The count of the pair just merged.
    Merging { pair_count: u64 },
    /// The merge phase ended: `merges` are this run's (`done` also counts a
    /// resumed model's).
    Merged { cpu_seconds: Option<f64>, threads: usize, merges: usize },
    /// Encoding ended.
    Encoded { lines: u64, tokens: u64, text_bytes: u64 },
    /// The merge phase would not fit `max_memory`: `done` word types were
    /// dropped, the rarest, by raising `min_word_count`.
    Memory { max_memory: u64, effective_min_word_count: u64, pretokens_dropped: u64, pretoken_share_dropped: f64 },
    /// A round of parity balancing ended.
    Balancing { reference: String, reference_units_per_token: f64, worst_premium: f64, worst_language: String, above_band: usize },
    /// Shards done by the tasks of a distributed run (`task`: what they do).
    Shards { task: String, bytes_done: u64, bytes_total: u64 },
}

/// Where events go (the JSON lines printer, the Python callback).
pub trait EventSink: Send {
    fn event(&mut self, event: &Event);
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

/// Turns the engine's reports into events, keeping what a phase's last
/// event needs of the earlier ones: the bytes read (a reading phase ends
/// with all of them read), the merge loop's first count (a resumed
/// model's merges) and target, and the merge loop's ETA (`MergeEta`).
#[derive(Debug, Default)]
pub struct Events {
    read_done: u64,
    read_total: Option<u64>,
    merge_first: Option<u64>,
    merge_target: Option<u64>,
    merge_eta: MergeEta,
}

#[allow(clippy::too_many_arguments)]
fn event(phase: &'static str, done: u64, total: Option<u64>, unit: &'static str, elapsed: f64, finished: bool, live: bool, info: Option<Info>) -> Event {
    let rate = if elapsed > 0.0 { done as f64 / elapsed } else { 0.0 };
    let eta = if finished { Some(0.0) } else { total.and_then(|t| eta_seconds(done as f64, t as f64, elapsed)) };
    Event { phase, done, total, unit, elapsed, rate, eta, finished, info, live }
}

impl Events {
    fn reading(&mut self, phase: &'static str, p: &CountProgress) -> Event {
        self.read_done = p.raw_bytes_done;
        self.read_total = p.raw_bytes_total;
        let info = p.file.as_ref().map(|f| Info::File {
            file: f.path.to_string(),
            file_index: f.index,
            files: f.files,
            file_done: f.bytes_done,
            file_total: f.bytes_total,
            file_rate: f.bytes_done as f64 / f.elapsed.max(1e-9),
            file_eta: eta_seconds(f.bytes_done as f64, f.bytes_total as f64, f.elapsed),
        });
        event(phase, p.raw_bytes_done, p.raw_bytes_total, "B", p.elapsed, false, true, info)
    }

    /// A reading phase's last event: all of it read (the total, else what
    /// was read, at least `bytes`).
    fn read_all(&mut self, phase: &'static str, bytes: u64, seconds: f64, info: Info) -> Event {
        let done = self.read_total.unwrap_or_else(|| self.read_done.max(bytes));
        self.read_done = 0;
        self.read_total = None;
        event(phase, done, Some(done), "B", seconds, true, false, Some(info))
    }

    pub fn counting(&mut self, p: &CountProgress) -> Event {
        self.reading("counting", p)
    }

    pub fn counted(&mut self, stats: &CountStats, word_types: usize, time: &PhaseTime) -> Event {
        let info = Info::Counted {
            cpu_seconds: time.cpu_seconds,
            threads: time.threads,
            texts: stats.texts,
            pretokens: stats.pieces,
            word_types,
            text_bytes: stats.bytes,
        };
        self.read_all("counting", stats.bytes, time.seconds, info)
    }

    pub fn step(&mut self, p: &StepProgress) -> Event {
        let info = p.finished.then_some(Info::Step { cpu_seconds: p.cpu_seconds, threads: p.threads });
        event(p.step, p.done, Some(p.total), p.unit, p.elapsed, p.finished, !p.finished, info)
    }

    pub fn merging(&mut self, p: &MergeProgress) -> Event {
        self.merge_first.get_or_insert(p.done as u64);
        self.merge_target = Some(p.target as u64);
        let left = self.merge_eta.update(p.done as f64, p.target as f64, p.pair_count as f64, p.elapsed);
        let mut e = event("merging", p.done as u64, Some(p.target as u64), "merges", p.elapsed, false, true, Some(Info::Merging { pair_count: p.pair_count }));
        e.eta = left; // the recent rate's estimate (MergeEta), not the average's
        e
    }

    /// `merges` are this run's; `done` also counts a resumed model's (the
    /// loop's first report), and a run that ran out of pairs ends short of
    /// its target.
    pub fn merged(&mut self, merges: usize, time: &PhaseTime) -> Event {
        let done = self.merge_first.take().unwrap_or(0) + merges as u64;
        let total = self.merge_target.take().unwrap_or(done).max(done);
        let info = Info::Merged { cpu_seconds: time.cpu_seconds, threads: time.threads, merges };
        event("merging", done, Some(total), "merges", time.seconds, true, false, Some(info))
    }

    pub fn encoding(&mut self, p: &CountProgress) -> Event {
        self.reading("encoding", p)
    }

    pub fn encoded(&mut self, s: &EncodeStats) -> Event {
        self.read_all("encoding", s.bytes, s.seconds, Info::Encoded { lines: s.lines, tokens: s.tokens, text_bytes: s.bytes })
    }

    pub fn dropped_for_memory(&mut self, dropped: &Dropped, budget: u64, pretokens: u64) -> Event {
        let info = Info::Memory {
            max_memory: budget,
            effective_min_word_count: dropped.min_word_count,
            pretokens_dropped: dropped.pretokens,
            pretoken_share_dropped: dropped.pretokens as f64 / pretokens.max(1) as f64,
        };
        event("memory", dropped.types, None, "word types dropped", 0.0, true, false, Some(info))
    }

    pub fn shards(&mut self, p: &ShardProgress) -> Event {
        let info = Info::Shards { task: p.phase.to_string(), bytes_done: p.bytes_done, bytes_total: p.bytes_total };
        event("shards", p.done, Some(p.total), "shards", p.elapsed, p.finished, !p.finished, Some(info))
    }

    pub fn balancing(&mut self, r: &BalanceRound) -> Event {
        let info = Info::Balancing {
            reference: r.reference.clone(),
            reference_units_per_token: r.reference_units_per_token,
            worst_premium: r.worst_premium,
            worst_language: r.worst_language.clone(),
            above_band: r.above,
        };
        event("balancing", r.round as u64 + 1, Some(r.rounds as u64 + 1), "rounds", r.seconds, false, false, Some(info))
    }
}

#[cfg(test)]
mod tests {
    use super::{Events, MergeEta};
    use crate::memory::budget::Dropped;
    use crate::observe::StepProgress;

    fn keys(e: &super::Event) -> Vec<String> {
        match serde_json::to_value(e).unwrap() {
            serde_json::Value::Object(m) => m.keys().cloned().collect(),
            v => panic!("not an object: {v}"),
        }
    }

    const COMMON: [&str; 8] = ["phase", "done", "total", "unit", "elapsed", "rate", "eta", "finished"];

    /// An event is one flat object: the common keys, then its phase's own;
    /// whether it is live is not part of it.
    #[test]
    fn an_event_is_the_common_keys_then_its_phases() {
        let mut events = Events::default();
        let dropped = events.dropped_for_memory(&Dropped { min_word_count: 3, types: 7, pretokens: 9 }, 1 << 26, 90);
        let mut want: Vec<String> = COMMON.iter().map(|k| k.to_string()).collect();
        want.extend(["max_memory", "effective_min_word_count", "pretokens_dropped", "pretoken_share_dropped"].map(String::from));
        let mut got = keys(&dropped);
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert_eq!((dropped.done, dropped.unit, dropped.finished), (7, "word types dropped", true));
        let step = StepProgress { step: "word table", unit: "word types", done: 5, total: 10, elapsed: 1.0, cpu_seconds: None, threads: 2, finished: false };
        let live = events.step(&step);
        assert!(live.live && live.info.is_none());
        let mut got = keys(&live);
        got.sort();
        let mut common: Vec<String> = COMMON.iter().map(|k| k.to_string()).collect();
        common.sort();
        assert_eq!(got, common);
    }

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
