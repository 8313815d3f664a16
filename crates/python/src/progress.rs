//! Progress for Python callers, and Ctrl-C.
//!
//! `progress` arrives from the Python facade (`bpeforge._progress`) as one
//! of three forms:
//! * a format name ("human", "json", "auto", "off"): text on the process's
//!   fd 2 from the core's printer, exactly the Rust-only path (the CLI);
//! * a `(format, stream)` pair: the same text written through
//!   `stream.write`, for a `sys.stderr` that is not fd 2 (Jupyter,
//!   `contextlib.redirect_stderr`, pytest's capsys);
//! * a callable: called with one dict per event, the core's `Event` with
//!   its fields as keys (the JSON lines are the same events serialized;
//!   `_progress.ProgressEvent` documents the keys).
//!
//! The engine reports at most every few tens of milliseconds and the core
//! rate-limits live events further, so Python is entered at a bounded rate,
//! never per item. Anything the Python code raises (the callback's own
//! exception, a `KeyboardInterrupt` delivered while it runs) is kept, stops
//! the run at the engine's next poll, and is what the call raises.

use crate::errors::to_pyerr;
use bpeforge_core::api::progress::{Event, EventSink, Observer, ProgressFormat, ProgressPrinter, ShardProgress, TextSink};
use bpeforge_core::api::Error;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The first error Python code raised during a run (shared with the text
/// or event sink inside the printer, and with its stop check).
type Failure = Arc<Mutex<Option<PyErr>>>;

fn keep(failure: &Failure, err: PyErr) {
    let mut slot = failure.lock().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert(err);
}

fn failed(failure: &Failure) -> bool {
    failure.lock().unwrap_or_else(|e| e.into_inner()).is_some()
}

/// Where a call's progress goes (the core's printer: text or events), and
/// its stop check: Python's signal handlers, and whether Python code
/// raised meanwhile.
pub(crate) struct PyObserver {
    printer: ProgressPrinter,
    failure: Failure,
}

impl PyObserver {
    pub(crate) fn new(progress: &Bound<'_, PyAny>) -> PyResult<Self> {
        let failure: Failure = Arc::default();
        let printer = if let Ok(name) = progress.cast::<PyString>() {
            ProgressPrinter::new(parse_format(name.to_str()?)?)
        } else if let Ok(pair) = progress.cast::<PyTuple>() {
            let (name, stream): (String, Py<PyAny>) = pair.extract()?;
            // A stream's "auto" is human: notebooks show a live line.
            let format = match parse_format(&name)? {
                ProgressFormat::Off => ProgressFormat::Off,
                _ if name == "auto" => ProgressFormat::Human,
                f => f,
            };
            ProgressPrinter::with_sink(format, Box::new(PyStream { stream, failure: failure.clone() }), false)
        } else if progress.is_callable() {
            ProgressPrinter::to_events(Box::new(PyCallback { callback: progress.clone().unbind(), failure: failure.clone() }))
        } else {
            return Err(to_pyerr(Error::parameter(format!(
                "progress must be a format name, a (format, stream) pair or a callable, got {}",
                progress.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))));
        };
        let stop = failure.clone();
        let printer = printer.stop_when(Box::new(move || should_stop(&stop)));
        Ok(PyObserver { printer, failure })
    }

    /// The observer the engine's calls take.
    pub(crate) fn engine(&mut self) -> &mut dyn Observer {
        &mut self.printer
    }

    /// What Python raised during the run, if anything: it wins over the
    /// engine's result (an `Interrupted` error, or even success).
    pub(crate) fn take_failure(&mut self) -> Option<PyErr> {
        self.failure.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Finishes a call: what Python raised meanwhile (Ctrl-C, the progress
/// callback's exception) wins over the engine's result. The memory the run
/// freed goes back to the system now, not whenever mimalloc would have
/// purged it (a process that trained once should not keep its tables).
pub(crate) fn finish<T>(result: Result<T, Error>, mut observer: PyObserver) -> PyResult<T> {
    bpeforge_core::api::machine::release_free_memory();
    match observer.take_failure() {
        Some(err) => Err(err),
        None => result.map_err(to_pyerr),
    }
}

/// Stop when Python code raised, or a signal handler (Ctrl-C) raises now.
fn should_stop(failure: &Failure) -> bool {
    if failed(failure) {
        return true;
    }
    Python::attach(|py| match py.check_signals() {
        Ok(()) => false,
        Err(e) => {
            keep(failure, e);
            true
        }
    })
}

fn parse_format(name: &str) -> PyResult<ProgressFormat> {
    ProgressFormat::parse(name).ok_or_else(|| {
        let names: Vec<String> = ProgressFormat::NAMES.iter().map(|n| format!("'{n}'")).collect();
        to_pyerr(Error::parameter(format!("progress must be one of {} (or True/False), got {name:?}", names.join(", "))))
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

/// Events to a Python callable, each as a dict of the event's fields.
struct PyCallback {
    callback: Py<PyAny>,
    failure: Failure,
}

impl EventSink for PyCallback {
    fn event(&mut self, event: &Event) {
        if failed(&self.failure) {
            return;
        }
        let result = Python::attach(|py| {
            let d = pythonize::pythonize(py, event).map_err(PyErr::from)?;
            self.callback.call1(py, (d,)).map(drop)
        });
        if let Err(e) = result {
            keep(&self.failure, e);
        }
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
        self.observer.engine().shards(&p);
        self.observer.take_failure().map_or(Ok(()), Err)
    }
}
