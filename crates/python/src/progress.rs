//! Progress for Python callers, and Ctrl-C.
//!
//! `progress` arrives from the Python facade (`bpeforge._progress`) as one
//! of three forms:
//! * a format name ("human", "json", "auto", "off"): text on the process's
//!   fd 2 from the core's printer, exactly the Rust-only path (the CLI);
//! * a `(format, stream)` pair: the same text written through
//!   `stream.write`, for a `sys.stderr` that is not fd 2 (Jupyter,
//!   `contextlib.redirect_stderr`, pytest's capsys);
//! * a callable: called with one dict per event (`_progress.ProgressEvent`
//!   documents the keys).
//!
//! The engine reports at most every few tens of milliseconds and this side
//! rate-limits live events further, so Python is entered at a bounded rate,
//! never per item. Anything the Python code raises (the callback's own
//! exception, a `KeyboardInterrupt` delivered while it runs) is kept, stops
//! the run at the engine's next poll, and is what the call raises.

use bpeforge_core::api::PhaseTime;
use bpeforge_core::api::CountStats;
use bpeforge_core::api::{Error, Result};
use bpeforge_core::api::{BalanceRound, CountProgress, EncodeStats, MergeProgress, Observer, ShardProgress, StepProgress};
use bpeforge_core::api::{eta_seconds, MergeEta, ProgressFormat, ProgressPrinter, TextSink};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The first error Python code raised during a run (shared with the text
/// sink, which lives inside the printer).
type Failure = Arc<Mutex<Option<PyErr>>>;

fn keep(failure: &Failure, err: PyErr) {
    let mut slot = failure.lock().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert(err);
}

fn failed(failure: &Failure) -> bool {
    failure.lock().unwrap_or_else(|e| e.into_inner()).is_some()
}

/// Least time between two live events to a callback.
const CALLBACK_INTERVAL: f64 = 0.1;

/// Progress printer or callback, plus Ctrl-C: polls Python's signal handlers.
pub(crate) struct PyObserver {
    printer: Option<ProgressPrinter>,
    events: Option<Events>,
    failure: Failure,
}

impl PyObserver {
    pub(crate) fn new(progress: &Bound<'_, PyAny>) -> PyResult<Self> {
        let failure: Failure = Arc::default();
        let mut observer = PyObserver { printer: None, events: None, failure: failure.clone() };
        if let Ok(name) = progress.cast::<PyString>() {
            observer.printer = Some(ProgressPrinter::new(parse_format(name.to_str()?)?));
        } else if let Ok(pair) = progress.cast::<PyTuple>() {
            let (name, stream): (String, Py<PyAny>) = pair.extract()?;
            // A stream's "auto" is human: notebooks show a live line.
            let format = match parse_format(&name)? {
                ProgressFormat::Off => ProgressFormat::Off,
                _ if name == "auto" => ProgressFormat::Human,
                f => f,
            };
            observer.printer = Some(ProgressPrinter::with_sink(format, Box::new(PyStream { stream, failure }), false));
        } else if progress.is_callable() {
            observer.events = Some(Events::new(progress.clone().unbind()));
        } else {
            return Err(crate::to_pyerr(Error::parameter(format!(
                "progress must be a format name, a (format, stream) pair or a callable, got {}",
                progress.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))));
        }
        Ok(observer)
    }

    /// What Python raised during the run, if anything: it wins over the
    /// engine's result (an `Interrupted` error, or even success).
    pub(crate) fn take_failure(&mut self) -> Option<PyErr> {
        self.failure.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn emit(&mut self, live: bool, event: impl FnOnce(&Bound<'_, PyDict>) -> PyResult<()>) {
        let Some(events) = self.events.as_mut() else { return };
        if failed(&self.failure) {
            return;
        }
        if live {
            let now = Instant::now();
            if events.last_live.is_some_and(|t| now.duration_since(t).as_secs_f64() < CALLBACK_INTERVAL) {
                return;
            }
            events.last_live = Some(now);
        } else {
            events.last_live = None;
        }
        let result = Python::attach(|py| {
            let d = PyDict::new(py);
            event(&d)?;
            events.callback.call1(py, (d,)).map(drop)
        });
        if let Err(e) = result {
            keep(&self.failure, e);
        }
    }

    fn printer(&mut self) -> Option<&mut ProgressPrinter> {
        self.printer.as_mut()
    }
}

fn parse_format(name: &str) -> PyResult<ProgressFormat> {
    ProgressFormat::parse(name).ok_or_else(|| {
        let names: Vec<String> = ProgressFormat::NAMES.iter().map(|n| format!("'{n}'")).collect();
        crate::to_pyerr(Error::parameter(format!(
            "progress must be one of {} (or True/False), got {name:?}",
            names.join(", ")
        )))
    })
}

/// Progress text through a Python stream's `write` (and `flush`).
struct PyStream {
    stream: Py<PyAny>,
    failure: Failure,
}

impl TextSink for PyStream {
    fn write(&mut self, text: &str) {
        if failed(&self.failure) {
            return;
        }
        let result = Python::attach(|py| {
            let s = self.stream.bind(py);
            s.call_method1("write", (text,))?;
            s.call_method0("flush").map(drop)
        });
        if let Err(e) = result {
            keep(&self.failure, e);
        }
    }
}

/// A callback and what its events need to stay monotone.
struct Events {
    callback: Py<PyAny>,
    last_live: Option<Instant>,
    /// The last reading event's bytes and total, for the phase's final event.
    read_done: u64,
    read_total: Option<u64>,
    /// The merge loop's first count (a resumed model's merges) and target.
    merge_first: Option<u64>,
    merge_target: Option<u64>,
    merge_eta: MergeEta,
}

impl Events {
    fn new(callback: Py<PyAny>) -> Self {
        Events {
            callback,
            last_live: None,
            read_done: 0,
            read_total: None,
            merge_first: None,
            merge_target: None,
            merge_eta: MergeEta::default(),
        }
    }
}

/// The keys every event has.
#[allow(clippy::too_many_arguments)]
fn base(d: &Bound<'_, PyDict>, phase: &str, done: u64, total: Option<u64>, unit: &str, elapsed: f64, finished: bool) -> PyResult<()> {
    d.set_item("phase", phase)?;
    d.set_item("done", done)?;
    d.set_item("total", total)?;
    d.set_item("unit", unit)?;
    d.set_item("elapsed", elapsed)?;
    d.set_item("rate", if elapsed > 0.0 { done as f64 / elapsed } else { 0.0 })?;
    d.set_item("eta", if finished { Some(0.0) } else { total.and_then(|t| eta_seconds(done as f64, t as f64, elapsed)) })?;
    d.set_item("finished", finished)
}

/// A finished phase's CPU seconds (None where unknown) and its threads.
fn cpu_items(d: &Bound<'_, PyDict>, time: &PhaseTime) -> PyResult<()> {
    d.set_item("cpu_seconds", time.cpu_seconds)?;
    d.set_item("threads", time.threads)
}

impl PyObserver {
    fn reading(&mut self, phase: &'static str, p: &CountProgress) {
        if let Some(e) = self.events.as_mut() {
            e.read_done = p.raw_bytes_done;
            e.read_total = p.raw_bytes_total;
        }
        self.emit(true, |d| {
            base(d, phase, p.raw_bytes_done, p.raw_bytes_total, "B", p.elapsed, false)?;
            if let Some(f) = &p.file {
                d.set_item("file", &*f.path)?;
                d.set_item("file_index", f.index)?;
                d.set_item("files", f.files)?;
                d.set_item("file_done", f.bytes_done)?;
                d.set_item("file_total", f.bytes_total)?;
                d.set_item("file_rate", f.bytes_done as f64 / f.elapsed.max(1e-9))?;
                d.set_item("file_eta", eta_seconds(f.bytes_done as f64, f.bytes_total as f64, f.elapsed))?;
            }
            Ok(())
        })
    }

    /// A reading phase's last event: all of it read.
    fn read_all(&mut self, phase: &'static str, bytes: u64, seconds: f64, extra: impl FnOnce(&Bound<'_, PyDict>) -> PyResult<()>) {
        let (done, total) = match &self.events {
            Some(e) => match e.read_total {
                Some(t) => (t, Some(t)),
                None => {
                    let done = e.read_done.max(bytes);
                    (done, Some(done))
                }
            },
            None => return,
        };
        self.emit(false, |d| {
            base(d, phase, done, total, "B", seconds, true)?;
            extra(d)
        });
        if let Some(e) = self.events.as_mut() {
            e.read_done = 0;
            e.read_total = None;
        }
    }
}

impl Observer for PyObserver {
    fn should_stop(&mut self) -> bool {
        if failed(&self.failure) {
            return true;
        }
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                keep(&self.failure, e);
                true
            }
        })
    }
    fn counting(&mut self, p: &CountProgress) {
        if let Some(printer) = self.printer() {
            printer.counting(p)
        }
        self.reading("counting", p)
    }
    fn counted(&mut self, stats: &CountStats, word_types: usize, time: &PhaseTime) {
        if let Some(printer) = self.printer() {
            printer.counted(stats, word_types, time)
        }
        self.read_all("counting", stats.bytes, time.seconds, |d| {
            cpu_items(d, time)?;
            d.set_item("texts", stats.texts)?;
            d.set_item("pretokens", stats.pieces)?;
            d.set_item("word_types", word_types)
        })
    }
    fn step(&mut self, p: &StepProgress) {
        if let Some(printer) = self.printer() {
            printer.step(p)
        }
        self.emit(!p.finished, |d| {
            base(d, p.step, p.done, Some(p.total), p.unit, p.elapsed, p.finished)?;
            if p.finished {
                cpu_items(d, &PhaseTime { seconds: p.elapsed, cpu_seconds: p.cpu_seconds, threads: p.threads })?;
            }
            Ok(())
        })
    }
    fn merging(&mut self, p: &MergeProgress) {
        if let Some(printer) = self.printer() {
            printer.merging(p)
        }
        let mut left = None;
        if let Some(e) = self.events.as_mut() {
            e.merge_first.get_or_insert(p.done as u64);
            e.merge_target = Some(p.target as u64);
            left = e.merge_eta.update(p.done as f64, p.target as f64, p.pair_count as f64, p.elapsed);
        }
        self.emit(true, |d| {
            base(d, "merging", p.done as u64, Some(p.target as u64), "merges", p.elapsed, false)?;
            d.set_item("eta", left)?; // the recent rate's estimate (MergeEta), not the average's
            d.set_item("pair_count", p.pair_count)
        })
    }
    fn merged(&mut self, merges: usize, time: &PhaseTime) {
        if let Some(printer) = self.printer() {
            printer.merged(merges, time)
        }
        // `merges` are this run's; `done` also counts a resumed model's (the
        // loop's first report), and a run that ran out of pairs ends short
        // of its target.
        let Some(e) = self.events.as_mut() else { return };
        let done = e.merge_first.take().unwrap_or(0) + merges as u64;
        let total = e.merge_target.take().unwrap_or(done).max(done);
        self.emit(false, |d| {
            base(d, "merging", done, Some(total), "merges", time.seconds, true)?;
            cpu_items(d, time)?;
            d.set_item("merges", merges)
        })
    }
    fn encoding(&mut self, p: &CountProgress) {
        if let Some(printer) = self.printer() {
            printer.encoding(p)
        }
        self.reading("encoding", p)
    }
    fn encoded(&mut self, s: &EncodeStats) {
        if let Some(printer) = self.printer() {
            printer.encoded(s)
        }
        self.read_all("encoding", s.bytes, s.seconds, |d| {
            d.set_item("lines", s.lines)?;
            d.set_item("tokens", s.tokens)
        })
    }
    fn dropped_for_memory(&mut self, dropped: &bpeforge_core::api::Dropped, budget: u64, pretokens: u64) {
        if let Some(printer) = self.printer() {
            printer.dropped_for_memory(dropped, budget, pretokens)
        }
        self.emit(false, |d| {
            base(d, "memory", dropped.types, None, "word types dropped", 0.0, true)?;
            d.set_item("max_memory", budget)?;
            d.set_item("effective_min_word_count", dropped.min_word_count)?;
            d.set_item("pretokens_dropped", dropped.pretokens)?;
            d.set_item("pretoken_share_dropped", dropped.pretokens as f64 / pretokens.max(1) as f64)
        })
    }
    fn shards(&mut self, p: &ShardProgress) {
        if let Some(printer) = self.printer() {
            printer.shards(p)
        }
        self.emit(!p.finished, |d| {
            base(d, "shards", p.done, Some(p.total), "shards", p.elapsed, p.finished)?;
            d.set_item("task", p.phase)?;
            d.set_item("bytes_done", p.bytes_done)?;
            d.set_item("bytes_total", p.bytes_total)
        })
    }
    fn balancing(&mut self, r: &BalanceRound) {
        if let Some(printer) = self.printer() {
            printer.balancing(r)
        }
        self.emit(false, |d| {
            base(d, "balancing", r.round as u64 + 1, Some(r.rounds as u64 + 1), "rounds", r.seconds, false)?;
            d.set_item("reference", &r.reference)?;
            d.set_item("reference_units_per_token", r.reference_units_per_token)?;
            d.set_item("worst_premium", r.worst_premium)?;
            d.set_item("worst_language", &r.worst_language)?;
            d.set_item("above_band", r.above)
        })
    }
}

