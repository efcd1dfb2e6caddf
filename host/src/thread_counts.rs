//! [`ThreadCounts`]: counters that each thread adds to in a copy of its own, with a plain
//! store instead of a locked instruction, on a cache line no other thread writes; a reader adds
//! the copies up.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use thread_local::ThreadLocal;

/// `N` counters, one copy per thread that counted, each on cache lines of its own (a thread's
/// copy sits next to another's in `ThreadLocal`'s storage).
pub(crate) struct ThreadCounts<const N: usize>(ThreadLocal<CachePadded<[AtomicU64; N]>>);

impl<const N: usize> Default for ThreadCounts<N> {
    fn default() -> Self {
        ThreadCounts(ThreadLocal::new())
    }
}

impl<const N: usize> ThreadCounts<N> {
    /// Adds one to counter `counter`.
    pub(crate) fn add_one(&self, counter: usize) {
        self.add_one_to_each(&[counter]);
    }

    /// Adds one to each of `counters` (one look-up of the thread's copy for all).
    pub(crate) fn add_one_to_each(&self, counters: &[usize]) {
        let counts =
            (self.0).get_or(|| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))));
        for &counter in counters {
            let count = &counts[counter];
            // Only this thread writes its copy: a load and a store lose nothing.
            count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }

    /// Counter `counter`'s total over every thread.
    pub(crate) fn total(&self, counter: usize) -> u64 {
        (self.0.iter())
            .map(|counts| counts[counter].load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However many threads count, the total is every count.
    #[test]
    fn the_total_is_every_thread_s_counts() {
        let counts: ThreadCounts<2> = ThreadCounts::default();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..1000 {
                        counts.add_one(0);
                    }
                    counts.add_one_to_each(&[0, 1]);
                });
            }
        });
        assert_eq!((counts.total(0), counts.total(1)), (4004, 4));
    }
}
