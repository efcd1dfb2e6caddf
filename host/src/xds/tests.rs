//! gRFC A44's conversion rules and the routes' mapping, each test naming the rule.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::envoy::{RetryPolicy, RouteConfiguration};
use super::retry::convert;
use super::routes::map;
use super::*;
use crate::grpc::ServiceConfig;

fn policy(value: Value) -> RetryPolicy {
    RetryPolicy::from_json(&value, "p").unwrap()
}

/// A44 "Converting Envoy RetryPolicy": `retry_on` keeps the `x-envoy-retry-grpc-on`
/// conditions and ignores the others; with none left there is no retry policy.
#[test]
fn retry_on_keeps_the_grpc_conditions_and_ignores_the_rest() {
    let c = convert(
        &policy(json!({"retry_on": "5xx,unavailable, cancelled,reset,unavailable"})),
        None,
        "p",
    )
    .unwrap();
    let retry = c.retry_policy.unwrap();
    assert_eq!(
        retry["retryableStatusCodes"],
        json!(["UNAVAILABLE", "CANCELLED"])
    );
    assert_eq!(c.ignored, ["retry_on `5xx`", "retry_on `reset`"]);
    let all = "cancelled,deadline-exceeded,internal,resource-exhausted,unavailable";
    let codes = convert(&policy(json!({"retryOn": all})), None, "p")
        .unwrap()
        .retry_policy
        .unwrap();
    assert_eq!(codes["retryableStatusCodes"].as_array().unwrap().len(), 5);
    let none = convert(&policy(json!({"retry_on": "5xx,gateway-error"})), None, "p").unwrap();
    assert_eq!(none.retry_policy, None);
}

/// A44: `num_retries` defaults to 1 and gives `maxAttempts = num_retries + 1`; A6 treats a
/// `maxAttempts` above 5 as 5; `num_retries` must not be 0.
#[test]
fn num_retries_defaults_to_one_is_capped_through_max_attempts_and_is_never_zero() {
    let attempts = |p: Value| {
        convert(&policy(p), None, "p")
            .unwrap()
            .retry_policy
            .unwrap()["maxAttempts"]
            .clone()
    };
    assert_eq!(attempts(json!({"retry_on": "unavailable"})), 2);
    assert_eq!(
        attempts(json!({"retry_on": "unavailable", "num_retries": 3})),
        4
    );
    let many = convert(
        &policy(json!({"retry_on": "unavailable", "num_retries": 9})),
        None,
        "p",
    )
    .unwrap();
    let config =
        json!({"methodConfig": [{"name": [{}], "retryPolicy": many.retry_policy.unwrap()}]});
    let parsed = ServiceConfig::parse(&config, crate::grpc::DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap();
    assert_eq!(parsed.retry_policy("/a.B/C").unwrap().max_attempts, 5);
    let zero = convert(
        &policy(json!({"retry_on": "unavailable", "num_retries": 0})),
        None,
        "p",
    )
    .unwrap_err();
    assert_eq!(
        zero.to_string(),
        "p.num_retries: must be greater than zero (gRFC A44)"
    );
}

/// A44: `retry_back_off` defaults to 25 ms and 250 ms; `base_interval` is required;
/// `max_interval` defaults to ten times it; values under 1 ms are 1 ms; the multiplier is 2. A
/// zero or an inverted interval is read as gRPC's client reads it (docs/decisions.md "xDS"):
/// floored at 1 ms, not refused.
#[test]
fn the_backoff_follows_a44_as_grpc_reads_it() {
    let backoff = |p: Value| {
        let r = convert(&policy(p), None, "p")
            .unwrap()
            .retry_policy
            .unwrap();
        (
            r["initialBackoff"].clone(),
            r["maxBackoff"].clone(),
            r["backoffMultiplier"].clone(),
        )
    };
    assert_eq!(
        backoff(json!({"retry_on": "unavailable"})),
        (json!("0.025s"), json!("0.25s"), json!(2))
    );
    let base = json!({"retry_on": "unavailable", "retry_back_off": {"base_interval": "0.1s"}});
    assert_eq!(backoff(base), (json!("0.1s"), json!("1s"), json!(2)));
    let tiny = json!({"retry_on": "unavailable", "retryBackOff": {"baseInterval": "0.0001s", "maxInterval": "0.0005s"}});
    assert_eq!(backoff(tiny), (json!("0.001s"), json!("0.001s"), json!(2)));
    let zero = json!({"retry_on": "unavailable", "retry_back_off": {"base_interval": "0s", "max_interval": "0s"}});
    assert_eq!(backoff(zero), (json!("0.001s"), json!("0.001s"), json!(2)));
    let inverted = json!({"retry_on": "unavailable", "retry_back_off": {"base_interval": "1s", "max_interval": "0.5s"}});
    assert_eq!(backoff(inverted), (json!("1s"), json!("0.5s"), json!(2)));
    let p = policy(json!({"retry_on": "unavailable", "retry_back_off": {"max_interval": "1s"}}));
    let error = convert(&p, None, "p").unwrap_err();
    assert_eq!(
        error.to_string(),
        "p.retry_back_off.base_interval: required when retry_back_off is set (gRFC A44)"
    );
}

/// docs/xds.md "What A44 leaves out": `per_try_timeout` is the attempt timeout, a hedge policy
/// hedging on it sends a copy instead of cutting, the previous-hosts predicate sends retries to
/// the next node, another predicate is reported as ignored.
#[test]
fn per_try_timeout_and_hedging_on_it_become_rebound_s_controls() {
    let p = policy(json!({
        "retry_on": "unavailable", "per_try_timeout": "0.2s",
        "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts"}, {"name": "envoy.retry_host_predicates.omit_canary_hosts"}]
    }));
    let hedge = super::envoy::HedgePolicy {
        hedge_on_per_try_timeout: true,
        initial_requests: None,
    };
    let c = convert(&p, Some(&hedge), "p").unwrap();
    assert_eq!(c.attempt_timeout, Some(Duration::from_millis(200)));
    assert!(c.hedge_on_attempt_timeout);
    assert!(c.next_node);
    assert_eq!(
        c.ignored,
        ["retry_host_predicate `envoy.retry_host_predicates.omit_canary_hosts`"]
    );
    let without = convert(
        &policy(json!({"retry_on": "unavailable"})),
        Some(&hedge),
        "p",
    )
    .unwrap();
    assert!(!without.hedge_on_attempt_timeout);
}

