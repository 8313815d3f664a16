//! Ordered work on threads, fed and drained by the calling thread.
//!
//! The calling thread may hold a lock the workers must not need (Python's
//! GIL): it alone hands over each block of input and takes each block's
//! result, in input order, as soon as that block and all before it are
//! done, so handing results over overlaps the work on later blocks instead
//! of following all of it. With `threads` threads the calling thread is one
//! of them (`threads - 1` are spawned): when it has nothing to hand over or
//! to take, it works on the next block itself, outside its lock.
//!
//! Two ways in: `run_ordered` pulls blocks from a `Host` (a batch whose
//! blocks are cut on demand; with one thread, or input of one block,
//! nothing is spawned), and `stream` lets the caller push blocks as its
//! input arrives (a file read chunk by chunk): one set of threads works
//! from the first block of the input to the last, never restarted between
//! chunks, and at most `AHEAD_PER_THREAD` blocks per thread are in flight,
//! so memory stays bounded whatever the input's size.
//!
//! A panic in `work` becomes an error; an error (from the host or the
//! work) stops the workers at their next block and is returned, the first
//! in block order winning among work errors, as in a serial run.

use crate::error::Result;
use crate::util::{join_all, worker_crashed};
use std::collections::{BTreeMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Where the results go (see the module notes).
pub trait Deliver<I, R> {
    /// A block's result, in input order, with its input.
    fn deliver(&mut self, input: I, result: R) -> Result<()>;
    /// Runs `f` without the caller's lock (a plain call if it has none).
    fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T;
}

/// What the calling thread does for `run_ordered`: also cuts the input.
pub trait Host<I, R>: Deliver<I, R> {
    /// The next block of input; `None` when there is no more.
    fn prepare(&mut self) -> Result<Option<I>>;
}

/// Blocks handed over but not yet delivered, per thread: bounds the memory
/// held in flight while keeping every thread fed.
const AHEAD_PER_THREAD: usize = 4;

struct State<I, R> {
    /// Blocks handed over that no thread has taken yet, with their numbers.
    queue: VecDeque<(usize, I)>,
    /// Finished blocks not yet delivered, by number.
    done: BTreeMap<usize, (I, Result<R>)>,
    /// No more blocks will be queued (all handed over, or stopping).
    closed: bool,
}

struct Shared<I, R> {
    state: Mutex<State<I, R>>,
    changed: Condvar,
}

impl<I, R> Shared<I, R> {
    fn lock(&self) -> MutexGuard<'_, State<I, R>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }
}

/// The work of a run: `work` on each block with the thread's own `S`.
type Work<'w, I, R, S> = dyn Fn(&I, &mut S) -> Result<R> + Sync + 'w;

/// The calling thread's side of a run (see `stream`).
pub struct Stream<'a, I, R, S> {
    shared: &'a Shared<I, R>,
    threads: usize,
    state: S,
    work: &'a Work<'a, I, R, S>,
    /// Blocks handed over, and delivered, so far.
    pushed: usize,
    delivered: usize,
}

/// Runs `body` with a `Stream` on `threads` threads (the calling thread
/// included): `body` pushes the blocks and calls `finish`; each thread has
/// its own `S` (e.g. a cache) made by `new_state` on that thread. If `body`
/// returns early (an error), the workers stop at their next block.
pub fn stream<I, R, S, T>(
    threads: usize,
    new_state: &(dyn Fn() -> S + Sync),
    work: &Work<'_, I, R, S>,
    body: impl FnOnce(&mut Stream<'_, I, R, S>) -> Result<T>,
) -> Result<T>
where
    I: Send,
    R: Send,
    S: Send,
{
    let threads = threads.max(1);
    let shared = Shared { state: Mutex::new(State { queue: VecDeque::new(), done: BTreeMap::new(), closed: false }), changed: Condvar::new() };
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(|| help(&shared, new_state(), work))).collect();
        let mut calling = Stream { shared: &shared, threads, state: new_state(), work, pushed: 0, delivered: 0 };
        let result = body(&mut calling);
        // Stop the helpers (after an error, before they take more blocks).
        shared.close();
        shared.lock().queue.clear();
        let joined = join_all(handles).map(drop);
        result.and_then(|t| joined.map(|()| t))
    })
}

