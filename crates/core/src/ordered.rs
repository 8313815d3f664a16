//! Ordered work on threads, fed and drained by the calling thread.
//!
//! The calling thread may hold a lock the workers must not need (Python's
//! GIL): it alone prepares each block of input and takes each block's
//! result, in input order, as soon as that block and all before it are
//! done, so handing results over overlaps the work on later blocks instead
//! of following all of it. With `threads` threads the calling thread is one
//! of them (`threads - 1` are spawned): when it has nothing to prepare or to
//! take, it works on the next block itself, outside its lock; with one
//! thread, or input of one block, nothing is spawned and the blocks are
//! simply done one by one.
//!
//! A panic in `work` becomes an error; an error (from the host or the
//! work) stops the workers at their next block and is returned, the first
//! in block order winning among work errors, as in a serial run.

use crate::error::Result;
use crate::util::{join_all, worker_crashed};
use std::collections::{BTreeMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What the calling thread does (see the module notes).
pub trait Host<I, R> {
    /// The next block of input; `None` when there is no more.
    fn prepare(&mut self) -> Result<Option<I>>;
    /// A block's result, in input order, with its input.
    fn deliver(&mut self, input: I, result: R) -> Result<()>;
    /// Runs `f` without the host's lock (a plain call if it has none).
    fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T;
}

/// Blocks prepared but not yet delivered, per thread: bounds the memory
/// held in flight while keeping every thread fed.
const AHEAD_PER_THREAD: usize = 4;

struct State<I, R> {
    /// Prepared blocks no thread has taken yet, with their numbers.
    queue: VecDeque<(usize, I)>,
    /// Finished blocks not yet delivered, by number.
    done: BTreeMap<usize, (I, Result<R>)>,
    /// No more blocks will be queued (all prepared, or stopping).
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

/// Runs `work` on every block `host` prepares, on `threads` threads, with
/// one `S` per thread (e.g. a cache) made by `new_state` on that thread, and
/// delivers the results in order.
pub fn run_ordered<I, R, S, H>(
    threads: usize,
    host: &mut H,
    new_state: &(dyn Fn() -> S + Sync),
    work: &(dyn Fn(&I, &mut S) -> Result<R> + Sync),
) -> Result<()>
where
    I: Send,
    R: Send,
    S: Send,
    H: Host<I, R>,
{
    // Work that fits one block is done on the calling thread: starting
    // threads for it cost more than the work of a short batch.
    let mut host = Peeked { ahead: VecDeque::new(), host };
    if threads > 1 {
        for _ in 0..2 {
            match host.host.prepare()? {
                Some(input) => host.ahead.push_back(input),
                None => break,
            }
        }
    }
    let threads = if host.ahead.len() < 2 { 1 } else { threads };
    let host = &mut host;
    let shared = Shared { state: Mutex::new(State { queue: VecDeque::new(), done: BTreeMap::new(), closed: false }), changed: Condvar::new() };
    let helpers = threads.max(1) - 1;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..helpers).map(|_| s.spawn(|| help(&shared, new_state(), work))).collect();
        let result = drive(threads.max(1), host, &shared, new_state(), work);
        // Stop the helpers (after an error, before they take more blocks).
        shared.close();
        shared.lock().queue.clear();
        result.and(join_all(handles).map(drop))
    })
}

/// A host whose first blocks were prepared before the threads started.
struct Peeked<'h, I, H> {
    ahead: VecDeque<I>,
    host: &'h mut H,
}

impl<I, R, H: Host<I, R>> Host<I, R> for Peeked<'_, I, H> {
    fn prepare(&mut self) -> Result<Option<I>> {
        match self.ahead.pop_front() {
            Some(input) => Ok(Some(input)),
            None => self.host.prepare(),
        }
    }
    fn deliver(&mut self, input: I, result: R) -> Result<()> {
        self.host.deliver(input, result)
    }
    fn unlocked<T: Send>(&mut self, f: impl FnOnce() -> T + Send) -> T {
        self.host.unlocked(f)
    }
}

/// `work` on one block, a panic turned into an error.
fn attempt<I, R, S>(work: &(dyn Fn(&I, &mut S) -> Result<R> + Sync), input: &I, state: &mut S) -> Result<R> {
    catch_unwind(AssertUnwindSafe(|| work(input, state))).unwrap_or_else(|_| Err(worker_crashed()))
}

/// A spawned thread: takes queued blocks until the queue is closed and empty.
fn help<I: Send, R: Send, S>(shared: &Shared<I, R>, mut state: S, work: &(dyn Fn(&I, &mut S) -> Result<R> + Sync)) {
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

/// The calling thread's loop: queue a block for each helper short of one
/// (if few are in flight), else deliver the next block if it is done, else
/// prepare one more if few are in flight, else work on a queued block, else
/// wait (outside the host's lock) for the next block to be done.
fn drive<I: Send, R: Send, S: Send, H: Host<I, R>>(
    threads: usize,
    host: &mut H,
    shared: &Shared<I, R>,
    mut state: S,
    work: &(dyn Fn(&I, &mut S) -> Result<R> + Sync),
) -> Result<()> {
    let (mut prepared, mut delivered, mut exhausted) = (0usize, 0usize, false);
    loop {
        // A block for every helper comes first: a helper finding the queue
        // empty waits, and delivering a run of finished blocks takes longer
        // than encoding one.
        let can_prepare = !exhausted && prepared - delivered < AHEAD_PER_THREAD * threads;
        let ready = {
            let mut st = shared.lock();
            let helpers_short = st.queue.len() < threads - 1;
            if can_prepare && helpers_short { None } else { st.done.remove(&delivered) }
        };
        if let Some((input, result)) = ready {
            host.deliver(input, result?)?;
            delivered += 1;
            continue;
        }
        if can_prepare {
            match host.prepare()? {
                Some(input) => {
                    shared.lock().queue.push_back((prepared, input));
                    shared.changed.notify_all();
                    prepared += 1;
                }
                None => {
                    exhausted = true;
                    shared.close();
                }
            }
            continue;
        }
        if exhausted && delivered == prepared {
            return Ok(());
        }
        let job = shared.lock().queue.pop_front();
        if let Some((k, input)) = job {
            let (input, result) = host.unlocked(|| {
                let result = attempt(work, &input, &mut state);
                (input, result)
            });
            shared.lock().done.insert(k, (input, result));
            continue;
        }
        host.unlocked(|| {
            let mut st = shared.lock();
            while !st.done.contains_key(&delivered) {
                st = shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        });
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
