//! The registry's configuration file: named policies, the default, profiles
//! (reference 003 "Using multiple policies"), service and request-type routes; a bad
//! configuration is refused naming the file, the line, the field and what was expected.

use std::path::{Path, PathBuf};

use rebound::config::{Builtin, BuiltinPolicy, ConfigError};
use rebound::config::{PolicySource, RegistryConfig};
use rebound::wasm::{FailSafe, TickerPriority};
use rebound::{RequestType, Service};

/// A directory with an (empty) component file `robots.wasm`: validation only checks that
/// component files exist.
fn dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("robots.wasm"), b"").unwrap();
    dir
}

fn parse(dir: &Path, text: &str) -> Result<RegistryConfig, ConfigError> {
    RegistryConfig::parse(text, Path::new("rebound.toml"), dir)
}

fn error(text: &str) -> ConfigError {
    let dir = dir();
    parse(dir.path(), text).expect_err("the configuration must be refused")
}

const VALID: &str = r#"
default_policy = "standard"

[policies.standard]
builtin = "best-effort"

[policies.strict]
builtin = "fail-fast"

[policies.robots]
component = "robots.wasm"
params = { agents = "crawler", max = 3, ratio = 0.5, strict = true }
fail_safe = "best_effort"
guard_exempt = true
limits = { deadline_ms = 5 }
quarantine = { after_failures = 2, cooldown_ms = 100 }

[profiles.custom-retries]
policy = "robots"

[profiles.slow]

[services]
query = "strict"

[request_types]
upsert = "strict"
"#;

#[test]
fn a_full_configuration_is_read_with_every_section() {
    let dir = dir();
    let config = parse(dir.path(), VALID).unwrap();
    assert_eq!(config.default_policy, "standard");
    assert_eq!(
        config.policies["standard"].source,
        PolicySource::Builtin(
            BuiltinPolicy::new(Builtin::BestEffort, &Default::default()).unwrap()
        )
    );
    let robots = &config.policies["robots"];
    assert_eq!(
        robots.source,
        PolicySource::Component(std::path::absolute(dir.path().join("robots.wasm")).unwrap())
    );
    // Parameters of any TOML scalar type reach the policy as text.
    let params: Vec<(&str, &str)> = robots
        .params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        params,
        [
            ("agents", "crawler"),
            ("max", "3"),
            ("ratio", "0.5"),
            ("strict", "true")
        ]
    );
    assert_eq!(robots.fail_safe, FailSafe::BestEffort);
    assert!(robots.guard_exempt);
    assert_eq!(robots.limits.deadline_ms, 5);
    // Unset limits keep their defaults.
    assert_eq!(
        robots.limits.fuel,
        rebound::wasm::SandboxLimits::default().fuel
    );
    assert_eq!(robots.quarantine.after_failures, 2);
    // Reference 003: a profile with a dedicated policy, and one that inherits the default.
    assert_eq!(config.profiles["custom-retries"].as_deref(), Some("robots"));
    assert_eq!(config.profiles["slow"], None);
    assert_eq!(config.services[&Service::Query], "strict");
    assert_eq!(config.request_types[&RequestType::Upsert], "strict");
    assert!(config.watch.enabled);
}

#[test]
fn a_syntax_error_names_file_line_and_column() {
    let e = error("default_policy = \"standard\"\n[policies.standard\nbuiltin = \"best-effort\"\n");
    assert_eq!((e.file.as_path(), e.line), (Path::new("rebound.toml"), 2));
    assert!(e.column > 1, "{e}");
    assert!(e.to_string().starts_with("rebound.toml:2:"), "{e}");
}

#[test]
fn an_unknown_field_is_named_with_the_fields_expected_there() {
    let e = error(
        "default_policy = \"s\"\n[policies.s]\nbuiltin = \"best-effort\"\nguard_exmept = true\n",
    );
    assert_eq!(e.line, 4, "{e}");
    assert_eq!(e.field, "policies.s.guard_exmept", "{e}");
    assert!(e.message.contains("unknown field `guard_exmept`"), "{e}");
    assert!(
        e.message.contains("guard_exempt"),
        "expected fields listed: {e}"
    );
}

#[test]
fn a_wrong_type_names_the_field_and_the_expected_type() {
    let dir = dir();
    let e = parse(
        dir.path(),
        "default_policy = \"r\"\n[policies.r]\ncomponent = \"robots.wasm\"\n\n[policies.r.limits]\ndeadline_ms = \"ten\"\n",
    )
    .unwrap_err();
    assert_eq!(
        (e.line, e.field.as_str()),
        (6, "policies.r.limits.deadline_ms"),
        "{e}"
    );
    assert!(e.message.contains("expected an integer"), "{e}");
}

