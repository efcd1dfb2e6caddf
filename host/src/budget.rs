//! Host-kept retry budgets: named token buckets that let a policy cap its retries per second
//! without keeping state of its own (policies are stateless between calls).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// One bucket: `tokens` refilled at `per_second` up to `burst`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    refilled_at: Instant,
}

/// Named token buckets, shared by every caller. A bucket is created full on first use; its
/// rate and size are those of the latest call (so a reconfigured policy takes effect at once).
#[derive(Debug, Default)]
pub struct RetryBudgets {
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RetryBudgets {
    /// An empty set of budgets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one token from bucket `name` at `now`; false if it is empty. A `burst` of 0 never
    /// grants a token.
    pub fn try_acquire_at(&self, name: &str, per_second: u32, burst: u32, now: Instant) -> bool {
        let burst = f64::from(burst);
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let bucket = match buckets.get_mut(name) {
            Some(bucket) => bucket,
            None => buckets.entry(name.to_owned()).or_insert(Bucket {
                tokens: burst,
                refilled_at: now,
            }),
        };
        let elapsed = now
            .saturating_duration_since(bucket.refilled_at)
            .as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * f64::from(per_second)).min(burst);
        bucket.refilled_at = bucket.refilled_at.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// [`try_acquire_at`](Self::try_acquire_at) now.
    pub fn try_acquire(&self, name: &str, per_second: u32, burst: u32) -> bool {
        self.try_acquire_at(name, per_second, burst, Instant::now())
    }
}
