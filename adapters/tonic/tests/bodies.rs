//! docs/http-and-grpc.md "The tonic layer", what it keeps: a call whose message is larger than
//! the replay limit is sent once. gRFC A6 "When Retries are Valid" calls a call whose outgoing
//! message overflowed the buffer committed: its failure is decided so, never retried, and the
//! decision log has its line.

use std::sync::Arc;

use rebound_tonic::ReboundLayer;
use tonic::Code;

use crate::support::{start, Answer, Script};
use crate::test_support::LoggedDecisions;
use crate::{client, registry, unary};

/// The decision log's lines after one call of `/shop.Inventory/Get` (idempotent), answered
/// UNAVAILABLE once, through a layer keeping `max_replay_bytes`: the status, the attempts the
/// server saw and the lines.
async fn call_unavailable_once(max_replay_bytes: usize) -> (Code, usize, Vec<serde_json::Value>) {
    let registry = registry();
    let logged = LoggedDecisions::of(&registry);
    let running = start(Script::new([Answer::Fail(Code::Unavailable, None)])).await;
    let layer = ReboundLayer::new(Arc::clone(&registry))
        .idempotent(["/shop.Inventory/*"])
        .max_replay_bytes(max_replay_bytes)
        .unwrap();
    let answer = unary(&mut client(&running, layer), "/shop.Inventory/Get", None).await;
    let code = answer.map_or_else(|status| status.code(), |_| Code::Ok);
    (code, running.script.seen().len(), logged.lines())
}

#[tokio::test]
async fn a_call_past_the_replay_limit_is_decided_committed_and_logged() {
    // The message, b"order-17" in its 5-byte frame, is 13 bytes.
    let (code, attempts, logged) = call_unavailable_once(12).await;
    assert_eq!(
        (code, attempts, logged.len()),
        (Code::Unavailable, 1, 1),
        "{logged:?}"
    );
    assert_eq!(logged[0]["input"]["progress"], "committed", "{logged:?}");
    assert_eq!(logged[0]["answer"]["decision"], "cancel", "{logged:?}");
    // Within the limit, the same call is retried and answered.
    let (code, attempts, logged) = call_unavailable_once(13).await;
    assert_eq!(
        (code, attempts, logged.len()),
        (Code::Ok, 2, 1),
        "{logged:?}"
    );
    assert_eq!(logged[0]["answer"]["decision"], "retry", "{logged:?}");
}

/// Bad input: a replay limit of zero is refused, naming the setting.
#[test]
fn a_replay_limit_of_zero_is_refused() {
    let error = ReboundLayer::new(registry())
        .max_replay_bytes(0)
        .unwrap_err();
    assert!(error.to_string().contains("max_replay_bytes"), "{error}");
}
