//! State kept per name that requests carry — a node, an authority, a tenant — is state a
//! client can name at will, so it must stay bounded however many names arrive, and a flood of
//! new names must neither take the place of the names in use nor push later names into one
//! shared, drained entry. Entries live in a concurrent cache with a fixed capacity and
//! quick_cache's scan-resistant eviction (Clock-PRO: a name seen once goes before the names in
//! steady use), so a new name always gets state of its own and adding one never copies the
//! table. Names are kept per caller: with authenticated callers (`rebound serve
//! --client-tokens`), one caller's names never reach another's state.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Equivalent, Lifecycle, UnitWeighter};

/// The longest name, in bytes; a longer one gets no entry of its own.
pub(crate) const MAX_NAME_BYTES: usize = 256;

/// An entry's key: the caller (empty when none is known) and the name.
type Key = (Box<str>, Box<str>);

/// A key to look up without allocating; hashed as [`Key`] is.
struct Lookup<'a> {
    caller: &'a str,
    name: &'a str,
}

impl Hash for Lookup<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As the tuple `(Box<str>, Box<str>)` hashes: each field in order.
        self.caller.hash(state);
        self.name.hash(state);
    }
}

impl Equivalent<Key> for Lookup<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        *key.0 == *self.caller && *key.1 == *self.name
    }
}

/// What the evicted entries leave behind: how many there were, and the sum of a tally each
/// carried (a throttle's refusals), so that counters read over the entries never go down.
#[derive(Debug, Default)]
struct Forgotten {
    entries: AtomicU64,
    tally: AtomicU64,
}

/// Notes each evicted entry in [`Forgotten`].
struct Forgetting<T> {
    forgotten: Arc<Forgotten>,
    tally: fn(&T) -> u64,
}

impl<T> Clone for Forgetting<T> {
    fn clone(&self) -> Self {
        Forgetting {
            forgotten: Arc::clone(&self.forgotten),
            tally: self.tally,
        }
    }
}

impl<T> Lifecycle<Key, Arc<T>> for Forgetting<T> {
    type RequestState = ();

    fn on_evict(&self, _: &mut (), _: Key, entry: Arc<T>) {
        self.forgotten.entries.fetch_add(1, Ordering::Relaxed);
        (self.forgotten.tally).fetch_add((self.tally)(&entry), Ordering::Relaxed);
    }
}

/// Entries by caller and name, about `capacity` of them at most.
pub(crate) struct ScopeStore<T> {
    capacity: usize,
    entries: Cache<Key, Arc<T>, UnitWeighter, DefaultHashBuilder, Forgetting<T>>,
    forgotten: Arc<Forgotten>,
}

