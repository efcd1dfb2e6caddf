//! Observed attempt latencies, per authority. A hedge that waits a constant delay sends
//! copies to a slow node as eagerly as to a fast one; waiting for a quantile of the latencies a
//! node actually shows sends a copy only when an attempt is slow *for that node*. Each key keeps
//! a bounded sketch (`histogram`'s atomic log-linear buckets: recording is one lock-free
//! increment), read through a cumulative snapshot refreshed every [`REFRESH`] attempts, so that a
//! quantile read is a binary search. Counts halve every [`DECAY`] attempts, so the sketch follows
//! a node whose latency changes. The number of keys is capped: a caller naming ever new
//! authorities evicts the least recently refreshed of a few sampled keys (counted), and memory
//! stays bounded.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use histogram::{AtomicHistogram32, CumulativeROHistogram32, Histogram32};

/// Buckets 1/2^4 (6.25 %) wide relative to their value.
const GROUPING_POWER: u8 = 4;
/// Latencies are kept in microseconds, up to 2^32 µs (71 minutes); longer ones count as that.
const MAX_VALUE_POWER: u8 = 32;
const MAX_MICROS: u64 = (1 << MAX_VALUE_POWER) - 1;
/// Attempts between two refreshes of a key's snapshot; the first snapshot comes after as many,
/// so a key has no quantile before it has seen this many attempts.
pub const REFRESH: u32 = 64;
/// Attempts between two halvings of a key's counts.
pub const DECAY: u32 = 1024;
/// Keys sampled when one must go to make room: the least recently refreshed of them goes.
const EVICTION_SAMPLE: usize = 8;
/// The keys a registry keeps by default.
pub const DEFAULT_KEYS: usize = 1024;

/// The latencies of attempts per key (an authority), capped at a number of keys.
pub struct LatencySketches {
    keys: papaya::HashMap<Box<str>, KeySketch, foldhash::fast::RandomState>,
    cap: usize,
    evicted: AtomicU64,
    /// Counts snapshot refreshes: a key's last refresh by it tells the recently used ones.
    refreshes: AtomicU64,
}

impl std::fmt::Debug for LatencySketches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencySketches")
            .field("cap", &self.cap)
            .field("stats", &self.stats())
            .finish()
    }
}

/// What latency sketches hold: how many keys, and how many were evicted to make room.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct LatencyStats {
    /// Keys with a sketch now.
    pub keys: u64,
    /// Keys evicted to keep at most the cap.
    pub evicted: u64,
}

impl LatencySketches {
    /// Sketches for at most `cap` keys (at least one).
    pub fn new(cap: usize) -> Self {
        LatencySketches {
            keys: papaya::HashMap::builder()
                .hasher(foldhash::fast::RandomState::default())
                .build(),
            cap: cap.max(1),
            evicted: AtomicU64::new(0),
            refreshes: AtomicU64::new(0),
        }
    }

