//! Every decision the registry makes carries a unique, sortable
//! `decision_id` (a UUIDv7: the Unix millisecond first, then a process-wide sequence), and
//! the decisions of one request's retries share its `request_id` trail.
//! Alone in its binary: it installs a `tracing` subscriber, and tracing caches callsite
//! interest process-wide.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
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

/// The executor's span of an attempt that failed carries the ID of the
/// decision made on that failure (the one its answer and decision-log line carry), inside the
/// request's span with its `request_id`; the attempt that succeeded made no decision.
#[test]
fn an_attempt_span_carries_the_decision_on_its_failure() {
    use std::sync::{Arc, Mutex};

    use rebound::executor::{Executor, Failure};
    use tracing_subscriber::fmt::format::FmtSpan;

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let config = RegistryConfig::parse(
        "default_policy = \"standard\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.standard]\nbuiltin = \"best-effort\"\n\
         [decision_log]\nfile = \"decisions.log\"\n",
        Path::new("rebound.toml"),
        dir.path(),
    )
    .unwrap();
    let executor = Executor::new(PolicyRegistry::new(config).unwrap());
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        let request = Request::new(42, RequestType::Get, Duration::from_secs(10)).unwrap();
        let failures = std::sync::atomic::AtomicU32::new(2);
        runtime
            .block_on(executor.run(request, |_| {
                let fail = failures
                    .fetch_update(
                        std::sync::atomic::Ordering::Relaxed,
                        std::sync::atomic::Ordering::Relaxed,
                        |n| n.checked_sub(1),
                    )
                    .is_ok();
                async move {
                    match fail {
                        true => Err(Failure::reason("locked", reasons::KV_LOCKED)),
                        false => Ok(()),
                    }
                }
            }))
            .unwrap();
    });
    drop(executor); // writes the decision log
    let logged: Vec<String> = std::fs::read_to_string(dir.path().join("decisions.log"))
        .unwrap()
        .lines()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            line["decision_id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(logged.len(), 2, "two failures, two decisions");
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let closed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rebound.attempt{") && l.contains("close"))
        .collect();
    assert_eq!(closed.len(), 3, "{text}");
    for (line, id) in closed.iter().zip(&logged) {
        assert!(line.contains(&format!("decision_id={id}")), "{line}");
        assert!(line.contains("rebound.request{request_id=42"), "{line}");
    }
    assert!(!closed[2].contains("decision_id"), "{}", closed[2]);
}