/// Shards done by the tasks of a Ray run (`bpeforge.distributed`), shown
/// by the same printer (or given to the same callback) as a local run's
/// progress: `ShardReporter(progress, phase, total, total_bytes)`, then
/// `update(done, done_bytes, final)` as shards finish.
#[pyclass(module = "bpeforge._native", unsendable)]
pub(crate) struct ShardReporter {
    observer: PyObserver,
    phase: String,
    total: u64,
    total_bytes: u64,
    start: Instant,
}

#[pymethods]
impl ShardReporter {
    #[new]
    fn new(progress: &Bound<'_, PyAny>, phase: String, total: u64, total_bytes: u64) -> PyResult<Self> {
        Ok(ShardReporter { observer: PyObserver::new(progress)?, phase, total, total_bytes, start: Instant::now() })
    }

    /// `done` shards of `done_bytes` finished; `final` on the last report.
    /// Raises what a callback (or its stream) raised.
    #[pyo3(signature = (done, done_bytes, r#final=false))]
    fn update(&mut self, done: u64, done_bytes: u64, r#final: bool) -> PyResult<()> {
        let p = ShardProgress {
            phase: &self.phase,
            done,
            total: self.total,
            bytes_done: done_bytes,
            bytes_total: self.total_bytes,
            elapsed: self.start.elapsed().as_secs_f64(),
            finished: r#final,
        };
        self.observer.shards(&p);
        self.observer.take_failure().map_or(Ok(()), Err)
    }
}

