//! Live progress of the merge phase's setup steps (the word table, the pair
//! index), which take a large share of a big run (4 s and 13 s of 75 s
//! on s10, 50M lines) and used to be silent.
//!
//! Those steps run deep inside the building code, partly on worker threads,
//! where the observer (a `&mut` owned by the calling thread) is out of
//! reach. So the building code only counts its items into a [`Meter`], one
//! line per loop (`let mut step = steps::begin(..)`, `step.tick()`), and
//! [`watch`] (wrapped around the merge phase by the driver) installs that
//! meter for the calling thread and runs a watcher thread that reads it at
//! a bounded rate and reports it to the observer. Counting is local and
//! published every `PUBLISH_EVERY` items, so the hot loops pay an increment
//! and a rarely taken branch; outside `watch` (tests, benches) every call
//! is a no-op.

use crate::observe::{BalanceRound, CountProgress, EncodeStats, MergeProgress, Observer, StepProgress};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Items a worker counts before it publishes them to the shared meter.
const PUBLISH_EVERY: u64 = 1 << 16;

/// How often the watcher looks at the meter (the observer limits its own
/// output rate further; a Python observer takes the GIL at most this often).
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// The shared state of the current setup step.
#[derive(Default)]
pub struct Meter {
    done: AtomicU64,
    /// The threads the steps run on (for their CPU time's share).
    threads: usize,
    state: Mutex<MeterState>,
}

#[derive(Default)]
struct MeterState {
    current: Option<Current>,
    /// Finished steps not yet reported.
    finished: Vec<StepProgress>,
}

struct Current {
    step: &'static str,
    unit: &'static str,
    total: u64,
    start: Instant,
    watch: crate::clock::Stopwatch,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Meter {
    fn begin(&self, step: &'static str, unit: &'static str, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        lock(&self.state).current = Some(Current { step, unit, total, start: Instant::now(), watch: crate::clock::Stopwatch::start(self.threads) });
    }

    fn end(&self) {
        let mut state = lock(&self.state);
        if let Some(c) = state.current.take() {
            let t = c.watch.elapsed();
            let p = StepProgress { step: c.step, unit: c.unit, done: c.total, total: c.total, elapsed: t.seconds, cpu_seconds: t.cpu_seconds, threads: t.threads, finished: true };
            state.finished.push(p);
        }
    }

    /// Reports finished steps, then (if `live`) the running one's progress.
    fn report(&self, observer: &mut dyn Observer, live: bool) {
        let (finished, current) = {
            let mut state = lock(&self.state);
            let current = state.current.as_ref().filter(|_| live).map(|c| StepProgress {
                step: c.step,
                unit: c.unit,
                done: self.done.load(Ordering::Relaxed).min(c.total),
                total: c.total,
                elapsed: c.start.elapsed().as_secs_f64(),
                cpu_seconds: None,
                threads: self.threads,
                finished: false,
            });
            (std::mem::take(&mut state.finished), current)
        };
        for p in finished.iter().chain(current.as_ref()) {
            observer.step(p);
        }
    }
}

thread_local! {
    /// The meter `watch` installed for this thread, if any.
    static CURRENT: RefCell<Option<Arc<Meter>>> = const { RefCell::new(None) };
}

/// A setup step in progress: count items with `tick` (or, on worker
/// threads, with a `ticker` each); it ends when dropped.
pub struct Step {
    meter: Option<Arc<Meter>>,
    local: u64,
}

/// Starts step `step` of `total` items (a no-op outside `watch`).
pub fn begin(step: &'static str, unit: &'static str, total: u64) -> Step {
    let meter = CURRENT.with(|c| c.borrow().clone());
    if let Some(m) = &meter {
        m.begin(step, unit, total);
    }
    Step { meter, local: 0 }
}

impl Step {
    /// One item done.
    #[inline(always)]
    pub fn tick(&mut self) {
        self.local += 1;
        if self.local % PUBLISH_EVERY == 0 {
            publish(&self.meter, PUBLISH_EVERY);
        }
    }

    /// A counter for one worker thread of this step.
    pub fn ticker(&self) -> Ticker {
        Ticker { meter: self.meter.clone(), local: 0 }
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(m) = &self.meter {
            m.end();
        }
    }
}

/// A worker thread's share of a step's count.
pub struct Ticker {
    meter: Option<Arc<Meter>>,
    local: u64,
}

impl Ticker {
    #[inline(always)]
    pub fn tick(&mut self) {
        self.local += 1;
        if self.local % PUBLISH_EVERY == 0 {
            publish(&self.meter, PUBLISH_EVERY);
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        publish(&self.meter, self.local % PUBLISH_EVERY);
    }
}

#[cold]
fn publish(meter: &Option<Arc<Meter>>, n: u64) {
    if let Some(m) = meter {
        m.done.fetch_add(n, Ordering::Relaxed);
    }
}

/// Runs `f` (the merge phase) with a meter installed for this thread and a
/// watcher thread that reports its steps to `observer`. `f` gets the
/// observer back, shared with the watcher behind a lock; finished steps are
/// always reported before any later event, so the order stays step, step,
/// merging. The steps run on `threads` threads (their finished reports
/// carry it beside their CPU time).
pub fn watch<R>(observer: &mut dyn Observer, threads: usize, f: impl FnOnce(&mut dyn Observer) -> R) -> R {
    let meter = Arc::new(Meter { threads, ..Meter::default() });
    let _installed = Install::new(meter.clone());
    let shared: Mutex<&mut dyn Observer> = Mutex::new(observer);
    let (stop, stopped) = channel::<()>();
    let result = std::thread::scope(|s| {
        let (shared, meter) = (&shared, &meter);
        s.spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(WATCH_INTERVAL) {
                let live = lock(&meter.state).current.is_some();
                if live || !lock(&meter.state).finished.is_empty() {
                    meter.report(&mut **lock(&shared), true);
                }
            }
        });
        let mut forward = Forward { shared, meter };
        let result = f(&mut forward);
        drop(stop);
        result
    });
    meter.report(&mut **lock(&shared), false);
    result
}

