//! [`LogRateLimit`]: at most so many log lines per second, so that what an outsider or a policy can
//! cause on every call (a policy failing or writing to stderr, a refused request) cannot flood
//! the host's log: lines past the limit are left out and counted, and the next line written
//! says how many were.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(1);

/// At most `per_second` lines in each second.
#[derive(Debug)]
pub struct LogRateLimit {
    base: Instant,
    per_second: u32,
    /// When the current second began (ns after `base`).
    window_start: AtomicU64,
    /// Lines allowed in the current second.
    used: AtomicU32,
    /// Lines left out since the last one allowed.
    left_out: AtomicU64,
}

impl LogRateLimit {
    /// At most `per_second` lines in each second.
    pub fn new(per_second: u32) -> Self {
        LogRateLimit {
            base: Instant::now(),
            per_second,
            window_start: AtomicU64::new(0),
            used: AtomicU32::new(0),
            left_out: AtomicU64::new(0),
        }
    }

    /// Whether a line may be written now; if so, how many were left out since the last one.
    pub fn allow(&self) -> Option<u64> {
        let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let start = self.window_start.load(Ordering::Relaxed);
        let window = u64::try_from(WINDOW.as_nanos()).unwrap_or(u64::MAX);
        if now.saturating_sub(start) >= window
            && self
                .window_start
                .compare_exchange(start, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.used.store(0, Ordering::Relaxed);
        }
        if self.used.fetch_add(1, Ordering::Relaxed) < self.per_second {
            return Some(self.left_out.swap(0, Ordering::Relaxed));
        }
        self.left_out.fetch_add(1, Ordering::Relaxed);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the limit, lines are left out and counted; the next second's first line says how
    /// many.
    #[test]
    fn lines_past_the_limit_are_counted_in_the_next_one() {
        let limit = LogRateLimit::new(3);
        let allowed: Vec<_> = (0..10).map(|_| limit.allow()).collect();
        assert_eq!(&allowed[..3], [Some(0), Some(0), Some(0)]);
        assert!(allowed[3..].iter().all(Option::is_none), "{allowed:?}");
        std::thread::sleep(WINDOW + Duration::from_millis(20));
        assert_eq!(limit.allow(), Some(7));
        assert_eq!(limit.allow(), Some(0));
    }
}
