//! `rebound serve` as a real process on loopback: deciding,
//! classifying, status, health and metrics; bad input answered 4xx naming the field, never
//! 500; the admin token and the loopback rule; path confinement; a reload while requests
//! flow; graceful shutdown on SIGTERM; privileged routes out of a web page's reach, from a real
//! browser too.

use crate::support;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::server::Server;
use support::{guest, rebound};

use serde_json::{json, Value};

/// A policy directory with `policy.wasm` (the robots policy) and a configuration naming it
/// `robots` (default `standard`, best-effort), watched with a short debounce.
fn policy_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    std::fs::copy(
        guest("no_retry_for_robots"),
        dir.path().join("policies/policy.wasm"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "standard"
policy_dir = "policies"
[watch]
enabled = true
debounce_ms = 20
[policies.standard]
builtin = "best-effort"
[policies.robots]
component = "policy.wasm"
"#,
    )
    .unwrap();
    dir
}

/// A server of `policy_dir()`'s configuration.
fn start(listen: &str, token: Option<&str>) -> Server {
    Server::start_in(policy_dir(), listen, token)
}

fn robot_get() -> Value {
    json!({"policy": "robots", "request": {"type": "get", "client_context": {"isRobotRequest": "true"}}, "reason": "KV_TEMPORARY_FAILURE"})
}

