//! One rule for what a reload keeps. A budget's tokens, a throttle's counts and a breaker's open
//! circuit are the state a running service has earned; a new configuration must not reset them
//! unless it changes what they were made with. Every named thing the registry keeps across
//! configurations (budgets, budgets per client, throttles, breakers) is rebuilt by this one
//! function, so the rule is written once.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Named things of one kind, shared with the decisions that use them.
pub(crate) type Named<T> = HashMap<String, Arc<T>>;

/// The things `definitions` name: each running one in `old` whose definition did not change
/// (`unchanged`) kept as it is, every other one made afresh (`make`).
pub(crate) fn keep_or_make<D, T>(
    definitions: &BTreeMap<String, D>,
    old: Option<&Named<T>>,
    unchanged: impl Fn(&T, &D) -> bool,
    make: impl Fn(&str, &D) -> T,
) -> Named<T> {
    (definitions.iter())
        .map(|(name, definition)| {
            let kept = old
                .and_then(|old| old.get(name))
                .filter(|running| unchanged(running, definition));
            let thing = match kept {
                Some(running) => Arc::clone(running),
                None => Arc::new(make(name, definition)),
            };
            (name.clone(), thing)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reload keeps what it did not change and remakes what it did (docs/breakers.md: a
    /// table keeps its state across a reload while its parameters stay the same).
    #[test]
    fn keeps_unchanged_and_remakes_changed() {
        let first: BTreeMap<String, u32> = [("a".into(), 1), ("b".into(), 2)].into();
        let made = keep_or_make(&first, None, |t: &u32, d| t == d, |_, d| *d);
        let second: BTreeMap<String, u32> = [("a".into(), 1), ("b".into(), 3)].into();
        let remade = keep_or_make(&second, Some(&made), |t, d| t == d, |_, d| *d);
        assert!(Arc::ptr_eq(&made["a"], &remade["a"]));
        assert!(!Arc::ptr_eq(&made["b"], &remade["b"]));
        assert_eq!(*remade["b"], 3);
    }
}
