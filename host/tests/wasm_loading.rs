//! Spec: loading a policy component (issue: no ambient capabilities; wrong world or package
//! version rejected with an error naming the mismatch).

mod wasm_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use rebound::wasm::{LoadError, PolicyPre, WasmStrategy, WasmStrategyConfig};
use rebound::RetryBudgets;
use wasm_support::{guest, load, runtime};

/// A component importing interfaces outside `rebound:policy` and the inert WASI 0.2 set (an
/// HTTP client; WASI of another major version) is refused, listing them.
#[test]
fn foreign_imports_are_rejected_with_their_names() {
    let err = load("foreign_imports").unwrap_err();
    match &err {
        LoadError::ForbiddenImports { imports, .. } => assert_eq!(
            imports,
            &[
                "wasi:http/outgoing-handler@0.2.0".to_owned(),
                "wasi:filesystem/preopens@0.3.0".to_owned()
            ]
        ),
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("wasi:http/outgoing-handler@0.2.0") && text.contains("does not grant"),
        "{text}"
    );
}

/// A component that does not export the strategy interface is of the wrong world.
#[test]
fn wrong_world_is_rejected() {
    let err = load("wrong_world").unwrap_err();
    assert!(matches!(err, LoadError::WrongWorld { .. }), "{err}");
    assert!(
        err.to_string().contains("rebound:policy/strategy@0.2.0"),
        "{err}"
    );
}

/// A component built for another package version is rejected, naming both versions.
#[test]
fn incompatible_package_version_is_rejected() {
    let err = load("wrong_version").unwrap_err();
    assert!(
        matches!(err, LoadError::IncompatibleVersion { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("strategy@0.1.0") && text.contains("rebound:policy@0.2.0"),
        "{text}"
    );
}

/// Bytes that are not a component, and a missing file, get errors naming the problem.
#[test]
fn bad_bytes_and_missing_files() {
    let err = PolicyPre::load(runtime(), "junk", b"not wasm at all").unwrap_err();
    assert!(
        matches!(err, LoadError::Compile { .. }) && err.to_string().contains("junk"),
        "{err}"
    );
    let err = PolicyPre::load_file(
        runtime(),
        "gone",
        std::path::Path::new("/nonexistent/p.wasm"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/p.wasm"), "{err}");
}

/// Every built policy loads, imports only what is granted, and has a content-hash version.
#[test]
fn every_policy_loads() {
    for name in [
        "best_effort",
        "fast_fail_on_terminal_error",
        "fail_fast",
        "no_retry_for_robots",
        "fail_fast_on_open_circuit",
        "cassandra_default",
        "cassandra_downgrading_consistency",
        "honor_error_map_spec",
        "retry_budget",
    ] {
        let component = load(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(component.version().len(), 12, "{name}");
    }
}

/// The error of creating the adversary's strategy with parameter `param = yes`.
fn adversary_configured_with(param: &str) -> LoadError {
    let component = PolicyPre::load_file(runtime(), "adversary", &guest("adversary")).unwrap();
    let config = WasmStrategyConfig {
        params: BTreeMap::from([(param.to_owned(), "yes".to_owned())]),
        ..Default::default()
    };
    WasmStrategy::new(component, config, Arc::new(RetryBudgets::new())).unwrap_err()
}

/// A policy that rejects its parameters is refused when its strategy is created, with its
/// message.
#[test]
fn configure_rejection_is_a_load_error() {
    let err = adversary_configured_with("reject");
    assert!(matches!(err, LoadError::Configure { .. }), "{err}");
    assert!(
        err.to_string().contains("refuse its configuration"),
        "{err}"
    );
}

/// `failure` answers for the request of the `retry-after` call in progress (wit/policy.wit):
/// read while configuring, when no failure is being decided, it fails the call, and the policy
/// is refused at load saying what it read.
#[test]
fn reading_the_failure_while_configuring_is_a_load_error() {
    let err = adversary_configured_with("read_failure");
    assert!(matches!(err, LoadError::Configure { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("`failure.client-context` is answered only during retry-after"),
        "{err}"
    );
}