    /// An attempt to `key` took `latency` (from its start to its answer).
    pub fn record(&self, key: &str, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).map_or(MAX_MICROS, |m| m.min(MAX_MICROS));
        let keys = self.keys.pin();
        let sketch = match keys.get(key) {
            Some(sketch) => sketch,
            None => {
                if keys.len() >= self.cap {
                    self.evict_one(&keys);
                }
                keys.get_or_insert_with(key.into(), KeySketch::new)
            }
        };
        sketch.record(micros, &self.refreshes);
    }

    /// The latency under which `percentile` (in (0, 100)) of `key`'s recent attempts answered:
    /// the upper bound of the bucket holding that rank (at most 6.25 % above it). None before
    /// the key has seen [`REFRESH`] attempts, or for a percentile outside (0, 100).
    pub fn quantile(&self, key: &str, percentile: f64) -> Option<Duration> {
        if !(percentile > 0.0 && percentile < 100.0) {
            return None;
        }
        let keys = self.keys.pin();
        let snapshot = keys.get(key)?.snapshot.load();
        let bucket = snapshot
            .as_ref()?
            .quantile_bucket(percentile / 100.0)
            .ok()??;
        Some(Duration::from_micros(bucket.end()))
    }

    /// Makes every attempt recorded under `key` so far count in its quantiles now, without
    /// waiting for the next [`REFRESH`]: for a tool that states what was observed (`rebound
    /// test`'s hedging cases), not for the request path. Nothing for a key never recorded.
    pub fn refresh(&self, key: &str) {
        if let Some(sketch) = self.keys.pin().get(key) {
            sketch.refresh(&self.refreshes);
        }
    }

    /// How many keys are kept and how many were evicted.
    pub fn stats(&self) -> LatencyStats {
        LatencyStats {
            keys: self.keys.len() as u64,
            evicted: self.evicted.load(Ordering::Relaxed),
        }
    }

    /// Removes the least recently refreshed of a few keys (the map's order is its hashes', so
    /// they are a sample), so that a new one fits: constant work whatever the cap.
    fn evict_one<G: papaya::Guard>(
        &self,
        keys: &papaya::HashMapRef<'_, Box<str>, KeySketch, foldhash::fast::RandomState, G>,
    ) {
        let oldest = (keys.iter().take(EVICTION_SAMPLE))
            .min_by_key(|(_, sketch)| sketch.refreshed.load(Ordering::Relaxed))
            .map(|(key, _)| key.clone());
        if let Some(key) = oldest {
            if keys.remove(&key).is_some() {
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// One key's sketch.
struct KeySketch {
    recorder: AtomicHistogram32,
    since_refresh: AtomicU32,
    since_decay: AtomicU32,
    snapshot: ArcSwapOption<CumulativeROHistogram32>,
    /// The sketches' refresh count when this one was last refreshed.
    refreshed: AtomicU64,
}

impl KeySketch {
    fn new() -> Self {
        KeySketch {
            recorder: match AtomicHistogram32::new(GROUPING_POWER, MAX_VALUE_POWER) {
                Ok(recorder) => recorder,
                Err(_) => unreachable!("the powers are valid constants"),
            },
            since_refresh: AtomicU32::new(0),
            since_decay: AtomicU32::new(0),
            snapshot: ArcSwapOption::empty(),
            refreshed: AtomicU64::new(0),
        }
    }

    /// Counts `micros` (at most [`MAX_MICROS`]); every [`REFRESH`] attempts the attempt that
    /// completes the count refreshes the snapshot (after halving the counts every [`DECAY`]).
    fn record(&self, micros: u64, refreshes: &AtomicU64) {
        // A value within the powers' range is always accepted.
        let _ = self.recorder.increment(micros);
        if self.since_refresh.fetch_add(1, Ordering::Relaxed) + 1 < REFRESH {
            return;
        }
        self.since_refresh.store(0, Ordering::Relaxed);
        if self.since_decay.fetch_add(REFRESH, Ordering::Relaxed) + REFRESH >= DECAY {
            self.since_decay.store(0, Ordering::Relaxed);
            self.halve();
        }
        self.refresh(refreshes);
    }

    /// Takes the snapshot that quantiles are read from.
    fn refresh(&self, refreshes: &AtomicU64) {
        let snapshot = CumulativeROHistogram32::from(&self.recorder.load());
        self.snapshot.store(Some(Arc::new(snapshot)));
        let tick = refreshes.fetch_add(1, Ordering::Relaxed);
        self.refreshed.store(tick, Ordering::Relaxed);
    }

    /// Halves every count: the counts are taken out (each bucket's in one atomic swap) and half
    /// of each is put back, so increments made meanwhile are kept.
    fn halve(&self) {
        let taken: Histogram32 = self.recorder.drain();
        for bucket in taken.iter() {
            let half = u32::try_from(bucket.count() / 2).unwrap_or(u32::MAX);
            if half > 0 {
                let _ = self.recorder.add(bucket.start(), half);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// docs/decisions.md "Hedge delays from observed latency": no quantile before a key has
    /// seen `REFRESH` attempts; then the quantile is within a bucket's width (6.25 %) above the
    /// true one; a percentile outside (0, 100) has none.
    #[test]
    fn a_key_has_a_quantile_once_it_has_seen_enough_attempts() {
        let sketches = LatencySketches::new(4);
        for ms in 1..REFRESH as u64 {
            sketches.record("node-1", MS(ms));
        }
        assert_eq!(sketches.quantile("node-1", 50.0), None);
        sketches.record("node-1", MS(u64::from(REFRESH)));
        // The median of 1, 2, … REFRESH ms, and its bucket's upper bound 6.25 % above at most.
        let median = sketches.quantile("node-1", 50.0).unwrap();
        let half = MS(u64::from(REFRESH / 2));
        assert!(median >= half && median <= half * 17 / 16, "{median:?}");
        assert_eq!(sketches.quantile("node-1", 0.0), None);
        assert_eq!(sketches.quantile("node-1", 100.0), None);
        assert_eq!(sketches.quantile("node-2", 50.0), None);
    }

    /// A refresh counts every attempt recorded so far, not only those up to the last
    /// `REFRESH`-th; a key never recorded stays without a quantile.
    #[test]
    fn a_refresh_counts_every_attempt_recorded_so_far() {
        let sketches = LatencySketches::new(4);
        for _ in 0..REFRESH {
            sketches.record("node-1", MS(10));
        }
        for _ in 0..REFRESH {
            sketches.record("node-1", MS(1000));
        }
        sketches.record("node-1", MS(1000));
        let p99 = sketches.quantile("node-1", 99.0).unwrap();
        assert!(p99 >= MS(1000), "{p99:?}");
        sketches.record("node-1", MS(5000));
        assert!(sketches.quantile("node-1", 99.9).unwrap() < MS(5000));
        sketches.refresh("node-1");
        assert!(sketches.quantile("node-1", 99.9).unwrap() >= MS(5000));
        sketches.refresh("node-2");
        assert_eq!(sketches.quantile("node-2", 50.0), None);
    }

    /// Memory stays bounded whatever keys a caller names: at most `cap` keys, the rest evicted
    /// and counted.
    #[test]
    fn keys_are_capped_and_evictions_counted() {
        let sketches = LatencySketches::new(8);
        for key in 0..1000 {
            sketches.record(&format!("authority-{key}"), MS(1));
        }
        let stats = sketches.stats();
        assert!(stats.keys <= 8, "{stats:?}");
        assert_eq!(stats.keys + stats.evicted, 1000, "{stats:?}");
    }

    /// Counts halve every `DECAY` attempts: a node that became slow shows its new latency
    /// after a few halvings, not after as many attempts as it made fast.
    #[test]
    fn a_node_that_slows_down_shows_it() {
        let sketches = LatencySketches::new(4);
        for _ in 0..10 * DECAY {
            sketches.record("node-1", MS(10));
        }
        for _ in 0..2 * DECAY {
            sketches.record("node-1", MS(100));
        }
        let median = sketches.quantile("node-1", 50.0).unwrap();
        assert!(median >= MS(100), "{median:?}");
    }
}
