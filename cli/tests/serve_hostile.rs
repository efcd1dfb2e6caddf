//! `rebound serve` against what a hostile client sends (SECURITY.md "Clients of `rebound
//! serve`"): numbers that would size an allocation, overflow a sum or an instant are refused by
//! field or decided, and the server serves on; an operator can forbid per-request parameters;
//! privileged calls, with or without a token, write bounded log lines.

use std::time::Instant;

use serde_json::{json, Value};

use crate::support::server::Server;

/// A configuration of built-ins only, in a directory the server owns.
fn builtins() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "standard"
cache_dir = false
[watch]
enabled = false
[policies.standard]
builtin = "best-effort"
"#,
    )
    .unwrap();
    dir
}

/// A `grpc` built-in named in a request with this service config and client cap.
fn grpc_request(limit: Value, config: Value) -> Value {
    json!({
        "policy": {"name": "grpc", "params": {"max_attempts_limit": limit, "service_config": config}},
        "request": {"service": "grpc", "route": "/a.B/C", "authority": "a:443", "idempotent": true},
        "reason": {"grpc_status": "UNAVAILABLE"}
    })
}

fn retry_policy(max_attempts: Value) -> Value {
    json!({"methodConfig": [{"name": [{}], "retryPolicy": {
        "maxAttempts": max_attempts, "initialBackoff": "0.1s", "maxBackoff": "1s",
        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})
}

/// docs/decision-json.md "Built-ins with parameters" (the `grpc` built-in's
/// `max_attempts_limit` at most 100; gRFC A6 "Validation of retryThrottling"; proto3's
/// `Duration` range): the request that once aborted the server is refused naming the field,
/// a `tokenRatio` of 1e308 is decided (a success fills the count all the same), a
/// `hedgingDelay` past the proto3 range and a timeout past the clock are answered, and the
/// server keeps answering with no panic in its log.
#[test]
fn numbers_that_would_size_or_overflow_are_refused_by_field_and_the_server_serves_on() {
    let server = Server::start_in(builtins(), "127.0.0.1:0", None);
    let killer = grpc_request(
        json!(4_294_967_295_u64),
        retry_policy(json!(4_294_967_295_u64)),
    );
    let (status, answer) = server.post("/v1/decide", killer);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["field"], "policy.params.max_attempts_limit");
    // Many at once, with the cap the server accepts: each answered, none stalls the rest.
    let big = grpc_request(json!(100), retry_policy(json!(20_000_000)));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (base, body) = (server.authority().to_owned(), big.to_string());
            std::thread::spawn(move || {
                ureq::post(&format!("http://{base}/v1/decide"))
                    .header("Content-Type", "application/json")
                    .send(&body)
                    .map(|r| r.status().as_u16())
            })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().unwrap(), 200);
    }
    let mut throttled = retry_policy(json!(3));
    throttled["retryThrottling"] = json!({"maxTokens": 10, "tokenRatio": 1e308});
    let (status, answer) = server.post("/v1/decide", grpc_request(json!(5), throttled));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"], "retry", "{answer}");
    let hedged = json!({"methodConfig": [{"name": [{}], "hedgingPolicy": {
        "maxAttempts": 3, "hedgingDelay": "18446744073709551615s"}}]});
    let (status, answer) = server.post("/v1/decide", grpc_request(json!(5), hedged));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["error"]["field"],
        "policy.params.service_config.methodConfig[0].hedgingPolicy.hedgingDelay"
    );
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("proto3 Duration range"));
    let forever = json!({"reason": "KV_LOCKED", "request": {"timeout_ms": u64::MAX}, "pushback_ms": i64::MAX});
    let (status, answer) = server.post("/v1/decide", forever);
    assert_eq!(status, 200, "{answer}");
    let (status, _) = server.call("GET", "/health", "", None);
    assert_eq!(status, 200);
    let (success, log) = server.terminate();
    assert!(success, "{log}");
    assert!(!log.contains("panic"), "{log}");
}

