//! `rebound check POLICY.wasm` end to end: a well-behaved policy passes
//! every rule; each rule is broken by a policy that breaks it, and each breaking input is
//! reported; a component of another package version, or one that refuses its configuration,
//! does not load; the exit status says which.

use crate::support;

use rebound::{ReasonKind, RetryReason};
use serde_json::Value;
use support::{guest, rebound, success_stdout};

/// Runs `rebound check --json ARGS`; the report and whether the command succeeded.
fn check(args: &[&str]) -> (Value, bool) {
    let output = rebound()
        .arg("check")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (report, output.status.success())
}

/// The violations of `rule` in `report`.
fn violations<'a>(report: &'a Value, rule: &str) -> &'a Vec<Value> {
    report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == rule)
        .unwrap_or_else(|| panic!("no rule {rule} in {report}"))["violations"]
        .as_array()
        .unwrap()
}

fn path(name: &str) -> String {
    guest(name).display().to_string()
}

/// The reason kind of a reported input (its name, or the key of its one-key object for a
/// reason with data).
fn kind_of(input: &Value) -> ReasonKind {
    match &input["reason"] {
        Value::String(name) => RetryReason::parse_name(name).unwrap().kind(),
        Value::Object(object) => {
            let (key, _) = object.iter().next().unwrap();
            ReasonKind::from_name(&key.to_ascii_uppercase()).unwrap()
        }
        other => panic!("unexpected reason {other}"),
    }
}