fn routes(value: Value) -> RouteConfiguration {
    RouteConfiguration::from_json(&value).unwrap()
}

/// docs/xds.md "Routes": exact domains before `*`, routes in order, a prefix of a whole service
/// or `/` and an exact method path mapped; what cannot be expressed left out and reported.
#[test]
fn routes_keep_envoy_s_order_and_leave_out_what_they_cannot_express() {
    let retry = json!({"retry_on": "unavailable"});
    let config = routes(json!({"name": "rc", "virtualHosts": [
        {"name": "any", "domains": ["*"], "retry_policy": retry, "routes": [
            {"match": {"path": "/shop.Cart/Add"}, "route": {"cluster": "c"}},
            {"match": {"prefix": "/shop.Cart/"}, "route": {"cluster": "c"}},
            {"match": {"prefix": "/sh"}, "route": {"cluster": "c"}},
            {"match": {"safe_regex": {"regex": ".*"}}, "route": {"cluster": "c"}},
            {"match": {"prefix": "/", "headers": [{"name": "x", "safe_regex_match": {"regex": "a.*"}}]}, "route": {"cluster": "c"}},
            {"match": {"prefix": "/"}, "redirect": {}},
            {"name": "rest", "match": {"prefix": ""}, "route": {"cluster": "c"}}
        ]},
        {"name": "exact", "domains": ["shop:443", "shop"], "routes": [
            {"match": {"prefix": "/"}, "route": {"cluster": "c", "retry_policy": retry}}
        ]},
        {"name": "wild", "domains": ["*.shop"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "c"}}]}
    ]}));
    let mapped = map(&config).unwrap().overlay;
    let order: Vec<String> = (mapped.routes.iter())
        .map(|r| {
            format!(
                "{}|{}|{}|{}",
                r.get("authority").and_then(|v| v.as_str()).unwrap_or(""),
                r.get("grpc_service").and_then(|v| v.as_str()).unwrap_or(""),
                r.get("grpc_method").and_then(|v| v.as_str()).unwrap_or(""),
                r["policy"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            "shop:443|||xds/exact/0",
            "shop|||xds/exact/0",
            "|shop.Cart|Add|xds/any/0",
            "|shop.Cart||xds/any/1",
            "|||xds/any/rest",
        ]
    );
    assert_eq!(mapped.ignored.len(), 5, "{:#?}", mapped.ignored);
    for expected in [
        "routes[2].match: prefix `/sh`",
        "routes[3].match: `safe_regex`",
        "routes[4].match: header `x`: `safe_regex_match` is not read",
        "routes[5]: no route action",
        "virtual_hosts[2].domains: wildcard",
    ] {
        assert!(
            mapped.ignored.iter().any(|i| i.contains(expected)),
            "{expected}: {:#?}",
            mapped.ignored
        );
    }
}

/// docs/xds.md "Routes": a header matcher is a condition on the client-context entry named as
/// the header in lower case (Envoy's `HeaderMatcher`: `exact_match`, `string_match`'s
/// `prefix`, `present_match`, `invert_match`; a matcher with no rule matches by presence);
/// pseudo-headers, binary headers and regular expressions leave the route out. The routes
/// choose requests by their client context as Envoy's choose calls by their headers.
#[test]
fn header_matchers_choose_routes_by_client_context() {
    use crate::request::{Request, RequestType};
    let config = routes(
        json!({"virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
            {"name": "gold", "match": {"prefix": "/", "headers": [
                {"name": "X-Tenant", "string_match": {"prefix": "gold"}},
                {"name": "x-canary", "present_match": true, "invert_match": true}
            ]}, "route": {"cluster": "c"}},
            {"name": "canary", "match": {"prefix": "/", "headers": [{"name": "x-canary"}]}, "route": {"cluster": "c"}},
            {"name": "eu", "match": {"prefix": "/", "headers": [{"name": "x-region", "exact_match": "eu", "invert_match": true}]}, "route": {"cluster": "c"}},
            {"name": "bin", "match": {"prefix": "/", "headers": [{"name": "trace-bin", "present_match": true}]}, "route": {"cluster": "c"}},
            {"name": "pseudo", "match": {"prefix": "/", "headers": [{"name": ":authority", "exact_match": "a"}]}, "route": {"cluster": "c"}},
            {"name": "rest", "match": {"prefix": "/"}, "route": {"cluster": "c"}}
        ]}]}),
    );
    let mapped = map(&config).unwrap().overlay;
    assert_eq!(
        mapped.ignored,
        [
            "virtual_hosts[0].routes[3].match: binary header `trace-bin` is not read; the route is left out",
            "virtual_hosts[0].routes[4].match: pseudo-header `:authority` is not read; the route is left out",
        ]
    );
    let mut table = toml::Table::new();
    let mut policies = mapped.policies.clone();
    policies.insert(
        "xds/unrouted".into(),
        toml::toml! { builtin = "fail-fast" }.into(),
    );
    table.insert("policies".into(), policies.into());
    table.insert("routes".into(), toml::Value::Array(mapped.routes));
    table.insert("default_policy".into(), "xds/unrouted".into());
    let text = toml::to_string(&table).unwrap();
    let config = RegistryConfig::parse(&text, Path::new("t.toml"), Path::new(".")).unwrap();
    let chosen = |context: &[(&str, &str)]| {
        let mut request = Request::new(1, RequestType::Grpc, Duration::from_secs(1))
            .unwrap()
            .with_route("/shop.Cart/Add");
        for (k, v) in context {
            request = request.with_client_context(*k, *v);
        }
        (config.routes.iter())
            .find(|r| r.matches(&request))
            .map_or("none".to_owned(), |r| r.policy.clone())
    };
    assert_eq!(chosen(&[("x-tenant", "gold-eu")]), "xds/v/gold");
    assert_eq!(
        chosen(&[("x-tenant", "gold"), ("x-canary", "1")]),
        "xds/v/canary"
    );
    assert_eq!(
        chosen(&[("x-tenant", "silver"), ("x-region", "us")]),
        "xds/v/eu"
    );
    assert_eq!(chosen(&[("x-region", "eu")]), "xds/v/rest");
    assert_eq!(
        chosen(&[]),
        "xds/v/rest",
        "a missing header matches no inverted value rule"
    );
}