/// docs/serve.md "Who may ask for decisions": `--no-request-params` refuses a built-in named
/// with parameters before they are read, and still decides with the configured policies.
#[test]
fn an_operator_can_forbid_per_request_parameters() {
    let dir = builtins();
    let server =
        Server::start_with_options(&dir.path().join("rebound.toml"), &["--no-request-params"]);
    let (status, answer) =
        server.post("/v1/decide", grpc_request(json!(5), retry_policy(json!(3))));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["field"], "policy.params");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--no-request-params"));
    let (status, answer) = server.post(
        "/v1/decide",
        json!({"policy": "http", "request": {"service": "http"}, "reason": {"http_status": 503}}),
    );
    assert_eq!(status, 200, "a built-in named without parameters: {answer}");
    let (status, answer) = server.post("/v1/decide", json!({"reason": "KV_LOCKED"}));
    assert_eq!(status, 200, "{answer}");
}

/// SECURITY.md "Clients of `rebound serve`", the log: without an admin token any local process
/// is admitted to the privileged endpoints, and what it names (a 60 KB policy name or shadow
/// path) reaches the log cut to 128 characters, at most ten lines a second.
#[test]
fn privileged_calls_without_a_token_write_bounded_lines() {
    let server = Server::start_in(builtins(), "127.0.0.1:0", None);
    let long = "n".repeat(60_000);
    let started = Instant::now();
    let calls = 100;
    for _ in 0..calls {
        let (status, _) = server.call("POST", &format!("/v1/policies/{long}/reload"), "", None);
        assert_eq!(status, 404);
        let body = json!({"path": long}).to_string();
        let (status, _) = server.call("POST", "/v1/policies/standard/shadow", &body, None);
        assert_eq!(status, 400);
    }
    let seconds = started.elapsed().as_secs() + 1;
    let (success, log) = server.terminate();
    assert!(success, "{log}");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("nnnn")).collect();
    assert!(!lines.is_empty(), "the calls are logged: {log}");
    assert!(
        lines.iter().all(|line| line.len() < 1024),
        "every line cut: {}",
        lines.iter().map(|l| l.len()).max().unwrap()
    );
    let most = 10 * seconds as usize + 10;
    assert!(
        lines.len() <= most,
        "{} lines in {seconds} s for {} calls",
        lines.len(),
        2 * calls
    );
}

fn sha256_hex(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SECURITY.md "Clients of `rebound serve`", throttle scopes: with `--client-tokens`, a
/// client's failures throttle its own scopes only (six failures from `mallory` to an
/// authority leave `alice`'s retries to it untouched), and a thousand junk authorities leave
/// a new authority a throttle of its own, not one drained and shared.
#[test]
fn no_client_can_throttle_another_s_scopes_or_poison_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "http"
cache_dir = false
[watch]
enabled = false
[throttles.per-authority]
kind = "tokens"
max_tokens = 10
token_ratio = 0.1
per = "authority"
[policies.http]
builtin = "http"
throttle = "per-authority"
"#,
    )
    .unwrap();
    let tokens = dir.path().join("clients.toml");
    std::fs::write(
        &tokens,
        format!(
            "[clients.alice]\ntoken_sha256 = \"{}\"\n[clients.mallory]\ntoken_sha256 = \"{}\"\n",
            sha256_hex("alice-token"),
            sha256_hex("mallory-token")
        ),
    )
    .unwrap();
    let server = Server::start_with_options(
        &dir.path().join("rebound.toml"),
        &["--client-tokens", tokens.to_str().unwrap()],
    );
    let failure = |authority: &str| {
        json!({"request": {"service": "http", "method": "GET", "authority": authority},
               "reason": {"http_status": 503}})
        .to_string()
    };
    let decide = |token: &str, authority: &str| {
        let (status, answer) = server.call("POST", "/v1/decide", &failure(authority), Some(token));
        assert_eq!(status, 200, "{answer}");
        answer["decision"].as_str().unwrap().to_owned()
    };
    for _ in 0..6 {
        decide("mallory-token", "shop.example");
    }
    assert_eq!(
        decide("mallory-token", "shop.example"),
        "cancel",
        "mallory's own scope"
    );
    assert_eq!(
        decide("alice-token", "shop.example"),
        "retry",
        "alice's scope is hers"
    );
    for n in 0..1_100 {
        decide("mallory-token", &format!("junk{n}.example"));
    }
    assert_eq!(
        decide("mallory-token", "new.example"),
        "retry",
        "a new scope of its own"
    );
    let (_, status) = server.call("GET", "/v1/policies", "", None);
    let throttle = &status["throttles"][0];
    assert!(
        throttle["scopes"].as_u64().unwrap() <= 1024 * 11 / 10,
        "{throttle}"
    );
    assert!(
        throttle["scopes_evicted"].as_u64().unwrap() > 0,
        "{throttle}"
    );
}

