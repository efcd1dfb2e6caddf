//! docs/adapters.md "Client context": the middleware hands the policy a client context read
//! from mapped headers and from a `ClientContext` extension, so the idempotency-key rule of
//! the `context_gate` guest (retry only a request whose context holds `idempotency-key`)
//! decides here as `rebound eval` and `serve` decide it (`rebound-cli` `serve::the_client_context_rule_decides_as_in_the_adapters`).

use rebound::ClientContext;
use rebound_reqwest::ReboundMiddleware;
use reqwest_middleware::ClientWithMiddleware;

use crate::test_support::component_registry;

fn client() -> ClientWithMiddleware {
    let middleware = ReboundMiddleware::new(component_registry("context_gate"))
        .context_header("Idempotency-Key", "idempotency-key");
    crate::client_with(middleware.unwrap())
}

#[tokio::test]
async fn a_mapped_header_or_an_extension_reaches_the_policy_s_context_rule() {
    let client = client();
    // With the header, the 503 is retried: the rule saw the key.
    let server = crate::unavailable_once("/items").await;
    let url = format!("{}/items", server.uri());
    let response = (client
        .get(&url)
        .header("Idempotency-Key", "k-17")
        .send()
        .await)
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    // Without it, the 503 is handed back after one attempt.
    let server = crate::unavailable_once("/items").await;
    let url = format!("{}/items", server.uri());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    // The application's own context, as a request extension, is read too.
    let server = crate::unavailable_once("/items").await;
    let url = format!("{}/items", server.uri());
    let context = ClientContext::new().with("idempotency-key", "k-18");
    let response = (client.get(&url).with_extension(context).send().await).unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// Bad input: a header name that cannot be one is refused, naming it.
#[test]
fn a_mapping_naming_an_invalid_header_is_refused() {
    let error = ReboundMiddleware::new(crate::registries::http_registry())
        .context_header("Idempotency Key", "idempotency-key")
        .unwrap_err();
    assert!(error.to_string().contains("`Idempotency Key`"), "{error}");
}