#[test]
fn decides_classifies_and_reports_status_health_and_metrics() {
    let server = start("127.0.0.1:0", None);
    let (status, answer) = server.post(
        "/v1/decide",
        json!({"request": {"type": "upsert"}, "reason": "KV_LOCKED"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"], "retry");
    assert_eq!(answer["policy"], "standard");
    // Each answer has its own time-ordered decision_id, and a request_id.
    let first_id = answer["decision_id"].as_str().unwrap().to_owned();
    assert!(answer["request_id"].is_u64(), "{answer}");
    // The robots policy (a component) refuses every retry for a robot's request.
    let (status, answer) = server.post("/v1/decide", robot_get());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"], "cancel");
    assert_eq!(answer["policy"], "robots");
    assert!(
        answer["decision_id"].as_str().unwrap() > first_id.as_str(),
        "{answer} after {first_id}"
    );
    let version = answer["version"].as_str().unwrap().to_owned();
    // A raw KV response goes through the classifier (001 "Response Code Classification").
    let (status, answer) = server.post(
        "/v1/classify",
        json!({"request": {"type": "get"}, "response": {"status": "0x86"}}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["reason"], "KV_TEMPORARY_FAILURE");

    let (status, policies) = server.call("GET", "/v1/policies", "", None);
    assert_eq!(status, 200);
    let names: Vec<&str> = policies["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["robots", "standard"]);
    let (status, health) = server.call("GET", "/health", "", None);
    assert_eq!((status, &health["status"]), (200, &json!("ok")));
    // docs/wit-versions.md "Hosts and the versions they load": the host names its version,
    // the one `rebound --version` prints.
    let said = rebound().arg("--version").output().unwrap().stdout;
    assert_eq!(
        String::from_utf8(said).unwrap().trim(),
        format!("rebound {}", health["version"].as_str().unwrap())
    );

    let (status, metrics) = server.call("GET", "/metrics", "", None);
    assert_eq!(status, 200);
    let metrics = metrics.as_str().unwrap();
    // The library's metric (docs/observability.md), through the `metrics` facade.
    assert!(
        metrics.contains(&format!(
            r#"rebound_decisions_total{{policy="robots",version="{version}",decision="cancel",reason="KV_TEMPORARY_FAILURE",cancel_reason="NO_MORE_RETRIES"}} 1"#
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"rebound_decisions_total{policy="standard",version="builtin:best-effort",decision="retry",reason="KV_LOCKED",cancel_reason=""} 1"#
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("# HELP rebound_decisions Decisions made, by policy"),
        "{metrics}"
    );
    assert!(
        metrics.contains("rebound_decision_duration_seconds_count 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"rebound_policy_swaps_total{policy="robots"} 0"#),
        "{metrics}"
    );
}

/// Errors the HTTP layer makes (a method a route does not take, a path that
/// does not decode) answer the API's JSON error object too.
/// A decision's answer says how long the server took on it (W3C `Server-Timing`, in
/// milliseconds): what the isolation benchmark reads to tell the server's lateness from its
/// clients' on a shared machine.
#[test]
fn a_decision_answer_says_how_long_the_server_took() {
    let server = start("127.0.0.1:0", None);
    let started = std::time::Instant::now();
    let response = ureq::post(&format!("http://{}/v1/decide", server.authority()))
        .header("Content-Type", "application/json")
        .send(robot_get().to_string())
        .unwrap();
    let took = started.elapsed();
    let timing = response.headers()["server-timing"]
        .to_str()
        .unwrap()
        .to_owned();
    let ms: f64 = timing
        .strip_prefix("decide;dur=")
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("{timing}"));
    assert!(
        ms > 0.0 && ms <= took.as_secs_f64() * 1000.0,
        "{ms} ms of {took:?}"
    );
}

#[test]
fn http_layer_errors_answer_the_json_error_object() {
    let server = start("127.0.0.1:0", None);
    let (status, answer) = server.call("GET", "/v1/decide", "", None);
    assert_eq!(status, 405, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not take that method"),
        "{answer}"
    );
    let (status, answer) = server.call("GET", "/v1/policies/%FF", "", None);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"].as_str().unwrap().len() > 5,
        "{answer}"
    );
}

#[test]
fn bad_input_is_a_4xx_naming_the_field_never_a_500() {
    let server = start("127.0.0.1:0", None);
    let cases: [(&str, &str, u16, &str); 10] = [
        ("/v1/decide", "not json", 400, ""),
        (
            "/v1/decide",
            r#"{"reason": "KV_LOCKED", "request": {"timeout_ms": "soon"}}"#,
            400,
            "request.timeout_ms",
        ),
        (
            "/v1/decide",
            r#"{"reason": "NO_SUCH_REASON"}"#,
            400,
            "reason",
        ),
        (
            "/v1/decide",
            r#"{"reason": "KV_LOCKED", "policy": "nope"}"#,
            400,
            "policy",
        ),
        // The server decides with its configured policies only: no component files, inside
        // the policy directory or out.
        (
            "/v1/decide",
            r#"{"reason": "KV_LOCKED", "policy": "../../../etc/hostname.wasm"}"#,
            400,
            "policy",
        ),
        (
            "/v1/decide",
            r#"{"reason": "KV_LOCKED", "policy": "policy.wasm"}"#,
            400,
            "policy",
        ),
        (
            "/v1/classify",
            r#"{"request": {"type": "cql"}, "response": {"code": 1}}"#,
            400,
            "response",
        ),
        // A request is a JSON object, not an array serde could read as one.
        ("/v1/decide", r#"[{"type": "get"}, "KV_LOCKED"]"#, 400, ""),
        ("/v1/classify", r#"[{"type": "get"}]"#, 400, ""),
        (
            "/v1/policies/robots/shadow",
            r#"{"path": "policy.wasm", "sample": 2}"#,
            400,
            "sample",
        ),
    ];
    for (path, body, status, field) in cases {
        let (got, answer) = server.call("POST", path, body, None);
        assert_eq!(got, status, "{path} {body}: {answer}");
        assert_eq!(answer["error"]["field"], field, "{path} {body}: {answer}");
        assert!(!answer["error"]["message"].as_str().unwrap().is_empty());
    }
    let (status, answer) = server.call("POST", "/v1/decide", &"x".repeat(100_000), None);
    assert_eq!(status, 413, "{answer}");
    let (status, _) = server.call("POST", "/v1/policies/nope/reload", "", None);
    assert_eq!(status, 404);
    let (status, _) = server.call("POST", "/v1/policies/standard/reload", "", None);
    assert_eq!(status, 409, "a built-in has no file to reload");
    let (status, _) = server.call("GET", "/v2/anything", "", None);
    assert_eq!(status, 404);
    let (_, metrics) = server.call("GET", "/metrics", "", None);
    assert!(metrics
        .as_str()
        .unwrap()
        .contains("rebound_refused_requests_total 9"));
}

#[test]
fn privileged_endpoints_need_the_token_compared_exactly() {
    let server = start("127.0.0.1:0", Some("s3cret-token"));
    // Deciding needs no token.
    assert_eq!(server.post("/v1/decide", robot_get()).0, 200);
    let reload = "/v1/policies/robots/reload";
    assert_eq!(server.call("POST", reload, "", None).0, 401);
    assert_eq!(server.call("POST", reload, "", Some("s3cret-toke")).0, 401);
    assert_eq!(
        server.call("POST", reload, "", Some("s3cret-token-")).0,
        401
    );
    let (status, outcome) = server.call("POST", reload, "", Some("s3cret-token"));
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["outcome"], "unchanged");
    // Each privileged action is logged with who and what; refusals too.
    let (ok, log) = server.terminate();
    assert!(ok, "{log}");
    assert!(log.contains("privileged action done"), "{log}");
    assert!(
        log.contains("(admin token)") && log.contains("reload robots"),
        "{log}"
    );
    assert!(log.contains("wrong admin token"), "{log}");
}

#[test]
fn without_a_token_privileged_endpoints_are_refused_beyond_loopback() {
    let server = start("0.0.0.0:0", None);
    let (status, answer) = server.call("POST", "/v1/policies/robots/reload", "", None);
    assert_eq!(status, 403, "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no admin token"));
    // Deciding still works.
    assert_eq!(server.post("/v1/decide", robot_get()).0, 200);
}

#[test]
fn shadow_paths_must_resolve_inside_the_policy_directory() {
    let server = start("127.0.0.1:0", None);
    let outside = server.dir().join("outside.wasm");
    std::fs::copy(guest("fail_fast"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, server.dir().join("policies/link.wasm")).unwrap();
    for path in [
        "../outside.wasm",
        outside.to_str().unwrap(),
        "link.wasm",
        "missing.wasm",
    ] {
        let (status, answer) = server.post(
            "/v1/policies/robots/shadow",
            json!({"path": path, "sample": 1.0}),
        );
        assert_eq!(status, 400, "{path}: {answer}");
        assert_eq!(answer["error"]["field"], "path", "{path}");
    }
    std::fs::copy(
        guest("fail_fast"),
        server.dir().join("policies/candidate.wasm"),
    )
    .unwrap();
    let (status, answer) = server.post(
        "/v1/policies/robots/shadow",
        json!({"path": "candidate.wasm", "sample": 1.0}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(server.post("/v1/policies/robots/promote", json!({})).0, 200);
    let (_, status) = server.call("GET", "/v1/policies/robots", "", None);
    assert_eq!(status["active"]["version"], answer["version"]);
}

#[test]
fn a_reload_while_requests_flow_loses_none_and_switches_versions() {
    let server = Arc::new(start("127.0.0.1:0", None));
    let (_, first) = server.post("/v1/decide", robot_get());
    let old_version = first["version"].as_str().unwrap().to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let server = Arc::clone(&server);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut versions = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let (status, answer) = server.post("/v1/decide", robot_get());
                    assert_eq!(status, 200, "{answer}");
                    versions.push(answer["version"].as_str().unwrap().to_owned());
                }
                versions
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // A new policy file replaces the old one (written aside, then renamed: the way deploys do
    // it), and the watcher reloads it.
    let policies = server.dir().join("policies");
    std::fs::copy(guest("fail_fast"), policies.join("policy.wasm.new")).unwrap();
    std::fs::rename(
        policies.join("policy.wasm.new"),
        policies.join("policy.wasm"),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let new_version = loop {
        let (_, status) = server.call("GET", "/v1/policies/robots", "", None);
        let active = status["active"]["version"].as_str().unwrap().to_owned();
        if active != old_version {
            break active;
        }
        assert!(
            Instant::now() < deadline,
            "the watcher did not reload: {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let versions: Vec<String> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert!(versions.contains(&old_version), "{versions:?}");
    assert!(versions.contains(&new_version), "{versions:?}");
    // Every answer came from one of the two versions: no request lost or failed meanwhile.
    assert!(versions
        .iter()
        .all(|v| *v == old_version || *v == new_version));
    // A rollback through the API brings the old version back.
    let (status, outcome) = server.post("/v1/policies/robots/rollback", json!({}));
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["to"], old_version.as_str());
}

#[test]
fn sigterm_stops_the_server_gracefully() {
    let server = start("127.0.0.1:0", None);
    assert_eq!(server.post("/v1/decide", robot_get()).0, 200);
    let (ok, log) = server.terminate();
    assert!(ok, "exit status after SIGTERM: {log}");
    assert!(log.contains("SIGTERM: shutting down"), "{log}");
    assert!(log.contains("stopped"), "{log}");
    // The default log has no line per decision (at tens of thousands a second they would
    // drown the log, and a reader that falls behind would stall the server).
    assert!(!log.contains("not retried"), "{log}");
}

/// What a page on another site can make a browser send is refused on the
/// privileged routes, in every admin mode: a body not declared as JSON (a "simple" request,
/// which needs no CORS preflight), a cross-site `Sec-Fetch-Site`, a foreign or opaque
/// `Origin`. Each refusal is logged with the caller and what was asked. The same call from the
/// server's own origin, or from a client that is not a browser, is admitted.
#[test]
fn privileged_calls_a_web_page_can_send_are_refused() {
    let json = ("Content-Type", "application/json");
    let reload = "/v1/policies/robots/reload";
    // Loopback without a token: the mode the report found open.
    let server = start("127.0.0.1:0", None);
    let own = format!("http://{}", server.authority());
    let refused = [
        (vec![("Content-Type", "text/plain")], 415),
        (vec![], 415),
        (vec![json, ("Origin", "http://evil.example")], 403),
        (vec![json, ("Origin", "null")], 403),
        (vec![json, ("Sec-Fetch-Site", "cross-site")], 403),
        (vec![json, ("Sec-Fetch-Site", "same-site")], 403),
    ];
    for (headers, status) in &refused {
        assert_eq!(
            server.post_with_headers(reload, headers).0,
            *status,
            "{headers:?}"
        );
    }
    let (status, _) = server.post_with_headers(
        "/v1/policies/robots/shadow",
        &[
            ("Content-Type", "text/plain"),
            ("Origin", "http://evil.example"),
        ],
    );
    assert_eq!(status, 415);
    let same_origin = [json, ("Origin", &own), ("Sec-Fetch-Site", "same-origin")];
    assert_eq!(server.post_with_headers(reload, &same_origin).0, 200);
    assert_eq!(server.post_with_headers(reload, &[json]).0, 200);
    let (clean, log) = server.terminate();
    assert!(clean, "{log}");
    let refusals: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("privileged request refused"))
        .collect();
    assert_eq!(refusals.len(), refused.len() + 1, "{log}");
    assert!(
        refusals.iter().all(|line| line.contains("peer=127.0.0.1:")),
        "{log}"
    );
    assert!(
        refusals[2].contains("reload robots") && refusals[2].contains("http://evil.example"),
        "{log}"
    );
    assert!(refusals[6].contains("shadow robots with {}"), "{log}");

    // With a token, the right token does not make a cross-site request acceptable.
    let server = start("127.0.0.1:0", Some("s3cret-token"));
    let bearer = ("Authorization", "Bearer s3cret-token");
    let foreign = [json, bearer, ("Origin", "http://evil.example")];
    assert_eq!(server.post_with_headers(reload, &foreign).0, 403);
    assert_eq!(server.post_with_headers(reload, &[json, bearer]).0, 200);
}

/// Where Debian's headless Chromium is (`scripts/test-services.sh` installs it).
const CHROMIUM: &str = "/usr/bin/chromium-headless-shell";

/// A page on another site (`localhost:PORT`, the server being `127.0.0.1:PORT`) that tries what
/// a web page can make a browser send to a privileged route: a `text/plain` fetch (a "simple"
/// request, sent without asking), a JSON fetch (which the browser asks about first), and a
/// `text/plain` form posted into a frame. It then reports what its script saw to `/done`.
fn hostile_page(server: &str) -> String {
    format!(
        r#"<!doctype html><html><body>
<form id="form" method="POST" enctype="text/plain" target="sink"
      action="http://{server}/v1/policies/robots/shadow">
<input name='{{"component":"policy.wasm","x":"' value='"}}'></form>
<script>
const serve = "http://{server}/v1/policies/robots";
const seen = [];
async function attempt(name, send) {{
  try {{ const r = await send(); seen.push(name + "=" + r.type + ":" + r.status); }}
  catch (e) {{ seen.push(name + "=failed"); }}
}}
(async () => {{
  await attempt("plain", () => fetch(serve + "/reload", {{method: "POST", mode: "no-cors",
    headers: {{"Content-Type": "text/plain"}}, body: "{{}}"}}));
  await attempt("json", () => fetch(serve + "/promote", {{method: "POST",
    headers: {{"Content-Type": "application/json"}}, body: "{{}}"}}));
  const sink = document.createElement("iframe");
  sink.name = "sink";
  document.body.appendChild(sink);
  const posted = new Promise(done => {{ sink.onload = done; }});
  document.getElementById("form").submit();
  await posted;
  seen.push("form=posted");
  await fetch("/done?" + encodeURIComponent(seen.join(",")));
}})();
</script></body></html>"#
    )
}

/// Serves `page` at `/` on loopback until a request for `/done?…` arrives, whose query it
/// sends on `done`; its port.
fn serve_page(page: String, done: std::sync::mpsc::Sender<String>) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            if BufReader::new(&stream).read_line(&mut line).is_err() {
                continue;
            }
            let target = line.split(' ').nth(1).unwrap_or("");
            let (status, body) = match target {
                "/" => ("200 OK", page.as_str()),
                _ if target.starts_with("/done?") => {
                    let _ = done.send(target["/done?".len()..].to_owned());
                    ("200 OK", "")
                }
                _ => ("404 Not Found", ""),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// docs/serve.md "Who may change what decides", from a real browser: a page on another site loaded by headless Chromium
/// tries a `text/plain` fetch and a `text/plain` form post at the privileged routes of a
/// loopback server without a token, and a JSON fetch. The first two reach the server and are
/// refused (logged with the page's origin); the JSON fetch is stopped by the browser, since
/// the server grants no cross-origin access; the policy is neither reloaded, shadowed nor
/// promoted.
#[test]
fn a_page_on_another_site_cannot_drive_privileged_routes_from_a_browser() {
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: ./scripts/test-services.sh installs Debian's chromium-headless-shell"
    );
    let server = start("127.0.0.1:0", None);
    let (_, before) = server.call("GET", "/v1/policies/robots", "", None);
    let (done, seen) = std::sync::mpsc::channel();
    let port = serve_page(hostile_page(server.authority()), done);
    let profile = tempfile::tempdir().unwrap();
    let mut browser = std::process::Command::new(CHROMIUM)
        .args(["--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("http://localhost:{port}/"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let seen = seen.recv_timeout(Duration::from_secs(60));
    let _ = browser.kill();
    let _ = browser.wait();
    let seen = seen.expect("the page reported what it saw within 60 s");
    // A no-cors answer is opaque to the page (status 0); the JSON fetch never got an answer
    // it may read.
    assert_eq!(
        seen, "plain%3Dopaque%3A0%2Cjson%3Dfailed%2Cform%3Dposted",
        "what the page saw"
    );
    let (_, after) = server.call("GET", "/v1/policies/robots", "", None);
    assert_eq!(
        after["active"], before["active"],
        "the policy was not swapped"
    );
    assert!(
        after["shadow"].is_null(),
        "no shadow trial started: {after}"
    );
    let (clean, log) = server.terminate();
    assert!(clean, "{log}");
    let origin = format!("http://localhost:{port}");
    let refusals: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("privileged request refused") && line.contains(&origin))
        .collect();
    assert_eq!(refusals.len(), 2, "{log}");
    assert!(refusals[0].contains("reload robots"), "{log}");
    assert!(refusals[1].contains("shadow robots"), "{log}");
    // The form's body is the JSON a shadow call takes: only its type gave it away.
    assert!(
        refusals[1].contains(r#"{\"component\":\"policy.wasm\""#),
        "{log}"
    );
    // The JSON fetch's preflight was not granted, so its POST was never sent.
    assert!(!log.contains("promote robots"), "{log}");
}

/// An error map named by requests is parsed once and read again when its
/// file changes (an edit shows in the next answer), and a refusal names the file as the client
/// gave it, never the server's directories.
#[test]
fn error_maps_are_refreshed_when_they_change_and_refusals_hide_the_directory() {
    let server = start("127.0.0.1:0", None);
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../host/tests/fixtures/error_maps/couchbasemock_errmap_v1.json");
    let mut map: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let file = server.dir().join("policies/map.json");
    std::fs::write(&file, map.to_string()).unwrap();
    let classify = || {
        server.post(
            "/v1/classify",
            json!({"request": {"type": "get"}, "response": {"status": "0x7ff0"}, "error_map": "map.json"}),
        )
    };
    let (status, answer) = classify();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["reason"], "KV_ERROR_MAP_RETRY_INDICATED");
    // The same file, its entry no longer asking for a retry: the next answer follows it.
    map["errors"]["7ff0"]["attrs"] = json!(["temp"]);
    map["errors"]["7ff0"]
        .as_object_mut()
        .unwrap()
        .remove("retry");
    let text = format!("{map}\n");
    std::fs::write(&file, text).unwrap();
    let (status, answer) = classify();
    assert_eq!(status, 200, "{answer}");
    assert_ne!(answer["reason"], "KV_ERROR_MAP_RETRY_INDICATED", "{answer}");

    let dir = server.dir().canonicalize().unwrap().display().to_string();
    for name in ["missing.json", "../outside.json"] {
        let (status, answer) = server.post(
            "/v1/classify",
            json!({"request": {"type": "get"}, "response": {"status": "0x7ff0"}, "error_map": name}),
        );
        assert_eq!(status, 400, "{answer}");
        let message = answer.to_string();
        assert!(
            message.contains(name) && !message.contains(&dir),
            "{message}"
        );
    }
}

/// A failed reload shows in `/health` (`degraded`, naming the policy and the
/// error, while the running version keeps answering) and in `rebound_reload_failures_total`;
/// the next good reload clears it.
#[test]
fn a_failed_reload_shows_in_health_and_metrics() {
    let server = start("127.0.0.1:0", None);
    let (_, health) = server.call("GET", "/health", "", None);
    assert_eq!(health["status"], "ok", "{health}");
    let file = server.dir().join("policies/policy.wasm");
    let good = std::fs::read(&file).unwrap();
    std::fs::write(&file, b"not a component").unwrap();
    let wait_for = |wanted: &str| {
        let started = Instant::now();
        loop {
            let (status, health) = server.call("GET", "/health", "", None);
            assert_eq!(status, 200);
            if health["status"] == wanted {
                return health;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no {wanted}: {health}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let health = wait_for("degraded");
    assert_eq!(health["problems"][0]["policy"], "robots", "{health}");
    assert!(health["problems"][0]["error"].as_str().unwrap().len() > 10);
    // Still answering with the version that was running.
    assert_eq!(
        server.post("/v1/decide", robot_get()).1["decision"],
        "cancel"
    );
    let (_, metrics) = server.call("GET", "/metrics", "", None);
    let metrics = metrics.as_str().unwrap().to_owned();
    assert!(
        metrics.contains("rebound_reload_failures_total{policy=\"robots\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("rebound_config_reload_failures_total 0"),
        "{metrics}"
    );
    std::fs::write(&file, good).unwrap();
    let health = wait_for("ok");
    assert_eq!(health["problems"], json!([]));
}

/// A policy that fails to load at start leaves the server starting, that
/// policy on its fail-safe (the decision says why) and `/health` degraded, until its file is
/// fixed; with `strict_start = true` the server refuses to start, naming the policy.
#[test]
fn a_policy_that_fails_at_start_leaves_the_server_serving_on_its_fail_safe() {
    let dir = policy_dir();
    let file = dir.path().join("policies/policy.wasm");
    let good = std::fs::read(&file).unwrap();
    std::fs::write(&file, b"not a component").unwrap();
    let config = dir.path().join("rebound.toml");
    let text = std::fs::read_to_string(&config).unwrap();

    std::fs::write(&config, format!("strict_start = true\n{text}")).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rebound"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .arg(&config)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("policy `robots`"), "{stderr}");

    std::fs::write(&config, text).unwrap();
    let server = Server::start_in(dir, "127.0.0.1:0", None);
    let (_, health) = server.call("GET", "/health", "", None);
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["problems"][0]["policy"], "robots", "{health}");
    let (status, answer) = server.post("/v1/decide", robot_get());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["cancel_reason"], "POLICY_FAILED", "{answer}");
    assert_eq!(answer["policy_failure"], "not_loaded", "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains("policy `robots`"),
        "{answer}"
    );
    // The others decide as usual.
    assert_eq!(
        server.post("/v1/decide", json!({"reason": "KV_LOCKED"})).1["decision"],
        "retry"
    );
    // Fixed on disk: the watcher loads it.
    std::fs::write(&file, good).unwrap();
    let started = Instant::now();
    loop {
        let (_, health) = server.call("GET", "/health", "", None);
        if health["status"] == "ok" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{health}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, answer) = server.post("/v1/decide", robot_get());
    assert_eq!(answer["cancel_reason"], "NO_MORE_RETRIES", "{answer}");
}

/// `POST /v1/outcome` takes one report or a batch, feeding the
/// retry budget of the policy that decides for each request (docs/serve.md "What an outcome
/// report does": a first-attempt success deposits, a failure report deposits nothing, so the
/// deposits stay 20); a spent budget refuses retries with RETRY_BUDGET_EXHAUSTED; the budget's counters are in the status and `/metrics`; a
/// report naming an unknown policy is refused naming the field, and nothing of its batch is
/// recorded.
#[test]
fn outcome_reports_feed_the_budget_that_refuses_a_storm() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "kv"
[watch]
enabled = false
[budgets.storm]
percent = 10
min_per_second = 0
ttl_ms = 60_000
[policies.kv]
builtin = "best-effort"
budget = "storm"
"#,
    )
    .unwrap();
    let server = Server::start_in(dir, "127.0.0.1:0", None);
    // 20 requests that succeeded at once: 10 % is two retries.
    let batch: Vec<Value> = (0..20).map(|_| json!({"outcome": "success"})).collect();
    let (status, answer) = server.post("/v1/outcome", Value::Array(batch));
    assert_eq!((status, &answer["recorded"]), (200, &json!(20)), "{answer}");
    let (status, answer) = server.post(
        "/v1/outcome",
        json!({"outcome": "failure", "attempts": 3, "policy": "kv"}),
    );
    assert_eq!((status, &answer["recorded"]), (200, &json!(1)), "{answer}");
    // A storm of later retries: two are paid for, then RETRY_BUDGET_EXHAUSTED.
    let storm: Vec<Value> = (0..5)
        .map(|_| {
            let (status, answer) = server.post(
                "/v1/decide",
                json!({"request": {"retry_attempts": 2}, "reason": "KV_TEMPORARY_FAILURE"}),
            );
            assert_eq!(status, 200, "{answer}");
            answer
        })
        .collect();
    let decisions: Vec<&str> = storm
        .iter()
        .map(|a| a["cancel_reason"].as_str().unwrap_or("retry"))
        .collect();
    assert_eq!(
        decisions,
        [
            "retry",
            "retry",
            "RETRY_BUDGET_EXHAUSTED",
            "RETRY_BUDGET_EXHAUSTED",
            "RETRY_BUDGET_EXHAUSTED"
        ]
    );
    // Refused: an unknown policy in a batch (its index and field named), a bad outcome.
    let (status, answer) = server.post(
        "/v1/outcome",
        json!([{"outcome": "success"}, {"outcome": "success", "policy": "nope"}]),
    );
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["field"], "[1].policy", "{answer}");
    let (status, answer) = server.post("/v1/outcome", json!({"outcome": "maybe"}));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["field"], "outcome", "{answer}");

    let (status, metrics) = server.call("GET", "/metrics", "", None);
    assert_eq!(status, 200);
    let metrics = metrics.as_str().unwrap();
    for line in [
        r#"rebound_budget_deposits_total{budget="storm"} 20"#,
        r#"rebound_budget_withdrawals_total{budget="storm"} 2"#,
        r#"rebound_budget_refusals_total{budget="storm"} 3"#,
        r#"rebound_budget_balance{budget="storm"} 0"#,
    ] {
        assert!(metrics.contains(line), "{line} not in {metrics}");
    }
}

/// Unsigned LEB128, as WebAssembly encodes integers.
fn leb(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// A WebAssembly section or vector: `prefix` (an id, or nothing), the length, the items.
fn counted(prefix: &[u8], count: usize, items: &[u8]) -> Vec<u8> {
    [prefix, &leb(count), items].concat()
}

/// A component of about 80 KB holding one function that Cranelift needs minutes and hundreds
/// of megabytes to compile: `depth` nested blocks around `tables` conditional `br_table`s,
/// each to every block, each after all `locals` locals are given new values, so that every
/// block joins `tables` different values of every local.
fn pathological_component(depth: usize, tables: usize, locals: usize) -> Vec<u8> {
    let section = |id: u8, payload: Vec<u8>| counted(&[id], payload.len(), &payload);
    let redefine: Vec<u8> = (1..=locals)
        .flat_map(|j| [vec![0x20], leb(j), vec![0x41, 0x01, 0x6a, 0x21], leb(j)].concat())
        .collect();
    let targets: Vec<u8> = (1..=depth).flat_map(leb).collect();
    let table = [
        redefine,
        vec![0x20, 0x00, 0x04, 0x40, 0x20, 0x00, 0x0e],
        counted(&[], depth, &targets),
        vec![0x01, 0x0b],
    ]
    .concat();
    let uses: Vec<u8> = (1..=locals)
        .flat_map(|j| [vec![0x20], leb(j), vec![0x1a]].concat())
        .collect();
    let body = [
        counted(&[], 1, &[leb(locals), vec![0x7f]].concat()),
        [0x02, 0x40].repeat(depth),
        table.repeat(tables),
        vec![0x0b; depth],
        uses,
        vec![0x0b],
    ]
    .concat();
    let module = [
        b"\0asm\x01\0\0\0".to_vec(),
        section(1, counted(&[], 1, &[0x60, 0x01, 0x7f, 0x00])),
        section(3, counted(&[], 1, &[0x00])),
        section(10, counted(&[], 1, &counted(&[], body.len(), &body))),
    ]
    .concat();
    [b"\0asm\x0d\0\x01\0".to_vec(), section(1, module)].concat()
}

/// docs/serve.md "Compiling components": `serve` compiles in a child process bounded in memory
/// and time. A few megabytes of nested blocks and `br_table`s whose compilation passes the
/// memory limit are refused naming the limit, and the running version keeps deciding; at
/// start, one past the time limit leaves its policy on its fail-safe, the error naming the
/// limit; a file past `[engine] max_component_bytes` is refused unread.
#[test]
fn components_are_bounded_before_and_while_they_compile() {
    let pathological = pathological_component(500, 50, 100);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guest("best_effort"), dir.path().join("p.wasm")).unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        "default_policy = \"p\"\ncache_dir = false\n[engine]\nmax_component_bytes = 8_000_000\n[watch]\nenabled = false\n[policies.p]\ncomponent = \"p.wasm\"\n",
    )
    .unwrap();
    let server = Server::start_with_options(
        &dir.path().join("rebound.toml"),
        &[
            "--compile-memory-mb",
            "128",
            "--compile-timeout-ms",
            "600000",
        ],
    );
    let before = server.resident_bytes();
    std::fs::write(dir.path().join("p.wasm"), &pathological).unwrap();
    let (status, answer) = server.call("POST", "/v1/policies/p/reload", "", None);
    assert_eq!(status, 422, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("limit of 128 MiB of memory"), "{message}");
    let (status, answer) = server.post("/v1/decide", json!({"reason": "KV_LOCKED"}));
    assert_eq!(
        (status, &answer["decision"]),
        (200, &json!("retry")),
        "{answer}"
    );
    let grown = server.resident_bytes().saturating_sub(before);
    assert!(grown < 64 << 20, "the server grew by {grown} bytes");
    std::fs::write(dir.path().join("p.wasm"), vec![0u8; 8_000_001]).unwrap();
    let (status, answer) = server.call("POST", "/v1/policies/p/reload", "", None);
    assert_eq!(status, 422, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_component_bytes"), "{message}");
    drop(server);

    std::fs::write(dir.path().join("p.wasm"), &pathological).unwrap();
    let server = Server::start_with_options(
        &dir.path().join("rebound.toml"),
        &["--compile-timeout-ms", "200"],
    );
    let (_, health) = server.call("GET", "/health", "", None);
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(health.to_string().contains("limit of 200 ms"), "{health}");
}

/// docs/serve.md "Who may ask for decisions": with `--client-tokens`, deciding and reporting
/// need a client's token (none or an unknown one is refused 401 and counted); the token's
/// client name replaces the request's `client_context.client`, so with a budget kept per
/// client (docs/registry.md "Retry budgets") one client's storm of retries — even one that
/// claims to be another client — refuses only its own, and outcome reports feed the
/// reporting client's budget.
#[test]
fn client_tokens_name_the_client_whose_budget_pays() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "kv"
[watch]
enabled = false
[budgets.clients]
percent = 10
min_per_second = 0
per = "client_context.client"
[policies.kv]
builtin = "best-effort"
budget = "clients"
"#,
    )
    .unwrap();
    let hash = |token: &str| {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let tokens = dir.path().join("clients.toml");
    std::fs::write(
        &tokens,
        format!(
            "[clients.alpha]\ntoken_sha256 = \"{}\"\n[clients.beta]\ntoken_sha256 = \"{}\"\n",
            hash("alpha-token"),
            hash("beta-token")
        ),
    )
    .unwrap();
    let server = Server::start_with_options(
        &dir.path().join("rebound.toml"),
        &["--client-tokens", tokens.to_str().unwrap()],
    );
    let later_retry = json!({"request": {"retry_attempts": 2, "client_context": {"client": "beta"}}, "reason": "KV_TEMPORARY_FAILURE"});
    let (status, answer) = server.post("/v1/decide", later_retry.clone());
    assert_eq!(status, 401, "{answer}");
    let (status, _) = server.call(
        "POST",
        "/v1/decide",
        &later_retry.to_string(),
        Some("guess"),
    );
    assert_eq!(status, 401);
    let (status, _) = server.post("/v1/outcome", json!({"outcome": "success"}));
    assert_eq!(status, 401);
    // Each client's 20 requests that succeeded pay for two later retries.
    let successes = Value::Array((0..20).map(|_| json!({"outcome": "success"})).collect());
    for token in ["alpha-token", "beta-token"] {
        let (status, answer) =
            server.call("POST", "/v1/outcome", &successes.to_string(), Some(token));
        assert_eq!((status, &answer["recorded"]), (200, &json!(20)), "{answer}");
    }
    let retries = |token: &str, n: usize| {
        (0..n)
            .filter(|_| {
                let (status, answer) =
                    server.call("POST", "/v1/decide", &later_retry.to_string(), Some(token));
                assert_eq!(status, 200, "{answer}");
                answer["decision"] == "retry"
            })
            .count()
    };
    assert_eq!(
        retries("alpha-token", 50),
        2,
        "alpha's storm spends alpha's budget"
    );
    assert_eq!(retries("beta-token", 5), 2, "beta keeps what it paid for");
    let (_, status) = server.call("GET", "/v1/policies", "", None);
    assert_eq!(status["budgets"][0]["clients"], json!(2), "{status}");
    let (_, metrics) = server.call("GET", "/metrics", "", None);
    assert!(
        metrics
            .as_str()
            .unwrap()
            .contains("rebound_client_refused_total 3"),
        "{metrics}"
    );
}

/// `docs/decisions.md` "Guest token buckets", on the real server: a policy inventing a
/// million bucket names holds 64 buckets, its refused calls are counted in its status, the
/// server's resident memory grows by less than 16 MiB (the buckets themselves are bounded by
/// 64 × 64-byte names), and a second policy using the bucket name the first one drained keeps
/// its whole burst.
#[test]
fn a_policy_inventing_bucket_names_is_bounded_and_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guest("adversary"), dir.path().join("adversary.wasm")).unwrap();
    std::fs::copy(guest("retry_budget"), dir.path().join("budgeted.wasm")).unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "standard"
[watch]
enabled = false
[policies.standard]
builtin = "best-effort"
[policies.inventor]
component = "adversary.wasm"
limits = { deadline_ms = 20_000, fuel = 100_000_000_000 }
[policies.victim]
component = "budgeted.wasm"
params = { burst = "5", per_second = "0" }
"#,
    )
    .unwrap();
    let server = Server::start_in(dir, "127.0.0.1:0", None);
    let invent = |names: u32| {
        let (status, answer) = server.post(
            "/v1/decide",
            json!({"policy": "inventor", "request": {"client_context": {"buckets": names.to_string()}}, "reason": "KV_LOCKED"}),
        );
        assert_eq!(
            (status, &answer["decision"]),
            (200, &json!("retry")),
            "{answer}"
        );
    };
    invent(10);
    let before = server.resident_bytes();
    for _ in 0..100 {
        invent(10_000);
    }
    let grown = server.resident_bytes().saturating_sub(before);
    assert!(grown < 16 << 20, "the server grew by {grown} bytes");
    let (status, inventor) = server.call("GET", "/v1/policies/inventor", "", None);
    assert_eq!(status, 200, "{inventor}");
    assert_eq!(inventor["budget_buckets"], json!(64), "{inventor}");
    // `retry-budget` and 63 of the 1,000,010 invented names made the 64 buckets; every other
    // name was refused.
    assert_eq!(
        inventor["budget_refusals"],
        json!(1_000_010 - 63),
        "{inventor}"
    );
    let victim_retries = (0..8)
        .filter(|_| {
            let (_, answer) = server.post(
                "/v1/decide",
                json!({"policy": "victim", "request": {"type": "get"}, "reason": "KV_LOCKED"}),
            );
            answer["decision"] == "retry"
        })
        .count();
    assert_eq!(victim_retries, 5, "the victim's own bucket keeps its burst");
    let (_, log) = server.terminate();
    assert_eq!(
        log.matches("retry-budget buckets and named another")
            .count(),
        1,
        "logged once: {log}"
    );
}

/// `serve` writes a decision-log line per decision its configuration's
/// `[decision_log]` samples, with the answer's `decision_id`, and writes every line before it
/// exits on SIGTERM. A response the classifier settles is not a policy's decision: no line.
#[test]
fn serve_logs_each_decision_and_writes_the_log_before_exiting() {
    let dir = policy_dir();
    let config = dir.path().join("rebound.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[decision_log]\nfile = \"decisions.log\"\n");
    std::fs::write(&config, text).unwrap();
    let log = dir.path().join("decisions.log");
    let server = Server::start(&config, "127.0.0.1:0", None);
    let mut ids = Vec::new();
    for body in [
        robot_get(),
        json!({"request": {"type": "upsert"}, "reason": "KV_LOCKED"}),
    ] {
        let (status, answer) = server.post("/v1/decide", body);
        assert_eq!(status, 200, "{answer}");
        ids.push(answer["decision_id"].as_str().unwrap().to_owned());
    }
    let (status, settled) = server.post(
        "/v1/decide",
        json!({"request": {"type": "get"}, "response": {"status": 0}}),
    );
    assert_eq!((status, &settled["decision"]), (200, &json!("success")));
    let (ok, stderr) = server.terminate();
    assert!(ok, "{stderr}");
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let logged: Vec<&str> = lines
        .iter()
        .map(|l| l["decision_id"].as_str().unwrap())
        .collect();
    assert_eq!(logged, ids);
    assert_eq!(lines[0]["policy"], "robots");
    assert_eq!(lines[0]["answer"]["decision"], "cancel");
    assert_eq!(lines[1]["policy"], "standard");
}

/// docs/serve.md "Deadlines on a busy machine": `serve` asks for the real-time priority for
/// the engine's epoch ticker unless its configuration names another (the library alone leaves
/// it as its other threads: docs/embedding.md), and its `serving` line says what it asked and
/// what it got. What a process is permitted depends on the machine (a capability, a limit,
/// the real-time bandwidth left), so the default's grant is held only to "at most what was
/// asked"; the usual priority is always granted.
#[test]
fn serve_asks_for_the_real_time_ticker_unless_configured() {
    use rebound::wasm::TickerPriority;
    for (engine, asked, granted) in [
        (
            "",
            TickerPriority::Realtime,
            &[
                TickerPriority::Realtime,
                TickerPriority::ShortSlice,
                TickerPriority::Normal,
            ][..],
        ),
        (
            "[engine]\nticker_priority = \"normal\"\n",
            TickerPriority::Normal,
            &[TickerPriority::Normal][..],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("rebound.toml");
        std::fs::write(
            &config,
            format!("default_policy = \"s\"\n{engine}[policies.s]\nbuiltin = \"best-effort\"\n"),
        )
        .unwrap();
        let server = Server::start_with_options(&config, &[]);
        let (ok, log) = server.terminate();
        assert!(ok, "{log}");
        let serving = log
            .lines()
            .find(|line| line.contains("serving"))
            .unwrap_or_else(|| panic!("no serving line: {log}"));
        assert!(
            serving.contains(&format!("ticker_asked={asked:?}")),
            "{engine:?}: {serving}"
        );
        assert!(
            granted
                .iter()
                .any(|got| serving.contains(&format!(" ticker={got:?}"))),
            "{engine:?}: {serving}"
        );
    }
}

/// docs/serve.md "Operating it": with the watch off, SIGHUP reads the configuration again
/// (a policy it adds serves) and every policy's component (a replaced file is swapped in);
/// with `--log-format json` every log line is one JSON object with the text's fields.
#[test]
fn sighup_reloads_and_json_logs_are_one_object_a_line() {
    let dir = policy_dir();
    let config = dir.path().join("rebound.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("enabled = true", "enabled = false");
    std::fs::write(&config, &text).unwrap();
    let server = Server::start_with_options(&config, &["--log-format", "json"]);
    let version = |server: &Server| {
        let (status, policy) = server.call("GET", "/v1/policies/robots", "", None);
        assert_eq!(status, 200, "{policy}");
        policy["active"]["version"].as_str().unwrap().to_owned()
    };
    let first = version(&server);
    std::fs::write(
        &config,
        format!("{text}[policies.strict]\nbuiltin = \"fail-fast\"\n"),
    )
    .unwrap();
    std::fs::copy(
        guest("best_effort"),
        dir.path().join("policies/policy.wasm"),
    )
    .unwrap();
    server.signal("HUP");
    let started = Instant::now();
    while server.call("GET", "/v1/policies/strict", "", None).0 != 200 || version(&server) == first
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "SIGHUP did not reload the configuration and the component"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (clean, log) = server.terminate();
    assert!(clean, "{log}");
    assert!(log.contains("SIGHUP: reloading"), "{log}");
    for line in log.lines() {
        let object: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for field in ["timestamp", "level", "target"] {
            assert!(object[field].is_string(), "{line}");
        }
        assert!(object["fields"]["message"].is_string(), "{line}");
    }
}

/// docs/adapters.md "Client context": the idempotency-key rule of the `context_gate` guest
/// (retry only a request whose client context holds `idempotency-key`) decides in `serve` as
/// it does in-process through each adapter (`rebound-reqwest`
/// `client_context::a_mapped_header_or_an_extension_reaches_the_policy_s_context_rule`,
/// `rebound-tonic` `client_context::mapped_metadata_or_an_extension_reaches_the_policy_s_context_rule`,
/// the library's `client_context::*` for the executor and the tower layer): a GET answered 503
/// is retried with the key, and not without it.
#[test]
fn the_client_context_rule_decides_as_in_the_adapters() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    std::fs::copy(guest("context_gate"), dir.path().join("policies/gate.wasm")).unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        "default_policy = \"gate\"\npolicy_dir = \"policies\"\n[watch]\nenabled = false\n\
         [policies.gate]\ncomponent = \"gate.wasm\"\n",
    )
    .unwrap();
    let server = Server::start_in(dir, "127.0.0.1:0", None);
    let get = |context: Value| {
        json!({"request": {"type": "http", "method": "GET", "client_context": context},
               "reason": {"http_status": 503}})
    };
    let (status, answer) = server.post("/v1/decide", get(json!({"idempotency-key": "k-17"})));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"], "retry", "{answer}");
    let (status, answer) = server.post("/v1/decide", get(json!({})));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["decision"], "cancel", "{answer}");
}
