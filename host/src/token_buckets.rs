//! Host-kept token buckets, named by a policy through its `retry-budget` import, so that one
//! policy can cap its retries per second without keeping state of its own (policies are
//! stateless between calls). Each policy
//! version owns its buckets: another policy can neither read, drain nor resize them, and they
//! are freed with the version. Their number and the length of their names are capped, so a
//! policy inventing names cannot grow the host's memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The most buckets one policy version may have.
pub const MAX_BUCKETS_PER_POLICY: usize = 64;

/// The longest bucket name, in bytes.
pub const MAX_BUCKET_NAME_BYTES: usize = 64;

/// One bucket: `tokens` refilled at `per_second` up to `burst`, both fixed by its first use.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    per_second: f64,
    burst: f64,
    tokens: f64,
    refilled_at: Instant,
}

/// What asking a bucket for a token gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// A token: the retry may go.
    Token,
    /// The bucket is empty.
    Empty,
    /// No bucket could be used; the policy gets no token.
    Refused(BucketRefusal),
}

/// Why a bucket could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BucketRefusal {
    /// The name is longer than [`MAX_BUCKET_NAME_BYTES`].
    #[error("a retry-budget name is longer than {MAX_BUCKET_NAME_BYTES} bytes")]
    NameTooLong,
    /// The policy already has [`MAX_BUCKETS_PER_POLICY`] buckets and names another.
    #[error(
        "the policy already has {MAX_BUCKETS_PER_POLICY} retry-budget buckets and named another"
    )]
    TooManyBuckets,
}

/// The named token buckets of one policy version, shared by every call of every instance of
/// it. A bucket is created full on first use, and keeps the rate and size of that use: a
/// later call naming other values draws from it unchanged.
#[derive(Debug, Default)]
pub struct TokenBuckets {
    buckets: Mutex<HashMap<Box<str>, Bucket>>,
    refusals: AtomicU64,
    refusal_reported: AtomicBool,
}

impl TokenBuckets {
    /// An empty set of buckets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one token from bucket `name` at `now`. A `burst` of 0 never grants a token.
    pub fn acquire_at(&self, name: &str, per_second: u32, burst: u32, now: Instant) -> Acquired {
        if name.len() > MAX_BUCKET_NAME_BYTES {
            return self.refuse(BucketRefusal::NameTooLong);
        }
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if buckets.len() >= MAX_BUCKETS_PER_POLICY && !buckets.contains_key(name) {
            drop(buckets);
            return self.refuse(BucketRefusal::TooManyBuckets);
        }
        let bucket = match buckets.get_mut(name) {
            Some(bucket) => bucket,
            None => buckets.entry(name.into()).or_insert(Bucket {
                per_second: f64::from(per_second),
                burst: f64::from(burst),
                tokens: f64::from(burst),
                refilled_at: now,
            }),
        };
        let elapsed = now
            .saturating_duration_since(bucket.refilled_at)
            .as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * bucket.per_second).min(bucket.burst);
        bucket.refilled_at = bucket.refilled_at.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Acquired::Token
        } else {
            Acquired::Empty
        }
    }

    /// Whether [`acquire_at`](Self::acquire_at) gives a token.
    pub fn try_acquire_at(&self, name: &str, per_second: u32, burst: u32, now: Instant) -> bool {
        self.acquire_at(name, per_second, burst, now) == Acquired::Token
    }

    /// [`try_acquire_at`](Self::try_acquire_at) now.
    pub fn try_acquire(&self, name: &str, per_second: u32, burst: u32) -> bool {
        self.try_acquire_at(name, per_second, burst, Instant::now())
    }

    /// The buckets in use.
    pub fn len(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }

    /// Whether no bucket is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every bucket (the next use of a name makes it anew, full).
    #[cfg(all(feature = "registry", feature = "wasm"))]
    pub(crate) fn clear(&self) {
        self.buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }

    /// Calls refused a bucket (a name too long, one bucket too many).
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// True the first time it is asked after a refusal, false ever after: whoever reports
    /// refusals (the policy's log) does so once.
    pub fn first_refusal_to_report(&self) -> bool {
        self.refusals() > 0 && !self.refusal_reported.swap(true, Ordering::Relaxed)
    }

    fn refuse(&self, refusal: BucketRefusal) -> Acquired {
        self.refusals.fetch_add(1, Ordering::Relaxed);
        Acquired::Refused(refusal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// `docs/decisions.md` "Guest token buckets": the first use of a bucket fixes its rate and
    /// size; a later call naming other values neither refills nor resizes it.
    #[test]
    fn a_bucket_keeps_the_parameters_of_its_first_use() {
        let buckets = TokenBuckets::new();
        let t0 = Instant::now();
        assert!(buckets.try_acquire_at("kv", 0, 2, t0));
        assert!(buckets.try_acquire_at("kv", 1_000, 1_000, t0 + Duration::from_secs(5)));
        assert_eq!(
            buckets.acquire_at("kv", 1_000, 1_000, t0 + Duration::from_secs(9)),
            Acquired::Empty
        );
    }

    /// `docs/decisions.md` "Guest token buckets": names are capped in length and number; a
    /// refused call gets no token and is counted, and the buckets already made still work.
    #[test]
    fn names_are_capped_in_length_and_number() {
        let buckets = TokenBuckets::new();
        let now = Instant::now();
        let long = "x".repeat(MAX_BUCKET_NAME_BYTES + 1);
        assert_eq!(
            buckets.acquire_at(&long, 1, 1, now),
            Acquired::Refused(BucketRefusal::NameTooLong)
        );
        assert!(buckets.try_acquire_at(&"y".repeat(MAX_BUCKET_NAME_BYTES), 1, 1, now));
        for i in 0..10 * MAX_BUCKETS_PER_POLICY {
            buckets.acquire_at(&format!("b{i}"), 1, 1, now);
        }
        assert_eq!(buckets.len(), MAX_BUCKETS_PER_POLICY);
        assert_eq!(
            buckets.acquire_at("another", 1, 1, now),
            Acquired::Refused(BucketRefusal::TooManyBuckets)
        );
        assert_eq!(
            buckets.refusals(),
            2 + 10 * MAX_BUCKETS_PER_POLICY as u64 - (MAX_BUCKETS_PER_POLICY as u64 - 1)
        );
        assert!(buckets.try_acquire_at("b0", 1, 1, now + Duration::from_secs(1)));
        assert!(buckets.first_refusal_to_report());
        assert!(!buckets.first_refusal_to_report());
    }
}
