//! The decision log. Every decision path (routed, named, a request's
//! own strategy, a shadow trial, isolated components) writes exactly one line when sampled at
//! 1.0 and none at 0.0; the listed keys are masked; a full buffer drops and counts lines instead
//! of blocking a decision; rotation keeps the configured bound; a configuration names the
//! field it gets wrong.

use crate::common;
use crate::registry_support;

use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rebound::config::RegistryConfig;
use rebound::decision_log::{DecisionLog, DecisionLogConfig};
use rebound::registry::PolicyRegistry;
use rebound::{reasons, DecisionContext, FailFast, Request, RequestType};
use registry_support::{request, Workspace};
use serde_json::Value;

/// A registry of `workspace`'s configuration: built-ins `standard` (default) and `strict`, a
/// component `wasm` (best-effort), `extra` appended (e.g. `[decision_log]` or `[engine]`).
fn registry(ws: &Workspace, extra: &str) -> PolicyRegistry {
    ws.install("best_effort.wasm", "best_effort");
    ws.config(&format!(
        "default_policy = \"standard\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.standard]\nbuiltin = \"best-effort\"\n\
         [policies.strict]\nbuiltin = \"fail-fast\"\n\
         [policies.wasm]\ncomponent = \"best_effort.wasm\"\n{extra}"
    ));
    ws.registry()
}

/// Decides once for `request`, failed for KV_LOCKED.
fn decide(registry: &PolicyRegistry, mut request: Request) -> rebound::registry::Decided {
    let context = DecisionContext::new(&reasons::KV_LOCKED);
    futures::executor::block_on(registry.decide(&mut request, &context)).unwrap()
}

/// The lines of the log file at `path`, parsed.
fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The decision paths of a registry, each decided once: the route, a policy by name, the
/// strategy the caller chose for the request, a component, a component in a shadow trial (returns the IDs).
fn every_path(registry: &PolicyRegistry, ws: &Workspace) -> Vec<String> {
    let mut ids = vec![
        decide(registry, request(RequestType::Get)),
        decide(registry, request(RequestType::Get).with_policy("strict")),
        {
            let context = DecisionContext::new(&reasons::KV_LOCKED);
            let mut own = request(RequestType::Get);
            futures::executor::block_on(
                registry.decide(&mut own, &context.with_strategy(&FailFast)),
            )
            .unwrap()
        },
        decide(registry, request(RequestType::Get).with_policy("wasm")),
    ];
    ws.install("candidate.wasm", "fail_fast");
    registry
        .shadow("wasm", &ws.path("candidate.wasm"), 1.0)
        .unwrap();
    ids.push(decide(
        registry,
        request(RequestType::Get).with_policy("wasm"),
    ));
    ids.iter().map(|d| d.decision_id.to_string()).collect()
}

#[test]
fn every_decision_path_writes_one_line_at_sample_one() {
    let ws = Workspace::new();
    let registry = registry(
        &ws,
        "[decision_log]\nfile = \"decisions.log\"\nsample = 1.0\n",
    );
    let ids = every_path(&registry, &ws);
    let stats = registry.decision_log_stats().unwrap();
    drop(registry); // writes what is buffered
    let logged = lines(&ws.path("decisions.log"));
    let logged_ids: Vec<&str> = logged
        .iter()
        .map(|l| l["decision_id"].as_str().unwrap())
        .collect();
    assert_eq!(logged_ids, ids, "one line per decision, in order");
    assert_eq!(stats.dropped, 0);
    let policies: Vec<&str> = logged
        .iter()
        .map(|l| l["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        policies,
        ["standard", "strict", "fail-fast", "wasm", "wasm"],
        "who decided"
    );
    for line in &logged {
        assert_eq!(line["input"]["reason"], "KV_LOCKED", "{line}");
        assert_eq!(line["request_id"], 1, "{line}");
        assert!(line["timestamp"].as_str().unwrap().ends_with('Z'), "{line}");
        assert!(line["answer"]["decision"].is_string(), "{line}");
    }
    assert_eq!(
        logged[1]["input"]["policy"], "strict",
        "the request named it"
    );
    assert_eq!(logged[0]["version"], "builtin:best-effort");
    // The shadow trial's line carries both policies' own answers.
    let shadow = &logged[4]["shadow"];
    assert_eq!(shadow["answer"]["decision"], "no_retry", "{shadow}");
    assert_eq!(shadow["active_answer"]["decision"], "retry", "{shadow}");
    assert!(logged[..4].iter().all(|l| l.get("shadow").is_none()));
}

/// Components whose calls run on the isolation threads are logged like any other decision.
#[test]
fn isolated_component_decisions_are_logged() {
    let ws = Workspace::new();
    let registry = registry(
        &ws,
        "[engine.isolation]\nthreads = 1\nper_policy = 1\n\
         [decision_log]\nfile = \"decisions.log\"\n",
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let context = DecisionContext::new(&reasons::KV_LOCKED);
    let mut req = request(RequestType::Get).with_policy("wasm");
    let decided = rt.block_on(registry.decide(&mut req, &context)).unwrap();
    drop(registry);
    let logged = lines(&ws.path("decisions.log"));
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0]["decision_id"], decided.decision_id.to_string());
    assert_eq!(logged[0]["answer"]["decision"], "retry");
}