#[test]
fn an_unknown_builtin_lists_the_builtins() {
    let e = error("default_policy = \"s\"\n[policies.s]\nbuiltin = \"best-efort\"\n");
    assert_eq!((e.line, e.field.as_str()), (3, "policies.s.builtin"), "{e}");
    assert!(
        e.message.contains("best-effort") && e.message.contains("cassandra-default"),
        "{e}"
    );
}

#[test]
fn a_missing_default_policy_is_refused() {
    let e = error("[policies.s]\nbuiltin = \"best-effort\"\n");
    assert!(e.message.contains("missing field `default_policy`"), "{e}");
}

#[test]
fn references_to_unknown_policies_name_the_referring_field() {
    let base = "[policies.s]\nbuiltin = \"best-effort\"\n";
    let e = error(&format!("default_policy = \"nope\"\n{base}"));
    assert_eq!((e.line, e.field.as_str()), (1, "default_policy"), "{e}");
    assert!(
        e.message.contains("no policy named `nope`") && e.message.contains(": s"),
        "{e}"
    );

    let e = error(&format!(
        "default_policy = \"s\"\n{base}[profiles.p]\npolicy = \"nope\"\n"
    ));
    assert_eq!((e.line, e.field.as_str()), (5, "profiles.p.policy"), "{e}");

    let e = error(&format!(
        "default_policy = \"s\"\n{base}[services]\nquery = \"nope\"\n"
    ));
    assert_eq!((e.line, e.field.as_str()), (5, "services.query"), "{e}");

    let e = error(&format!(
        "default_policy = \"s\"\n{base}[request_types]\nget = \"nope\"\n"
    ));
    assert_eq!((e.line, e.field.as_str()), (5, "request_types.get"), "{e}");
}

#[test]
fn an_unknown_service_or_request_type_lists_the_valid_ones() {
    let base = "default_policy = \"s\"\n[policies.s]\nbuiltin = \"best-effort\"\n";
    let e = error(&format!("{base}[services]\nquerry = \"s\"\n"));
    assert_eq!(e.line, 5, "{e}");
    assert!(
        e.message.contains("querry") && e.message.contains("analytics"),
        "{e}"
    );
    let e = error(&format!("{base}[request_types]\ngett = \"s\"\n"));
    assert!(
        e.message.contains("gett") && e.message.contains("lookup_in"),
        "{e}"
    );
}

#[test]
fn a_missing_component_file_names_the_path_it_looked_for() {
    let e = error("default_policy = \"r\"\n[policies.r]\ncomponent = \"gone.wasm\"\n");
    assert_eq!(
        (e.line, e.field.as_str()),
        (3, "policies.r.component"),
        "{e}"
    );
    assert!(e.message.contains("gone.wasm"), "{e}");
}

#[test]
fn a_policy_is_a_builtin_or_a_component_never_both_or_neither() {
    let e = error(
        "default_policy = \"r\"\n[policies.r]\nbuiltin = \"fail-fast\"\ncomponent = \"robots.wasm\"\n",
    );
    assert_eq!(
        (e.line, e.field.as_str()),
        (4, "policies.r.component"),
        "{e}"
    );
    let e = error("default_policy = \"r\"\n[policies.r]\nfail_safe = \"no_retry\"\n");
    assert_eq!(e.field, "policies.r", "{e}");
    assert!(
        e.message.contains("builtin") && e.message.contains("component"),
        "{e}"
    );
}

/// Fail fast has no parameter (the others' are tested in builtin_params.rs).
#[test]
fn fail_fast_takes_no_parameters() {
    let e = error(
        "default_policy = \"s\"\n[policies.s]\nbuiltin = \"fail-fast\"\nparams = { a = 1 }\n",
    );
    assert_eq!(
        (e.line, e.field.as_str()),
        (4, "policies.s.params.a"),
        "{e}"
    );
}

#[test]
fn relative_component_paths_resolve_against_policy_dir_then_the_config_directory() {
    let dir = dir();
    std::fs::create_dir(dir.path().join("p")).unwrap();
    std::fs::write(dir.path().join("p/robots.wasm"), b"").unwrap();
    let config = parse(
        dir.path(),
        "default_policy = \"r\"\npolicy_dir = \"p\"\n[policies.r]\ncomponent = \"robots.wasm\"\n",
    )
    .unwrap();
    let expected: PathBuf = std::path::absolute(dir.path().join("p/robots.wasm")).unwrap();
    assert_eq!(
        config.policies["r"].source,
        PolicySource::Component(expected)
    );
}

#[test]
fn a_configuration_file_is_named_in_its_errors() {
    let dir = dir();
    let file = dir.path().join("rebound.toml");
    std::fs::write(&file, "default_policy = 3\n").unwrap();
    let e = RegistryConfig::load(&file).unwrap_err();
    assert_eq!(e.file, std::path::absolute(&file).unwrap());
    assert_eq!((e.line, e.field.as_str()), (1, "default_policy"), "{e}");
    let missing = RegistryConfig::load(&dir.path().join("absent.toml")).unwrap_err();
    assert!(missing.message.contains("cannot read"), "{missing}");
}