/// docs/xds.md "Offline": a route configuration's JSON is a registry configuration whose
/// policies decide as the routes say; a lone `RetryPolicy` is its default policy; a field A44
/// refuses is named with its path.
#[test]
fn json_resources_make_registry_configurations() {
    let text = json!({"@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        "virtual_hosts": [{"name": "any", "domains": ["*"], "routes": [
            {"match": {"prefix": "/"}, "route": {"cluster": "c", "retry_policy": {"retry_on": "unavailable", "num_retries": 2, "per_try_timeout": "0.3s"}}}
        ]}]}).to_string();
    let made = config_from_json(&text, Path::new("rc.json")).unwrap();
    assert_eq!(made.config.default_policy, UNROUTED_POLICY);
    assert!(made.config.policies.contains_key("xds/any/0"));
    assert_eq!(made.config.routes.len(), 1);
    let lone = config_from_json(r#"{"retry_on": "unavailable,5xx"}"#, Path::new("p.json")).unwrap();
    assert_eq!(lone.config.default_policy, RETRY_POLICY);
    assert_eq!(lone.ignored, ["retry_policy: retry_on `5xx` ignored"]);
    let bad = r#"{"virtual_hosts": [{"domains": ["*"], "routes": [{"route": {"cluster": "c", "retry_policy": {"retry_on": "unavailable", "num_retries": 0}}}]}]}"#;
    let error = config_from_json(bad, Path::new("bad.json")).unwrap_err();
    assert_eq!(error.to_string(), "bad.json: virtual_hosts[0].routes[0].route.retry_policy.num_retries: must be greater than zero (gRFC A44)");
    let lone_bad = config_from_json(
        r#"{"retry_on": "unavailable", "retry_back_off": {}}"#,
        Path::new("p.json"),
    )
    .unwrap_err();
    assert_eq!(
        lone_bad.to_string(),
        "p.json: retry_back_off.base_interval: required when retry_back_off is set (gRFC A44)"
    );
    assert!(config_from_json("{", Path::new("x.json"))
        .unwrap_err()
        .to_string()
        .starts_with("x.json: not JSON"));
}

