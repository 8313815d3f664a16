//! Helper threads kept for the whole merge loop.
//!
//! A merge visits the words of its list; from a few hundred words on, the
//! visit is shared among the threads (`merge_in_shares`). Starting a thread
//! per merge cost as much as it saved below ~4,000 words, and on s10 the
//! merges of 512 to 32,767 words were more than half of the loop's visiting
//! time, all on one thread. The crew's threads live as long as the loop:
//! each merge hands them a job and waits for them (about 1 us; 30 us when
//! a sleeping helper must be woken).
//!
//! Between jobs a helper spins for a short while (the next merge usually
//! follows within microseconds), then sleeps on a condition variable. With
//! more threads than cores, nobody spins: a spinning thread would take a
//! core from one with work.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a helper spins for the next job, and the caller for the last
/// helper to finish, before sleeping. On s10 the visits of the merges of
/// 512-32,767 words took 5.4-6.5 s with 500 us and 6.6-7.8 s with 50 us
/// (a helper asleep between merges is slow to wake on this VM).
const SPIN: Duration = Duration::from_micros(500);

/// A job: `f(k)` for helper `k`. Its lifetime is erased while it is posted;
/// `Crew::run` does not return before every helper is done with it.
type Job = *const (dyn Fn(usize) + Sync);

struct State {
    /// Bumped when a job is posted.
    round: u64,
    job: Option<SendJob>,
    /// Helpers still running this round's job.
    running: usize,
    panicked: bool,
    closing: bool,
}

#[derive(Clone, Copy)]
struct SendJob(Job);
// SAFETY: the job is `Sync`, and `Crew::run` keeps it alive until every
// helper has finished running it.
unsafe impl Send for SendJob {}

struct Shared {
    state: Mutex<State>,
    posted: Condvar,
    finished: Condvar,
    /// Copies of `state.round` and `state.running`, read while spinning.
    round: AtomicU64,
    running: AtomicUsize,
    /// How long to spin before sleeping (`SPIN`, or zero when oversubscribed).
    spin: Duration,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock; recover anyway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `threads - 1` helper threads and the calling thread, for jobs of
/// `threads` shares.
pub(super) struct Crew {
    shared: Shared,
    helpers: usize,
}

impl Crew {
    /// Runs `body` with a crew of `threads - 1` helpers (none for one
    /// thread); the helpers end when `body` returns or unwinds.
    pub(super) fn with<T>(threads: usize, body: impl FnOnce(&Crew) -> T) -> T {
        let shared = Shared {
            state: Mutex::new(State { round: 0, job: None, running: 0, panicked: false, closing: false }),
            posted: Condvar::new(),
            finished: Condvar::new(),
            round: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            spin: if threads <= crate::util::default_threads() { SPIN } else { Duration::ZERO },
        };
        let crew = Crew { shared, helpers: threads.saturating_sub(1) };
        std::thread::scope(|scope| {
            for k in 1..=crew.helpers {
                let shared = &crew.shared;
                scope.spawn(move || help(shared, k));
            }
            // Dropped before the scope joins the helpers, even on a panic.
            let _closer = Closer(&crew.shared);
            body(&crew)
        })
    }

    /// The number of shares a job has: one per thread.
    pub(super) fn threads(&self) -> usize {
        self.helpers + 1
    }