impl<I: Send, R: Send, S: Send> Stream<'_, I, R, S> {
    /// Hands `input` over; returns as soon as another block is welcome
    /// (a helper is short of work and few are in flight), delivering the
    /// finished blocks and working on queued ones while too many are in
    /// flight.
    pub fn push(&mut self, input: I, out: &mut impl Deliver<I, R>) -> Result<()> {
        self.shared.lock().queue.push_back((self.pushed, input));
        self.shared.changed.notify_all();
        self.pushed += 1;
        loop {
            let room = self.pushed - self.delivered < AHEAD_PER_THREAD * self.threads;
            // A block for every helper comes first: a helper finding the
            // queue empty waits, and delivering a run of finished blocks
            // takes longer than working on one.
            let ready = {
                let mut st = self.shared.lock();
                if room && st.queue.len() < self.threads - 1 {
                    return Ok(());
                }
                st.done.remove(&self.delivered)
            };
            match ready {
                Some((input, result)) => self.deliver(input, result, out)?,
                None if room => return Ok(()),
                None => self.work_or_wait(out),
            }
        }
    }

    /// Delivers every block handed over (no more will be).
    pub fn finish(&mut self, out: &mut impl Deliver<I, R>) -> Result<()> {
        self.shared.close();
        while self.delivered < self.pushed {
            let ready = self.shared.lock().done.remove(&self.delivered);
            match ready {
                Some((input, result)) => self.deliver(input, result, out)?,
                None => self.work_or_wait(out),
            }
        }
        Ok(())
    }

    fn deliver(&mut self, input: I, result: Result<R>, out: &mut impl Deliver<I, R>) -> Result<()> {
        out.deliver(input, result?)?;
        self.delivered += 1;
        Ok(())
    }

    /// Works on a queued block, or (none queued) waits outside the
    /// caller's lock for the next block to deliver.
    fn work_or_wait(&mut self, out: &mut impl Deliver<I, R>) {
        let (shared, work, state, next) = (self.shared, self.work, &mut self.state, self.delivered);
        let job = shared.lock().queue.pop_front();
        match job {
            Some((k, input)) => {
                let (input, result) = out.unlocked(|| {
                    let result = attempt(work, &input, state);
                    (input, result)
                });
                shared.lock().done.insert(k, (input, result));
            }
            None => out.unlocked(|| {
                let mut st = shared.lock();
                while !st.done.contains_key(&next) {
                    st = shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            }),
        }
    }
}

