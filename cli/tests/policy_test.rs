//! `rebound test POLICY.wasm [CASES.jsonl]` end to end: every example and
//! template policy of every language passes the cases it ships, so do the components built for
//! the earlier released versions of `rebound:policy` (docs/wit-versions.md); a failing case is shown with its input,
//! expectation and answer and fails the run; `--raw` checks the policy's own answer; `--json`
//! reports every case; malformed cases are refused naming what is wrong.

use crate::support;

use std::path::PathBuf;

use serde_json::Value;
use support::{guest, rebound, success_stdout};

fn tree(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
        .display()
        .to_string()
}

/// Runs `rebound test ARGS`; standard output, standard error, success.
fn run(args: &[&str]) -> (String, String, bool) {
    let output = rebound().arg("test").args(args).output().unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
        output.status.success(),
    )
}

/// The released versions of `rebound:policy` kept as fixtures (`tests/fixtures/`).
const RELEASED: [&str; 5] = ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"];

fn assert_passes(policy: &str, cases: &str) {
    let (out, err, ok) = run(&[policy, cases]);
    assert!(ok, "{policy} with {cases}:\n{out}{err}");
    let last = out.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed"), "{out}");
}

/// Every Rust example policy and the Rust template pass their `tests.jsonl`, and so do their
/// builds for each earlier released version of `rebound:policy`.
#[test]
fn every_rust_policy_and_its_released_builds_pass_their_cases() {
    for dir in std::fs::read_dir(tree("policies")).unwrap() {
        let dir = dir.unwrap().path();
        let cases = dir.join("tests.jsonl");
        if !cases.exists() {
            continue;
        }
        let name = dir.file_name().unwrap().to_str().unwrap().replace('-', "_");
        let cases = cases.display().to_string();
        assert_passes(&guest(&name).display().to_string(), &cases);
        // Every policy has a build for each released version, but the template, which came
        // after 0.1.0. The template's builds for earlier versions are held to the cases of
        // their own release: the attempt-timeout case came with 0.6.0's
        // `failure.attempt-timeout-ms`.
        let earlier_cases = (name == "template").then(|| cases_before_0_6_0(&cases));
        for version in RELEASED {
            if name != "template" || version != "0.1.0" {
                let released = tree(&format!(
                    "tests/fixtures/rebound-policy-{version}/{name}.wasm"
                ));
                let cases = match &earlier_cases {
                    Some((_, path)) => path.as_str(),
                    None => cases.as_str(),
                };
                assert_passes(&released, cases);
            }
        }
    }
    assert_passes(
        &guest("best_effort").display().to_string(),
        &tree("policies/best-effort/params.tests.jsonl"),
    );
}