    /// Runs `job(k)` for every `k` in `0..threads()`, `job(0)` on the
    /// calling thread, and returns when all are done. A panic in any share
    /// is raised here, after every share has finished.
    pub(super) fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        if self.helpers == 0 {
            return job(0);
        }
        // SAFETY: only the lifetime is erased; the job is not used after
        // this function returns, because it waits for every helper below
        // (also when `job(0)` panics, which is caught).
        let erased: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(job) };
        {
            let mut state = self.shared.lock();
            state.job = Some(SendJob(erased));
            state.running = self.helpers;
            state.round += 1;
            self.shared.running.store(self.helpers, Ordering::Release);
            self.shared.round.store(state.round, Ordering::Release);
        }
        self.shared.posted.notify_all();
        let mine = catch_unwind(AssertUnwindSafe(|| job(0)));
        spin_until(self.shared.spin, || self.shared.running.load(Ordering::Acquire) == 0);
        let mut state = self.shared.lock();
        while state.running > 0 {
            state = self.shared.finished.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.job = None;
        let helper_panicked = std::mem::take(&mut state.panicked);
        drop(state);
        if let Err(payload) = mine {
            resume_unwind(payload);
        }
        if helper_panicked {
            panic!("a merge-loop helper thread panicked");
        }
    }
}

/// Tells the helpers to end when dropped.
struct Closer<'a>(&'a Shared);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        self.0.lock().closing = true;
        self.0.round.fetch_add(1, Ordering::Release);
        self.0.posted.notify_all();
    }
}

/// Helper `k`'s life: wait for a job, run its share, report, repeat.
fn help(shared: &Shared, k: usize) {
    let mut seen = 0u64;
    loop {
        spin_until(shared.spin, || shared.round.load(Ordering::Acquire) != seen);
        let mut state = shared.lock();
        while state.round == seen && !state.closing {
            state = shared.posted.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.closing {
            return;
        }
        seen = state.round;
        let Some(SendJob(job)) = state.job else { continue };
        drop(state);
        // SAFETY: `Crew::run` keeps the job alive until `running` is 0.
        let ok = catch_unwind(AssertUnwindSafe(|| unsafe { (*job)(k) })).is_ok();
        let mut state = shared.lock();
        state.panicked |= !ok;
        state.running -= 1;
        shared.running.store(state.running, Ordering::Release);
        if state.running == 0 {
            shared.finished.notify_one();
        }
    }
}

/// Spins until `done()` or `spin` has passed.
fn spin_until(spin: Duration, done: impl Fn() -> bool) {
    if spin.is_zero() {
        return;
    }
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            if done() {
                return;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() > spin {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_share_runs_once_per_job() {
        // 64 threads: more than cores here, so no thread spins.
        for threads in [1, 2, 3, 64] {
            let hits: Vec<AtomicU32> = (0..threads).map(|_| AtomicU32::new(0)).collect();
            let total = Crew::with(threads, |crew| {
                assert_eq!(crew.threads(), threads);
                let mut total = 0;
                for round in 0..2_000u32 {
                    // Each job borrows a local that dies after the round.
                    let local = round;
                    crew.run(&|k| {
                        hits[k].fetch_add(local - round + 1, Ordering::Relaxed);
                    });
                    total += 1;
                    if round % 500 == 0 {
                        // Long enough for the helpers to fall asleep.
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
                total
            });
            assert_eq!(total, 2_000);
            for h in &hits {
                assert_eq!(h.load(Ordering::Relaxed), 2_000);
            }
        }
    }

    #[test]
    fn a_panicking_share_is_raised_after_all_shares_end() {
        for failing in [0usize, 1] {
            let finished = AtomicU32::new(0);
            let caught = catch_unwind(AssertUnwindSafe(|| {
                Crew::with(2, |crew| {
                    crew.run(&|k| {
                        if k == failing {
                            panic!("share {k} fails");
                        }
                        std::thread::sleep(Duration::from_millis(20));
                        finished.fetch_add(1, Ordering::Relaxed);
                    })
                })
            }));
            assert!(caught.is_err());
            assert_eq!(finished.load(Ordering::Relaxed), 1, "the other share ran to its end");
        }
        // The crew still works after a panic in an earlier crew.
        let n = AtomicU32::new(0);
        Crew::with(2, |crew| crew.run(&|_| {
            n.fetch_add(1, Ordering::Relaxed);
        }));
        assert_eq!(n.load(Ordering::Relaxed), 2);
    }
}