/// Installs a meter for this thread; restores the previous one when dropped
/// (also on unwind; SuperBPE and balancing nest training runs).
struct Install(Option<Arc<Meter>>);

impl Install {
    fn new(meter: Arc<Meter>) -> Self {
        Install(CURRENT.with(|c| c.borrow_mut().replace(meter)))
    }
}

impl Drop for Install {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// The observer as `f` sees it inside `watch`: every event first flushes
/// the finished steps, then goes to the shared observer.
struct Forward<'a, 'o> {
    shared: &'a Mutex<&'o mut dyn Observer>,
    meter: &'a Meter,
}

impl Forward<'_, '_> {
    fn with<T>(&mut self, f: impl FnOnce(&mut dyn Observer) -> T) -> T {
        let mut o = lock(self.shared);
        self.meter.report(&mut **o, false);
        f(&mut **o)
    }
}

impl Observer for Forward<'_, '_> {
    fn should_stop(&mut self) -> bool {
        self.with(|o| o.should_stop())
    }
    fn counting(&mut self, p: &CountProgress) {
        self.with(|o| o.counting(p))
    }
    fn counted(&mut self, stats: &crate::count::CountStats, word_types: usize, time: &crate::clock::PhaseTime) {
        self.with(|o| o.counted(stats, word_types, time))
    }
    fn step(&mut self, p: &StepProgress) {
        self.with(|o| o.step(p))
    }
    fn merging(&mut self, p: &MergeProgress) {
        self.with(|o| o.merging(p))
    }
    fn merged(&mut self, merges: usize, time: &crate::clock::PhaseTime) {
        self.with(|o| o.merged(merges, time))
    }
    fn encoding(&mut self, p: &CountProgress) {
        self.with(|o| o.encoding(p))
    }
    fn encoded(&mut self, stats: &EncodeStats) {
        self.with(|o| o.encoded(stats))
    }
    fn balancing(&mut self, round: &BalanceRound) {
        self.with(|o| o.balancing(round))
    }
    fn dropped_for_memory(&mut self, dropped: &crate::memory::budget::Dropped, budget: u64, pretokens: u64) {
        self.with(|o| o.dropped_for_memory(dropped, budget, pretokens))
    }
    fn shards(&mut self, p: &crate::observe::ShardProgress) {
        self.with(|o| o.shards(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Record(Vec<(&'static str, u64, u64, bool)>, Vec<&'static str>);
    impl Observer for Record {
        fn step(&mut self, p: &StepProgress) {
            self.0.push((p.step, p.done, p.total, p.finished));
        }
        fn merged(&mut self, _: usize, _: &crate::clock::PhaseTime) {
            self.1.push("merged");
        }
    }

    #[test]
    fn steps_are_reported_finished_and_in_order() {
        let mut rec = Record::default();
        watch(&mut rec, 2, |o| {
            {
                let mut s = begin("word table", "word types", 200_000);
                for _ in 0..200_000 {
                    s.tick();
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            let s = begin("pair index", "words", 1000);
            std::thread::scope(|sc| {
                for _ in 0..2 {
                    let mut t = s.ticker();
                    sc.spawn(move || (0..500).for_each(|_| t.tick()));
                }
            });
            drop(s);
            o.merged(0, &Default::default());
        });
        let finished: Vec<_> = rec.0.iter().filter(|e| e.3).collect();
        assert_eq!(finished, [&("word table", 200_000, 200_000, true), &("pair index", 1000, 1000, true)]);
        // Live reports came from the watcher while the first step ran.
        assert!(rec.0.iter().any(|e| e.0 == "word table" && !e.3 && e.1 >= 131_072));
        let mut last = 0;
        for e in rec.0.iter().filter(|e| e.0 == "word table") {
            assert!(e.1 >= last);
            last = e.1;
        }
        assert_eq!(rec.1, ["merged"]);
    }

    #[test]
    fn outside_watch_steps_do_nothing() {
        let mut s = begin("word table", "word types", 10);
        s.tick();
        assert!(s.meter.is_none());
    }
}