/// Runs `work` on every block `host` prepares, on `threads` threads, with
/// one `S` per thread (e.g. a cache) made by `new_state` on that thread, and
/// delivers the results in order.
pub fn run_ordered<I, R, S, H>(threads: usize, host: &mut H, new_state: &(dyn Fn() -> S + Sync), work: &Work<'_, I, R, S>) -> Result<()>
where
    I: Send,
    R: Send,
    S: Send,
    H: Host<I, R>,
{
    // Work that fits one block is done on the calling thread: starting
    // threads for it cost more than the work of a short batch.
    let mut ahead = VecDeque::new();
    if threads > 1 {
        for _ in 0..2 {
            match host.prepare()? {
                Some(input) => ahead.push_back(input),
                None => break,
            }
        }
    }
    let threads = if ahead.len() < 2 { 1 } else { threads };
    stream(threads, new_state, work, |s| {
        while let Some(input) = match ahead.pop_front() {
            Some(input) => Some(input),
            None => host.prepare()?,
        } {
            s.push(input, host)?;
        }
        s.finish(host)
    })
}

/// `work` on one block, a panic turned into an error.
fn attempt<I, R, S>(work: &Work<'_, I, R, S>, input: &I, state: &mut S) -> Result<R> {
    catch_unwind(AssertUnwindSafe(|| work(input, state))).unwrap_or_else(|_| Err(worker_crashed()))
}

/// A spawned thread: takes queued blocks until the queue is closed and empty.
fn help<I: Send, R: Send, S>(shared: &Shared<I, R>, mut state: S, work: &Work<'_, I, R, S>) {
    loop {
        let (k, input) = {
            let mut st = shared.lock();
            loop {
                if let Some(job) = st.queue.pop_front() {
                    break job;
                }
                if st.closed {
                    return;
                }
                st = shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        let result = attempt(work, &input, &mut state);
        shared.lock().done.insert(k, (input, result));
        shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// Blocks of numbers; delivers the squares in order, remembering them.
    struct Squares {
        next: u64,
        blocks: u64,
        got: Vec<u64>,
        fail_delivery_at: Option<u64>,
    }

    impl Host<Vec<u64>, Vec<u64>> for Squares {
        fn prepare(&mut self) -> Result<Option<Vec<u64>>> {
            if self.next == self.blocks {
                return Ok(None);
            }
            self.next += 1;
            Ok(Some(((self.next - 1) * 10..self.next * 10).collect()))
        }
    }

    impl Deliver<Vec<u64>, Vec<u64>> for Squares {
        fn deliver(&mut self, input: Vec<u64>, result: Vec<u64>) -> Result<()> {
            assert_eq!(input.len(), result.len());
            if self.fail_delivery_at == Some(input[0] / 10) {
                return Err(Error::output("host failed"));
            }
            self.got.extend(result);
            Ok(())
        }
        fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T {
            f()
        }
    }

    fn squares(blocks: u64) -> Squares {
        Squares { next: 0, blocks, got: Vec::new(), fail_delivery_at: None }
    }

    fn square(block: &Vec<u64>, calls: &mut usize) -> Result<Vec<u64>> {
        *calls += 1;
        if block[0] == 10 * 37 {
            std::thread::yield_now();
        }
        Ok(block.iter().map(|x| x * x).collect())
    }

    #[test]
    fn results_come_in_order_on_any_number_of_threads() {
        for threads in [1, 2, 3, 8] {
            for blocks in [0, 1, 5, 100] {
                let mut host = squares(blocks);
                run_ordered(threads, &mut host, &usize::default, &square).unwrap();
                let want: Vec<u64> = (0..blocks * 10).map(|x| x * x).collect();
                assert_eq!(host.got, want, "threads {threads}, blocks {blocks}");
            }
        }
    }

    #[test]
    fn the_first_error_in_block_order_wins_and_panics_become_errors() {
        let fail = |block: &Vec<u64>, _: &mut usize| -> Result<Vec<u64>> {
            match block[0] / 10 {
                20 => Err(Error::parameter("block 20")),
                30 => Err(Error::parameter("block 30")),
                _ => Ok(block.clone()),
            }
        };
        let boom = |block: &Vec<u64>, _: &mut usize| -> Result<Vec<u64>> {
            if block[0] == 50 {
                panic!("boom");
            }
            Ok(block.clone())
        };
        for threads in [1, 2, 4] {
            let mut host = squares(100);
            let err = run_ordered(threads, &mut host, &usize::default, &fail).unwrap_err();
            assert_eq!(err.message(), "block 20");
            assert_eq!(host.got.len(), 200);
            let mut host = squares(100);
            let err = run_ordered(threads, &mut host, &usize::default, &boom).unwrap_err();
            assert!(err.message().contains("crashed"), "{}", err.message());
            let mut host = squares(100);
            host.fail_delivery_at = Some(7);
            assert_eq!(run_ordered(threads, &mut host, &usize::default, &square).unwrap_err().message(), "host failed");
            assert_eq!(host.got.len(), 70);
        }
    }

    /// Takes results in order, counting the blocks pushed and not yet delivered.
    struct Counted {
        got: Vec<u64>,
        in_flight: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Deliver<u64, u64> for Counted {
        fn deliver(&mut self, input: u64, result: u64) -> Result<()> {
            assert_eq!(result, input * 2);
            self.got.push(input);
            self.in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }
        fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T {
            f()
        }
    }

    #[test]
    fn a_pushed_stream_comes_in_order_with_few_blocks_in_flight() {
        use std::sync::atomic::Ordering::SeqCst;
        for threads in [1, 2, 5] {
            let in_flight = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let mut out = Counted { got: Vec::new(), in_flight: in_flight.clone() };
            let most = std::sync::atomic::AtomicUsize::new(0);
            let work = |x: &u64, _: &mut usize| -> Result<u64> {
                if x % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                Ok(x * 2)
            };
            // The input arrives in "chunks" of 10 blocks, as a file's do.
            stream(threads, &usize::default, &work, |s| {
                for chunk in 0..30u64 {
                    for x in chunk * 10..chunk * 10 + 10 {
                        most.fetch_max(in_flight.fetch_add(1, SeqCst) + 1, SeqCst);
                        s.push(x, &mut out)?;
                    }
                }
                s.finish(&mut out)
            })
            .unwrap();
            assert_eq!(out.got, (0..300).collect::<Vec<u64>>(), "threads {threads}");
            assert!(most.load(SeqCst) <= AHEAD_PER_THREAD * threads, "threads {threads}: {} in flight", most.load(SeqCst));
        }
    }

    #[test]
    fn a_stream_stopped_by_its_caller_returns_the_error() {
        let mut out = Counted { got: Vec::new(), in_flight: Default::default() };
        let work = |x: &u64, _: &mut usize| -> Result<u64> { Ok(x * 2) };
        let err = stream(3, &usize::default, &work, |s| -> Result<()> {
            for x in 0..50u64 {
                out.in_flight.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                s.push(x, &mut out)?;
            }
            Err(Error::input("the reader failed"))
        })
        .unwrap_err();
        assert_eq!(err.message(), "the reader failed");
    }

    #[test]
    fn one_block_is_done_on_the_calling_thread() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for (blocks, states) in [(0, 1), (1, 1), (2, 4)] {
            let made = AtomicUsize::new(0);
            let new_state = || made.fetch_add(1, Ordering::Relaxed);
            let mut host = squares(blocks);
            run_ordered(4, &mut host, &new_state, &square).unwrap();
            assert_eq!(host.got, (0..blocks * 10).map(|x| x * x).collect::<Vec<u64>>());
            // One state per thread that ran: the caller's alone for one block.
            assert_eq!(made.load(Ordering::Relaxed), states, "{blocks} blocks");
        }
    }
}
