//! How the library takes its mutexes, one way everywhere: a mutex whose holder panicked is
//! used as it is, because every value kept under these locks is replaced whole, so a panic
//! cannot leave one half-written, and refusing it would stop decisions or reloads for good.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, recovering the data if a holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
