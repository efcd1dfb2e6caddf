//! The `rebound` binary end to end: `reasons`, `classify` and
//! `errormap` run as a user runs them, their output checked against the library's own tables,
//! and bad input of each kind refused with a message that names it.

use std::path::PathBuf;

use crate::support;
use support::{rebound, success_stdout};

use rebound::ReasonKind;
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let output = success_stdout(rebound().args(args));
    serde_json::from_slice(&output).unwrap()
}

fn stderr_of_failure(args: &[&str]) -> String {
    let output = rebound()
        .args(args)
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    String::from_utf8(output).unwrap()
}

/// Real server maps, kept as the host's test fixtures (provenance in their README).
fn error_map(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../host/tests/fixtures/error_maps")
        .join(name)
        .display()
        .to_string()
}

/// Reference 001 "RetryReason": every reason with both flags, as the library defines them.
#[test]
fn reasons_lists_every_reason_with_both_flags() {
    let rows = json(&["reasons", "--json"]);
    let rows = rows.as_array().unwrap();
    let kinds: Vec<_> = ReasonKind::ALL
        .iter()
        .filter(|k| **k != ReasonKind::Other)
        .collect();
    assert_eq!(rows.len(), kinds.len());
    for (row, kind) in rows.iter().zip(kinds) {
        assert_eq!(row["name"], kind.name());
        assert_eq!(
            row["allows_non_idempotent_retry"],
            kind.allows_non_idempotent_retry()
        );
        assert_eq!(row["always_retry"], kind.always_retry());
        assert_eq!(row["meaning"], kind.meaning());
    }
    let text = success_stdout(rebound().arg("reasons"));
    let text = String::from_utf8(text).unwrap();
    let mut lines = text.lines().skip_while(|l| !l.starts_with("KV_LOCKED "));
    let locked = lines.next().unwrap();
    assert_eq!(
        locked.split_whitespace().take(3).collect::<Vec<_>>(),
        ["KV_LOCKED", "true", "false"]
    );
    // Its meaning on the next line, indented.
    assert!(lines.next().unwrap().starts_with("    KV status 0x09"));
}

/// Reference 001 "Response Code Retry List": TMPFAIL is retried (even for an upsert), KEY_ENOENT
/// is not; a query code maps to its reason.
#[test]
fn classify_maps_raw_responses_to_reasons() {
    let tmpfail = json(&["classify", "--kv", "0x86", "--request", "upsert", "--json"]);
    assert_eq!(tmpfail["classification"], "retry");
    assert_eq!(tmpfail["reason"], "KV_TEMPORARY_FAILURE");
    assert_eq!(tmpfail["allows_non_idempotent_retry"], true);
    let missing = json(&["classify", "--kv", "1", "--request", "get", "--json"]);
    assert_eq!(missing["classification"], "not_retried");
    assert_eq!(missing["kind"], "not_retryable");
    let locked_unlock = json(&["classify", "--kv", "0x09", "--request", "unlock", "--json"]);
    assert_eq!(locked_unlock["kind"], "cas_mismatch", "LOCKED on unlock");
    let prepared = json(&["classify", "--query", "4040", "--json"]);
    assert_eq!(prepared["reason"], "QUERY_PREPARED_STATEMENT_FAILURE");
}

/// docs/http-and-grpc.md: a plain HTTP 503 is an `HTTP_STATUS` failure that allows no unsafe
/// retry, a 404 is not retried, a 204 is a success, a 413 is a failure only with a
/// `Retry-After`; a gRPC status by name in any case is a `GRPC_STATUS` failure, OK a success.
#[test]
fn classify_reads_http_and_grpc_statuses() {
    let unavailable = json(&["classify", "--http", "503", "--json"]);
    assert_eq!(unavailable["reason"], "HTTP_STATUS");
    assert_eq!(unavailable["allows_non_idempotent_retry"], false);
    let missing = json(&["classify", "--http", "404", "--json"]);
    assert_eq!(missing["classification"], "not_retried");
    let no_content = json(&["classify", "--http", "204", "--json"]);
    assert_eq!(no_content["classification"], "success");
    let grpc = json(&["classify", "--grpc", "unavailable", "--json"]);
    assert_eq!(grpc["reason"], "GRPC_STATUS");
    let ok = json(&["classify", "--grpc", "0", "--json"]);
    assert_eq!(ok["classification"], "success");
    // RFC 9110 §15.5.14 and urllib3's `respect_retry_after_header`: a 413 is not in the table,
    // but one that carries a `Retry-After` is a failure to decide about.
    let too_large = json(&["classify", "--http", "413", "--json"]);
    assert_eq!(too_large["classification"], "not_retried");
    let too_large_for_now = json(&["classify", "--http", "413", "--retry-after", "--json"]);
    assert_eq!(too_large_for_now["reason"], "HTTP_STATUS");
}

