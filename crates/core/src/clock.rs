//! How long a phase took and how busy it kept the cores: wall seconds
//! beside the process's CPU seconds (user plus system time of all its
//! threads, from `getrusage(RUSAGE_SELF)`), and the thread count it ran on.
//! CPU seconds over wall seconds over threads is how busy the threads were
//! (everything the process ran in that time counts: the file readers and
//! decompression of counting, a Python caller's own threads).

use std::time::Instant;

/// The process's CPU time so far (user + system, all threads), in seconds;
/// None where the platform does not say.
pub fn process_cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `getrusage` writes a `rusage` into the pointer it is given,
        // which points at one; it reads nothing from it.
        let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
        if !ok {
            return None;
        }
        // SAFETY: `getrusage` succeeded and filled the struct (it was zeroed before).
        let u = unsafe { usage.assume_init() };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Some(secs(u.ru_utime) + secs(u.ru_stime))
    }
    #[cfg(not(unix))]
    None
}

/// A phase's wall and CPU seconds and the threads it ran on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseTime {
    pub seconds: f64,
    /// None where unknown (no CPU clock; or counting done elsewhere, as on
    /// Ray, where the driver's CPU says nothing about the workers').
    pub cpu_seconds: Option<f64>,
    pub threads: usize,
}

impl PhaseTime {
    /// Wall seconds only (the CPU time unknown).
    pub fn wall(seconds: f64, threads: usize) -> Self {
        PhaseTime { seconds, cpu_seconds: None, threads }
    }

    /// CPU seconds over what `threads` threads could have used in the wall
    /// time (1.0: every thread busy the whole time).
    pub fn busy(&self) -> Option<f64> {
        let room = self.seconds * self.threads.max(1) as f64;
        self.cpu_seconds.filter(|_| room > 0.0).map(|c| c / room)
    }

    /// "6.80 s, 13.1 CPU s on 2 threads (96% busy)", or "6.80 s" where the
    /// CPU time is unknown.
    pub fn describe(&self) -> String {
        match (self.cpu_seconds, self.busy()) {
            (Some(cpu), Some(busy)) => format!(
                "{:.2} s, {:.1} CPU s on {} thread{} ({:.0}% busy)",
                self.seconds,
                cpu,
                self.threads,
                if self.threads == 1 { "" } else { "s" },
                busy * 100.0
            ),
            _ => format!("{:.2} s", self.seconds),
        }
    }

    /// This phase less an earlier part of it (`part`).
    pub fn minus(&self, part: &PhaseTime) -> PhaseTime {
        PhaseTime {
            seconds: (self.seconds - part.seconds).max(0.0),
            cpu_seconds: self.cpu_seconds.zip(part.cpu_seconds).map(|(a, b)| (a - b).max(0.0)),
            threads: self.threads,
        }
    }

    /// Two phases one after the other.
    pub fn plus(&self, other: &PhaseTime) -> PhaseTime {
        PhaseTime {
            seconds: self.seconds + other.seconds,
            cpu_seconds: self.cpu_seconds.zip(other.cpu_seconds).map(|(a, b)| a + b),
            threads: self.threads.max(other.threads),
        }
    }
}

/// Measures a phase from its start.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    start: Instant,
    cpu: Option<f64>,
    threads: usize,
}

impl Stopwatch {
    /// Starts now, for a phase on `threads` threads.
    pub fn start(threads: usize) -> Self {
        Stopwatch { start: Instant::now(), cpu: process_cpu_seconds(), threads }
    }

    /// When the phase started.
    pub fn instant(&self) -> Instant {
        self.start
    }

    /// The phase so far.
    pub fn elapsed(&self) -> PhaseTime {
        let cpu = self.cpu.zip(process_cpu_seconds()).map(|(a, b)| (b - a).max(0.0));
        PhaseTime { seconds: self.start.elapsed().as_secs_f64(), cpu_seconds: cpu, threads: self.threads }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU time of the calling thread alone.
    fn thread_cpu_seconds() -> f64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `clock_gettime` writes a `timespec` into the pointer given.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    }

    /// Two threads that each use 0.1 CPU seconds show as (at least) 0.2 on
    /// the process's clock, however busy the machine (tests running beside
    /// this one add their own), and the description says so.
    #[test]
    fn cpu_time_counts_every_thread() {
        let watch = Stopwatch::start(2);
        let spin = || {
            let start = thread_cpu_seconds();
            let mut x = 0u64;
            while thread_cpu_seconds() - start < 0.1 {
                for _ in 0..1000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            x
        };
        std::thread::scope(|s| {
            let a = s.spawn(spin);
            spin();
            a.join().unwrap();
        });
        let t = watch.elapsed();
        let cpu = t.cpu_seconds.expect("a CPU clock on this platform");
        assert!(cpu >= 0.2 - 0.01, "{t:?}");
        assert!(t.describe().contains("CPU s on 2 threads"), "{}", t.describe());
        assert_eq!(PhaseTime::wall(1.5, 4).describe(), "1.50 s");
        let half = PhaseTime { seconds: 2.0, cpu_seconds: Some(2.0), threads: 2 };
        assert_eq!(half.busy(), Some(0.5));
        assert_eq!(half.describe(), "2.00 s, 2.0 CPU s on 2 threads (50% busy)");
        assert_eq!(half.plus(&half).minus(&half), half);
    }
}
