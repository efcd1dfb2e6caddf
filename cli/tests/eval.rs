//! `rebound eval` end to end on a fixture file: one answer per line
//! in order, the decisions the references require, and each bad line answered by an error
//! object naming its line and field while the rest continue.

use crate::support;
use std::path::PathBuf;
use support::guest;

use assert_cmd::Command;
use serde_json::{json, Value};

/// The field each error answer names.
fn error_fields(answers: &[Value]) -> Vec<&str> {
    answers
        .iter()
        .map(|a| a["error"]["field"].as_str().unwrap())
        .collect()
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Runs `rebound eval` on `input` (stdin), returning the exit success and the answers.
fn eval(args: &[&str], input: &str) -> (bool, Vec<Value>) {
    let output = Command::cargo_bin("rebound")
        .unwrap()
        .env_remove("RUST_BACKTRACE")
        .arg("eval")
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap();
    let answers = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect();
    (output.status.success(), answers)
}

#[test]
fn the_fixture_file_is_decided_line_by_line_in_order() {
    let path = fixture("decisions.jsonl");
    let output = Command::cargo_bin("rebound")
        .unwrap()
        .env_remove("RUST_BACKTRACE")
        .args(["eval", path.to_str().unwrap()])
        .output()
        .unwrap();
    // Four lines are bad: the run says so in its exit status, after answering every line.
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("4 of 14 lines were refused"), "{stderr}");
    let answers: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers.len(), 14, "one answer per non-blank line");

    // 001 "RetryReason": KV_LOCKED allows the retry of a non-idempotent upsert.
    assert_eq!(answers[0]["decision"], "retry");
    assert_eq!(answers[0]["reason"], "KV_LOCKED");
    assert_eq!(answers[0]["retry_attempts"], 1);
    assert_eq!(answers[0]["policy"], "best-effort");
    // 001 "RetryReason": a socket closed while a non-idempotent request was in flight is not
    // retried; the error context names the node (002 "ErrorContext").
    assert_eq!(answers[1]["decision"], "cancel");
    assert_eq!(answers[1]["error"], "RequestCanceled");
    assert_eq!(
        answers[1]["error_context"]["lastDispatchedTo"],
        "10.0.0.1:11210"
    );
    assert_eq!(answers[1]["error_context"]["idempotent"], false);
    // 001 "Response Code Classification": TMPFAIL (0x86) is KV_TEMPORARY_FAILURE, retried
    // even for an upsert; KEY_ENOENT (0x01) is not retried at all.
    assert_eq!(answers[2]["decision"], "retry");
    assert_eq!(answers[2]["reason"], "KV_TEMPORARY_FAILURE");
    assert_eq!(answers[3]["decision"], "not_retried");
    assert_eq!(answers[3]["name"], "KEY_ENOENT");
    // 001 "Controlled Backoff for Always Retry": the third retry waits 50 ms, whatever the
    // strategy.
    assert_eq!(answers[4]["decision"], "retry");
    assert_eq!(answers[4]["delay_ms"], 50.0);
    assert_eq!(answers[4]["source"], "controlled_backoff");
    // 001 "Capping the Retry Duration": 1000 ms asked with 100 ms left ends the request when
    // the 100 ms pass; 002: unambiguous for a get, ambiguous for a dispatched upsert.
    assert_eq!(answers[5]["decision"], "timeout");
    assert_eq!(answers[5]["error"], "UnambiguousTimeout");
    assert_eq!(answers[5]["delay_ms"], 100.0);
    assert_eq!(answers[5]["capped"], true);
    assert_eq!(answers[6]["error"], "AmbiguousTimeout");
    // 003 "Behavior": READ_TIMEOUT with enough replies but no data is retried once on the
    // same node; WRITE_TIMEOUT of a non-idempotent statement is rethrown.
    assert_eq!(answers[7]["decision"], "retry");
    assert_eq!(answers[7]["node"], "same");
    assert_eq!(answers[7]["policy"], "cassandra-default");
    assert_eq!(answers[8]["decision"], "cancel");
    assert_eq!(answers[8]["error"], "rethrow");
    // Bad lines: the error names the line (blank lines are skipped but counted) and field.
    assert_eq!(answers[9]["error"]["line"], 10);
    assert_eq!(answers[9]["error"]["field"], "request.retry_attempts");
    assert_eq!(answers[10]["error"]["line"], 12);
    assert_eq!(answers[10]["error"]["field"], "reason");
    assert!(answers[10]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("KV_LOKED"));
    assert_eq!(answers[11]["error"]["line"], 13);
    assert!(answers[11]["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("not a JSON object"));
    assert_eq!(answers[12]["error"]["field"], "policy");
    // ... and the line after them is decided: 4050 is a prepared-statement failure (001).
    assert_eq!(answers[13]["decision"], "retry");
    assert_eq!(answers[13]["reason"], "QUERY_PREPARED_STATEMENT_FAILURE");
}

#[test]
fn a_component_file_with_parameters_decides_a_line() {
    let template = guest("python_template").display().to_string();
    let line = |attempts: u32| {
        format!(
            r#"{{"policy": {{"name": "{template}", "params": {{"max_attempts": 2}}}}, "request": {{"retry_attempts": {attempts}}}, "reason": "KV_TEMPORARY_FAILURE"}}"#
        )
    };
    let (ok, answers) = eval(&[], &format!("{}\n{}\n", line(1), line(2)));
    assert!(ok, "{answers:?}");
    assert_eq!(answers[0]["decision"], "retry");
    assert_eq!(answers[0]["policy"], "python_template");
    assert_eq!(answers[1]["decision"], "cancel");
    assert_eq!(answers[1]["cancel_reason"], "NO_MORE_RETRIES");
}

/// docs/decision-json.md, `detail`: a policy's own error text is in the decision's `detail`,
/// beside `policy_failure` — a Python exception's last traceback line with the policy's frame
/// where it was raised (file and line), a Rust panic's message, a Go panic's message with its
/// frame.
/// The policies get a deadline with room (5 s), so that a debug build on busy cores reaches
/// the failure itself and not the sandbox's deadline (wasm_sandbox.rs tests the deadline).
#[test]
fn a_failed_policy_s_own_words_are_in_the_decision() {
    let python = guest("python_wasi_probe").display().to_string();
    let rust = guest("adversary").display().to_string();
    let go = guest("go_panic_probe").display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rebound.toml");
    std::fs::write(
        &config,
        format!(
            "default_policy = \"python\"\n\
             [policies.python]\ncomponent = {python:?}\nparams = {{ probe = \"raise_on_locked\" }}\n\
             limits = {{ deadline_ms = 5000 }}\n\
             [policies.rust]\ncomponent = {rust:?}\nlimits = {{ deadline_ms = 5000 }}\n\
             [policies.go]\ncomponent = {go:?}\nlimits = {{ deadline_ms = 5000 }}\n"
        ),
    )
    .unwrap();
    let input = concat!(
        r#"{"policy": "python", "reason": "KV_LOCKED"}"#,
        "\n",
        r#"{"policy": "rust", "request": {"client_context": {"panic": "out of ideas"}}, "reason": "KV_LOCKED"}"#,
        "\n",
        r#"{"policy": "go", "request": {"client_context": {"panic": "out of ideas"}}, "reason": "KV_LOCKED"}"#,
        "\n",
    );
    let (ok, answers) = eval(&["--config", config.to_str().unwrap()], input);
    assert!(ok, "{answers:?}");
    for answer in &answers {
        assert_eq!(answer["decision"], "cancel", "{answer}");
        assert_eq!(answer["cancel_reason"], "POLICY_FAILED", "{answer}");
    }
    assert_eq!(answers[0]["policy_failure"], "trap");
    let detail = answers[0]["detail"].as_str().unwrap();
    // Its own words and its own frame, and what trapped, without the runtime's wasm backtrace.
    assert!(
        detail.starts_with("ValueError: a locked document is not for this probe (wasi_probe.py:")
            && detail.contains(", in retry_after) (stderr); "),
        "{detail}"
    );
    assert!(!detail.contains("wasm backtrace"), "{detail}");
    assert!(detail.lines().count() == 1, "{detail}");
    assert_eq!(answers[1]["policy_failure"], "panic");
    let detail = answers[1]["detail"].as_str().unwrap();
    assert!(
        detail.contains("adversary panicked: out of ideas"),
        "{detail}"
    );
    // Go's panic path pauses before it prints; the message and where it was raised arrive.
    assert_eq!(answers[2]["policy_failure"], "trap");
    let detail = answers[2]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("panic: out of ideas (policy.go:"),
        "{detail}"
    );
}

