//! Spec: loading a policy component (issue: no ambient capabilities; wrong world or package
//! version rejected with an error naming the mismatch).

use crate::wasm_support;

use rebound::wasm::{LoadError, PolicyPre, WasmStrategy, WasmStrategyConfig, WitVersion};
use wasm_support::{guest, load, runtime};

/// A component importing interfaces outside `rebound:policy` and the WASI 0.2 and 0.3 sets (an
/// HTTP client; WASI of a version the host does not know) is refused, listing them.
#[test]
fn foreign_imports_are_rejected_with_their_names() {
    let err = load("foreign_imports").unwrap_err();
    match &err {
        LoadError::ForbiddenImports { imports, .. } => assert_eq!(
            imports,
            &[
                "wasi:http/outgoing-handler@0.2.0".to_owned(),
                "wasi:filesystem/preopens@0.4.0".to_owned()
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
        err.to_string().contains(
            "rebound:policy/strategy of version 0.1.0, 0.2.0, 0.3.0, 0.4.0, 0.5.0, 0.6.0"
        ),
        "{err}"
    );
}

/// docs/wit-versions.md: a component built for a version of the package this host does not
/// load is rejected, naming its version and the ones the host loads.
#[test]
fn incompatible_package_version_is_rejected() {
    let err = load("wrong_version").unwrap_err();
    assert!(
        matches!(err, LoadError::IncompatibleVersion { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("strategy@0.9.0")
            && text.contains("loads rebound:policy 0.1.0, 0.2.0, 0.3.0, 0.4.0, 0.5.0, 0.6.0"),
        "{text}"
    );
}

/// docs/wit-versions.md: a component is built for one version; one that imports an interface
/// of another version than the strategy it exports is refused, naming both.
#[test]
fn a_component_mixing_package_versions_is_rejected() {
    let err = load("mixed_versions").unwrap_err();
    assert!(
        matches!(err, LoadError::IncompatibleVersion { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("rebound:policy/failure@0.2.0 next to rebound:policy/strategy@0.1.0"),
        "{text}"
    );
}

/// docs/wit-versions.md: the host loads every released version, each component as the version
/// it was built for, and grants a component exactly its version's interfaces.
#[test]
fn each_component_loads_as_the_version_it_was_built_for() {
    let old = load(&wasm_support::released_0_1_0("no_retry_for_robots")).unwrap();
    assert_eq!(old.wit_version(), WitVersion::V0_1_0);
    assert_eq!(
        old.imports(),
        ["rebound:policy/types@0.1.0", "rebound:policy/host@0.1.0"]
    );
    let released = load(&wasm_support::released(
        WitVersion::V0_2_0,
        "no_retry_for_robots",
    ))
    .unwrap();
    assert_eq!(released.wit_version(), WitVersion::V0_2_0);
    assert_eq!(
        released.imports(),
        [
            "rebound:policy/types@0.2.0",
            "rebound:policy/failure@0.2.0",
            "rebound:policy/host@0.2.0"
        ]
    );
    let released = load(&wasm_support::released(
        WitVersion::V0_3_0,
        "no_retry_for_robots",
    ))
    .unwrap();
    assert_eq!(released.wit_version(), WitVersion::V0_3_0);
    assert_eq!(
        released.imports(),
        [
            "rebound:policy/types@0.3.0",
            "rebound:policy/failure@0.3.0",
            "rebound:policy/host@0.3.0"
        ]
    );
    let released = load(&wasm_support::released(
        WitVersion::V0_4_0,
        "no_retry_for_robots",
    ))
    .unwrap();
    assert_eq!(released.wit_version(), WitVersion::V0_4_0);
    assert_eq!(
        released.imports(),
        [
            "rebound:policy/types@0.4.0",
            "rebound:policy/failure@0.4.0",
            "rebound:policy/host@0.4.0"
        ]
    );
    let released = load(&wasm_support::released(
        WitVersion::V0_5_0,
        "no_retry_for_robots",
    ))
    .unwrap();
    assert_eq!(released.wit_version(), WitVersion::V0_5_0);
    assert_eq!(
        released.imports(),
        [
            "rebound:policy/types@0.5.0",
            "rebound:policy/failure@0.5.0",
            "rebound:policy/host@0.5.0"
        ]
    );
    let current = load("no_retry_for_robots").unwrap();
    assert_eq!(current.wit_version(), WitVersion::V0_6_0);
    assert_eq!(
        current.imports(),
        [
            "rebound:policy/types@0.6.0",
            "rebound:policy/failure@0.6.0",
            "rebound:policy/host@0.6.0"
        ]
    );
    assert_eq!(WitVersion::CURRENT, WitVersion::V0_6_0);
    assert_eq!(WitVersion::CURRENT.package(), rebound::wasm::HOST_PACKAGE);
    assert_eq!(
        WitVersion::ALL.map(WitVersion::number),
        ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0"],
        "oldest first"
    );
    for version in WitVersion::ALL {
        assert!(
            version
                .wit()
                .contains(&format!("package {};", version.package())),
            "the WIT kept for {version} declares it"
        );
        assert_eq!(WitVersion::from_number(version.number()), Some(version));
    }
    assert_eq!(WitVersion::from_number("0.9.0"), None);
}

/// Bytes that are not a component, and a missing file, get errors naming the problem, in
/// one line: a file that is not WebAssembly, a core module where a component belongs.
#[test]
fn bad_bytes_and_missing_files() {
    let err = PolicyPre::load(runtime(), "junk", b"not wasm at all").unwrap_err();
    assert!(matches!(err, LoadError::Compile { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "policy `junk` is not a valid WebAssembly component: not a WebAssembly file: it does \
         not start with `\\0asm` (it starts with `not wasm`)"
    );
    let core = PolicyPre::load(runtime(), "core", b"\0asm\x01\0\0\0").unwrap_err();
    assert!(
        core.to_string().ends_with(
            "a core WebAssembly module, not a component: make one with `wasm-tools component new`"
        ),
        "{core}"
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
    let config = WasmStrategyConfig::default().with_params([(param, "yes")]);
    WasmStrategy::new(component, config).unwrap_err()
}

/// A policy that rejects its parameters is refused when its strategy is created, with its
/// message.
#[test]
fn configure_rejection_is_a_load_error() {
    let err = adversary_configured_with("reject");
    assert!(matches!(err, LoadError::Configure { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("refuse its configuration"), "{text}");
    // A refused parameter is a configuration error, not an invalid answer.
    assert!(
        text.contains("failed to configure: it rejected its parameters: ")
            && !text.contains("invalid_answer"),
        "{text}"
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