/// Reference 001 "KV Error Map Handling" and reference 004 "Retry Intervals": an unknown status
/// is retried when the map's entry indicates it, with the entry's retry spec.
#[test]
fn classify_consults_the_error_map_for_unknown_statuses() {
    let map = error_map("couchbasemock_errmap_v1.json");
    let out = json(&[
        "classify",
        "--kv",
        "0x7ff0",
        "--request",
        "get",
        "--error-map",
        &map,
        "--json",
    ]);
    assert_eq!(out["reason"], "KV_ERROR_MAP_RETRY_INDICATED");
    assert_eq!(out["retry_spec"]["strategy"], "constant");
    let without = json(&["classify", "--kv", "0x7ff0", "--request", "get", "--json"]);
    assert_eq!(without["kind"], "unknown_status");
}

/// Reference 004: every real map validates; the summary counts what the library counts.
#[test]
fn errormap_validates_and_summarises_the_real_maps() {
    for (file, version, revision, entries) in [
        ("error_map_v1.json", 1, 4, 61),
        ("error_map_v2.json", 2, 9, 83),
        ("gocbcore_testdata_err_map70_v1.json", 1, 2, 58),
        ("gocbcore_testdata_err_map71_v2.json", 2, 1, 65),
        ("couchbasemock_errmap_v1.json", 1, 1, 49),
    ] {
        let summary = json(&["errormap", &error_map(file), "--json"]);
        assert_eq!(
            (
                &summary["version"],
                &summary["revision"],
                &summary["entries"]
            ),
            (
                &Value::from(version),
                &Value::from(revision),
                &Value::from(entries)
            ),
            "{file}"
        );
    }
    let entry = json(&[
        "errormap",
        &error_map("couchbasemock_errmap_v1.json"),
        "--code",
        "0x7ff2",
        "--json",
    ]);
    assert_eq!(entry["entry"]["name"], "DUMMY_ERROR_RETRY_EXPONENTIAL");
    assert_eq!(entry["verdict"], "retry (KV_ERROR_MAP_RETRY_INDICATED)");
    let absent = json(&[
        "errormap",
        &error_map("error_map_v2.json"),
        "--code",
        "0x7ff2",
        "--json",
    ]);
    assert_eq!(absent["verdict"], "not retried: not in the map");
}

/// Bad input of each kind: a missing file, a corrupt map (the field named), a bad number, a
/// request that is not a KV type, a missing companion option.
#[test]
fn bad_input_is_refused_with_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, r#"{"version":1,"revision":1,"errors":{"zz":{}}}"#).unwrap();
    let corrupt = corrupt.display().to_string();

    let missing = stderr_of_failure(&["errormap", "/no/such/map.json"]);
    assert!(
        missing.contains("cannot read error map /no/such/map.json"),
        "{missing}"
    );
    let bad = stderr_of_failure(&["errormap", &corrupt]);
    assert!(bad.contains(&corrupt) && bad.contains("errors.zz"), "{bad}");
    let number = stderr_of_failure(&["classify", "--kv", "tmpfail", "--request", "get"]);
    assert!(number.contains("`tmpfail` is not a number"), "{number}");
    let query = stderr_of_failure(&["classify", "--kv", "0x86", "--request", "query"]);
    assert!(
        query.contains("`query` is not a KV request type"),
        "{query}"
    );
    let unknown = stderr_of_failure(&["classify", "--kv", "0x86", "--request", "fetch"]);
    assert!(unknown.contains("neither a request type"), "{unknown}");
    let alone = stderr_of_failure(&["classify", "--kv", "0x86"]);
    assert!(alone.contains("--request"), "{alone}");
}

#[test]
fn bench_measures_a_policy_beside_the_native_baseline() {
    let policy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/guests/best_effort.wasm");
    let report = json(&[
        "bench",
        policy.to_str().unwrap(),
        "--iterations",
        "200",
        "--rounds",
        "3",
        "--json",
    ]);
    assert_eq!(report["policy"], "best_effort");
    assert_eq!(report["failed_calls"], 0, "{report}");
    assert!(report["decision_ns"].as_u64().unwrap() > 0);
    assert!(report["native_best_effort_ns"].as_u64().unwrap() > 0);
    let stderr = stderr_of_failure(&["bench", "no/such/policy.wasm"]);
    assert!(
        stderr.contains("cannot read no/such/policy.wasm"),
        "{stderr}"
    );
}

