//! The idle instances of one policy, kept for reuse without a lock, and the engine-wide
//! budget that bounds how many idle instances all policies together may hold, so the pooling
//! allocator always has slots left for the calls in flight however many policies are loaded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;

/// How many instances all policies of one engine may keep idle at once. Shared by every
/// policy's [`InstancePool`]; an instance released past it is dropped, its slot freed.
#[derive(Debug)]
pub(crate) struct IdleBudget {
    held: AtomicUsize,
    limit: usize,
}

impl IdleBudget {
    pub(crate) fn new(limit: usize) -> Self {
        IdleBudget {
            held: AtomicUsize::new(0),
            limit,
        }
    }

    /// Takes one place; false when every place is held.
    fn try_hold(&self) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.limit).then_some(held + 1)
            })
            .is_ok()
    }

    fn release(&self) {
        self.held.fetch_sub(1, Ordering::AcqRel);
    }

    /// Places held now.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The most places that can be held.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

/// Up to `capacity` idle instances of one policy (a lock-free queue), within the engine's
/// [`IdleBudget`].
pub(super) struct InstancePool<T> {
    idle: ArrayQueue<T>,
    budget: Arc<IdleBudget>,
}

impl<T> InstancePool<T> {
    /// A pool of at most `capacity` (at least 1) idle instances.
    pub(super) fn new(capacity: usize, budget: Arc<IdleBudget>) -> Self {
        InstancePool {
            idle: ArrayQueue::new(capacity.max(1)),
            budget,
        }
    }

    /// An idle instance, if one is waiting.
    pub(super) fn take(&self) -> Option<T> {
        let instance = self.idle.pop()?;
        self.budget.release();
        Some(instance)
    }

    /// Keeps `instance` for the next call, or drops it when this pool or the engine's budget
    /// is full.
    pub(super) fn put(&self, instance: T) {
        if !self.budget.try_hold() {
            return;
        }
        if self.idle.push(instance).is_err() {
            self.budget.release();
        }
    }
}

impl<T> Drop for InstancePool<T> {
    fn drop(&mut self) {
        while self.take().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine-wide budget bounds the idle instances of every pool together, and a taken
    /// or dropped instance gives its place back.
    #[test]
    fn pools_share_the_idle_budget() {
        let budget = Arc::new(IdleBudget::new(3));
        let a = InstancePool::new(2, Arc::clone(&budget));
        let b = InstancePool::new(8, Arc::clone(&budget));
        for i in 0..3 {
            a.put(i);
        }
        assert_eq!(budget.held(), 2, "a's own capacity is 2");
        for i in 0..3 {
            b.put(i);
        }
        assert_eq!(budget.held(), 3, "the engine's budget is 3");
        assert!(b.take().is_some());
        assert_eq!(budget.held(), 2);
        drop(a);
        assert_eq!(budget.held(), 0, "a dropped pool frees its places");
        drop(b);
    }
}