/// A line names a built-in with parameters (`exponential` declared as
/// gRPC's retryPolicy, best effort's backoff); the answer names the tuned version; a refused
/// parameter names its field.
#[test]
fn a_builtin_with_parameters_decides_a_line() {
    let exponential = r#"{"name": "exponential", "params": {"max_attempts": 3, "initial_ms": 40, "max_ms": 100, "multiplier": 2, "retry_on": ["KV_LOCKED"], "node": "next"}}"#;
    let (ok, answers) = eval(
        &[],
        &[
            format!(r#"{{"policy": {exponential}, "request": {{"retry_attempts": 1}}, "reason": "KV_LOCKED"}}"#),
            format!(r#"{{"policy": {exponential}, "request": {{"retry_attempts": 2}}, "reason": "KV_LOCKED"}}"#),
            format!(r#"{{"policy": {exponential}, "reason": "KV_TEMPORARY_FAILURE"}}"#),
            r#"{"policy": {"name": "best-effort", "params": {"min_ms": 25}}, "reason": "KV_TEMPORARY_FAILURE"}"#.to_owned(),
        ]
        .join("\n"),
    );
    assert!(ok, "{answers:?}");
    assert_eq!(answers[0]["decision"], "retry", "{}", answers[0]);
    assert_eq!(answers[0]["delay_ms"].as_f64(), Some(80.0));
    assert_eq!(answers[0]["node"], "next");
    assert_eq!(answers[0]["policy"], "exponential");
    assert!(
        answers[0]["version"]
            .as_str()
            .unwrap()
            .starts_with("builtin:exponential+"),
        "{}",
        answers[0]
    );
    assert_eq!(answers[1]["decision"], "cancel", "{}", answers[1]);
    assert_eq!(answers[2]["decision"], "cancel", "{}", answers[2]);
    assert_eq!(
        answers[3]["delay_ms"].as_f64(),
        Some(25.0),
        "{}",
        answers[3]
    );

    let (ok, answers) = eval(
        &[],
        r#"{"policy": {"name": "best-effort", "params": {"jitter": 2}}, "reason": "KV_LOCKED"}"#,
    );
    assert!(!ok);
    assert_eq!(answers[0]["error"]["field"], "policy.params.jitter");
}

/// `eval` takes outcome lines beside decision lines, so that a replay of a
/// client's traffic feeds the budgets as `serve` would; a budget spent refuses the retry.
#[test]
fn outcome_lines_feed_the_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rebound.toml");
    std::fs::write(
        &config,
        "default_policy = \"kv\"\n[watch]\nenabled = false\n[budgets.b]\npercent = 50\nmin_per_second = 0\nttl_ms = 60_000\n[policies.kv]\nbuiltin = \"best-effort\"\nbudget = \"b\"\n",
    )
    .unwrap();
    let retry = r#"{"request": {"retry_attempts": 1}, "reason": "KV_TEMPORARY_FAILURE"}"#;
    let lines = [
        r#"{"outcome": "success"}"#,
        r#"{"outcome": "success", "attempts": 1}"#,
        retry,
        retry,
        r#"{"outcome": "timeout", "attempts": 0}"#,
    ];
    let (ok, answers) = eval(&["--config", config.to_str().unwrap()], &lines.join("\n"));
    assert!(!ok, "the last line is refused");
    assert_eq!(answers[0]["recorded"], 1);
    assert_eq!(answers[2]["decision"], "retry", "{}", answers[2]);
    assert_eq!(
        answers[3]["cancel_reason"], "RETRY_BUDGET_EXHAUSTED",
        "{}",
        answers[3]
    );
    assert_eq!(answers[4]["error"]["field"], "attempts", "{}", answers[4]);
}

/// docs/throttling.md: a throttle sequence is lines — decisions and outcome lines between
/// them — as other implementations' tests of gRFC A6 throttling write it: with `maxTokens` 4
/// and `tokenRatio` 1, the first failure is retried, the second leaves the count at half and
/// is refused (`RETRY_THROTTLED`); two successes give two tokens back and the next failure is
/// retried again; a rejected request (HTTP 400, which best effort retries) costs nothing, so
/// the failure after it still finds a token above half.
#[test]
fn a_throttle_sequence_is_decided_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rebound.toml");
    std::fs::write(
        &config,
        "default_policy = \"api\"\n[watch]\nenabled = false\n[throttles.t]\nkind = \"tokens\"\nmax_tokens = 4\ntoken_ratio = 1\n[policies.api]\nbuiltin = \"best-effort\"\nthrottle = \"t\"\n",
    )
    .unwrap();
    let failure = r#"{"request": {"retry_attempts": 1}, "reason": "KV_TEMPORARY_FAILURE"}"#;
    let rejected = r#"{"request": {"type": "http", "method": "GET", "retry_attempts": 1}, "reason": {"http_status": 400}}"#;
    let success = r#"{"outcome": "success", "attempts": 2}"#;
    let lines = [failure, failure, success, success, rejected, failure];
    let (_, answers) = eval(&["--config", config.to_str().unwrap()], &lines.join("\n"));
    let decided: Vec<String> = answers
        .iter()
        .map(|a| match a["decision"].as_str() {
            Some("cancel") => a["cancel_reason"].as_str().unwrap().to_owned(),
            Some(decision) => decision.to_owned(),
            None => format!("recorded {}", a["recorded"]),
        })
        .collect();
    assert_eq!(
        decided,
        [
            "retry",
            "RETRY_THROTTLED",
            "recorded 1",
            "recorded 1",
            "retry",
            "retry"
        ],
        "{answers:?}"
    );
}

/// A registry configuration, in a directory of its own, whose default policy is the `grpc`
/// built-in with `service_config`.
fn grpc_config(service_config: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rebound.toml");
    let text = format!(
        "default_policy = \"inventory\"\n[watch]\nenabled = false\n[policies.inventory]\n\
         builtin = \"grpc\"\nparams.service_config = '{service_config}'\n"
    );
    std::fs::write(&config, text).unwrap();
    (dir, config)
}

/// docs/decision-json.md "Hedging": a hedging question is a line with a `hedge` (a request in
/// flight), answered with when the next copy goes. gRFC A6's example (`maxAttempts` 4,
/// `hedgingDelay` 0.5 s): 200 ms after the first copy the next is due in 300 ms; a non-fatal
/// UNAVAILABLE sends it at once; a pushback of 300 ms sends it then; a fatal status, a stop
/// pushback, `maxAttempts` copies, a committed call and a call not declared idempotent send none.
#[test]
fn a_hedging_question_is_answered_line_by_line() {
    let (_dir, config) = grpc_config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Inventory"}], "hedgingPolicy": {"maxAttempts": 4, "hedgingDelay": "0.5s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#,
    );
    let call = r#""request": {"type": "grpc", "route": "/shop.Inventory/Get", "idempotent": true}"#;
    let unsafe_call = r#""request": {"type": "grpc", "route": "/shop.Inventory/Get"}"#;
    let lines = [
        format!(r#"{{{call}, "hedge": {{"copies": 1, "since_last_ms": 200}}}}"#),
        format!(
            r#"{{{call}, "hedge": {{"asked": "after_failure", "copies": 2, "failures": [{{"grpc_status": "UNAVAILABLE"}}]}}}}"#
        ),
        format!(
            r#"{{{call}, "hedge": {{"asked": "after_failure", "copies": 2, "failures": [{{"grpc_status": "UNAVAILABLE"}}], "pushback": 300}}}}"#
        ),
        format!(
            r#"{{{call}, "hedge": {{"asked": "after_failure", "copies": 2, "failures": [{{"grpc_status": "INVALID_ARGUMENT"}}]}}}}"#
        ),
        format!(
            r#"{{{call}, "hedge": {{"asked": "after_failure", "copies": 2, "failures": [{{"grpc_status": "UNAVAILABLE"}}], "pushback": "stop"}}}}"#
        ),
        format!(r#"{{{call}, "hedge": {{"copies": 4}}}}"#),
        format!(r#"{{{unsafe_call}, "hedge": {{"copies": 1}}}}"#),
        format!(r#"{{{call}, "hedge": {{"copies": 1, "pushback": "later"}}}}"#),
        format!(r#"{{{call}, "hedge": {{"copies": 1, "pushback": ["100", "100"]}}}}"#),
        format!(
            r#"{{{call}, "hedge": {{"asked": "after_failure", "copies": 2, "failures": [{{"grpc_status": "UNAVAILABLE"}}], "pushback": "300"}}}}"#
        ),
        format!(r#"{{{call}, "hedge": {{"copies": 1, "pushback": true}}}}"#),
        format!(r#"{{{call}, "hedge": {{"copies": 1, "committed": true}}}}"#),
    ];
    let (_, answers) = eval(&["--config", config.to_str().unwrap()], &lines.join("\n"));
    let next = |i: usize| {
        answers[i]["hedge"]["next"]
            .as_str()
            .unwrap_or("?")
            .to_owned()
    };
    assert_eq!(answers[0]["hedge"]["after_ms"], 300, "{}", answers[0]);
    assert_eq!(answers[0]["hedge"]["node"], "same");
    assert_eq!(answers[1]["hedge"]["after_ms"], 0, "{}", answers[1]);
    assert_eq!(answers[2]["hedge"]["after_ms"], 300, "{}", answers[2]);
    assert_eq!(
        [next(3), next(4), next(5), next(6)],
        ["none", "none", "wait", "none"],
        "{answers:?}"
    );
    assert!(answers[6]["hedge"]["why"]
        .as_str()
        .unwrap()
        .contains("not idempotent"));
    // gRFC A6 "Pushback": a text that is not a number says do not retry, so no copy goes; a
    // header sent twice says the same; one that is not text nor a number is refused.
    assert_eq!(next(7), "none", "{}", answers[7]);
    assert!(answers[7]["hedge"]["why"]
        .as_str()
        .unwrap()
        .contains("stop"));
    assert_eq!(next(8), "none", "{}", answers[8]);
    assert_eq!(answers[9]["hedge"]["after_ms"], 300, "{}", answers[9]);
    assert_eq!(
        answers[10]["error"]["field"], "hedge.pushback",
        "{}",
        answers[10]
    );
    // gRFC A6 "When Retries are Valid": a committed call starts no copy.
    assert_eq!(next(11), "none", "{}", answers[11]);
    assert!(answers[11]["hedge"]["why"]
        .as_str()
        .unwrap()
        .contains("committed"));
}

/// docs/decisions.md "Who pays for a hedge", through `eval`: the service config's
/// `retryThrottling` (4 tokens, threshold 2) is asked before a copy and counts each copy's
/// non-fatal failure, as gRFC A6 "Throttling Retry Attempts and Hedged RPCs" says: the first
/// failure leaves 3 and the copy goes; the second leaves 2 and no copy goes, nor does a timed
/// one after it.
#[test]
fn a_hedging_question_asks_the_throttle() {
    let (_dir, config) = grpc_config(
        r#"{"methodConfig": [{"name": [{"service": "shop.Inventory"}], "hedgingPolicy": {"maxAttempts": 4, "hedgingDelay": "0.1s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}], "retryThrottling": {"maxTokens": 4, "tokenRatio": 1}}"#,
    );
    let call = r#""request": {"type": "grpc", "route": "/shop.Inventory/Get", "authority": "inventory:443", "idempotent": true}"#;
    let failed = format!(
        r#"{{{call}, "hedge": {{"asked": "after_failure", "copies": 1, "failures": [{{"grpc_status": "UNAVAILABLE"}}]}}}}"#
    );
    let timed = format!(r#"{{{call}, "hedge": {{"copies": 1}}}}"#);
    let lines = [failed.clone(), failed, timed];
    let (_, answers) = eval(&["--config", config.to_str().unwrap()], &lines.join("\n"));
    assert_eq!(answers[0]["hedge"]["next"], "send", "{}", answers[0]);
    for refused in &answers[1..] {
        assert_eq!(refused["hedge"]["next"], "none", "{refused}");
        let why = refused["hedge"]["why"].as_str().unwrap();
        assert!(why.contains("throttle"), "{why}");
    }
}

/// docs/decision-json.md "How far the attempt got", with gRFC A6 "Transparent Retries" and "When
/// Retries are Valid": with no retry policy, a call that never left the client is retried
/// transparently (not counted, not declared idempotent) and so is a first refusal, at once; a
/// second refusal is the policy's (none: not retried); a dropped or committed call ends; an
/// unknown progress is refused naming the field.
#[test]
fn how_far_the_attempt_got_is_decided_as_a6_says() {
    let (dir, config) =
        grpc_config(r#"{"methodConfig": [{"name": [{"service": "shop.Inventory"}]}]}"#);
    let log = dir.path().join("decisions.log");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[decision_log]\nfile = \"decisions.log\"\n");
    std::fs::write(&config, text).unwrap();
    let call = r#""request": {"type": "grpc", "route": "/shop.Inventory/Get"}"#;
    let refused_once = r#""request": {"type": "grpc", "route": "/shop.Inventory/Get", "transparent_retries": 1, "refused_retried": true}"#;
    let line = |request: &str, progress: &str| {
        format!(
            r#"{{{request}, "reason": {{"grpc_status": "UNAVAILABLE"}}, "progress": "{progress}"}}"#
        )
    };
    let lines = [
        line(call, "not_sent"),
        line(call, "refused"),
        line(refused_once, "refused"),
        line(call, "dropped"),
        line(call, "committed"),
        line(call, "sent"),
    ];
    let (ok, answers) = eval(&["--config", config.to_str().unwrap()], &lines.join("\n"));
    assert!(!ok, "the last line's progress is unknown");
    for retried in &answers[..2] {
        assert_eq!(retried["decision"], "retry", "{retried}");
        assert_eq!(retried["source"], "transparent", "{retried}");
        assert_eq!(retried["retry_attempts"], 0, "{retried}");
    }
    assert_eq!(
        answers[0]["delay_ms"].as_f64(),
        Some(1.0),
        "the controlled backoff's first"
    );
    assert_eq!(answers[1]["delay_ms"].as_f64(), Some(0.0), "at once");
    let ended = ["NO_MORE_RETRIES", "DROPPED", "COMMITTED"];
    for (answer, cancel) in answers[2..5].iter().zip(ended) {
        assert_eq!(answer["cancel_reason"], cancel, "{answer}");
    }
    assert_eq!(answers[5]["error"]["field"], "progress", "{}", answers[5]);
    // The decision log keeps how far each attempt got, and a replay decides them alike.
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(logged.len(), 5);
    assert_eq!(logged[2]["input"]["progress"], "refused");
    assert_eq!(logged[2]["input"]["request"]["transparent_retries"], 1);
    assert_eq!(logged[2]["input"]["request"]["refused_retried"], true);
    let (config, log) = (config.to_str().unwrap(), log.to_str().unwrap());
    let args = ["--config", config, "--replay", log, "--policy", "inventory"];
    let (ok, disagreements) = eval(&args, "");
    assert!(ok && disagreements.is_empty(), "{disagreements:?}");
}

/// A decision request carries the server's pushback, as a response's `retry_after` (HTTP
/// Retry-After), `pushback_ms` (gRPC, parsed) or `pushback` (gRPC's header as received); best
/// effort waits at least that long, and an unreadable or negative one stops the retries.
#[test]
fn the_server_s_pushback_is_honoured() {
    let lines = [
        r#"{"request": {"type": "search"}, "response": {"status": 429, "retry_after": "2"}}"#,
        r#"{"request": {"type": "search"}, "response": {"status": 429, "retry_after": "later"}}"#,
        r#"{"reason": "KV_LOCKED", "pushback_ms": 40}"#,
        r#"{"reason": "KV_LOCKED", "pushback_ms": -1}"#,
        r#"{"request": {"type": "search"}, "pushback_ms": 1, "response": {"status": 429, "retry_after": "1"}}"#,
        r#"{"reason": "KV_LOCKED", "pushback": "40"}"#,
        r#"{"reason": "KV_LOCKED", "pushback": ""}"#,
        r#"{"reason": "KV_LOCKED", "pushback": ["40", "40"]}"#,
        r#"{"reason": "KV_LOCKED", "pushback": "-1"}"#,
        r#"{"reason": "KV_LOCKED", "pushback": "forty"}"#,
        r#"{"reason": "KV_LOCKED", "pushback": "40", "pushback_ms": 40}"#,
    ];
    let (ok, answers) = eval(&[], &lines.join("\n"));
    assert!(!ok, "the last line gives the pushback twice");
    assert_eq!(answers[0]["decision"], "retry", "{}", answers[0]);
    assert_eq!(
        answers[0]["delay_ms"].as_f64(),
        Some(2000.0),
        "{}",
        answers[0]
    );
    assert_eq!(
        answers[1]["cancel_reason"], "NO_MORE_RETRIES",
        "{}",
        answers[1]
    );
    assert_eq!(
        answers[2]["delay_ms"].as_f64(),
        Some(40.0),
        "{}",
        answers[2]
    );
    assert_eq!(answers[3]["decision"], "cancel", "{}", answers[3]);
    assert_eq!(
        answers[4]["error"]["field"], "pushback_ms",
        "{}",
        answers[4]
    );
    // gRPC's header as received (gRFC A6 "Pushback"): a count is waited; empty, repeated,
    // negative or not a number says do not retry.
    assert_eq!(
        answers[5]["delay_ms"].as_f64(),
        Some(40.0),
        "{}",
        answers[5]
    );
    for stopped in &answers[6..=9] {
        assert_eq!(stopped["decision"], "cancel", "{stopped}");
    }
    assert_eq!(
        answers[10]["error"]["field"], "pushback_ms",
        "{}",
        answers[10]
    );
}

#[test]
fn a_registry_configuration_routes_lines_by_request_type() {
    let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/rebound.toml");
    let (ok, answers) = eval(
        &["--config", config.to_str().unwrap()],
        concat!(
            r#"{"request": {"type": "upsert"}, "reason": "KV_LOCKED"}"#,
            "\n",
            r#"{"policy": "strict", "reason": "KV_LOCKED"}"#,
            "\n"
        ),
    );
    assert!(ok, "{answers:?}");
    // examples/rebound.toml routes upserts to `budgeted`; `strict` is fail-fast.
    assert_eq!(answers[0]["policy"], "budgeted");
    assert_eq!(answers[1]["policy"], "strict");
    assert_eq!(answers[1]["decision"], "cancel");
}

#[test]
fn params_for_a_named_policy_and_reason_with_response_are_refused_by_field() {
    let (ok, answers) = eval(
        &[],
        concat!(
            r#"{"policy": {"name": "strict", "params": {"x": 1}}, "reason": "KV_LOCKED"}"#,
            "\n",
            r#"{"reason": "KV_LOCKED", "response": {"status": 134}}"#,
            "\n",
            r#"{"request": {"type": "get", "service": "query"}, "reason": "KV_LOCKED"}"#,
            "\n",
            r#"{"request": {"type": "cql"}, "reason": "READ_TIMEOUT"}"#,
            "\n",
            r#"{"reason": "KV_LOCKED", "extra": 1}"#,
            "\n",
            r#"{"reason": "KV_LOCKED", "request": {"profile": "nope"}}"#,
            "\n",
        ),
    );
    assert!(!ok);
    let fields = error_fields(&answers);
    assert_eq!(
        fields,
        [
            "policy.params",
            "",
            "request.service",
            "reason",
            "extra",
            "request.profile"
        ]
    );
    assert!(answers[3]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("needs data"));
    assert!(answers[4]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown field `extra`"));
}

/// Every answer carries a unique, time-ordered `decision_id` (a UUIDv7,
/// docs/decision-json.md) and the `request_id` its line gave (or the line number), so the
/// answers to one request's retries share its trail — an answer the classifier settles without
/// a decision included.
#[test]
fn every_answer_carries_a_decision_id_and_the_request_trail() {
    let (ok, answers) = eval(
        &[],
        concat!(
            r#"{"request": {"id": 42, "type": "get"}, "reason": "KV_LOCKED"}"#,
            "\n",
            r#"{"request": {"id": 42, "type": "get", "retry_attempts": 1}, "reason": "KV_LOCKED"}"#,
            "\n",
            r#"{"request": {"type": "get"}, "response": {"status": 1}}"#,
            "\n",
        ),
    );
    assert!(ok, "{answers:?}");
    let ids: Vec<&str> = answers
        .iter()
        .map(|a| a["decision_id"].as_str().expect("a decision_id"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(
        ids.iter().all(|id| id.len() == 36 && &id[14..15] == "7"),
        "{ids:?}"
    );
    assert_eq!(answers[0]["request_id"], 42);
    assert_eq!(answers[1]["request_id"], 42);
    assert_eq!(answers[2]["decision"], "not_retried");
    assert!(answers[2]["request_id"].is_u64(), "{}", answers[2]);
}

/// `eval --replay LOG --policy CANDIDATE` finds exactly the disagreements of
/// a known grid. The log is written by `eval` itself under a configuration with a
/// `[decision_log]` (best-effort deciding); the expected disagreements come from deciding the
/// same grid with each policy directly and comparing the verdicts.
#[test]
fn replay_finds_exactly_the_disagreements_of_a_grid() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rebound.toml");
    std::fs::write(
        &config,
        "default_policy = \"best-effort\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.best-effort]\nbuiltin = \"best-effort\"\n\
         [decision_log]\nfile = \"decisions.log\"\n",
    )
    .unwrap();
    let mut grid = Vec::new();
    for reason in [
        "KV_LOCKED",
        "KV_TEMPORARY_FAILURE",
        "UNKNOWN",
        "SOCKET_CLOSED_WHILE_IN_FLIGHT",
        "SERVICE_NOT_AVAILABLE",
        "NODE_NOT_AVAILABLE",
        "KV_COLLECTION_OUTDATED",
    ] {
        for ty in ["get", "upsert"] {
            for attempts in [0, 4] {
                for dispatched in [false, true] {
                    grid.push(serde_json::json!({"reason": reason, "request": {
                        "type": ty, "retry_attempts": attempts, "dispatched": dispatched,
                        "elapsed_ms": 100}}));
                }
            }
        }
    }
    let text = |lines: &[Value]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let config_arg = config.to_str().unwrap();
    let (ok, logged) = eval(&["--config", config_arg], &text(&grid));
    assert!(ok);
    assert_eq!(logged.len(), grid.len());

    // The oracle: each policy's answer on each line, compared on the verdict.
    let with_policy = |policy: &str| {
        let lines: Vec<Value> = grid
            .iter()
            .map(|l| {
                let mut l = l.clone();
                l["policy"] = policy.into();
                l
            })
            .collect();
        let (ok, answers) = eval(&[], &text(&lines));
        assert!(ok);
        answers
    };
    let verdict = |a: &Value| {
        (
            a["decision"].clone(),
            a["delay_ms"].clone(),
            a["cancel_reason"].clone(),
        )
    };
    let (active, candidate) = (with_policy("best-effort"), with_policy("fail-fast"));
    let expected: Vec<u64> = (0..grid.len())
        .filter(|&i| verdict(&active[i]) != verdict(&candidate[i]))
        .map(|i| i as u64 + 1)
        .collect();
    assert!(
        !expected.is_empty() && expected.len() < grid.len(),
        "the grid has agreements and disagreements: {expected:?}"
    );

    let log = dir.path().join("decisions.log");
    let replay = |candidate: &str| {
        let output = Command::cargo_bin("rebound")
            .unwrap()
            .env_remove("RUST_BACKTRACE")
            .args(["eval", "--config", config_arg, "--replay"])
            .arg(&log)
            .args(["--policy", candidate])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        let found: Vec<Value> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (found, stderr)
    };
    let (found, stderr) = replay("fail-fast");
    let lines: Vec<u64> = found.iter().map(|d| d["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, expected);
    assert!(
        stderr.contains(&format!(
            "replayed {} decisions of {} with fail-fast: {} disagreements",
            grid.len(),
            log.display(),
            expected.len()
        )),
        "{stderr}"
    );
    // Each disagreement shows both answers, who gave them, and the input.
    let first = &found[0];
    let index = expected[0] as usize - 1;
    assert_eq!(first["logged"]["policy"], "best-effort");
    assert_eq!(
        first["logged"]["answer"]["decision"],
        active[index]["decision"]
    );
    assert_eq!(first["candidate"]["policy"], "fail-fast");
    assert_eq!(
        first["candidate"]["answer"]["decision"],
        candidate[index]["decision"]
    );
    assert_eq!(first["input"]["reason"], grid[index]["reason"]);
    assert_eq!(first["decision_id"], logged[index]["decision_id"]);
    // The policy that wrote the log agrees with itself on every line.
    let (found, _) = replay("best-effort");
    assert_eq!(found, Vec::<Value>::new());
}

/// A replay names the line it cannot read and goes on; the exit status says lines were refused.
#[test]
fn replay_refuses_a_line_that_is_not_a_decision() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("decisions.log");
    std::fs::write(
        &log,
        "{\"input\": {\"reason\": \"KV_LOCKED\"}, \"answer\": {\"decision\": \"retry\", \"delay_ms\": 1.0, \"node\": \"same\", \"consistency\": null}}\n\
         not json\n{\"answer\": {}}\n{\"input\": {\"reason\": \"NO_SUCH_REASON\"}}\n",
    )
    .unwrap();
    let output = Command::cargo_bin("rebound")
        .unwrap()
        .env_remove("RUST_BACKTRACE")
        .args(["eval", "--replay"])
        .arg(&log)
        .args(["--policy", "best-effort"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let errors: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let at: Vec<(u64, &str)> = errors
        .iter()
        .map(|e| {
            (
                e["error"]["line"].as_u64().unwrap(),
                e["error"]["field"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(at, [(2, ""), (3, "input"), (4, "input.reason")]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("3 of 4 lines were refused"), "{stderr}");
}

/// docs/policy-reference.md "Cases and the answers they get": every case of the page's block,
/// one per decision kind, is decided by `rebound eval` as its `expect` says.
#[test]
fn the_policy_reference_cases_get_the_answers_they_show() {
    let page = include_str!("../../docs/policy-reference.md");
    let block = page
        .split("```jsonl\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the page's block of cases");
    let cases: Vec<Value> = block
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect();
    let input: String = cases
        .iter()
        .map(|case| {
            let mut line = case.clone();
            let object = line.as_object_mut().unwrap();
            object.remove("name");
            object.remove("expect");
            format!("{line}\n")
        })
        .collect();
    let (ok, answers) = eval(&[], &input);
    assert!(ok, "{answers:?}");
    let mut kinds = std::collections::BTreeSet::new();
    for (case, answer) in cases.iter().zip(&answers) {
        for (field, expected) in case["expect"].as_object().unwrap() {
            let got = &answer[field];
            let same =
                got == expected || (got.as_f64().is_some() && got.as_f64() == expected.as_f64());
            assert!(
                same,
                "{}: {field} is {got}, the page says {expected}",
                case["name"]
            );
        }
        kinds.insert(answer["decision"].as_str().unwrap().to_owned());
    }
    // Every decision kind a decision request can get.
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["already_done", "cancel", "ignore", "retry", "timeout"]
    );
}

/// docs/decision-json.md, errors: an error names the field and what JSON was expected, never
/// this program's own types. Every value of a set of valid decision and outcome lines is
/// replaced, one at a time, by a value of each JSON type, and the top level by non-objects; no
/// error object's message names a Rust type (`struct`, `enum`, a path, or a CamelCase name).
#[test]
fn error_messages_name_no_rust_type() {
    let valid = [
        json!({"request": {"type": "get", "retry_attempts": 1, "client_context": {"k": "v"}, "consistency": "QUORUM"}, "reason": "KV_LOCKED"}),
        json!({"request": {"type": "cql"}, "reason": {"read_timeout": {"consistency": "QUORUM", "block_for": 2, "received": 1, "data_present": false}}}),
        json!({"policy": {"name": "exponential", "params": {"max_attempts": 3, "initial_ms": 10, "max_ms": 100, "multiplier": 2, "retry_on": ["KV_LOCKED"]}}, "reason": "KV_LOCKED", "pushback": {"retry_after": "1"}}),
        json!({"request": {"type": "get"}, "response": {"kv": {"status": 134}}}),
        json!({"outcome": "failure", "attempts": 2, "request": {"type": "get"}}),
    ];
    let replacements = [
        json!(null),
        json!(true),
        json!(7),
        json!(-1.5),
        json!("x"),
        json!([]),
        json!([1]),
        json!({}),
    ];
    let mut lines: Vec<Value> = replacements.to_vec();
    for line in &valid {
        for replacement in &replacements {
            mutations(line, replacement, &mut lines);
        }
    }
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let (_, answers) = eval(&[], &input);
    assert_eq!(answers.len(), lines.len());
    let mut errors = 0;
    for (line, answer) in lines.iter().zip(&answers) {
        let Some(message) = answer["error"]["message"].as_str() else {
            continue;
        };
        errors += 1;
        let camel = message.split(|c: char| !c.is_alphanumeric()).find(|word| {
            let mut chars = word.chars();
            chars.next().is_some_and(char::is_uppercase)
                && word.chars().any(char::is_lowercase)
                && chars
                    .skip_while(|c| !c.is_lowercase())
                    .any(char::is_uppercase)
        });
        assert!(
            !message.contains("struct ")
                && !message.contains("enum ")
                && !message.contains("::")
                && camel.is_none(),
            "{line} -> {message}"
        );
    }
    assert!(
        errors > lines.len() / 2,
        "{errors} errors of {}",
        lines.len()
    );
}

/// Every copy of `value` with one of its values (at any depth, the whole included) replaced by
/// `replacement`.
fn mutations(value: &Value, replacement: &Value, out: &mut Vec<Value>) {
    out.push(replacement.clone());
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let mut inner_copies = Vec::new();
                mutations(inner, replacement, &mut inner_copies);
                for copy in inner_copies {
                    let mut whole = map.clone();
                    whole.insert(key.clone(), copy);
                    out.push(Value::Object(whole));
                }
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                let mut inner_copies = Vec::new();
                mutations(inner, replacement, &mut inner_copies);
                for copy in inner_copies {
                    let mut whole = items.clone();
                    whole[i] = copy;
                    out.push(Value::Array(whole));
                }
            }
        }
        _ => {}
    }
}

/// docs/http-and-grpc.md, run on the example there (`examples/http-and-grpc/`): the `http`
/// built-in retries a sent GET's 503 and a never-sent POST, never a sent POST (RFC 9110
/// §9.2.2), and waits a pushback; the `grpc` built-in retries a listed status, waits exactly a
/// pushback (gRFC A6 "Pushback"), stops on a negative one, and does not retry a call not
/// declared idempotent once sent.
#[test]
fn the_http_and_grpc_example_decides_as_the_page_says() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/http-and-grpc");
    let config = dir.join("rebound.toml");
    let input = std::fs::read_to_string(dir.join("decisions.jsonl")).unwrap();
    let (success, answers) = eval(&["--config", config.to_str().unwrap()], &input);
    assert!(success, "{answers:?}");
    let decisions: Vec<&str> = answers
        .iter()
        .map(|a| a["decision"].as_str().unwrap())
        .collect();
    assert_eq!(
        decisions,
        ["retry", "cancel", "retry", "retry", "retry", "retry", "cancel", "cancel"]
    );
    assert_eq!(answers[1]["error_context"]["idempotent"], false);
    assert_eq!(answers[3]["delay_ms"], 2000.0);
    assert_eq!(answers[5]["delay_ms"], 250.0);
    let first_grpc = answers[4]["delay_ms"].as_f64().unwrap();
    assert!((80.0..=120.0).contains(&first_grpc), "{first_grpc}");
    assert!(answers[4]["version"]
        .as_str()
        .unwrap()
        .starts_with("builtin:grpc+"));
}

/// A service config gRPC would refuse is answered by an error naming the field's path inside
/// it (gRFC A6 "Validation of retryPolicy"); a gRPC route that is not a full method name, and
/// an HTTP status that is not an error, are refused by field.
#[test]
fn bad_grpc_and_http_input_is_refused_by_field() {
    let input = [
        json!({"policy": {"name": "grpc", "params": {"service_config": {"methodConfig": [{"name": [{"service": "a.S"}], "retryPolicy": {"maxAttempts": 1, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]}}]}}}, "request": {"type": "grpc"}, "reason": {"grpc_status": 14}}),
        json!({"request": {"type": "grpc", "route": "a.S/Get"}, "reason": {"grpc_status": 14}}),
        json!({"request": {"type": "http"}, "reason": {"http_status": 200}}),
        json!({"request": {"type": "grpc"}, "reason": {"grpc_status": "NOT_A_CODE"}}),
    ]
    .map(|line| line.to_string())
    .join("\n");
    let (success, answers) = eval(&[], &input);
    assert!(!success);
    let fields = error_fields(&answers);
    assert_eq!(
        fields,
        [
            "policy.params.service_config.methodConfig[0].retryPolicy.maxAttempts",
            "request.route",
            "reason.http_status",
            "reason.grpc_status",
        ]
    );
    assert!(answers[3]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("UNAVAILABLE"));
}

/// docs/decision-json.md `response` for plain HTTP and gRPC: an HTTP 503 with `retry_after`
/// is an `HTTP_STATUS` failure retried after the pushback; a 404 is not retried; a gRPC
/// status by name in any case is a `GRPC_STATUS` failure, OK a success, an unknown name
/// refused listing the valid ones.
#[test]
fn http_and_grpc_responses_are_classified() {
    let input = [
        json!({"policy": "http", "request": {"type": "http", "method": "GET", "dispatched": true}, "response": {"status": 503, "retry_after": "2"}}),
        json!({"policy": "http", "request": {"type": "http", "method": "GET"}, "response": {"status": 404}}),
        json!({"request": {"type": "grpc", "idempotent": true}, "response": {"status": "unavailable"}}),
        json!({"request": {"type": "grpc"}, "response": {"status": "OK"}}),
        json!({"request": {"type": "grpc"}, "response": {"status": "NOPE"}}),
    ]
    .map(|line| line.to_string())
    .join("\n");
    let (success, answers) = eval(&[], &input);
    assert!(!success);
    assert_eq!(answers[0]["decision"], "retry");
    assert_eq!(answers[0]["reason"], "HTTP_STATUS");
    assert_eq!(answers[0]["delay_ms"], 2000.0);
    assert_eq!(answers[1]["decision"], "not_retried");
    assert_eq!(answers[1]["code"], 404);
    assert_eq!(answers[2]["reason"], "GRPC_STATUS");
    assert_eq!(answers[3]["decision"], "success");
    assert_eq!(answers[4]["error"]["field"], "response.status");
    assert!(answers[4]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("UNAVAILABLE"));
}

/// docs/decisions.md "An HTTP-date `Retry-After` in a decision request": a line's `now` is the
/// moment its HTTP-date `retry_after` is read at, so a date a minute after it asks for a
/// minute whenever the line is decided; a 413 with a `retry_after` is a failure the `http`
/// built-in retries (urllib3's rule); a `now` that is not RFC 3339 is refused, naming it.
#[test]
fn an_http_date_retry_after_is_read_at_the_line_s_now() {
    let get = json!({"type": "http", "method": "GET", "dispatched": true, "timeout_ms": 600_000});
    let input = [
        json!({"policy": "http", "request": get, "now": "2026-11-28T12:00:00Z",
               "response": {"status": 503, "retry_after": "Sat, 28 Nov 2026 12:01:00 GMT"}}),
        json!({"policy": "http", "request": get, "now": "2026-11-28T12:00:00Z",
               "response": {"status": 413, "retry_after": "Sat, 28 Nov 2026 12:00:30 GMT"}}),
        json!({"policy": "http", "request": get, "response": {"status": 413}}),
        json!({"policy": "http", "request": get, "now": "yesterday",
               "response": {"status": 503, "retry_after": "1"}}),
    ]
    .map(|line| line.to_string())
    .join("\n");
    let (success, answers) = eval(&[], &input);
    assert!(!success);
    assert_eq!(answers[0]["delay_ms"], 60_000.0, "{}", answers[0]);
    assert_eq!(answers[1]["decision"], "retry", "{}", answers[1]);
    assert_eq!(answers[1]["delay_ms"], 30_000.0, "{}", answers[1]);
    assert_eq!(answers[2]["decision"], "not_retried", "{}", answers[2]);
    assert_eq!(answers[3]["error"]["field"], "now", "{}", answers[3]);
}

/// docs/http-and-grpc.md: the decision log keeps what the policy was told of HTTP requests
/// and gRPC calls (type, method, authority, route, status) and a replay decides them again: the
/// example's eight decisions replayed against fail-fast disagree where the built-ins retried.
#[test]
fn http_and_grpc_decisions_are_logged_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/http-and-grpc");
    let mut config = std::fs::read_to_string(example.join("rebound.toml")).unwrap();
    config.push_str("\n[decision_log]\nfile = \"decisions.log\"\n");
    let config_path = dir.path().join("rebound.toml");
    std::fs::write(&config_path, config).unwrap();
    let input = std::fs::read_to_string(example.join("decisions.jsonl")).unwrap();
    let (success, _) = eval(&["--config", config_path.to_str().unwrap()], &input);
    assert!(success);
    let log = dir.path().join("decisions.log");
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let request = &first["input"]["request"];
    assert_eq!(
        (request["type"].as_str(), request["method"].as_str()),
        (Some("http"), Some("GET"))
    );
    assert_eq!(request["authority"], "api.example.com");
    assert_eq!(request["route"], "/v1/items");
    assert_eq!(first["input"]["reason"], json!({"http_status": 503}));
    let (success, replayed) = eval(
        &[
            "--config",
            config_path.to_str().unwrap(),
            "--replay",
            log.to_str().unwrap(),
            "--policy",
            "no-retry",
        ],
        "",
    );
    assert!(success);
    assert_eq!(
        replayed.len(),
        5,
        "the five retries disagree with fail-fast"
    );
    assert!(replayed
        .iter()
        .all(|line| line["candidate"]["answer"]["decision"] == "cancel"));
}

/// docs/decision-json.md `attempt_timeout_ms` and docs/executor.md "Timing": a retry of a
/// request whose policy cuts attempts says how long the next attempt may run (the time left
/// after the delay when that is less); an attempt cut by its timeout (`ATTEMPT_TIMEOUT`) is
/// retried for a GET and, for a dispatched POST, ends the request as an ambiguous timeout
/// (reference 002); a policy that cuts nothing adds no field.
#[test]
fn attempt_timeouts_reach_the_answer() {
    let http =
        r#"{"name": "http", "params": {"attempt_timeout_ms": 300, "initial_ms": 1, "max_ms": 1}}"#;
    let lines = [
        format!(r#"{{"policy": {http}, "request": {{"type": "http", "method": "GET", "timeout_ms": 10000, "dispatched": true}}, "reason": "ATTEMPT_TIMEOUT"}}"#),
        format!(r#"{{"policy": {http}, "request": {{"type": "http", "method": "GET", "timeout_ms": 10000, "elapsed_ms": 9900}}, "reason": "SOCKET_NOT_AVAILABLE"}}"#),
        format!(r#"{{"policy": {http}, "request": {{"type": "http", "method": "POST", "timeout_ms": 10000, "dispatched": true}}, "reason": "ATTEMPT_TIMEOUT"}}"#),
        r#"{"policy": {"name": "http"}, "request": {"type": "http", "method": "GET"}, "reason": "SOCKET_NOT_AVAILABLE"}"#.to_owned(),
    ];
    let (ok, answers) = eval(&[], &lines.join("\n"));
    assert!(ok, "{answers:?}");
    assert_eq!(answers[0]["decision"], "retry", "{}", answers[0]);
    assert_eq!(answers[0]["reason"], "ATTEMPT_TIMEOUT");
    assert_eq!(answers[0]["attempt_timeout_ms"].as_f64(), Some(300.0));
    assert_eq!(answers[1]["decision"], "retry", "{}", answers[1]);
    let left = answers[1]["attempt_timeout_ms"].as_f64().unwrap();
    assert!(left < 100.0, "capped by the time left: {}", answers[1]);
    assert_eq!(answers[2]["decision"], "cancel", "{}", answers[2]);
    assert_eq!(answers[2]["error"], "AmbiguousTimeout", "{}", answers[2]);
    assert_eq!(answers[3]["decision"], "retry", "{}", answers[3]);
    assert!(
        answers[3].get("attempt_timeout_ms").is_none(),
        "{}",
        answers[3]
    );
}

/// docs/decision-json.md "Outcomes" and "Hedging": outcome reports that carry `latency_ms` teach
/// the registry an authority's latencies, so a later hedging question for a policy hedging at a
/// percentile is answered with that percentile (within a bucket's 6.25 %), not its ceiling; an
/// authority nobody reported on gets the ceiling; a negative latency is refused naming it.
#[test]
fn reported_latencies_set_a_percentile_hedge_delay() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rebound.toml");
    std::fs::write(
        &config,
        "default_policy = \"reads\"\n[watch]\nenabled = false\n[policies.reads]\nbuiltin = \"best-effort\"\n\
         speculative_execution = { percentile = 95, max_delay_ms = 4000, max_executions = 2 }\n",
    )
    .unwrap();
    let request = |authority: &str| {
        format!(r#""request": {{"type": "http", "method": "GET", "authority": "{authority}"}}"#)
    };
    let fast = request("fast.example");
    let mut lines: Vec<String> = (0..100)
        .map(|i| {
            format!(
                r#"{{"outcome": "success", {fast}, "latency_ms": {}}}"#,
                20 + i % 10
            )
        })
        .collect();
    lines.push(format!(r#"{{{fast}, "hedge": {{"copies": 1}}}}"#));
    let new = request("new.example");
    lines.push(format!(r#"{{{new}, "hedge": {{"copies": 1}}}}"#));
    lines.push(format!(
        r#"{{"outcome": "success", {fast}, "latency_ms": -1}}"#
    ));
    let (_, answers) = eval(&["--config", config.to_str().unwrap()], &lines.join("\n"));
    assert_eq!(
        answers[..100].iter().filter(|a| a["recorded"] == 1).count(),
        100
    );
    let after = |answer: &Value| answer["hedge"]["after_ms"].as_u64();
    assert!(
        (29..=31).contains(&after(&answers[100]).unwrap()),
        "{}",
        answers[100]
    );
    assert_eq!(after(&answers[101]), Some(4000), "{}", answers[101]);
    assert_eq!(
        answers[102]["error"]["field"], "latency_ms",
        "{}",
        answers[102]
    );
}

/// docs/throttling.md "What a failure costs": a question's `upstream_attempts` (the callee's
/// own attempts for the failed one) counts the failure that many times in the throttle. With
/// `max_tokens` 10, a 503 said to have been tried 4 times leaves 6 (retried), the next 2
/// (refused); without it, both are retried.
#[test]
fn a_callee_s_attempts_count_in_the_throttle() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rebound.toml");
    std::fs::write(
        &config,
        "default_policy = \"api\"\n[watch]\nenabled = false\n[throttles.t]\nkind = \"tokens\"\nmax_tokens = 10\ntoken_ratio = 0.1\n[policies.api]\nbuiltin = \"best-effort\"\nthrottle = \"t\"\n",
    )
    .unwrap();
    let decided = |upstream: Option<u32>| {
        let mut line = serde_json::json!({"request": {"type": "http", "method": "GET", "retry_attempts": 1}, "reason": {"http_status": 503}});
        if let Some(upstream) = upstream {
            line["upstream_attempts"] = upstream.into();
        }
        let input = format!("{line}\n{line}\n");
        let (_, answers) = eval(&["--config", config.to_str().unwrap()], &input);
        answers
            .iter()
            .map(|a| match a["decision"].as_str() {
                Some("cancel") => a["cancel_reason"].as_str().unwrap().to_owned(),
                other => other.unwrap_or_default().to_owned(),
            })
            .collect::<Vec<String>>()
    };
    assert_eq!(decided(Some(4)), ["retry", "RETRY_THROTTLED"]);
    assert_eq!(decided(None), ["retry", "retry"]);
}

/// docs/decisions.md "The AWS SDK": an AWS error reaches the `aws` built-in as the SDK
/// classified it; a written POST is sent again after `aws_throttling` and never after
/// `aws_transient`; a kind that contradicts the reason is refused naming the field.
#[test]
fn aws_reasons_are_decided_by_the_aws_built_in_under_the_guard() {
    let written = r#""request": {"type": "http", "method": "POST", "dispatched": true}"#;
    let (ok, answers) = eval(
        &[],
        &[
            format!(r#"{{"policy": "aws", {written}, "reason": {{"aws_throttling": {{"code": "ThrottlingException", "status": 400}}}}, "pushback_ms": 700}}"#),
            format!(r#"{{"policy": "aws", {written}, "reason": {{"aws_transient": {{"status": 503}}}}}}"#),
            format!(r#"{{"policy": {{"name": "aws", "params": {{"max_attempts": 1}}}}, {written}, "reason": {{"aws_throttling": {{}}}}}}"#),
        ]
        .join("\n"),
    );
    assert!(ok, "{answers:?}");
    assert_eq!(answers[0]["decision"], "retry", "{}", answers[0]);
    assert_eq!(
        answers[0]["delay_ms"].as_f64(),
        Some(700.0),
        "x-amz-retry-after, 2.0: taken as is"
    );
    assert_eq!(answers[0]["version"], "builtin:aws");
    assert_eq!(answers[1]["decision"], "cancel", "{}", answers[1]);
    assert_eq!(
        answers[2]["decision"], "cancel",
        "one attempt at most: {}",
        answers[2]
    );

    let (ok, answers) = eval(
        &[],
        r#"{"policy": "aws", "reason": {"aws_transient": {"kind": "throttling"}}}"#,
    );
    assert!(!ok);
    assert_eq!(answers[0]["error"]["field"], "reason.aws_transient.kind");
}