/// docs/xds.md "Precedence": a source's policies are added to the file's and its routes go
/// before the file's own, as one swap; a reload of the file keeps them; a refused overlay
/// leaves the running configuration and the previous overlay.
#[test]
fn an_overlay_is_swapped_in_with_the_file_and_kept_across_its_reloads() {
    use crate::registry::PolicyRegistry;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rebound.toml");
    let text = "default_policy = \"standard\"\n[policies.standard]\nbuiltin = \"best-effort\"\n\
        [[routes]]\nprotocol = \"grpc\"\npolicy = \"standard\"\n";
    std::fs::write(&file, text).unwrap();
    let mut config = RegistryConfig::load(&file).unwrap();
    config.watch.enabled = false;
    let registry = PolicyRegistry::new(config).unwrap();
    let overlay = map(&routes(json!({"virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
        {"match": {"prefix": "/a.B/"}, "route": {"cluster": "c", "retry_policy": {"retry_on": "unavailable"}}}
    ]}]})))
    .unwrap()
    .overlay;
    registry.apply_overlay(Some(overlay.clone())).unwrap();
    let policies = |r: &PolicyRegistry| {
        r.config()
            .routes
            .iter()
            .map(|r| r.policy.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(policies(&registry), ["xds/v/0", "standard"]);
    registry.reload_config().unwrap();
    assert_eq!(policies(&registry), ["xds/v/0", "standard"]);
    // A route naming a policy that does not exist is refused; everything stays.
    let mut broken = overlay.clone();
    broken.routes[0]
        .as_table_mut()
        .unwrap()
        .insert("policy".into(), "missing".into());
    assert!(registry.apply_overlay(Some(broken)).is_err());
    assert_eq!(policies(&registry), ["xds/v/0", "standard"]);
    registry.reload_config().unwrap();
    assert_eq!(policies(&registry), ["xds/v/0", "standard"]);
    assert_eq!(registry.status().overlay.unwrap().routes_first, 1);
    registry.apply_overlay(None).unwrap();
    assert_eq!(policies(&registry), ["standard"]);
    assert_eq!(registry.status().overlay, None);
}