#[test]
fn sample_zero_writes_no_line() {
    let ws = Workspace::new();
    let registry = registry(
        &ws,
        "[decision_log]\nfile = \"decisions.log\"\nsample = 0.0\n",
    );
    every_path(&registry, &ws);
    drop(registry);
    assert_eq!(lines(&ws.path("decisions.log")), Vec::<Value>::new());
}

/// `client_context.KEY` leaves the key out of the input and of the answer's error context;
/// `request.FIELD` leaves the field out of the input; nothing else is touched.
#[test]
fn masking_removes_the_listed_keys() {
    let ws = Workspace::new();
    let registry = registry(
        &ws,
        "[decision_log]\nfile = \"decisions.log\"\n\
         mask = [\"client_context.user\", \"request.last_dispatched_to\"]\n",
    );
    let with_context = |r: Request| {
        r.with_client_context("user", "alice")
            .with_client_context("team", "search")
    };
    let mut dispatched = with_context(request(RequestType::Get));
    dispatched.mark_dispatched("10.0.0.7:11210");
    let _ = decide(&registry, dispatched);
    // A cancel: its answer carries the error context with the client context.
    let _ = decide(
        &registry,
        with_context(request(RequestType::Get)).with_policy("strict"),
    );
    drop(registry);
    let logged = lines(&ws.path("decisions.log"));
    assert_eq!(logged.len(), 2);
    for line in &logged {
        let text = line.to_string();
        assert!(!text.contains("alice"), "{text}");
        assert!(!text.contains("10.0.0.7"), "{text}");
        assert_eq!(line["input"]["request"]["client_context"]["team"], "search");
        assert!(line["input"]["request"].get("last_dispatched_to").is_none());
    }
    assert_eq!(logged[0]["input"]["request"]["dispatched"], true);
    let context = &logged[1]["answer"]["error_context"]["clientContext"];
    assert_eq!(context["team"], "search", "{context}");
    assert!(context.get("user").is_none(), "{context}");
}

/// A sink that takes nothing until released (its first write waits), then keeps what it is
/// given.
#[derive(Clone)]
struct StuckSink {
    gate: Arc<Mutex<Option<mpsc::Receiver<()>>>>,
    written: Arc<Mutex<Vec<u8>>>,
}

impl Write for StuckSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(release) = self.gate.lock().unwrap().take() {
            let _ = release.recv();
        }
        self.written.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Releases a [`StuckSink`] when dropped.
