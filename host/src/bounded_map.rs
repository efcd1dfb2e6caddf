//! A map from short names (a node, an authority, a tenant) to shared state, grown on first use
//! up to a fixed number of entries and read without a lock: the map is replaced whole when an
//! entry is added, which happens at most `capacity` times. Retry throttles kept per scope and
//! circuit breakers kept per node use it, so a client naming many values cannot grow the host's
//! memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use foldhash::fast::RandomState;

/// The longest name, in bytes; a longer one gets no entry of its own.
pub(crate) const MAX_NAME_BYTES: usize = 256;

/// Entries by name, at most `capacity` of them.
#[derive(Debug)]
pub(crate) struct BoundedMap<T> {
    capacity: usize,
    /// Hashed with a seed of the map's own (foldhash): fast for short names, and a client
    /// cannot choose names that collide.
    entries: ArcSwap<HashMap<Box<str>, Arc<T>, RandomState>>,
    adding: Mutex<()>,
}

impl<T> BoundedMap<T> {
    /// An empty map for at most `capacity` entries.
    pub(crate) fn new(capacity: usize) -> Self {
        BoundedMap {
            capacity,
            entries: ArcSwap::default(),
            adding: Mutex::new(()),
        }
    }

    /// The most entries it holds.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The entry of `name`, if it has one.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<T>> {
        self.entries.load().get(name).cloned()
    }

    /// The entry of `name`, made by `make` if it has none; `None` for an empty name, one longer
    /// than [`MAX_NAME_BYTES`], or a new name once the map is full.
    pub(crate) fn get_or_add(&self, name: &str, make: impl FnOnce() -> T) -> Option<Arc<T>> {
        if name.is_empty() || name.len() > MAX_NAME_BYTES {
            return None;
        }
        if let Some(entry) = self.entries.load().get(name) {
            return Some(Arc::clone(entry));
        }
        let _adding = self.adding.lock().unwrap_or_else(|p| p.into_inner());
        let entries = self.entries.load_full();
        if let Some(entry) = entries.get(name) {
            return Some(Arc::clone(entry));
        }
        if entries.len() >= self.capacity {
            return None;
        }
        let entry = Arc::new(make());
        let mut more = (*entries).clone();
        more.insert(name.into(), Arc::clone(&entry));
        self.entries.store(Arc::new(more));
        Some(entry)
    }

    /// Every entry, sorted by name.
    pub(crate) fn each(&self) -> Vec<(String, Arc<T>)> {
        let entries = self.entries.load();
        let mut each: Vec<_> = (entries.iter())
            .map(|(name, entry)| (name.to_string(), Arc::clone(entry)))
            .collect();
        each.sort_by(|a, b| a.0.cmp(&b.0));
        each
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names past the capacity, empty names and over-long names get no entry.
    #[test]
    fn the_map_stays_within_its_capacity() {
        let map = BoundedMap::new(2);
        assert_eq!(*map.get_or_add("a", || 1).unwrap(), 1);
        assert_eq!(*map.get_or_add("a", || 9).unwrap(), 1, "made once");
        assert!(map.get_or_add("b", || 2).is_some());
        assert!(map.get_or_add("c", || 3).is_none(), "full");
        assert!(map.get_or_add("", || 4).is_none());
        assert!(map
            .get_or_add(&"x".repeat(MAX_NAME_BYTES + 1), || 5)
            .is_none());
        let names: Vec<_> = map.each().into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(map.get("c"), None);
    }
}
