//! Helper threads kept for the whole merge loop.
//!
//! A merge visits the words of its list; from a few hundred words on, the
//! visit is shared among the threads (`merge_in_shares`). Starting a thread
//! per merge cost as much as it saved below ~4,000 words, so the crew's
//! threads live as long as the loop and each merge posts them a job.
//!
//! A job is a loop that claims pieces of work until none are left, so a
//! helper that comes late (asleep, or its core taken by another process)
//! finds the work done by the others and leaves, and the caller never waits
//! for a helper that has not begun: it waits only for pieces already being
//! worked on. With fixed shares, one per thread, the caller waited for every
//! helper to run; on a loaded 2-core machine (load average 9) that made the
//! merge loop's shared visits 5.4x slower on 2 threads than on one.
//!
//! Between jobs a helper spins for a short while (the next merge usually
//! follows within microseconds), then sleeps on a condition variable. With
//! more threads than cores, nobody spins: a spinning thread would take a
//! core from one with work. Nor when the calling thread gets much less than
//! a core (a machine busy with other work, see `Starved`): there a spinning
//! helper took CPU time from the caller, whose work the merges wait for.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a helper spins for the next job before sleeping. On s10 the
/// visits of the merges of 512-32,767 words took 5.4-6.5 s with 500 us and
/// 6.6-7.8 s with 50 us (a helper asleep between merges is slow to wake on
/// this VM).
const SPIN: Duration = Duration::from_micros(500);

/// A job: `f(k)` for helper `k`. Its lifetime is erased while it is posted;
/// `Crew::run` does not return before every helper that entered it has left.
type Job = *const (dyn Fn(usize) + Sync);

/// The job's address as stored in an `AtomicPtr` (a fat pointer does not
/// fit one, so it is boxed once per crew and rewritten per job).
struct Slot(std::cell::UnsafeCell<Option<Job>>);
// SAFETY: the slot is written only by the caller while the gate is closed
// and no helper is inside; helpers read it only while inside.
unsafe impl Sync for Slot {}

/// The gate's bit that says the current job takes no one else; the bits
/// below count the helpers inside it.
const CLOSED: usize = 1 << (usize::BITS - 1);