/// Compiled policies are cached in the user's cache directory unless the
/// configuration names another directory or turns the cache off; a configured directory is
/// resolved against the configuration's directory.
#[test]
fn the_cache_is_the_users_unless_configured() {
    use rebound::config::CacheDir;
    use rebound::wasm::ArtifactCache;
    let dir = dir();
    let minimal = "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\n";
    let config = parse(dir.path(), minimal).unwrap();
    assert_eq!(
        config.cache_dir,
        ArtifactCache::default_dir().map(CacheDir::UserDefault)
    );
    let off = parse(dir.path(), &format!("cache_dir = false\n{minimal}")).unwrap();
    assert_eq!(off.cache_dir, None);
    let named = parse(dir.path(), &format!("cache_dir = \"compiled\"\n{minimal}")).unwrap();
    assert_eq!(
        named.cache_dir,
        Some(CacheDir::Configured(dir.path().join("compiled")))
    );
    let error = parse(dir.path(), &format!("cache_dir = 7\n{minimal}")).unwrap_err();
    assert!(error.to_string().contains("cache_dir"), "{error}");
}

/// `component = { path, sha256 }` pins the file's digest (either case, an
/// optional `sha256:` prefix); a digest that is not 64 hex digits is refused at its line.
#[test]
fn a_component_may_be_pinned_by_its_sha256() {
    let dir = dir();
    let digest = "ab".repeat(32);
    let config = parse(
        dir.path(),
        &format!("default_policy = \"r\"\n[policies.r]\ncomponent = {{ path = \"robots.wasm\", sha256 = \"sha256:{}\" }}\n", digest.to_uppercase()),
    )
    .unwrap();
    let robots = &config.policies["r"];
    assert_eq!(robots.pinned_sha256, Some([0xab; 32]));
    assert_eq!(
        robots.source,
        PolicySource::Component(dir.path().join("robots.wasm"))
    );
    let unpinned = parse(
        dir.path(),
        "default_policy = \"r\"\n[policies.r]\ncomponent = \"robots.wasm\"\n",
    )
    .unwrap();
    assert_eq!(unpinned.policies["r"].pinned_sha256, None);

    let e = error("default_policy = \"r\"\n[policies.r]\ncomponent = { path = \"robots.wasm\", sha256 = \"abc\" }\n");
    assert_eq!(
        (e.line, e.field.as_str()),
        (3, "policies.r.component.sha256"),
        "{e}"
    );
    assert!(
        e.message.contains("64 hexadecimal digits") && e.message.contains("`abc`"),
        "{e}"
    );
    let e = error("default_policy = \"r\"\n[policies.r]\ncomponent = { path = \"robots.wasm\", sha = \"abc\" }\n");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("sha256 = "), "{e}");
}

/// `component = { oci = "registry/repository:tag", sha256 }` names a
/// component in an OCI registry (the pin optional); a reference without a registry is refused
/// at its line.
#[test]
fn a_component_may_come_from_an_oci_registry() {
    let dir = dir();
    let digest = "cd".repeat(32);
    let config = parse(
        dir.path(),
        &format!("default_policy = \"r\"\n[policies.r]\ncomponent = {{ oci = \"ghcr.io/team/retry:1.0\", sha256 = \"{digest}\" }}\n"),
    )
    .unwrap();
    let policy = &config.policies["r"];
    assert_eq!(
        policy.source,
        PolicySource::Oci("ghcr.io/team/retry:1.0".into())
    );
    assert_eq!(policy.source.to_string(), "oci:ghcr.io/team/retry:1.0");
    assert_eq!(policy.pinned_sha256, Some([0xcd; 32]));
    let unpinned = parse(
        dir.path(),
        "default_policy = \"r\"\n[policies.r]\ncomponent = { oci = \"localhost:5000/retry:latest\" }\n",
    )
    .unwrap();
    assert_eq!(unpinned.policies["r"].pinned_sha256, None);

    let e = error("default_policy = \"r\"\n[policies.r]\ncomponent = { oci = \"retry:1.0\" }\n");
    assert_eq!(
        (e.line, e.field.as_str()),
        (3, "policies.r.component.oci"),
        "{e}"
    );
    assert!(
        e.message.contains("expected registry/repository:tag"),
        "{e}"
    );
}

