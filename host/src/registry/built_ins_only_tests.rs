//! A registry in a build without the `wasm` feature (docs/embedding.md "Features"): built-ins,
//! routes, budgets and throttles decide as in any build, and a configuration naming a
//! component is refused with the file, the line, the field and the feature to turn on. Run by
//! the test command's step for the library without `wasm`.

use std::path::Path;

use super::PolicyRegistry;
use crate::config::RegistryConfig;
use crate::reason::reasons;
use crate::request::{Request, RequestType};
use crate::{Decision, DecisionContext};

/// docs/registry.md "The configuration file": a component needs the `wasm` feature; the
/// refusal says where and what to turn on.
#[test]
fn a_component_is_refused_naming_the_feature_to_turn_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
    let text = "default_policy = \"p\"\n[policies.p]\ncomponent = \"p.wasm\"\n";
    let error = RegistryConfig::parse(text, Path::new("rebound.toml"), dir.path()).unwrap_err();
    assert_eq!(
        (error.line, error.field.as_str()),
        (3, "policies.p.component"),
        "{error}"
    );
    assert!(error.message.contains("`wasm` feature"), "{error}");
    assert_eq!(error.file, Path::new("rebound.toml"));
}

/// Built-ins, their parameters, a route and a throttle decide without the engine.
#[test]
fn built_ins_decide_without_the_engine() {
    let text = r#"
default_policy = "standard"
[watch]
enabled = false
[throttles.t]
kind = "tokens"
max_tokens = 10
token_ratio = 1
[policies.standard]
builtin = "best-effort"
throttle = "t"
[policies.http]
builtin = "http"
params = { max_attempts = 2 }
[[routes]]
protocol = "http"
policy = "http"
"#;
    let config = RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new(".")).unwrap();
    let registry = PolicyRegistry::new(config).unwrap();
    let mut get = Request::new(1, RequestType::Get, std::time::Duration::from_secs(2)).unwrap();
    let decided = futures::executor::block_on(
        registry.decide(&mut get, &DecisionContext::new(&reasons::KV_LOCKED)),
    )
    .unwrap();
    assert!(
        matches!(decided.decision, Decision::Retry(_)),
        "{decided:?}"
    );
    assert_eq!(decided.version.unwrap().name(), "standard");
    let status = registry.status();
    assert_eq!(status.policies.len(), 2);
}
