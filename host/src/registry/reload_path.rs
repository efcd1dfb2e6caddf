//! A reload that dies leaves a service deciding with a configuration nobody can change any
//! more, while everything else says it is healthy. So each step of a reload runs contained: a
//! panic is caught, logged, counted and kept as the configuration's last error, and the
//! reload thread goes on; should the thread end all the same, the status says the reload path
//! stopped (`rebound serve`'s `/health` turns `degraded`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use serde::Serialize;

/// Whether files are watched and reloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Watching {
    /// Watching was not started (the configuration disables it, or nobody asked).
    Off,
    /// The reload thread runs.
    Running,
    /// The reload thread ended without being asked to: changes are no longer reloaded.
    Stopped,
}

/// The reload path's health, kept by the registry.
#[derive(Debug, Default)]
pub(crate) struct ReloadPath {
    watching: AtomicU8,
    panics: AtomicU64,
    last_panic: Mutex<Option<String>>,
}

impl ReloadPath {
    /// Whether files are watched and reloaded.
    pub(crate) fn watching(&self) -> Watching {
        match self.watching.load(Ordering::Relaxed) {
            1 => Watching::Running,
            2 => Watching::Stopped,
            _ => Watching::Off,
        }
    }

    /// The reload thread started.
    pub(crate) fn started(&self) {
        self.watching.store(1, Ordering::Relaxed);
    }

    /// The reload thread ended: asked to (`Off`) or not (`Stopped`).
    pub(crate) fn ended(&self, asked: bool) {
        self.watching
            .store(if asked { 0 } else { 2 }, Ordering::Relaxed);
    }

    /// Reload steps that panicked (each caught), and the last one's message.
    pub(crate) fn panics(&self) -> (u64, Option<String>) {
        let last = self.last_panic.lock().unwrap_or_else(|p| p.into_inner());
        (self.panics.load(Ordering::Relaxed), last.clone())
    }

    /// Runs reload step `what`; a panic in it is caught, logged, counted and kept, and `None`
    /// returned.
    pub(crate) fn contain<T>(&self, what: &str, step: impl FnOnce() -> T) -> Option<T> {
        match catch_unwind(AssertUnwindSafe(step)) {
            Ok(done) => Some(done),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_owned());
                let message: String = message.chars().take(256).collect();
                self.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(step = what, panic = %message,
                    "a reload step panicked; the running configuration stays and reloads go on");
                *self.last_panic.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(format!("{what} panicked: {message}"));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reload step that panics is caught, counted and kept; the next one runs.
    #[test]
    fn a_panicking_step_is_contained_and_counted() {
        let path = ReloadPath::default();
        assert_eq!(path.contain("configuration", || 1), Some(1));
        let none: Option<()> = path.contain("configuration", || panic!("{}", "x".repeat(1000)));
        assert_eq!(none, None);
        let (panics, last) = path.panics();
        assert_eq!(panics, 1);
        let last = last.unwrap();
        assert!(last.starts_with("configuration panicked: xxx"), "{last}");
        assert!(last.len() < 300, "the message is cut");
        assert_eq!(path.contain("policy p", || 2), Some(2));
    }

    /// The status tells a thread asked to stop from one that ended on its own.
    #[test]
    fn an_unasked_end_shows_as_stopped() {
        let path = ReloadPath::default();
        assert_eq!(path.watching(), Watching::Off);
        path.started();
        assert_eq!(path.watching(), Watching::Running);
        path.ended(false);
        assert_eq!(path.watching(), Watching::Stopped);
        path.ended(true);
        assert_eq!(path.watching(), Watching::Off);
    }
}
