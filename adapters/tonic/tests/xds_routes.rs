//! docs/xds.md "The tonic layer and tonic's own xDS client": a registry whose policies come
//! from an Envoy route configuration makes the layer decide each call by the route the control
//! plane gives it, one retry layer reading the fleet's routes. The routes are matched as Envoy
//! matches them, a header matcher on metadata the layer maps into the client context, and each
//! route's retry policy converted as gRFC A44 says.

use std::path::Path;
use std::sync::Arc;

use http::uri::PathAndQuery;
use rebound::registry::PolicyRegistry;
use rebound_tonic::ReboundLayer;
use serde_json::json;
use tonic::Code;

use super::client;
use super::support::{start, Answer, Raw, Script};

/// A registry made of a route configuration: `Get` retried three times on UNAVAILABLE, the
/// rest of `shop.Inventory` retried only on CANCELLED, except calls carrying
/// `x-priority: batch`, retried once on UNAVAILABLE.
fn registry() -> Arc<PolicyRegistry> {
    let routes = json!({"name": "shop-routes", "virtual_hosts": [{"name": "shop", "domains": ["*"], "routes": [
        {"name": "get", "match": {"path": "/shop.Inventory/Get"}, "route": {"cluster": "inventory",
            "retry_policy": {"retry_on": "unavailable", "num_retries": 3}}},
        {"name": "batch", "match": {"prefix": "/shop.Inventory/", "headers": [{"name": "x-priority", "exact_match": "batch"}]},
            "route": {"cluster": "inventory", "retry_policy": {"retry_on": "unavailable", "num_retries": 1}}},
        {"name": "rest", "match": {"prefix": "/shop.Inventory/"}, "route": {"cluster": "inventory",
            "retry_policy": {"retry_on": "cancelled", "num_retries": 3}}}
    ]}]});
    let made =
        rebound::xds::config_from_json(&routes.to_string(), Path::new("routes.json")).unwrap();
    Arc::new(PolicyRegistry::new(made.config).unwrap())
}

/// Calls `method` on a server answering UNAVAILABLE every time, with `x-priority: batch` if
/// `batch`: the status, and how many attempts the server saw.
async fn call(layer: &ReboundLayer, method: &'static str, batch: bool) -> (Code, usize) {
    let running = start(Script::new([Answer::Fail(Code::Unavailable, None); 8])).await;
    let mut client = client(&running, layer.clone());
    client.ready().await.unwrap();
    let mut request = tonic::Request::new(b"order-17".to_vec());
    if batch {
        request
            .metadata_mut()
            .insert("x-priority", "batch".parse().unwrap());
    }
    let answer = client
        .unary(request, PathAndQuery::from_static(method), Raw)
        .await;
    let code = answer.map_or_else(|status| status.code(), |_| Code::Ok);
    (code, running.script.seen().len())
}

#[tokio::test]
async fn the_layer_decides_each_call_by_its_envoy_route() {
    let layer = ReboundLayer::new(registry())
        .idempotent(["/shop.Inventory/*"])
        .context_metadata("x-priority", "x-priority")
        .unwrap();
    // A44: `num_retries` 3 is `maxAttempts` 4.
    assert_eq!(
        call(&layer, "/shop.Inventory/Get", false).await,
        (Code::Unavailable, 4)
    );
    // The rest of the service retries only CANCELLED: UNAVAILABLE comes back at once.
    assert_eq!(
        call(&layer, "/shop.Inventory/Reserve", false).await,
        (Code::Unavailable, 1)
    );
    // The header route, before it, matches the mapped metadata: one retry.
    assert_eq!(
        call(&layer, "/shop.Inventory/Reserve", true).await,
        (Code::Unavailable, 2)
    );
}