/// A well-behaved policy passes every rule. Its calls get a 5 s deadline (`--deadline-ms`):
/// the rules judge the policy, and a debug build on busy cores could stop one of 80 000 calls
/// preempted near a 10 ms deadline.
#[test]
fn a_well_behaved_policy_passes_every_rule() {
    let (report, ok) = check(&[&path("best_effort"), "--deadline-ms", "5000"]);
    assert!(ok, "{report}");
    assert_eq!(report["passed"], true);
    assert_eq!(report["interface"]["compatible"], true);
    assert_eq!(report["interface"]["host"], "rebound:policy@0.6.0");
    assert_eq!(report["interface"]["built_for"], "rebound:policy@0.6.0");
    let inputs = report["inputs"].as_u64().unwrap();
    let answered: u64 = report["answers"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(answered, inputs);
    assert!(inputs > 40_000, "{inputs}");
    for rule in report["rules"].as_array().unwrap() {
        assert_eq!(rule["holds"], true, "{rule}");
    }
    // The human report says the same, one line per rule.
    let text = success_stdout(rebound().args(["check", &path("cassandra_default")]));
    let text = String::from_utf8(text).unwrap();
    assert_eq!(text.matches("\n  ok    ").count(), 5, "{text}");
    assert!(
        text.contains("\n  n/a   plans copies of a request in flight before its timeout"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("PASS"), "{text}");
}

/// Reference 001 "RetryReason": a reason without the "allows non-idempotent retry" flag must
/// not retry a non-idempotent request; RFC 9110 §9.2.2 and gRFC A6: nor may a non-idempotent
/// HTTP request or gRPC call already sent be retried, whatever the reason. A policy that
/// retries everything is reported for each such input — and only those — and the orchestrator
/// still refuses such a retry when the input is replayed through `rebound eval`.
#[test]
fn unsafe_retries_of_non_idempotent_requests_are_reported_input_by_input() {
    let (report, ok) = check(&[&path("adversary")]);
    assert!(!ok);
    assert_eq!(report["passed"], false);
    let unsafe_retries = violations(&report, "safe_retries");
    assert!(unsafe_retries.len() > 1_000, "{}", unsafe_retries.len());
    let mut already_sent = 0;
    for violation in unsafe_retries {
        let input = &violation["input"];
        let request = &input["request"];
        assert_eq!(request["idempotent"], false, "{violation}");
        if kind_of(input).allows_non_idempotent_retry() {
            assert!(
                ["http", "grpc"].contains(&request["type"].as_str().unwrap())
                    && request["dispatched"] == true,
                "{violation}"
            );
            already_sent += 1;
        }
        assert!(violation["answer"]["retry"].is_object(), "{violation}");
    }
    assert!(already_sent > 0, "sent HTTP and gRPC requests are reported");
    // The same requests never sent are not.
    assert!(!unsafe_retries.iter().any(|v| {
        let request = &v["input"]["request"];
        request["dispatched"] == false && kind_of(&v["input"]).allows_non_idempotent_retry()
    }));
    // Reasons that allow it are not reported for Couchbase and Cassandra requests:
    // KV_TEMPORARY_FAILURE does (reference 001).
    assert!(!unsafe_retries.iter().any(|v| {
        v["input"]["reason"] == "KV_TEMPORARY_FAILURE"
            && !["http", "grpc"].contains(&v["input"]["request"]["type"].as_str().unwrap())
    }));
    // The other rules hold for this policy.
    for rule in ["within_limits", "deterministic", "delays_within_timeout"] {
        assert!(violations(&report, rule).is_empty(), "{rule}");
    }
    // Replayed through the orchestrator, a reported input is refused as unsafe: a socket
    // closed while a non-idempotent request was in flight (it may have been applied).
    let in_flight = unsafe_retries
        .iter()
        .find(|v| v["input"]["reason"] == "SOCKET_CLOSED_WHILE_IN_FLIGHT")
        .expect("reported");
    let mut line = in_flight["input"].clone();
    line["policy"] = path("adversary").into();
    let answer = success_stdout(rebound().arg("eval").write_stdin(format!("{line}\n")));
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["decision"], "cancel", "{answer}");
    assert_eq!(answer["cancel_reason"], "UNSAFE_RETRY_REFUSED", "{answer}");
}

/// A policy that fails on some inputs is reported with the kind of each failure, and each
/// distinct failure once with its count and an example input. The calls get
/// a 5 s deadline (`--deadline-ms`), so that a debug build on busy cores reaches the panic
/// and not the sandbox's deadline (wasm_sandbox.rs tests the deadline).
#[test]
fn a_policy_that_fails_is_reported_with_the_kind_of_failure() {
    let (report, ok) = check(&[
        &path("adversary"),
        "--context",
        "panic=boom",
        "--deadline-ms",
        "5000",
        "--max-failures",
        "0",
    ]);
    assert!(!ok);
    let failures = violations(&report, "within_limits");
    // Every input run with the `panic` context fails, and only those.
    assert_eq!(
        failures.len() as u64,
        report["inputs"].as_u64().unwrap() / 2,
        "half the grid runs with the context; failures without it: {:?}",
        failures
            .iter()
            .filter(|f| f["input"]["request"]["client_context"]["panic"] != "boom")
            .collect::<Vec<_>>()
    );
    for failure in failures {
        assert_eq!(
            failure["input"]["request"]["client_context"]["panic"],
            "boom"
        );
        assert_eq!(failure["answer"]["failed"], "panic", "{failure}");
        assert!(
            failure["problem"].as_str().unwrap().contains("boom"),
            "{failure}"
        );
    }
    // The same failure is one problem, with its count and one example input.
    let rule = report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == "within_limits")
        .unwrap();
    let problems = rule["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["count"], failures.len());
    assert_eq!(
        problems[0]["example"]["request"]["client_context"]["panic"],
        "boom"
    );
}

#[test]
fn nondeterministic_answers_and_delays_past_the_timeout_are_reported() {
    // `count`: the answer depends on how many calls the instance answered before.
    let (report, ok) = check(&[&path("adversary"), "--context", "count=1"]);
    assert!(!ok);
    let differing = violations(&report, "deterministic");
    assert!(!differing.is_empty());
    for violation in differing {
        assert_eq!(
            violation["input"]["request"]["client_context"]["count"],
            "1"
        );
        assert!(violation["problem"]
            .as_str()
            .unwrap()
            .starts_with("answered retry after"));
    }
    // `delay=100000`: 100 s, longer than the KV (2.5 s), CQL (2 s) and HTTP (75 s) timeouts.
    let (report, ok) = check(&[&path("adversary"), "--context", "delay=100000"]);
    assert!(!ok);
    let long = violations(&report, "delays_within_timeout");
    assert_eq!(long.len() as u64, report["inputs"].as_u64().unwrap() / 2);
    for violation in long {
        let request = &violation["input"]["request"];
        assert!(request["timeout_ms"].as_u64().unwrap() <= 100_000);
        assert_eq!(violation["answer"]["retry"]["delay_ms"], 100_000);
    }
}

/// docs/executor.md: an attempt timeout no shorter than the request's whole timeout never
/// fires, the deadline ends the attempt first. A policy answering one (`attempt_timeout=2500`:
/// as long as the KV timeout, longer than CQL's 2 s, shorter than HTTP's 75 s) is reported for
/// exactly the inputs whose timeout it does not undercut; one of 100 ms is not.
#[test]
fn attempt_timeouts_that_can_never_fire_are_reported() {
    let (report, ok) = check(&[&path("adversary"), "--context", "attempt_timeout=2500"]);
    assert!(!ok);
    let never_fire = violations(&report, "attempt_timeouts_within_timeout");
    assert!(!never_fire.is_empty());
    for violation in never_fire {
        let request = &violation["input"]["request"];
        assert!(
            request["timeout_ms"].as_u64().unwrap() <= 2_500,
            "{violation}"
        );
        assert_eq!(request["client_context"]["attempt_timeout"], "2500");
        assert_eq!(violation["answer"]["retry"]["attempt_timeout_ms"], 2_500);
    }
    let reported_types: std::collections::BTreeSet<&str> = never_fire
        .iter()
        .map(|v| v["input"]["request"]["type"].as_str().unwrap())
        .collect();
    assert!(reported_types.contains("get") && reported_types.contains("cql"));
    assert!(!reported_types.contains("http") && !reported_types.contains("grpc"));
    let (report, _) = check(&[&path("adversary"), "--context", "attempt_timeout=100"]);
    assert!(violations(&report, "attempt_timeouts_within_timeout").is_empty());
}

/// docs/hedging.md "Delays from observed latency": a hedge delay taken from the observed
/// latency with no ceiling plans copies past the request's timeout once the authority answers
/// slowly, and such a copy is never sent. `hedge_echo` with `percentile=95` is reported for the
/// questions asked after slow answers only; with its constant 20 ms delay it passes every rule,
/// the hedging questions asked.
#[test]
fn hedges_planned_past_the_timeout_from_observed_latency_are_reported() {
    let (report, ok) = check(&[
        &path("hedge_echo"),
        "--param",
        "percentile=95",
        "--deadline-ms",
        "5000",
    ]);
    assert!(!ok);
    let late = violations(&report, "copies_within_timeout");
    assert!(!late.is_empty(), "{report}");
    for violation in late {
        assert_eq!(
            violation["input"]["observed_latency"], "slow",
            "{violation}"
        );
        let after = violation["answer"]["send"]["after_ms"].as_u64().unwrap();
        let since_first = violation["input"]["hedge"]["since_first_ms"]
            .as_u64()
            .unwrap();
        let timeout = violation["input"]["request"]["timeout_ms"]
            .as_u64()
            .unwrap();
        assert!(after + since_first >= timeout, "{violation}");
    }
    for rule in ["within_limits", "deterministic"] {
        assert!(violations(&report, rule).is_empty(), "{rule}");
    }
    let (report, ok) = check(&[&path("hedge_echo"), "--deadline-ms", "5000"]);
    assert!(ok, "{report}");
    let questions = report["hedging"]["questions"].as_u64().unwrap();
    assert!(questions > 0, "{report}");
    assert!(report["hedging"]["answers"]["send"].as_u64().unwrap() > 0);
    let rules = report["rules"].as_array().unwrap();
    let copies = rules.iter().find(|r| r["rule"] == "copies_within_timeout");
    assert_eq!(copies.unwrap()["applies"], true);
}

/// docs/wit-versions.md: a component built for an
/// earlier released version (`rebound:policy@0.1.0` … `@0.5.0`) passes, and the report says
/// which version it was built for and which hosts accept it.
#[test]
fn released_components_are_checked_and_their_hosts_named() {
    for version in ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"] {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tests/fixtures/rebound-policy-{version}/no_retry_for_robots.wasm"
        ));
        let fixture = fixture.display().to_string();
        let (report, ok) = check(&[&fixture, "--deadline-ms", "5000"]);
        assert!(ok, "{report}");
        let interface = &report["interface"];
        assert_eq!(interface["built_for"], format!("rebound:policy@{version}"));
        assert_eq!(
            interface["host_loads"],
            serde_json::json!([
                "rebound:policy@0.1.0",
                "rebound:policy@0.2.0",
                "rebound:policy@0.3.0",
                "rebound:policy@0.4.0",
                "rebound:policy@0.5.0",
                "rebound:policy@0.6.0"
            ])
        );
        let accepted_by = interface["accepted_by"].as_str().unwrap();
        assert!(
            accepted_by.contains("accepted by this host")
                && accepted_by.contains("every later host")
                && accepted_by.contains("rebound:policy@0.6.0 is the newest"),
            "{accepted_by}"
        );
        let text = String::from_utf8(success_stdout(rebound().args(["check", &fixture]))).unwrap();
        assert!(
            text.contains(&format!(
                "interface  rebound:policy@{version}: accepted by this host"
            )),
            "{text}"
        );
    }
}