impl<T> std::fmt::Debug for ScopeStore<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopeStore")
            .field("capacity", &self.capacity)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl<T> ScopeStore<T> {
    /// An empty store for about `capacity` entries (at least one); an evicted entry's
    /// `tally` is kept in [`forgotten`](Self::forgotten).
    pub(crate) fn new(capacity: usize, tally: fn(&T) -> u64) -> Self {
        let capacity = capacity.max(1);
        let forgotten = Arc::new(Forgotten::default());
        let lifecycle = Forgetting {
            forgotten: Arc::clone(&forgotten),
            tally,
        };
        ScopeStore {
            capacity,
            entries: Cache::with(
                capacity,
                capacity as u64,
                UnitWeighter,
                DefaultHashBuilder::default(),
                lifecycle,
            ),
            forgotten,
        }
    }

    /// The most entries it holds.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The entry of `name` for `caller`, if it has one.
    pub(crate) fn get(&self, caller: &str, name: &str) -> Option<Arc<T>> {
        self.entries.get(&Lookup { caller, name })
    }

    /// The entry of `name` for `caller`, made by `make` if it has none (evicting one the
    /// store holds when it is full); `None` for an empty name or one longer than
    /// [`MAX_NAME_BYTES`].
    pub(crate) fn get_or_add(
        &self,
        caller: &str,
        name: &str,
        make: impl FnOnce() -> T,
    ) -> Option<Arc<T>> {
        if name.is_empty() || name.len() > MAX_NAME_BYTES || caller.len() > MAX_NAME_BYTES {
            return None;
        }
        if let Some(entry) = self.get(caller, name) {
            return Some(entry);
        }
        let key: Key = (caller.into(), name.into());
        let made = self
            .entries
            .get_or_insert_with(&key, || Ok::<_, std::convert::Infallible>(Arc::new(make())));
        match made {
            Ok(entry) => Some(entry),
            Err(never) => match never {},
        }
    }

    /// Every entry, by `caller/name` (`name` alone without a caller), sorted.
    pub(crate) fn each(&self) -> Vec<(String, Arc<T>)> {
        let mut each: Vec<_> = (self.entries.iter())
            .map(|((caller, name), entry)| {
                let shown = if caller.is_empty() {
                    name.to_string()
                } else {
                    format!("{caller}/{name}")
                };
                (shown, entry)
            })
            .collect();
        each.sort_by(|a, b| a.0.cmp(&b.0));
        each
    }

    /// Entries evicted so far, and the sum of their tallies.
    pub(crate) fn forgotten(&self) -> (u64, u64) {
        (
            self.forgotten.entries.load(Ordering::Relaxed),
            self.forgotten.tally.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name gets an entry of its own, made once; empty and over-long names get none;
    /// the store holds about its capacity, the rest evicted and counted.
    #[test]
    fn every_name_gets_its_own_entry_and_the_store_stays_within_its_capacity() {
        let store = ScopeStore::new(64, |n: &u64| *n);
        assert_eq!(*store.get_or_add("", "a", || 1).unwrap(), 1);
        assert_eq!(*store.get_or_add("", "a", || 9).unwrap(), 1, "made once");
        assert!(store.get_or_add("", "", || 4).is_none());
        let long = "x".repeat(MAX_NAME_BYTES + 1);
        assert!(store.get_or_add("", &long, || 5).is_none());
        for n in 0..10_000 {
            assert_eq!(
                *store.get_or_add("", &format!("junk{n}"), || 2).unwrap(),
                2,
                "a new name always gets its own entry"
            );
        }
        let held = store.each().len();
        assert!(held <= 64 + 64 / 10, "{held} entries held");
        let (evicted, tally) = store.forgotten();
        assert!(evicted >= 10_001 - held as u64, "{evicted} evicted");
        assert!(
            tally >= 2 * (evicted - 1),
            "the evicted entries' tallies are kept"
        );
    }

    /// A flood of names seen once does not evict the names in steady use (the eviction is
    /// scan resistant): an entry used between the flood's names keeps its state.
    #[test]
    fn names_in_use_outlive_a_flood_of_new_names() {
        let store = ScopeStore::new(1024, |_: &AtomicU64| 0);
        let used = store
            .get_or_add("", "api.example", AtomicU64::default)
            .unwrap();
        used.store(7, Ordering::Relaxed);
        for n in 0..100_000 {
            store.get_or_add("", &format!("junk{n}"), AtomicU64::default);
            if n % 16 == 0 {
                let again = store
                    .get_or_add("", "api.example", AtomicU64::default)
                    .unwrap();
                assert_eq!(again.load(Ordering::Relaxed), 7, "after {n} junk names");
            }
        }
    }

    /// One caller's name is not another's: the same name under two callers is two entries.
    #[test]
    fn callers_never_share_an_entry() {
        let store = ScopeStore::new(16, |_: &u8| 0);
        let a = store.get_or_add("tenant-a", "api.example", || 1).unwrap();
        let b = store.get_or_add("tenant-b", "api.example", || 2).unwrap();
        assert_eq!((*a, *b), (1, 2));
        assert_eq!(store.get("tenant-a", "api.example").as_deref(), Some(&1));
        assert_eq!(store.get("", "api.example"), None);
        let names: Vec<_> = store.each().into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["tenant-a/api.example", "tenant-b/api.example"]);
    }
}
