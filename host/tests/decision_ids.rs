//! Issue 16, point 1: every decision the registry makes carries a unique, sortable
//! `decision_id` (a UUIDv7: the Unix millisecond first, then a process-wide sequence), and
//! the decisions of one request's retries share its `request_id` trail.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use rebound::registry::{PolicyRegistry, RegistryConfig};
use rebound::{reasons, DecisionContext, DecisionId, Request, RequestType};

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// IDs made on several threads at once are all different; those one thread makes increase,
/// as numbers and as strings; each is a version-7, RFC 9562-variant UUID of the current
/// millisecond.
#[test]
fn ids_are_unique_and_ordered_as_made() {
    let before = unix_ms();
    let per_thread: Vec<Vec<DecisionId>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| (0..20_000).map(|_| DecisionId::next()).collect()))
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let after = unix_ms();
    let mut seen = HashSet::new();
    for ids in &per_thread {
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
            assert!(pair[0].to_string() < pair[1].to_string());
        }
        for id in ids {
            assert!(seen.insert(*id), "{id} made twice");
            assert!((before..=after).contains(&id.unix_ms()), "{id}");
            let text = id.to_string();
            assert_eq!(text.len(), 36, "{text}");
            assert_eq!(&text[14..15], "7", "version 7: {text}");
            assert!(
                matches!(&text[19..20], "8" | "9" | "a" | "b"),
                "variant: {text}"
            );
        }
    }
    assert_eq!(seen.len(), 80_000);
    // A later millisecond sorts after, whatever the sequence.
    let later = DecisionId::at_unix_ms(after + 1);
    assert!(per_thread.iter().flatten().all(|id| *id < later));
}

/// The registry's answers carry a new ID each, and the request's id, shared by its retries.
#[test]
fn every_registry_decision_has_its_own_id_and_the_request_trail() {
    let config = RegistryConfig::parse(
        "default_policy = \"standard\"\n[policies.standard]\nbuiltin = \"best-effort\"\n",
        Path::new("rebound.toml"),
        Path::new("."),
    )
    .unwrap();
    let registry = PolicyRegistry::new(config).unwrap();
    let mut request = Request::new(7, RequestType::Get, Duration::from_secs(10)).unwrap();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let decided = registry
            .decide(&mut request, &DecisionContext::new(&reasons::KV_LOCKED))
            .now_or_never()
            .expect("a built-in decides at once")
            .unwrap();
        ids.push(decided.decision_id);
        assert_eq!(request.id(), 7, "the trail");
    }
    assert_eq!(request.retry_attempts(), 3);
    assert!(ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");
}