/// docs/registry.md "Signed policies": `[trust] keys` names PEM public keys, read relative to
/// the file, and puts every OCI component under them (not components from files); an empty
/// list, a missing file and a file that is not an ECDSA P-256 public key are refused at their
/// line, naming the field.
#[cfg(feature = "oci")]
#[test]
fn a_trust_table_names_public_keys_every_oci_component_needs() {
    let dir = dir();
    std::fs::write(
        dir.path().join("release.pub"),
        "-----BEGIN PUBLIC KEY-----\n\
         MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEA2gRr6X4T3oYza8KR0Y/OZns6x/\n\
         dBjxSps/oGaD8XfaHZBacx397DTkUtmXc6MoAuMzAIdzQ8SYle4XUZqCoQ==\n\
         -----END PUBLIC KEY-----\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("not-a-key.pub"), "hello\n").unwrap();
    let text = |keys: &str| {
        format!(
            "default_policy = \"o\"\n[policies.o]\ncomponent = {{ oci = \"ghcr.io/team/retry:1.0\" }}\n\
             [policies.f]\ncomponent = \"robots.wasm\"\n[trust]\nkeys = {keys}\n"
        )
    };
    let config = parse(dir.path(), &text("[\"release.pub\"]")).unwrap();
    let keys = config.policies["o"].trusted_keys.as_ref().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].path, dir.path().join("release.pub"));
    assert!(config.policies["f"].trusted_keys.is_none());

    let refused = |keys: &str| parse(dir.path(), &text(keys)).unwrap_err();
    let e = refused("[]");
    assert_eq!((e.line, e.field.as_str()), (6, "trust.keys"), "{e}");
    let e = refused("[\"release.pub\", \"missing.pub\"]");
    assert_eq!((e.line, e.field.as_str()), (7, "trust.keys[1]"), "{e}");
    assert!(e.message.contains("missing.pub"), "{e}");
    let e = refused("[\"not-a-key.pub\"]");
    assert_eq!(e.field, "trust.keys[0]", "{e}");
    assert!(e.message.contains("ECDSA P-256 public key"), "{e}");
}

/// docs/registry.md "Precompiled components": `precompiled` pins an OCI component's compiled
/// layer by its sha256; another value is refused at its line, naming the field.
#[test]
fn an_oci_component_may_pin_its_compiled_layer() {
    let dir = dir();
    let (digest, layer) = ("cd".repeat(32), "ef".repeat(32));
    let config = parse(
        dir.path(),
        &format!("default_policy = \"r\"\n[policies.r]\ncomponent = {{ oci = \"ghcr.io/team/retry:1.0\", sha256 = \"{digest}\", precompiled = \"{layer}\" }}\n"),
    )
    .unwrap();
    assert_eq!(config.policies["r"].precompiled_sha256, Some([0xef; 32]));
    assert_eq!(config.policies["r"].pinned_sha256, Some([0xcd; 32]));

    let e = error("default_policy = \"r\"\n[policies.r]\ncomponent = { oci = \"ghcr.io/team/retry:1.0\", precompiled = \"xyz\" }\n");
    assert_eq!(
        (e.line, e.field.as_str()),
        (3, "policies.r.component.precompiled"),
        "{e}"
    );
    assert!(
        e.message.contains("rebound push --precompile") && e.message.contains("`xyz`"),
        "{e}"
    );
}

#[test]
fn the_epoch_ticker_s_priority_is_read_from_the_engine_table_and_a_registry_asks_it() {
    let text = "default_policy = \"s\"\n[engine]\nticker_priority = \"normal\"\n\
                [policies.s]\nbuiltin = \"best-effort\"\n";
    let dir = dir();
    let config = parse(dir.path(), text).unwrap();
    assert_eq!(config.engine.ticker_priority, Some(TickerPriority::Normal));
    // Unset, the embedder chooses; a library's registry leaves the ticker as its process's
    // other threads (docs/embedding.md: the library changes no thread's scheduling unasked).
    let default = parse(
        dir.path(),
        "default_policy = \"s\"\n[policies.s]\nbuiltin = \"best-effort\"\n",
    )
    .unwrap();
    assert_eq!(default.engine.ticker_priority, None);
    let library = rebound::registry::PolicyRegistry::new(default).unwrap();
    assert_eq!(library.runtime().ticker_priority(), TickerPriority::Normal);
    // What was asked is what the registry's engine asked for: "normal" is always granted.
    let registry = rebound::registry::PolicyRegistry::new(config).unwrap();
    assert_eq!(registry.runtime().ticker_priority(), TickerPriority::Normal);
}

#[test]
fn an_unknown_ticker_priority_lists_the_valid_ones() {
    let e = error(
        "default_policy = \"s\"\n[engine]\nticker_priority = \"urgent\"\n\
         [policies.s]\nbuiltin = \"best-effort\"\n",
    );
    assert_eq!(e.line, 3, "{e}");
    assert_eq!(e.field, "engine.ticker_priority", "{e}");
    for valid in ["normal", "short_slice", "realtime"] {
        assert!(e.message.contains(valid), "{e}");
    }
}
