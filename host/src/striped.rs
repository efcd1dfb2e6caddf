//! [`Striped`]: one copy per core of what threads update with atomic read-modify-writes (a
//! budget's slots), each thread writing to its own first, so that threads deciding at once do
//! not contend for one cache line; a thread may read or write the others' too.
//!
//! Under the `loom` models (`--cfg loom`) there are two copies whatever the machine, and thread
//! numbers are counted afresh in each execution the model explores.

#[cfg(not(loom))]
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

/// Copies of `T`, one per core up to a most (a power of two), each on its own cache line.
pub(crate) struct Striped<T> {
    stripes: Box<[CachePadded<T>]>,
}

impl<T: Default> Striped<T> {
    /// One copy per core, at most `most` (rounded up to a power of two).
    pub(crate) fn new(most: usize) -> Self {
        let count = cores().clamp(1, most.max(1)).next_power_of_two();
        Striped {
            stripes: (0..count).map(|_| CachePadded::default()).collect(),
        }
    }
}

impl<T> Striped<T> {
    /// The calling thread's copy and its index.
    pub(crate) fn mine(&self) -> (usize, &T) {
        let index = thread_number() & (self.stripes.len() - 1);
        (index, &self.stripes[index])
    }

    /// Copy `index` (below [`len`](Self::len)).
    pub(crate) fn get(&self, index: usize) -> &T {
        &self.stripes[index]
    }

    /// How many copies there are (a power of two).
    pub(crate) fn len(&self) -> usize {
        self.stripes.len()
    }

    /// Every copy, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.stripes.iter().map(|stripe| &**stripe)
    }
}

#[cfg(not(loom))]
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[cfg(loom)]
fn cores() -> usize {
    2
}

/// The calling thread's number: threads take numbers in turn as they first ask, so the
/// threads of a pool spread over the stripes.
#[cfg(not(loom))]
fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|number| *number)
}

#[cfg(loom)]
fn thread_number() -> usize {
    loom::lazy_static! {
        static ref NEXT: loom::sync::atomic::AtomicUsize = loom::sync::atomic::AtomicUsize::new(0);
    }
    loom::thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|number| *number)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;

    /// Whatever thread writes, the copies add up to every write.
    #[test]
    fn the_copies_add_up_to_every_write() {
        let counts: Striped<AtomicU64> = Striped::new(8);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..1000 {
                        counts.mine().1.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        let total: u64 = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, 4000);
        assert!(counts.iter().count().is_power_of_two());
    }
}