#[test]
fn components_that_do_not_load_are_reported_and_fail() {
    let (report, ok) = check(&[&path("wrong_version")]);
    assert!(!ok);
    assert_eq!(report["interface"]["compatible"], false);
    let error = report["interface"]["error"].as_str().unwrap();
    assert!(
        error.contains("rebound:policy/strategy@0.9.0")
            && error.contains("0.1.0, 0.2.0, 0.3.0, 0.4.0, 0.5.0, 0.6.0"),
        "{error}"
    );
    let (report, ok) = check(&[&path("wrong_world")]);
    assert!(!ok);
    assert!(report["interface"]["error"]
        .as_str()
        .unwrap()
        .contains("does not export"));
    // A compatible component that refuses its parameters does not run either.
    let (report, ok) = check(&[&path("adversary"), "--param", "reject=yes"]);
    assert!(!ok);
    assert_eq!(report["interface"]["compatible"], true);
    assert!(report["interface"]["error"]
        .as_str()
        .unwrap()
        .contains("failed to configure"));
    // Bad arguments name what was wrong.
    let stderr = rebound()
        .args(["check", &path("best_effort"), "--param", "no-equals-sign"])
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&stderr).contains("expected KEY=VALUE"));
    let stderr = rebound()
        .args(["check", "no/such/policy.wasm"])
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&stderr).contains("cannot read no/such/policy.wasm"));
}

