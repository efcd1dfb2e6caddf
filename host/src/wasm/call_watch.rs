//! What a caller on another thread can see of a call in progress: the CPU time the call's
//! thread has spent on it since its budgets were armed (instance creation excluded). A caller
//! whose answer is past due tells with it a spinning call (CPU spent) from one whose thread the
//! machine has not run (none spent), without waiting for that thread to run again.
//!
//! Linux only (`pthread_getcpuclockid`); elsewhere nothing is seen and the caller waits for the
//! sandbox's own verdict.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(feature = "registry")]
use std::time::Duration;

/// One call's CPU account, written by the call's thread and read by its caller.
#[derive(Debug, Default)]
pub(crate) struct CallWatch {
    /// Whether the call's budgets are armed (the fields below are set).
    started: AtomicBool,
    /// The call thread's CPU clock (`clockid_t`).
    clock: AtomicU64,
    /// That clock's reading when the call's budgets were armed, in nanoseconds.
    cpu_at_start: AtomicU64,
}

impl CallWatch {
    /// Notes, on the call's thread, where its CPU time stands as the call starts.
    pub(crate) fn start(&self) {
        let Some((clock, cpu)) = this_thread_clock() else {
            return;
        };
        self.clock.store(clock, Ordering::Relaxed);
        self.cpu_at_start.store(cpu, Ordering::Relaxed);
        self.started.store(true, Ordering::Release);
    }

    /// The CPU time the call's thread has spent since the call started, read from any thread;
    /// `None` before it started or where it cannot be read.
    #[cfg(feature = "registry")]
    pub(crate) fn cpu_spent(&self) -> Option<Duration> {
        if !self.started.load(Ordering::Acquire) {
            return None;
        }
        let now = read_clock(self.clock.load(Ordering::Relaxed))?;
        Some(Duration::from_nanos(
            now.saturating_sub(self.cpu_at_start.load(Ordering::Relaxed)),
        ))
    }
}

/// The calling thread's CPU clock and its reading in nanoseconds.
#[cfg(target_os = "linux")]
fn this_thread_clock() -> Option<(u64, u64)> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `pthread_self` is always valid for the calling thread, and `clock` is a valid
    // place for the clock id.
    let done = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    if done != 0 {
        return None;
    }
    // A clock id is a small negative number: kept bit for bit.
    let clock = u64::from(clock as u32);
    Some((clock, read_clock(clock)?))
}

/// Reads a thread's CPU clock in nanoseconds.
#[cfg(target_os = "linux")]
fn read_clock(clock: u64) -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid place for the reading; an id whose thread has gone is refused
    // with an error, not undefined behaviour.
    let done = unsafe { libc::clock_gettime(clock as u32 as libc::clockid_t, &mut now) };
    if done != 0 {
        return None;
    }
    let nanos = u64::try_from(now.tv_sec).ok()?.checked_mul(1_000_000_000)?;
    nanos.checked_add(u64::try_from(now.tv_nsec).ok()?)
}

#[cfg(not(target_os = "linux"))]
fn this_thread_clock() -> Option<(u64, u64)> {
    None
}

#[cfg(not(target_os = "linux"))]
fn read_clock(_clock: u64) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_seen_before_the_call_starts() {
        assert_eq!(CallWatch::default().cpu_spent(), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_caller_sees_the_cpu_a_thread_spent_on_its_call_and_none_while_it_sleeps() {
        use std::sync::{mpsc, Arc};

        let watch = Arc::new(CallWatch::default());
        let (said, heard) = mpsc::channel();
        let (resume, resumed) = mpsc::channel::<()>();
        let call = {
            let watch = Arc::clone(&watch);
            std::thread::spawn(move || {
                watch.start();
                let own = || cpu_time::ThreadTime::now().as_duration();
                let from = own();
                while own() - from < Duration::from_millis(5) {}
                said.send(()).unwrap();
                // Asleep: it spends nothing more.
                resumed.recv().unwrap();
            })
        };
        heard.recv().unwrap();
        let first = watch.cpu_spent().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let second = watch.cpu_spent().unwrap();
        resume.send(()).unwrap();
        call.join().unwrap();
        // Read from this thread: the 5 ms the call spun, then nothing while it slept.
        assert!(first >= Duration::from_millis(5), "{first:?}");
        assert!(
            second - first < Duration::from_millis(1),
            "{first:?} then {second:?}"
        );
    }
}