/// docs/registry.md "Ranges of the numeric settings" and "Versions, reloads and rollback": a
/// configuration whose numbers once aborted the server or killed its reload thread (a
/// decision-log buffer of 2^63 − 1, a throttle's `token_ratio` of 1e308) is refused at start
/// with the file, line and field, and at a reload the same way while the running configuration
/// serves on; the next good file is still reloaded, and the status says the reload path runs.
#[test]
fn a_bad_number_at_reload_is_refused_as_at_start_and_reloads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rebound.toml");
    let good = |policy: &str| {
        format!(
            "default_policy = \"{policy}\"\ncache_dir = false\n[watch]\ndebounce_ms = 20\n[policies.{policy}]\nbuiltin = \"best-effort\"\n"
        )
    };
    let hostile = [
        (
            "[decision_log]\nbuffer = 9223372036854775807\n",
            "decision_log.buffer",
            8,
        ),
        (
            "[throttles.t]\nkind = \"tokens\"\nmax_tokens = 10\ntoken_ratio = 1e308\n",
            "throttles.t.token_ratio",
            7,
        ),
    ];
    for (extra, field, line) in hostile {
        std::fs::write(&file, good("first") + extra).unwrap();
        let refused = std::process::Command::new(env!("CARGO_BIN_EXE_rebound"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(!refused.status.success());
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains(&format!("rebound.toml:{line}:")), "{said}");
        assert!(said.contains(field), "{said}");
    }
    std::fs::write(&file, good("first")).unwrap();
    let server = Server::start(&file, "127.0.0.1:0", None);
    let health = |wanted: &str| {
        let started = Instant::now();
        loop {
            let (_, health) = server.call("GET", "/health", "", None);
            if health["status"] == wanted {
                return health;
            }
            assert!(started.elapsed().as_secs() < 20, "no {wanted}: {health}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    for (extra, field, _) in hostile {
        std::fs::write(&file, good("first") + extra).unwrap();
        let said = health("degraded");
        assert!(
            said["config_error"].as_str().unwrap().contains(field),
            "{said}"
        );
        let (status, answer) = server.post("/v1/decide", json!({"reason": "KV_LOCKED"}));
        assert_eq!(
            (status, &answer["policy"]),
            (200, &json!("first")),
            "{answer}"
        );
        std::fs::write(&file, good("first")).unwrap();
        health("ok");
    }
    std::fs::write(&file, good("second")).unwrap();
    let started = Instant::now();
    loop {
        let (_, answer) = server.post("/v1/decide", json!({"reason": "KV_LOCKED"}));
        if answer["policy"] == "second" {
            break;
        }
        assert!(started.elapsed().as_secs() < 20, "never reloaded: {answer}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (_, status) = server.call("GET", "/v1/policies", "", None);
    assert_eq!(status["watching"], "running", "{status}");
    assert_eq!(status["reload_panics"], 0, "{status}");
}