/// docs/decisions.md "`rebound check` of a policy that fails often": a Python policy raising on
/// a third of the grid is asked until 1 000 inputs failed, in an order that spans the grid;
/// each distinct exception is reported once, in the policy's words with the line it was raised
/// at and its count, and the log holds no line per failure (the stderr a failing call writes,
/// the fail-safe's warning) — only the verdict.
#[test]
fn a_python_policy_failing_on_a_third_of_the_grid_stops_after_the_failure_limit_with_one_log_line()
{
    let output = rebound()
        .args(["check", &path("python_wasi_probe")])
        .args(["--param", "probe=raise_on_a_third", "--deadline-ms", "5000"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let log = String::from_utf8(output.stderr).unwrap();
    // The check stopped at the limit, having asked about three inputs per failure.
    let asked: usize = text
        .lines()
        .find_map(|line| line.strip_prefix("  stopped    after 1000 failing inputs: "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!((2_000..5_000).contains(&asked), "{asked}: {text}");
    assert!(
        text.contains(&format!(
            "answers    failed 1000, no_retry {}",
            asked - 1000
        )),
        "{text}"
    );
    // One distinct problem, with its count.
    assert!(
        text.contains("1000 input(s) break it, 1 distinct problem(s):"),
        "{text}"
    );
    assert!(
        text.contains("1000 × trap: ValueError: this reason is not for this probe (wasi_probe.py:"),
        "{text}"
    );
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(
        log.contains("violation(s) of the policy invariants"),
        "{log}"
    );
}