/// The cases of `path` without those about an attempt timeout, in a file of their own (kept
/// alive by the directory returned beside its path).
fn cases_before_0_6_0(path: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("tests.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| !line.contains("ATTEMPT_TIMEOUT"))
        .collect();
    assert!(
        kept.len() < text.lines().count(),
        "{path} has an attempt-timeout case"
    );
    std::fs::write(&earlier, kept.join("\n")).unwrap();
    let path = earlier.display().to_string();
    (dir, path)
}

/// The examples and the template of C, C++, Go, Zig, JavaScript (on QuickJS) and TypeScript
/// pass the cases they ship (TypeScript's twins those of JavaScript), and so do the C builds for the released versions. Python and JavaScript on
/// SpiderMonkey take tens of seconds each to compile in a debug build; their template is run
/// once below, and the host's parity tests hold every one of them to its twin.
#[test]
fn every_polyglot_example_and_template_passes_its_cases() {
    for (language, source) in [
        ("c", "c"),
        ("cpp", "cpp"),
        ("go", "go"),
        ("zig", "zig"),
        ("quickjs", "javascript"),
        ("typescript", "javascript"),
    ] {
        for name in [
            "best_effort",
            "no_retry_for_robots",
            "cassandra_default",
            "template",
        ] {
            let cases = tree(&format!("policies/{source}/{name}.tests.jsonl"));
            assert_passes(
                &guest(&format!("{language}_{name}")).display().to_string(),
                &cases,
            );
            if language == "c" && name != "template" {
                for version in RELEASED {
                    let released = tree(&format!(
                        "tests/fixtures/rebound-policy-{version}/c_{name}.wasm"
                    ));
                    assert_passes(&released, &cases);
                }
            }
        }
    }
    assert_passes(
        &guest("python_template").display().to_string(),
        &tree("policies/python/template.tests.jsonl"),
    );
}

/// A failing case prints its input, the expected and the actual answer and what differs; the
/// run ends with one `N passed, M failed` line and exits 1.
#[test]
fn a_failing_case_is_shown_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("tests.jsonl");
    std::fs::write(
        &cases,
        concat!(
            "# a comment\n",
            r#"{"name": "passes", "request": {"type": "get"}, "reason": "KV_LOCKED", "expect": {"decision": "retry", "delay_ms": {"min": 1, "max": 1}}}"#,
            "\n\n",
            r#"{"name": "robots are retried", "request": {"type": "get", "client_context": {"isRobotRequest": "yes"}}, "reason": "KV_LOCKED", "expect": {"decision": "retry"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let policy = guest("no_retry_for_robots").display().to_string();
    let (out, err, ok) = run(&[&policy, cases.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        out.contains("FAIL robots are retried (") && out.contains("tests.jsonl:4)"),
        "{out}"
    );
    assert!(
        out.contains(r#"  input     {"reason":"KV_LOCKED""#),
        "{out}"
    );
    assert!(out.contains(r#"  expected  {"decision":"retry"}"#), "{out}");
    assert!(
        out.contains(r#"  actual    {"#) && out.contains(r#""decision":"cancel""#),
        "{out}"
    );
    assert!(
        out.contains(r#"  problem   decision: expected "retry", got "cancel""#),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some("1 passed, 1 failed"), "{out}");
    assert!(err.contains("1 of 2 cases failed"), "{err}");
    assert!(!out.contains("FAIL passes"), "{out}");

    // The same run as JSON, for tools; the default cases file is ./tests.jsonl.
    let output = rebound()
        .current_dir(dir.path())
        .args(["test", "--json", &policy])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(report["mode"], "orchestrator");
    let failed = &report["cases"][1];
    assert_eq!(
        (failed["line"].as_u64(), failed["passed"].as_bool()),
        (Some(4), Some(false))
    );
    assert_eq!(failed["actual"]["decision"], "cancel");
    assert_eq!(failed["expect"]["decision"], "retry");
}

/// `--raw` checks the policy's own answer: best effort says no retry for a dispatched write,
/// where the orchestrator's decision is a cancellation.
#[test]
fn raw_checks_the_policys_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("raw.jsonl");
    std::fs::write(
        &cases,
        concat!(
            r#"{"request": {"type": "upsert", "dispatched": true}, "reason": "SOCKET_CLOSED_WHILE_IN_FLIGHT", "expect": {"decision": "no_retry"}}"#,
            "\n",
            r#"{"request": {"type": "get", "retry_attempts": 2}, "reason": "KV_LOCKED", "expect": {"decision": "retry", "delay_ms": 4, "node": "same"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let policy = guest("best_effort").display().to_string();
    let out = success_stdout(rebound().args(["test", "--raw", &policy, cases.to_str().unwrap()]));
    assert_eq!(String::from_utf8(out).unwrap(), "2 passed, 0 failed\n");
    let (out, _, ok) = run(&[&policy, cases.to_str().unwrap()]);
    assert!(!ok && out.contains("1 passed, 1 failed"), "{out}");
}

/// docs/cli.md `rebound test`: a case with `hedge` asks when the next copy goes, its policy
/// reading percentiles of the latencies the case says were observed (docs/hedging.md "Delays
/// from observed latency"); the host's rules still answer first (a non-idempotent request is
/// never hedged), and each case starts from nothing observed. `hedge_echo` with `percentile=95`
/// waits the 95th percentile, or its 20 ms while none is known.
#[test]
fn hedging_cases_read_the_latencies_they_say_were_observed() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("hedging.jsonl");
    let get = r#""request": {"type": "http", "method": "GET", "authority": "api.example"}"#;
    let lines = [
        format!(
            r#"{{"name": "p95 of 90 fast and 10 slow answers", {get}, "hedge": {{}}, "observed": [{{"latency_ms": 40, "count": 90}}, {{"latency_ms": 900, "count": 10}}], "params": {{"percentile": 95}}, "expect": {{"hedge": {{"next": "send", "after_ms": {{"min": 900, "max": 957}}, "node": "next"}}}}}}"#
        ),
        format!(
            r#"{{"name": "p50 of the same", {get}, "hedge": {{}}, "observed": [{{"latency_ms": 40, "count": 90}}, {{"latency_ms": 900, "count": 10}}], "params": {{"percentile": 50}}, "expect": {{"hedge": {{"next": "send", "after_ms": {{"min": 40, "max": 43}}}}}}}}"#
        ),
        format!(
            r#"{{"name": "nothing observed yet", {get}, "hedge": {{}}, "params": {{"percentile": 95}}, "expect": {{"hedge": {{"next": "send", "after_ms": 20}}}}}}"#
        ),
        r#"{"name": "a POST is never hedged", "request": {"type": "http", "method": "POST", "authority": "api.example"}, "hedge": {}, "params": {"percentile": 95}, "expect": {"hedge": {"next": "none"}}}"#.to_owned(),
        format!(
            r#"{{"name": "a wrong expectation", {get}, "hedge": {{}}, "params": {{"percentile": 95}}, "expect": {{"hedge": {{"next": "wait"}}}}}}"#
        ),
    ];
    std::fs::write(&cases, lines.join("\n")).unwrap();
    let policy = guest("hedge_echo").display().to_string();
    let (out, err, ok) = run(&["--json", &policy, cases.to_str().unwrap()]);
    assert!(!ok, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let passed: Vec<&str> = (report["cases"].as_array().unwrap().iter())
        .filter(|case| case["passed"] == true)
        .map(|case| case["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        passed,
        [
            "p95 of 90 fast and 10 slow answers",
            "p50 of the same",
            "nothing observed yet",
            "a POST is never hedged"
        ],
        "{out}"
    );
    let wrong = &report["cases"][4];
    assert_eq!(wrong["actual"]["hedge"]["next"], "send", "{wrong}");

    // `observed` belongs to hedging questions, and names its bad entry.
    std::fs::write(
        &cases,
        concat!(
            r#"{"request": {"type": "get"}, "reason": "KV_LOCKED", "observed": [], "expect": {}}"#,
            "\n",
            r#"{"request": {"type": "get"}, "hedge": {}, "observed": [{"latency_ms": -1, "count": 1}], "expect": {}}"#,
            "\n",
        ),
    )
    .unwrap();
    let (out, _, ok) = run(&[&policy, cases.to_str().unwrap()]);
    assert!(!ok);
    assert!(out.contains("observed: only a hedging question"), "{out}");
    assert!(out.contains("observed[0].latency_ms: "), "{out}");
}

/// Bad input: a line that is not a case, an `expect` field no answer has, a missing `expect`,
/// a `policy` in a case, a parameter the policy refuses, a missing file — each named.
#[test]
fn malformed_cases_and_missing_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("bad.jsonl");
    std::fs::write(
        &cases,
        concat!(
            "not json\n",
            r#"{"reason": "KV_LOCKED", "expect": {"delay": 1}}"#,
            "\n",
            r#"{"reason": "KV_LOCKED"}"#,
            "\n",
            r#"{"policy": "x.wasm", "reason": "KV_LOCKED", "expect": {}}"#,
            "\n",
            r#"{"reason": "KV_LOKED", "expect": {}}"#,
            "\n",
            r#"{"params": {"max_attempts": "many"}, "reason": "KV_LOCKED", "expect": {}}"#,
            "\n",
        ),
    )
    .unwrap();
    let policy = guest("c_template").display().to_string();
    let (out, _, ok) = run(&["--json", &policy, cases.to_str().unwrap()]);
    assert!(!ok);
    let report: Value = serde_json::from_str(&out).unwrap();
    let problem = |i: usize| support::case_problem(&report, i);
    assert!(
        problem(0).contains("malformed case: not a JSON object"),
        "{}",
        problem(0)
    );
    assert!(
        problem(1).starts_with("expect.delay: an answer has no field `delay`"),
        "{}",
        problem(1)
    );
    assert!(problem(2).contains("expect: missing"), "{}", problem(2));
    assert!(
        problem(3).contains("policy: a case tests the policy given"),
        "{}",
        problem(3)
    );
    assert!(
        problem(4).contains("reason: unknown reason `KV_LOKED`"),
        "{}",
        problem(4)
    );
    // A refused parameter is a configuration error.
    assert!(
        problem(5).contains("failed to configure: it rejected its parameters")
            && problem(5).contains("max_attempts"),
        "{}",
        problem(5)
    );
    assert_eq!(report["failed"], 6);

    let (_, err, ok) = run(&[&policy, "/no/such/cases.jsonl"]);
    assert!(
        !ok && err.contains("cannot open cases file /no/such/cases.jsonl"),
        "{err}"
    );
    let (_, err, ok) = run(&["/no/such/policy.wasm", cases.to_str().unwrap()]);
    assert!(
        !ok && err.contains("cannot read policy /no/such/policy.wasm"),
        "{err}"
    );
}