/// docs/wit-versions.md: `rebound wit` gives an author the exact WIT of every released version
/// this host loads — the newest by default, the tree's `wit/policy.wit` — printed or written.
#[test]
fn wit_prints_and_writes_every_released_version() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let current = String::from_utf8(success_stdout(rebound().arg("wit"))).unwrap();
    assert_eq!(
        current,
        std::fs::read_to_string(root.join("wit/policy.wit")).unwrap()
    );
    let old = String::from_utf8(success_stdout(rebound().args([
        "wit",
        "--version",
        "0.1.0",
    ])))
    .unwrap();
    assert_eq!(
        old,
        std::fs::read_to_string(root.join("wit/released/0.1.0/policy.wit")).unwrap()
    );
    assert!(old.contains("package rebound:policy@0.1.0;"));
    let previous = String::from_utf8(success_stdout(rebound().args([
        "wit",
        "--version",
        "0.2.0",
    ])))
    .unwrap();
    assert_eq!(
        previous,
        std::fs::read_to_string(root.join("wit/released/0.2.0/policy.wit")).unwrap()
    );
    assert!(previous.contains("package rebound:policy@0.2.0;"));
    let last = String::from_utf8(success_stdout(rebound().args([
        "wit",
        "--version",
        "0.3.0",
    ])))
    .unwrap();
    assert_eq!(
        last,
        std::fs::read_to_string(root.join("wit/released/0.3.0/policy.wit")).unwrap()
    );
    assert!(current.contains("package rebound:policy@0.6.0;"));
    let listed = String::from_utf8(success_stdout(rebound().args(["wit", "--list"]))).unwrap();
    assert_eq!(
        listed,
        "rebound:policy@0.1.0\nrebound:policy@0.2.0\nrebound:policy@0.3.0\nrebound:policy@0.4.0\nrebound:policy@0.5.0\nrebound:policy@0.6.0\n"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("project/wit");
    let said = success_stdout(rebound().args(["wit", "--out", out.to_str().unwrap()]));
    assert!(String::from_utf8(said)
        .unwrap()
        .contains("rebound:policy@0.6.0"));
    assert_eq!(
        std::fs::read_to_string(out.join("policy.wit")).unwrap(),
        current
    );

    let unknown = stderr_of_failure(&["wit", "--version", "0.9.0"]);
    assert!(
        unknown.contains("--version 0.9.0")
            && unknown.contains("0.1.0, 0.2.0, 0.3.0, 0.4.0, 0.5.0, 0.6.0"),
        "{unknown}"
    );
}

/// Appends the custom section `name` holding `data` to a component's bytes (sizes below 128).
fn with_custom_section(mut bytes: Vec<u8>, name: &str, data: &str) -> Vec<u8> {
    let body_len = 1 + name.len() + data.len();
    assert!(body_len < 128 && name.len() < 128);
    bytes.extend([0, body_len as u8, name.len() as u8]);
    bytes.extend(name.as_bytes());
    bytes.extend(data.as_bytes());
    bytes
}