struct Shared {
    /// Held while a helper decides to sleep, and to wake it.
    sleep: Mutex<()>,
    posted: Condvar,
    /// Set when the crew ends.
    closing: AtomicBool,
    /// Bumped when a job is posted (and when the crew closes).
    round: AtomicU64,
    /// `CLOSED` and the number of helpers inside the current job.
    gate: AtomicUsize,
    job: Slot,
    /// Set when a helper's share panicked (raised by `Crew::run`).
    panicked: AtomicBool,
    /// Helpers asleep on `posted` (a job wakes them only when there are).
    sleepers: AtomicUsize,
    /// Whether spinning may pay: not with more threads than cores.
    may_spin: bool,
    /// Whether helpers spin now (see `Starved`).
    spinning: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ()> {
        // No code panics while holding the lock; recover anyway.
        self.sleep.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `threads - 1` helper threads and the calling thread.
pub(super) struct Crew {
    shared: Shared,
    helpers: usize,
    starved: Mutex<Starved>,
}

impl Crew {
    /// Runs `body` with a crew of `threads - 1` helpers (none for one
    /// thread); the helpers end when `body` returns or unwinds.
    pub(super) fn with<T>(threads: usize, body: impl FnOnce(&Crew) -> T) -> T {
        let shared = Shared {
            sleep: Mutex::new(()),
            posted: Condvar::new(),
            closing: AtomicBool::new(false),
            round: AtomicU64::new(0),
            gate: AtomicUsize::new(CLOSED),
            job: Slot(std::cell::UnsafeCell::new(None)),
            panicked: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            may_spin: threads <= crate::util::default_threads(),
            spinning: AtomicBool::new(threads <= crate::util::default_threads()),
        };
        let crew = Crew { shared, helpers: threads.saturating_sub(1), starved: Mutex::new(Starved::new()) };
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

    /// The number of threads that may work on a job, the caller included.
    pub(super) fn threads(&self) -> usize {
        self.helpers + 1
    }

    /// Runs `job(0)` on the calling thread while the helpers that are free
    /// in time run `job(k)` (`k` from 1 to `threads() - 1`). A helper may
    /// run its call once, not at all (it came after `job(0)` had returned),
    /// or again in a later round, so a job must claim its work piece by
    /// piece: `job(0)` alone then does all of it when no helper comes, and a
    /// call that finds nothing left returns at once. Returns when `job(0)`
    /// has returned and every helper that entered has left; a panic in any
    /// of them is raised here, after all have left.
    pub(super) fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        if self.helpers == 0 {
            return job(0);
        }
        let shared = &self.shared;
        // SAFETY: only the lifetime is erased; no helper reads the job
        // after this function returns: the gate is closed below and every
        // helper inside is waited for (also when `job(0)` panics).
        let erased: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(job) };
        // SAFETY: the gate is closed and empty (see the end of this
        // function), so no helper reads the slot.
        unsafe { *shared.job.0.get() = Some(erased) };
        // Open the gate (keeping the count of late helpers on their way out).
        shared.gate.fetch_and(!CLOSED, Ordering::AcqRel);
        // SeqCst: a helper that counts itself a sleeper before it reads the
        // round either sees this round or is seen here and woken. (One that
        // slept through a job only misses that job.)
        shared.round.fetch_add(1, Ordering::SeqCst);
        if shared.sleepers.load(Ordering::SeqCst) > 0 {
            drop(shared.lock());
            shared.posted.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| job(0)));
        // No one enters from now on; wait for those inside.
        shared.gate.fetch_or(CLOSED, Ordering::AcqRel);
        let start = Instant::now();
        let spin = if shared.spinning.load(Ordering::Relaxed) { SPIN } else { Duration::ZERO };
        while shared.gate.load(Ordering::Acquire) != CLOSED {
            if start.elapsed() < spin {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        // SAFETY: as above: closed and empty.
        unsafe { *shared.job.0.get() = None };
        if shared.may_spin {
            let mut starved = self.starved.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(spin) = starved.check() {
                shared.spinning.store(spin, Ordering::Relaxed);
            }
        }
        let helper_panicked = shared.panicked.swap(false, Ordering::AcqRel);
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
        self.0.closing.store(true, Ordering::SeqCst);
        self.0.round.fetch_add(1, Ordering::SeqCst);
        drop(self.0.lock());
        self.0.posted.notify_all();
    }
}

/// Helper `k`'s life: wait for a job, enter it if it is still open, run
/// it, leave, repeat.
fn help(shared: &Shared, k: usize) {
    let mut seen = 0u64;
    loop {
        let spin = if shared.spinning.load(Ordering::Relaxed) { SPIN } else { Duration::ZERO };
        spin_until(spin, || shared.round.load(Ordering::Acquire) != seen);
        if shared.round.load(Ordering::SeqCst) == seen {
            let mut guard = shared.lock();
            shared.sleepers.fetch_add(1, Ordering::SeqCst);
            while shared.round.load(Ordering::SeqCst) == seen && !shared.closing.load(Ordering::SeqCst) {
                guard = shared.posted.wait(guard).unwrap_or_else(|e| e.into_inner());
            }
            shared.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
        if shared.closing.load(Ordering::SeqCst) {
            return;
        }
        seen = shared.round.load(Ordering::Acquire);
        if shared.gate.fetch_add(1, Ordering::AcqRel) & CLOSED == 0 {
            // SAFETY: inside the open gate the slot holds the current job,
            // which `Crew::run` keeps alive until this helper has left.
            if let Some(job) = unsafe { *shared.job.0.get() } {
                let ok = catch_unwind(AssertUnwindSafe(|| unsafe { (*job)(k) })).is_ok();
                if !ok {
                    shared.panicked.store(true, Ordering::Release);
                }
            }
        }
        shared.gate.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether the calling thread gets a core: its CPU time over wall time,
/// measured over windows of `WINDOW`. Below 70% the machine is busy with
/// other work and the helpers stop spinning; from 90% on they spin again.
/// On a 2-core machine shared with other processes (load average 6-10,
/// one scheduling group per session, so a helper's spinning counts against
/// the caller's share), the helpers' spinning was 16% of m1's CPU time.
struct Starved {
    since: Instant,
    cpu: Option<Duration>,
}

const WINDOW: Duration = Duration::from_millis(20);

impl Starved {
    fn new() -> Self {
        Starved { since: Instant::now(), cpu: thread_cpu() }
    }

    /// After each window: `Some(whether helpers should spin)`.
    fn check(&mut self) -> Option<bool> {
        let wall = self.since.elapsed();
        if wall < WINDOW {
            return None;
        }
        let (before, now) = (self.cpu?, thread_cpu()?);
        *self = Starved { since: Instant::now(), cpu: Some(now) };
        let share = now.saturating_sub(before).as_secs_f64() / wall.as_secs_f64();
        if share < 0.7 {
            Some(false)
        } else if share >= 0.9 {
            Some(true)
        } else {
            None
        }
    }
}

/// The calling thread's CPU time (where the system tells it).
#[cfg(target_os = "linux")]
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu() -> Option<Duration> {
    None
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

    /// A job of `pieces` pieces claimed one by one from `next`.
    fn claim_all(next: &AtomicUsize, pieces: usize, mut work: impl FnMut(usize)) {
        loop {
            let p = next.fetch_add(1, Ordering::Relaxed);
            if p >= pieces {
                return;
            }
            work(p);
        }
    }

    #[test]
    fn every_piece_runs_once_per_job() {
        // 64 threads: more than cores here, so no thread spins.
        for threads in [1, 2, 3, 64] {
            let pieces = 16;
            let hits: Vec<AtomicU32> = (0..pieces).map(|_| AtomicU32::new(0)).collect();
            let by_thread: Vec<AtomicU32> = (0..threads).map(|_| AtomicU32::new(0)).collect();
            Crew::with(threads, |crew| {
                assert_eq!(crew.threads(), threads);
                for round in 0..2_000u32 {
                    // Each job borrows locals that die after the round.
                    let next = AtomicUsize::new(0);
                    let local = round;
                    crew.run(&|k| {
                        claim_all(&next, pieces, |p| {
                            hits[p].fetch_add(local - round + 1, Ordering::Relaxed);
                            by_thread[k].fetch_add(1, Ordering::Relaxed);
                        })
                    });
                    if round % 500 == 0 {
                        // Long enough for the helpers to fall asleep.
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            });
            for h in &hits {
                assert_eq!(h.load(Ordering::Relaxed), 2_000);
            }
            let total: u32 = by_thread.iter().map(|h| h.load(Ordering::Relaxed)).sum();
            assert_eq!(total, 2_000 * pieces as u32);
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_caller_off_its_core_stops_the_spinning() {
        let mut starved = Starved::new();
        assert_eq!(starved.check(), None, "within the first window");
        // Asleep for a window: no CPU time, as if other work had the core.
        std::thread::sleep(WINDOW + Duration::from_millis(5));
        assert_eq!(starved.check(), Some(false));
        // The next window starts afresh.
        assert_eq!(starved.check(), None);
    }

    #[test]
    fn helpers_share_a_long_job() {
        // Pieces long enough that a spinning helper joins in.
        let helped = AtomicU32::new(0);
        Crew::with(2, |crew| {
            for _ in 0..20 {
                let next = AtomicUsize::new(0);
                crew.run(&|k| {
                    claim_all(&next, 8, |_| {
                        std::thread::sleep(Duration::from_millis(1));
                        if k > 0 {
                            helped.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                });
            }
        });
        assert!(helped.load(Ordering::Relaxed) > 0, "the helper never took a piece");
    }

    #[test]
    fn a_panicking_piece_is_raised_after_all_pieces_end() {
        for failing in [0usize, 5] {
            let finished = AtomicU32::new(0);
            let caught = catch_unwind(AssertUnwindSafe(|| {
                Crew::with(2, |crew| {
                    let next = AtomicUsize::new(0);
                    crew.run(&|_| {
                        claim_all(&next, 8, |p| {
                            if p == failing {
                                panic!("piece {p} fails");
                            }
                            std::thread::sleep(Duration::from_millis(5));
                            finished.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                })
            }));
            assert!(caught.is_err());
            // The thread whose piece failed stops claiming; the other may
            // finish the rest, and every piece begun has ended.
            assert!(finished.load(Ordering::Relaxed) <= 7);
        }
        // The crew still works after a panic in an earlier crew.
        let n = AtomicU32::new(0);
        Crew::with(2, |crew| {
            let next = AtomicUsize::new(0);
            crew.run(&|_| claim_all(&next, 4, |_| {
                n.fetch_add(1, Ordering::Relaxed);
            }))
        });
        assert_eq!(n.load(Ordering::Relaxed), 4);
    }
}