/// Bytes of text per progress report of `encode_batch` (at least; a
/// hundredth of the batch when that is more).
const BATCH_SLICE_BYTES: usize = 1 << 20;

/// A batch's progress: a report after each slice of `slice_bytes` of text
/// (`BATCH_SLICE_BYTES`, or a hundredth of the batch when that is more)
/// and at the end, and Ctrl-C (or a failed callback) honoured at each.
pub(crate) struct BatchPacer {
    start: Instant,
    total: u64,
    slice_bytes: u64,
    reported: u64,
    done: u64,
    tokens: u64,
}

impl BatchPacer {
    pub(crate) fn new(total: u64) -> Self {
        let slice_bytes = (total / 100).max(BATCH_SLICE_BYTES as u64);
        BatchPacer { start: Instant::now(), total, slice_bytes, reported: 0, done: 0, tokens: 0 }
    }

    /// Counts `bytes` of text encoded into `tokens` ids; reports (or stops)
    /// once a slice's worth has been done since the last report.
    pub(crate) fn advance(&mut self, bytes: u64, tokens: u64, observer: &mut PyObserver) -> Result<()> {
        self.done += bytes;
        self.tokens += tokens;
        if self.done - self.reported < self.slice_bytes && self.done < self.total {
            return Ok(());
        }
        self.reported = self.done;
        if observer.should_stop() {
            return Err(Error::interrupted());
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        observer.encoding(&CountProgress { raw_bytes_done: self.done, raw_bytes_total: Some(self.total), elapsed, file: None });
        Ok(())
    }

    /// The final report, for a batch of `lines` texts.
    pub(crate) fn finish(&self, lines: u64, observer: &mut PyObserver) {
        let seconds = self.start.elapsed().as_secs_f64();
        observer.encoded(&EncodeStats { lines, tokens: self.tokens, bytes: self.total, seconds, id_bytes: 4 });
    }
}