/// docs/wit-versions.md: `rebound inspect` reads a component
/// without compiling it — the version it was built for and the hosts that accept it, its
/// imports and exports, the metadata sections its build wrote — and refuses what is not one.
#[test]
fn inspect_reads_a_component_without_compiling_it() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let fixture = root.join("tests/fixtures/rebound-policy-0.1.0/no_retry_for_robots.wasm");
    let report = json(&["inspect", "--json", fixture.to_str().unwrap()]);
    assert_eq!(report["built_for"], "rebound:policy@0.1.0");
    assert_eq!(
        report["imports"],
        serde_json::json!(["rebound:policy/types@0.1.0", "rebound:policy/host@0.1.0"])
    );
    assert_eq!(
        report["exports"],
        serde_json::json!(["rebound:policy/strategy@0.1.0"])
    );
    assert!(report["interface"]
        .as_str()
        .unwrap()
        .contains("accepted by this host"));
    assert_eq!(report["metadata"], serde_json::json!({}));

    let dir = tempfile::tempdir().unwrap();
    let annotated = dir.path().join("annotated.wasm");
    let bytes = std::fs::read(root.join("build/guests/best_effort.wasm")).unwrap();
    let bytes = with_custom_section(bytes, "version", "1.2.0");
    let bytes = with_custom_section(bytes, "description", "Best effort, in the policy");
    std::fs::write(&annotated, bytes).unwrap();
    let text = String::from_utf8(success_stdout(
        rebound().args(["inspect", annotated.to_str().unwrap()]),
    ))
    .unwrap();
    assert!(
        text.contains("interface  rebound:policy@0.6.0: accepted by this host"),
        "{text}"
    );
    assert!(text.contains("  version    1.2.0\n"), "{text}");
    assert!(text.contains("Best effort, in the policy"), "{text}");

    // docs/authoring.md "The metadata section": a schema no host could apply is refused.
    let invalid = dir.path().join("invalid.wasm");
    let bytes = std::fs::read(root.join("build/guests/best_effort.wasm")).unwrap();
    let bytes = with_custom_section(
        bytes,
        "rebound:policy",
        r#"{"params": {"n": {"type": "integer", "default": 5, "max": 3}}}"#,
    );
    std::fs::write(&invalid, bytes).unwrap();
    let error = stderr_of_failure(&["inspect", invalid.to_str().unwrap()]);
    assert!(
        error.contains("section `rebound:policy`: params.n.default: 5 is out of range"),
        "{error}"
    );

    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"junk").unwrap();
    let error = stderr_of_failure(&["inspect", junk.to_str().unwrap()]);
    assert!(
        error.contains("junk.wasm is not a WebAssembly component: not WebAssembly"),
        "{error}"
    );
    let version = root.join("build/guests/wrong_version.wasm");
    let report = json(&["inspect", "--json", version.to_str().unwrap()]);
    assert_eq!(report["built_for"], Value::Null);
    assert!(report["interface"]
        .as_str()
        .unwrap()
        .contains("strategy@0.9.0: a version this host does not load"));
}

/// docs/policy-javascript.md "TypeScript": `rebound wit --typescript` writes declarations of
/// every value type and of `failure`, `host` and the exported `strategy`, generated from the
/// WIT; TypeScript's own compiler (the one the tree's JavaScript toolchain installs) accepts a
/// policy written against them and refuses one that names a reason the WIT does not have.
#[test]
fn typescript_declarations_type_check_a_policy() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let tsc = root.join(".tools/node/node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "{} is missing: ./scripts/build-guests.sh installs it",
        tsc.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let types = dir.path().join("types");
    let said =
        success_stdout(rebound().args(["wit", "--typescript", "--out", types.to_str().unwrap()]));
    assert!(String::from_utf8(said)
        .unwrap()
        .contains("rebound-policy.d.ts (rebound:policy@0.6.0)"));
    let declarations = std::fs::read_to_string(types.join("rebound-policy.d.ts")).unwrap();
    for module in ["types", "failure", "host", "strategy"] {
        assert!(
            declarations.contains(&format!("declare module \"rebound:policy/{module}@0.6.0\"")),
            "{module}"
        );
    }
    std::fs::write(
        dir.path().join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "es2022", "moduleResolution": "bundler"}, "include": ["policy.ts", "types/rebound-policy.d.ts"]}"#,
    )
    .unwrap();
    let policy = r#"import { retryAttempts, route, service } from "rebound:policy/failure@0.6.0";
import { log } from "rebound:policy/host@0.6.0";
import type { Strategy } from "rebound:policy/strategy@0.6.0";
import type { RetryAction } from "rebound:policy/types@0.6.0";

let maxAttempts = 3;

export const strategy: Strategy = {
  configure(params) {
    for (const [name, value] of params) {
      if (name === "max_attempts") maxAttempts = Number(value);
    }
  },
  retryAfter(reason): RetryAction {
    if (reason.tag === "http-status" && reason.val === 503 && route() === "/orders") {
      return { tag: "retry", val: { delayMs: 10, node: "same" } };
    }
    if (reason.tag === "read-timeout" && reason.val.dataPresent) return { tag: "rethrow" };
    if (service() === "grpc" || retryAttempts() >= maxAttempts) {
      log("info", "no retry");
      return { tag: "no-retry" };
    }
    return { tag: "best-effort" };
  },
};
"#;
    let check = |source: &str| {
        std::fs::write(dir.path().join("policy.ts"), source).unwrap();
        let output = std::process::Command::new(&tsc)
            .args(["-p", "."])
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8(output.stdout).unwrap(),
        )
    };
    let (ok, said) = check(policy);
    assert!(ok, "{said}");
    let (ok, said) = check(&policy.replace("\"http-status\"", "\"http-stats\""));
    assert!(
        !ok && said.contains("\"http-stats\"' have no overlap"),
        "{said}"
    );
}
