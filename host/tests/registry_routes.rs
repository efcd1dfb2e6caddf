//! `[[routes]]` (docs/registry.md "Which policy decides", docs/http-and-grpc.md): plain HTTP
//! requests and gRPC calls routed by protocol, authority, gRPC service and method, HTTP route,
//! or client context, the first matching entry in file order, after a request's own policy and its
//! profile and before the request-type and service tables; a route that cannot match, or
//! names a field of the other protocol, is refused naming the entry and the field.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound::{reasons, DecisionContext, HttpMethod, Request, RequestType};

const CONFIG: &str = r#"
default_policy = "fallback"
cache_dir = false
[watch]
enabled = false

[policies.fallback]
builtin = "fail-fast"
[policies.web]
builtin = "http"
[policies.orders]
builtin = "http"
params = { max_attempts = 2 }
[policies.inventory]
builtin = "best-effort"
[policies.reserve]
builtin = "fail-fast"
[policies.payments]
builtin = "best-effort"
[policies.any-grpc]
builtin = "best-effort"
[policies.gold]
builtin = "best-effort"

[request_types]
http = "web"

[[routes]]
client_context = [{ key = "tenant", prefix = "gold" }, { key = "canary", present = false }]
policy = "gold"

[[routes]]
path = "/v1/orders/*"
policy = "orders"

[[routes]]
grpc_service = "shop.Inventory"
grpc_method = "Reserve"
policy = "reserve"

[[routes]]
grpc_service = "shop.Inventory"
policy = "inventory"

[[routes]]
authority = "payments.internal"
policy = "payments"

[[routes]]
protocol = "grpc"
policy = "any-grpc"
"#;

fn registry() -> PolicyRegistry {
    let config = RegistryConfig::parse(CONFIG, Path::new("rebound.toml"), Path::new(".")).unwrap();
    PolicyRegistry::new(config).unwrap()
}

fn http(authority: &str, path: &str) -> Request {
    Request::new(1, RequestType::Http, Duration::from_secs(10))
        .unwrap()
        .with_method(HttpMethod::Get)
        .with_authority(authority)
        .with_route(path)
}

fn grpc(authority: &str, method: &str) -> Request {
    Request::new(2, RequestType::Grpc, Duration::from_secs(10))
        .unwrap()
        .with_authority(authority)
        .with_route(method)
}

/// The policy that decides for `request`.
fn policy(registry: &PolicyRegistry, mut request: Request) -> String {
    let decided = futures::executor::block_on(
        registry.decide(&mut request, &DecisionContext::new(&reasons::UNKNOWN)),
    )
    .unwrap();
    decided
        .version
        .expect("a registry policy")
        .name()
        .to_owned()
}

#[test]
fn the_first_matching_route_decides() {
    let registry = registry();
    let cases = [
        (http("api.example.com", "/v1/orders/17"), "orders"),
        (http("api.example.com", "/v1/orders"), "web"),
        (http("payments.internal:8443", "/v1/orders/1"), "orders"),
        (http("payments.internal:8443", "/charge"), "payments"),
        (http("payments.internal.evil", "/charge"), "web"),
        (grpc("inventory:443", "/shop.Inventory/Reserve"), "reserve"),
        (grpc("inventory:443", "/shop.Inventory/Get"), "inventory"),
        (
            grpc("payments.internal", "/pay.Payments/Charge"),
            "payments",
        ),
        (grpc("other:443", "/pay.Payments/Charge"), "any-grpc"),
    ];
    let gold = |request: Request| request.with_client_context("tenant", "gold-eu");
    let cases = cases.into_iter().chain([
        (gold(http("api.example.com", "/v1/orders/17")), "gold"),
        (gold(grpc("inventory:443", "/shop.Inventory/Get")), "gold"),
        (
            gold(http("api.example.com", "/v1/orders/17")).with_client_context("canary", "1"),
            "orders",
        ),
        (
            http("api.example.com", "/v1/orders/17").with_client_context("tenant", "silver"),
            "orders",
        ),
    ]);
    for (request, expected) in cases {
        let described = format!(
            "{:?} {:?} {:?}",
            request.authority(),
            request.route(),
            request.client_context()
        );
        assert_eq!(policy(&registry, request), expected, "{described}");
    }
    // A request's own policy name and its profile come first; a Couchbase request is never
    // matched by a route.
    let named = http("api.example.com", "/v1/orders/17").with_policy(Arc::<str>::from("fallback"));
    assert_eq!(policy(&registry, named), "fallback");
    let get = Request::new(3, RequestType::Get, Duration::from_secs(1)).unwrap();
    assert_eq!(policy(&registry, get), "fallback");
}

fn refused(routes: &str) -> String {
    let text = format!("default_policy = \"p\"\n[policies.p]\nbuiltin = \"http\"\n{routes}");
    RegistryConfig::parse(&text, Path::new("rebound.toml"), Path::new("."))
        .expect_err("refused")
        .to_string()
}

#[test]
fn a_route_that_cannot_match_is_refused_naming_its_field() {
    for (routes, field) in [
        ("[[routes]]\npolicy = \"p\"\n", "routes[0].policy"),
        ("[[routes]]\nprotocol = \"kv\"\npolicy = \"p\"\n", "routes[0].protocol"),
        ("[[routes]]\ngrpc_method = \"Get\"\npolicy = \"p\"\n", "routes[0].grpc_method"),
        ("[[routes]]\nprotocol = \"http\"\ngrpc_service = \"a.S\"\npolicy = \"p\"\n", "routes[0].protocol"),
        ("[[routes]]\ngrpc_service = \"a.S\"\npath = \"/x\"\npolicy = \"p\"\n", "routes[0].path"),
        ("[[routes]]\npath = \"x\"\npolicy = \"p\"\n", "routes[0].path"),
        ("[[routes]]\nclient_context = [{ key = \"t\", exact = \"a\", prefix = \"b\" }]\npolicy = \"p\"\n", "routes[0].client_context[0].key: `t`: expected exactly one of exact, prefix, suffix, contains, present"),
        ("[[routes]]\nclient_context = [{ key = \"t\" }]\npolicy = \"p\"\n", "routes[0].client_context[0].key"),
        ("[[routes]]\nclient_context = [{ key = \"\", present = true }]\npolicy = \"p\"\n", "routes[0].client_context[0].key: is empty"),
        ("[[routes]]\npath = \"/x\"\npolicy = \"p\"\n[[routes]]\npath = \"/y\"\npolicy = \"nope\"\n", "routes[1].policy"),
    ] {
        let error = refused(routes);
        assert!(error.contains(field), "{routes}: {error}");
        assert!(error.starts_with("rebound.toml:"), "{error}");
    }
}
