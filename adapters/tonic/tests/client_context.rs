//! docs/adapters.md "Client context": the layer hands the policy a client context read from
//! mapped metadata and from a `ClientContext` in the call's extensions, so the idempotency-key
//! rule of the `context_gate` guest (retry only a call whose context holds `idempotency-key`)
//! decides here as `rebound eval` and `serve` decide it
//! (`rebound-cli` `serve::the_client_context_rule_decides_as_in_the_adapters`).

use std::path::PathBuf;
use std::sync::Arc;

use http::uri::PathAndQuery;
use rebound::registry::PolicyRegistry;
use rebound::ClientContext;
use rebound_tonic::ReboundLayer;
use tonic::Code;

use super::support::{start, Answer, Raw, Script};
use super::{client, config};

/// A registry deciding with the `context_gate` guest built by `scripts/build-guests.sh`.
fn context_gate() -> Arc<PolicyRegistry> {
    let guest =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/guests/context_gate.wasm");
    assert!(
        guest.exists(),
        "{} is missing: run ./scripts/build-guests.sh",
        guest.display()
    );
    let policy = format!("component = {:?}\n", guest.display().to_string());
    Arc::new(PolicyRegistry::new(config(&policy)).unwrap())
}

/// Calls `/shop.Inventory/Get` on a server answering UNAVAILABLE once, then OK, the request
/// made by `prepare`: whether it answered OK, and how many attempts the server saw.
async fn call_unavailable_once(
    layer: &ReboundLayer,
    prepare: impl FnOnce(&mut tonic::Request<Vec<u8>>),
) -> (bool, usize) {
    let running = start(Script::new([Answer::Fail(Code::Unavailable, None)])).await;
    let mut client = client(&running, layer.clone());
    client.ready().await.unwrap();
    let mut request = tonic::Request::new(b"order-17".to_vec());
    prepare(&mut request);
    let path = PathAndQuery::from_static("/shop.Inventory/Get");
    let answer = client.unary(request, path, Raw).await;
    (answer.is_ok(), running.script.seen().len())
}

#[tokio::test]
async fn mapped_metadata_or_an_extension_reaches_the_policy_s_context_rule() {
    let layer = ReboundLayer::new(context_gate())
        .idempotent(["/shop.Inventory/*"])
        .context_metadata("idempotency-key", "idempotency-key")
        .unwrap();
    let with_metadata = call_unavailable_once(&layer, |request| {
        request
            .metadata_mut()
            .insert("idempotency-key", "k-17".parse().unwrap());
    })
    .await;
    assert_eq!(with_metadata, (true, 2), "retried: the rule saw the key");
    let without = call_unavailable_once(&layer, |_| {}).await;
    assert_eq!(without, (false, 1), "not retried without the key");
    let with_extension = call_unavailable_once(&layer, |request| {
        request
            .extensions_mut()
            .insert(ClientContext::new().with("idempotency-key", "k-18"));
    })
    .await;
    assert_eq!(with_extension, (true, 2), "retried: the extension's key");
}

/// Bad input: a binary metadata key is refused, naming it.
#[test]
fn a_binary_metadata_key_is_refused() {
    let error = ReboundLayer::new(super::registry())
        .context_metadata("trace-bin", "trace")
        .unwrap_err();
    assert!(error.to_string().contains("`trace-bin`"), "{error}");
}
