//! `[source.xds] listeners` (docs/xds.md "The xDS source"): a client names its listener, as a
//! gRPC client names its target, and follows the route configuration the listener's connection
//! manager names (gRFC A27): the management server (tests/xds/management_server.py) serves an
//! API listener whose routes come over RDS, and `rebound serve` subscribes to that route
//! configuration, ACKs it, and decides by it, a new snapshot changing decisions.

use crate::xds_source::{acked, ads_log, control_plane, decide, serve_watching, snapshot};

#[test]
fn a_listener_s_route_configuration_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    snapshot(path, "1", "unavailable", 3);
    let (_plane, port) = control_plane(path, 0);
    let watch = "listeners = [\"shop.example:443\"]";
    let server = serve_watching(path, port, "rebound-listener", watch);
    acked(&server, "1");
    assert_eq!(decide(&server), "retry");
    snapshot(path, "2", "cancelled", 3);
    acked(&server, "2");
    assert_eq!(decide(&server), "cancel");
    let log = ads_log(path);
    let asked = |type_suffix: &str| {
        (log.iter())
            .filter(|e| e["node"] == "rebound-listener")
            .filter(|e| {
                e["type_url"]
                    .as_str()
                    .is_some_and(|t| t.ends_with(type_suffix))
            })
            .map(|e| e["resource_names"].clone())
            .next()
    };
    assert_eq!(
        asked(".Listener"),
        Some(serde_json::json!(["shop.example:443"]))
    );
    assert_eq!(
        asked(".RouteConfiguration"),
        Some(serde_json::json!(["shop-routes"]))
    );
}