struct Release(mpsc::Sender<()>);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// With a sink that never drains, decisions go on at their own pace: the buffer fills, every
/// line past it is dropped and counted, and no decision waits. Nothing is lost unaccounted:
/// once the sink is released, the lines not dropped are all written.
#[test]
fn a_full_buffer_drops_and_counts_instead_of_blocking() {
    let ws = Workspace::new();
    let registry = registry(&ws, "");
    let (release, released) = mpsc::channel();
    let sink = StuckSink {
        gate: Arc::new(Mutex::new(Some(released))),
        written: Arc::default(),
    };
    let mut config = DecisionLogConfig::default();
    config.buffer = 4;
    registry.set_decision_log(Some(DecisionLog::to_writer(&config, sink.clone())));
    const DECISIONS: u64 = 200;
    let (done, finished) = mpsc::channel();
    let deciding = std::thread::spawn(move || {
        for _ in 0..DECISIONS {
            let _ = decide(&registry, request(RequestType::Get));
        }
        done.send(()).unwrap();
        registry
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("decisions waited for a stuck log");
    let registry = deciding.join().unwrap();
    // Declared after the registry, so dropped before it should an assertion fail: the stuck
    // writer is released before the log waits for it.
    let release = Release(release);
    let stats = registry.decision_log_stats().unwrap();
    // The buffer holds 4 lines; the writer holds what fits its 8 KiB output buffer (lines are
    // over 300 bytes) and the line stuck in the sink. Everything else is dropped.
    assert!(stats.dropped >= DECISIONS - 4 - 8192 / 300 - 1, "{stats:?}");
    drop(release);
    // Removing the log lets it finish the lines it holds.
    let started = Instant::now();
    registry.set_decision_log(None);
    assert!(started.elapsed() < Duration::from_secs(10));
    let written = sink.written.lock().unwrap().clone();
    let lines = String::from_utf8(written).unwrap().lines().count() as u64;
    assert_eq!(lines, DECISIONS - stats.dropped);
}

/// Rotation: no file passes `max_bytes`, at most `keep` rotated files stay, every line is whole,
/// and the newest lines are kept.
#[test]
fn rotation_keeps_the_configured_bound() {
    let ws = Workspace::new();
    let registry = registry(
        &ws,
        "[decision_log]\nfile = \"decisions.log\"\nmax_bytes = 4096\nkeep = 2\n",
    );
    let mut last = String::new();
    for _ in 0..200 {
        last = decide(&registry, request(RequestType::Get))
            .decision_id
            .to_string();
    }
    drop(registry);
    let mut files: Vec<String> = std::fs::read_dir(ws.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("decisions.log"))
        .collect();
    files.sort_by_key(|name| (name.len(), name.clone()));
    assert_eq!(files.len(), 3, "{files:?}");
    assert_eq!(files[0], "decisions.log");
    // The two newest rotated files, numbered as they were rotated.
    let number = |name: &str| -> u64 { name["decisions.log.".len()..].parse().unwrap() };
    assert_eq!(number(&files[1]) + 1, number(&files[2]), "{files:?}");
    let mut kept = 0;
    for file in &files {
        let path = ws.path(file);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= 4096, "{file}: {size} bytes");
        kept += lines(&path).len(); // every line parses: none was cut
    }
    assert!(kept < 200, "older lines were rotated away");
    let newest = lines(&ws.path("decisions.log"));
    assert_eq!(newest.last().unwrap()["decision_id"], last.as_str());
}

/// A bad `[decision_log]` table names its field, line and file.
#[test]
fn a_bad_decision_log_table_is_refused_with_its_field() {
    let base = "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\n[decision_log]\n";
    // A value out of range is reported at its table (line 4), or where it is written when
    // its range is checked as it is read (line 5); an unknown key where it is.
    for (extra, field, message, line) in [
        ("sample = 1.5\n", "sample", "expected 0.0 to 1.0", 4),
        ("buffer = 0\n", "buffer", "expected 1 to 100000", 5),
        ("max_bytes = 10\n", "max_bytes", "at least 4096", 4),
        (
            "max_bytes = 2199023255552\n",
            "max_bytes",
            "at most 1099511627776",
            4,
        ),
        ("keep = 1000000\n", "keep", "expected 0 to 100", 4),
        (
            "mask = [\"request.password\"]\n",
            "mask",
            "`request.password` is not",
            4,
        ),
        ("sink = \"kafka\"\n", "sink", "unknown field `sink`", 5),
    ] {
        let text = format!("{base}{extra}");
        let error =
            RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref()).expect_err(extra);
        assert_eq!(error.field, format!("decision_log.{field}"), "{error}");
        assert!(error.message.contains(message), "{error}");
        assert_eq!(error.line, line, "{error}");
    }
}

/// A log whose file cannot be opened refuses the configuration, naming the file.
#[test]
fn an_unopenable_log_file_is_refused() {
    let ws = Workspace::new();
    ws.config(
        "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\n\
         [decision_log]\nfile = \"missing-dir/decisions.log\"\n",
    );
    let error = PolicyRegistry::new(ws.load_config()).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("missing-dir/decisions.log"), "{text}");
}

/// The `[decision_log]` table of docs/observability.md "The decision log" is a valid
/// configuration, and says what it shows.
#[test]
fn the_documented_table_parses() {
    let block = common::toml_block_after(
        include_str!("../../docs/observability.md"),
        "## The decision log",
    );
    let text = format!("default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\n{block}");
    let config = RegistryConfig::parse(&text, "observability.md".as_ref(), "/srv".as_ref())
        .unwrap_or_else(|e| panic!("{e}"));
    let log = config.decision_log.unwrap();
    assert_eq!(log.file.as_deref(), Some("/srv/decisions.log".as_ref()));
    assert_eq!(
        (log.max_bytes, log.keep, log.sample, log.buffer),
        (104_857_600, 5, 1.0, 8192)
    );
    assert_eq!(
        log.mask,
        ["client_context.user", "request.last_dispatched_to"]
    );
    assert_eq!(DecisionLogConfig::default().max_bytes, log.max_bytes);
}
