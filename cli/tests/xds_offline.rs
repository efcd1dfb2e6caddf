//! An Envoy route configuration, or a lone `RetryPolicy`, tried offline (docs/xds.md
//! "Offline"): `rebound eval --config ROUTES.json` decides each call by the route it matches,
//! as gRFC A44 converts the route's retry policy, with what A44 leaves out (the attempt
//! timeout) added; `rebound simulate` compares a route configuration's policies; a resource A44
//! refuses is refused naming its field.

use std::path::PathBuf;

use serde_json::Value;

use crate::support::{rebound, success_stdout};

fn example(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

/// `rebound eval --config CONFIG` on `lines`: the answers, and standard error.
fn eval(config: &std::path::Path, lines: &[&str]) -> (Vec<Value>, String) {
    let output = rebound()
        .arg("eval")
        .arg("--config")
        .arg(config)
        .write_stdin(lines.join("\n"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let answers = (String::from_utf8(output.stdout).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (answers, String::from_utf8(output.stderr).unwrap())
}

/// A44 "Converting Envoy RetryPolicy" and "Workflow": a call takes its route's retry policy,
/// else its virtual host's; only the retryable status codes converted from `retry_on` are
/// retried; `per_try_timeout` is the attempt timeout; the previous-hosts predicate moves the
/// retry to the next node; the `5xx` condition is reported ignored; a route's header matcher
/// chooses calls by the client-context entry of the header's name.
#[test]
fn eval_decides_each_call_by_its_route() {
    let (answers, stderr) = eval(
        &example("examples/xds/routes.json"),
        &[
            r#"{"request": {"type": "grpc", "route": "/shop.Inventory/Get", "idempotent": true}, "reason": {"grpc_status": "UNAVAILABLE"}}"#,
            r#"{"request": {"type": "grpc", "route": "/shop.Inventory/Get", "idempotent": true}, "reason": {"grpc_status": "INTERNAL"}}"#,
            r#"{"request": {"type": "grpc", "route": "/shop.Cart/Checkout", "idempotent": true}, "reason": {"grpc_status": "UNAVAILABLE"}}"#,
            r#"{"request": {"type": "grpc", "route": "/shop.Cart/Checkout", "idempotent": true}, "reason": {"grpc_status": "RESOURCE_EXHAUSTED"}}"#,
            r#"{"request": {"type": "grpc", "route": "/shop.Orders/List", "idempotent": true, "client_context": {"x-priority": "batch"}}, "reason": {"grpc_status": "RESOURCE_EXHAUSTED"}}"#,
            r#"{"request": {"type": "grpc", "route": "/shop.Orders/List", "idempotent": true}, "reason": {"grpc_status": "RESOURCE_EXHAUSTED"}}"#,
        ],
    );
    let summary: Vec<(&str, &str)> = (answers.iter())
        .map(|a| {
            (
                a["policy"].as_str().unwrap(),
                a["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("xds/shop/inventory", "retry"),
            ("xds/shop/inventory", "cancel"),
            ("xds/shop/checkout", "retry"),
            ("xds/shop/checkout", "cancel"),
            ("xds/shop/batch", "retry"),
            ("xds/shop/rest", "cancel"),
        ]
    );
    // Its 200 ms attempt timeout hedges (`hedge_on_per_try_timeout`): a copy goes beside the
    // attempt, which is not cut, so the retry names no attempt timeout.
    assert_eq!(answers[0].get("attempt_timeout_ms"), None);
    // Its previous-hosts predicate sends the retry to the next node.
    assert_eq!(answers[0]["node"], "next");
    assert_eq!(answers[2]["node"], "same");
    // A6 "Exponential Backoff": a first retry after initialBackoff (25 ms) × random(0.8, 1.2).
    let delay = answers[0]["delay_ms"].as_f64().unwrap();
    assert!((20.0..=30.0).contains(&delay), "{}", answers[0]);
    assert!(
        stderr.contains("routes[1].route.retry_policy: retry_on `5xx` ignored"),
        "{stderr}"
    );
}

/// docs/xds.md "Offline": a lone `RetryPolicy` (camelCase JSON) decides every call, its
/// `perTryTimeout` the attempt timeout of each retry.
#[test]
fn a_lone_retry_policy_decides_every_call() {
    let (answers, _) = eval(
        &example("examples/xds/retry-policy.json"),
        &[
            r#"{"request": {"type": "grpc", "route": "/a.B/C", "idempotent": true}, "reason": {"grpc_status": "CANCELLED"}}"#,
            r#"{"request": {"type": "grpc", "route": "/a.B/C", "idempotent": true}, "reason": {"grpc_status": "INTERNAL"}}"#,
        ],
    );
    assert_eq!(answers[0]["policy"], "xds/retry_policy");
    assert_eq!(answers[0]["decision"], "retry");
    assert_eq!(answers[0]["attempt_timeout_ms"], 300.0);
    assert_eq!(answers[1]["decision"], "cancel");
}

/// A44: a resource whose retry policy breaks a rule is refused, naming the field.
#[test]
fn a_resource_a44_refuses_is_refused_naming_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{"virtual_hosts": [{"domains": ["*"], "routes": [{"route": {"cluster": "c", "retry_policy": {"retry_on": "unavailable", "retry_back_off": {"max_interval": "0.5s"}}}}]}]}"#,
    )
    .unwrap();
    let output = rebound()
        .args(["eval", "--config"])
        .arg(&path)
        .write_stdin("")
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let stderr = String::from_utf8(output).unwrap();
    assert!(
        stderr.contains("bad.json: virtual_hosts[0].routes[0].route.retry_policy.retry_back_off.base_interval: required when retry_back_off is set"),
        "{stderr}"
    );
}

/// docs/xds.md "Offline": `rebound simulate` compares a route configuration's policies; under
/// UNAVAILABLE the inventory route's three retries cancel fewer calls than the checkout
/// route's one, and a call no route matches is not retried.
#[test]
fn simulate_compares_a_route_configuration_s_policies() {
    let dir = tempfile::tempdir().unwrap();
    let output = success_stdout(
        rebound()
            .arg("simulate")
            .arg(example("examples/scenarios/xds-routes.toml"))
            .arg("--json")
            .arg("--chart")
            .arg(dir.path().join("x.svg")),
    );
    let report: Value = serde_json::from_slice(&output).unwrap();
    let cancelled = |policy: &str| {
        (report["policies"].as_array().unwrap().iter())
            .find(|p| p["policy"] == policy)
            .unwrap()["cancelled"]
            .as_u64()
            .unwrap()
    };
    let (inventory, checkout, unrouted) = (
        cancelled("xds/shop/inventory"),
        cancelled("xds/shop/checkout"),
        cancelled("xds/unrouted"),
    );
    assert!(
        inventory < checkout && checkout < unrouted,
        "{inventory} {checkout} {unrouted}"
    );
}
