//! `[source.xds]` against a control plane speaking real xDS (docs/xds.md "The xDS source"):
//! tests/xds/management_server.py, an Aggregated Discovery Service on the gRPC project's own
//! Envoy API packages (grpcio, xds-protos from PyPI, installed by scripts/test-services.sh),
//! serves snapshots the test changes. A new snapshot changes `rebound serve`'s decisions without
//! a restart and is ACKed with its version and nonce; an invalid one is NACKed with the field
//! that broke gRFC A44's rules, the server records the NACK naming the version still serving,
//! and decisions stay (the status and the metrics name both); a control plane that goes away
//! leaves the last version serving (the status and `/health` say so), and one that comes back
//! is reconnected to.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::server::Server;

/// Longest wait for the control plane and the server to agree: generous, for a debug build on
/// two busy cores; nothing is timed, only waited for.
const PATIENCE: Duration = Duration::from_secs(120);

fn tree() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The management server, killed when dropped.
pub(crate) struct ControlPlane(Child);

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the management server on `port` (0: any), serving `dir/snapshot.json`, logging to
/// `dir/ads.jsonl`; with the port it listens on.
pub(crate) fn control_plane(dir: &Path, port: u16) -> (ControlPlane, u16) {
    control_plane_with(dir, port, &[])
}

/// As `control_plane`, with the server's further arguments (its TLS files).
pub(crate) fn control_plane_with(dir: &Path, port: u16, tls: &[PathBuf]) -> (ControlPlane, u16) {
    let python = tree().join(".tools/xds/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test-services.sh",
        python.display()
    );
    let port_file = dir.join("port");
    let _ = std::fs::remove_file(&port_file);
    let child = Command::new(python)
        .arg(tree().join("tests/xds/management_server.py"))
        .arg(dir.join("snapshot.json"))
        .arg(dir.join("ads.jsonl"))
        .arg(&port_file)
        .arg(port.to_string())
        .args(tls)
        .env("GRPC_VERBOSITY", "ERROR")
        .spawn()
        .unwrap();
    let plane = ControlPlane(child);
    let port = wait_for("the management server's port", || {
        std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|p| p.trim().parse().ok())
    });
    (plane, port)
}

/// Waits until `ready` gives a value.
pub(crate) fn wait_for<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(start.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes snapshot `version` whose inventory route retries on `retry_on` `num_retries` times.
pub(crate) fn snapshot(dir: &Path, version: &str, retry_on: &str, num_retries: u32) {
    flood(dir, version, retry_on, num_retries, 0);
}

/// As `snapshot`, the management server sending `flood` versions more at once after it.
fn flood(dir: &Path, version: &str, retry_on: &str, num_retries: u32, flood: u32) {
    let routes = json!({"name": "shop-routes", "virtual_hosts": [{"name": "shop", "domains": ["*"], "routes": [
        {"name": "inventory", "match": {"prefix": "/shop.Inventory/"}, "route": {"cluster": "inventory",
            "retry_policy": {"retry_on": retry_on, "num_retries": num_retries}}}
    ]}]});
    let text =
        json!({"version": version, "route_configurations": [routes], "flood": flood}).to_string();
    std::fs::write(dir.join("snapshot.json.tmp"), text).unwrap();
    std::fs::rename(dir.join("snapshot.json.tmp"), dir.join("snapshot.json")).unwrap();
}

/// The xDS part of the server's status.
pub(crate) fn xds(server: &Server) -> Value {
    server.call("GET", "/v1/policies", "", None).1["xds"].clone()
}

/// Waits until the server ACKed `version`.
pub(crate) fn acked(server: &Server, version: &str) {
    wait_for(&format!("the ACK of version {version}"), || {
        (xds(server)["last_ack"]["version"] == version).then_some(())
    });
}

/// The decision for an idempotent inventory read that failed with UNAVAILABLE.
pub(crate) fn decide(server: &Server) -> String {
    let (status, answer) = server.post(
        "/v1/decide",
        json!({"request": {"type": "grpc", "route": "/shop.Inventory/Get", "idempotent": true}, "reason": {"grpc_status": "UNAVAILABLE"}}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["policy"], "xds/shop/inventory", "{answer}");
    answer["decision"].as_str().unwrap().to_owned()
}

/// The requests the management server logged.
pub(crate) fn ads_log(dir: &Path) -> Vec<Value> {
    (std::fs::read_to_string(dir.join("ads.jsonl"))
        .unwrap_or_default()
        .lines())
    .map(|l| serde_json::from_str(l).unwrap())
    .collect()
}

/// `rebound serve` following the control plane on `port`, its configuration in `dir`.
fn serve(dir: &Path, port: u16) -> Server {
    serve_watching(
        dir,
        port,
        "rebound-test",
        "route_configurations = [\"shop-routes\"]",
    )
}

/// `rebound serve` following the control plane on `port` as node `node`, `watch` naming what
/// it subscribes to (a `[source.xds]` line).
pub(crate) fn serve_watching(dir: &Path, port: u16, node: &str, watch: &str) -> Server {
    let config = format!(
        "default_policy = \"standard\"\n[policies.standard]\nbuiltin = \"fail-fast\"\n\
         [source.xds]\nserver = \"http://127.0.0.1:{port}\"\nnode_id = \"{node}\"\n{watch}\n"
    );
    std::fs::write(dir.join("rebound.toml"), config).unwrap();
    Server::start(&dir.join("rebound.toml"), "127.0.0.1:0", None)
}

#[test]
fn an_xds_source_follows_its_control_plane_with_ack_nack_and_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    snapshot(path, "1", "unavailable", 3);
    let (plane, port) = control_plane(path, 0);
    let server = serve(path, port);
    acked(&server, "1");
    assert_eq!(decide(&server), "retry");

    // A new snapshot changes decisions without a restart.
    snapshot(path, "2", "cancelled", 3);
    acked(&server, "2");
    assert_eq!(decide(&server), "cancel");

    // An invalid one is NACKed with its field; version 2 keeps serving.
    snapshot(path, "3", "unavailable", 0);
    let nack = wait_for("the NACK of version 3", || {
        let status = xds(&server);
        (status["last_nack"][0]["version"] == "3").then_some(status)
    });
    assert!(
        nack["last_nack"][1]
            .as_str()
            .unwrap()
            .contains("num_retries: must be greater than zero"),
        "{nack}"
    );
    assert_eq!(nack["last_ack"]["version"], "2");
    assert_eq!(decide(&server), "cancel");
    let logged = wait_for("the NACK in the management server's log", || {
        ads_log(path).into_iter().find(|e| e["answer"] == "nack")
    });
    assert_eq!(logged["version_info"], "2", "{logged}");
    assert!(
        logged["error_detail"]
            .as_str()
            .unwrap()
            .contains("num_retries"),
        "{logged}"
    );
    assert!(ads_log(path)
        .iter()
        .any(|e| e["answer"] == "ack" && e["version_info"] == "2"));

    // The control plane goes away: the last good version serves, and the status says so.
    drop(plane);
    wait_for("the stream's loss", || {
        (xds(&server)["connected"] == false).then_some(())
    });
    assert_eq!(decide(&server), "cancel");
    let (_, health) = server.call("GET", "/health", "", None);
    assert_eq!(health["status"], "degraded", "{health}");

    // It comes back on the same port with a new snapshot: reconnected, ACKed, decisions follow.
    snapshot(path, "4", "unavailable", 2);
    let (_plane, _) = control_plane(path, port);
    acked(&server, "4");
    assert_eq!(decide(&server), "retry");
    let status = xds(&server);
    assert_eq!(status["connected"], true);
    assert!(status["reconnects"].as_u64() >= Some(1), "{status}");
}

/// Writes snapshot `version`: the inventory route retrying UNAVAILABLE three times, and its
/// cluster `cluster`.
fn with_cluster(dir: &Path, version: &str, cluster: Value) {
    let routes = json!({"name": "shop-routes", "virtual_hosts": [{"name": "shop", "domains": ["*"], "routes": [
        {"name": "inventory", "match": {"prefix": "/shop.Inventory/"}, "route": {"cluster": "inventory",
            "retry_policy": {"retry_on": "unavailable", "num_retries": 3}}}
    ]}]});
    let text = json!({"version": version, "route_configurations": [routes], "clusters": [cluster]})
        .to_string();
    std::fs::write(dir.join("snapshot.json.tmp"), text).unwrap();
    std::fs::rename(dir.join("snapshot.json.tmp"), dir.join("snapshot.json")).unwrap();
}

/// The inventory cluster with a retry budget of `percent` and a floor of `floor`.
fn budgeted_cluster(percent: f64, floor: u32) -> Value {
    json!({"name": "inventory", "circuit_breakers": {"thresholds": [{
        "max_requests": 100,
        "retry_budget": {"budget_percent": {"value": percent}, "min_retry_concurrency": floor}
    }]}, "outlier_detection": {"enforcing_failure_percentage": 100, "failure_percentage_threshold": 60}})
}

/// How Rebound answered the clusters of `version`, once it has (the management server's log).
fn clusters_answer(dir: &Path, version: &str) -> Option<Value> {
    let log = ads_log(dir);
    let nonces: Vec<Value> = (log.iter())
        .filter(|e| {
            e["sent"]["version"] == version
                && e["sent"]["type_url"]
                    .as_str()
                    .is_some_and(|t| t.ends_with(".Cluster"))
        })
        .map(|e| e["sent"]["nonce"].clone())
        .collect();
    log.into_iter()
        .find(|e| e["answer"].is_string() && nonces.contains(&e["response_nonce"]))
}

/// docs/xds.md "Clusters": the client subscribes to the cluster its routes forward to; the
/// cluster's retry budget decides its route's retries (a budget of 0 % with no floor refuses
/// them, a new version allowing them lets them go, without a restart) and its failure-percentage
/// ejection becomes the route's breaker; a cluster Envoy would refuse (a `budget_percent` past
/// 100) is NACKed with its field, the version serving stays.
#[test]
fn a_cluster_s_retry_budget_and_ejection_follow_the_control_plane() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    with_cluster(path, "1", budgeted_cluster(0.0, 0));
    let (_plane, port) = control_plane(path, 0);
    let server = serve(path, port);
    let answer = wait_for("the answer to version 1's clusters", || {
        clusters_answer(path, "1")
    });
    assert_eq!(answer["answer"], "ack", "{answer}");
    assert_eq!(answer["resource_names"], json!(["inventory"]), "{answer}");
    assert_ne!(decide(&server), "retry", "a budget of 0 % with no floor");
    let (_, status) = server.call("GET", "/v1/policies", "", None);
    let policy = (status["policies"].as_array().unwrap().iter())
        .find(|p| p["name"] == "xds/shop/inventory")
        .unwrap()
        .clone();
    assert_eq!(policy["budget"], "xds/cluster/inventory", "{policy}");
    let overlay = &status["overlay"];
    assert_eq!(overlay["routes_first"], 1, "{overlay}");
    assert!(
        overlay["in_effect"]
            .to_string()
            .contains("budgets.xds/cluster/inventory"),
        "{overlay}"
    );
    let breakers = status["breakers"].to_string();
    assert!(breakers.contains("xds/cluster/inventory"), "{breakers}");
    let ignored = status["xds"]["ignored"].to_string();
    assert!(
        ignored.contains("inventory: circuit_breakers.thresholds[0].max_requests"),
        "{ignored}"
    );

    with_cluster(path, "2", budgeted_cluster(100.0, 100));
    wait_for("the ACK of version 2's clusters", || {
        clusters_answer(path, "2").filter(|a| a["answer"] == "ack")
    });
    assert_eq!(decide(&server), "retry");

    with_cluster(path, "3", budgeted_cluster(150.0, 100));
    let nack = wait_for("the answer to version 3's clusters", || {
        clusters_answer(path, "3")
    });
    assert_eq!(nack["answer"], "nack", "{nack}");
    assert_eq!(nack["version_info"], "2", "{nack}");
    assert!(
        nack["error_detail"].as_str().unwrap().contains(
            "inventory: circuit_breakers.thresholds[0].retry_budget.budget_percent.value: 150 is out of range"
        ),
        "{nack}"
    );
    assert_eq!(decide(&server), "retry");
}

/// docs/xds.md "The xDS source": a control plane sending versions faster than they are applied
/// gets each answered in turn, the last one serving, and the server's memory stays flat: a
/// second flood of 1 000 versions grows its resident memory by less than 8 MiB over the first.
#[test]
fn a_flood_of_versions_is_answered_in_turn_with_memory_flat() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    flood(path, "a", "unavailable", 1, 1000);
    let (_plane, port) = control_plane(path, 0);
    let server = serve(path, port);
    acked(&server, "a.1000");
    let after_first = server.resident_bytes();
    flood(path, "b", "unavailable", 1, 1000);
    acked(&server, "b.1000");
    let after_second = server.resident_bytes();
    let status = xds(&server);
    assert_eq!(status["acks"], 2002, "{status}");
    assert_eq!(status["nacks"], 0, "{status}");
    assert_eq!(decide(&server), "retry");
    let growth = after_second.saturating_sub(after_first);
    assert!(
        growth < 8 << 20,
        "grew {growth} bytes: {after_first} then {after_second}"
    );
}

/// gRPC's own xDS client (grpcio's, tests/xds/grpcio_client.py), kept subscribed; killed when
/// dropped.
fn grpcio_client(port: u16) -> ControlPlane {
    let child = Command::new(tree().join(".tools/xds/bin/python"))
        .arg(tree().join("tests/xds/grpcio_client.py"))
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    ControlPlane(child)
}

/// How `node` answered the response of `version` (its nonce), once it has.
fn answer_of(dir: &Path, node: &str, version: &str) -> Option<String> {
    let log = ads_log(dir);
    // Each stream is sent its own response; any of the node's answers to a nonce of this
    // version will do, each stream answering the same resources the same way.
    let nonces: Vec<Value> = (log.iter())
        .filter(|e| e["sent"]["version"] == version)
        .map(|e| e["sent"]["nonce"].clone())
        .collect();
    (log.iter())
        .filter(|e| {
            e["node"] == node
                && e["type_url"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("RouteConfiguration"))
        })
        .find(|e| nonces.contains(&e["response_nonce"]))
        .map(|e| e["answer"].as_str().unwrap().to_owned())
}

/// docs/xds.md "The conversion": the same snapshots given to gRPC's own xDS client (grpcio)
/// and to Rebound are accepted and refused alike: valid ones, a `num_retries` of 0 and a
/// `retry_back_off` without `base_interval` refused, zero and inverted intervals and unknown
/// `retry_on` conditions accepted.
#[test]
fn rebound_and_grpc_s_own_xds_client_accept_and_refuse_the_same_resources() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let cases = [
        (
            "ok",
            json!({"retry_on": "unavailable", "num_retries": 2}),
            "ack",
        ),
        (
            "zero-retries",
            json!({"retry_on": "unavailable", "num_retries": 0}),
            "nack",
        ),
        (
            "unknown-condition",
            json!({"retry_on": "5xx,reset,unavailable"}),
            "ack",
        ),
        (
            "no-base",
            json!({"retry_on": "unavailable", "retry_back_off": {"max_interval": "1s"}}),
            "nack",
        ),
        (
            "zero-base",
            json!({"retry_on": "unavailable", "retry_back_off": {"base_interval": "0s"}}),
            "ack",
        ),
        (
            "inverted",
            json!({"retry_on": "unavailable", "retry_back_off": {"base_interval": "1s", "max_interval": "0.5s"}}),
            "ack",
        ),
    ];
    let write = |version: &str, policy: &Value| {
        let routes = json!({"name": "shop-routes", "virtual_hosts": [{"name": "shop", "domains": ["*"], "routes": [
            {"name": "inventory", "match": {"prefix": "/shop.Inventory/"}, "route": {"cluster": "inventory", "retry_policy": policy}}
        ]}]});
        let text = json!({"version": version, "route_configurations": [routes]}).to_string();
        std::fs::write(path.join("snapshot.json.tmp"), text).unwrap();
        std::fs::rename(path.join("snapshot.json.tmp"), path.join("snapshot.json")).unwrap();
    };
    write(cases[0].0, &cases[0].1);
    let (_plane, port) = control_plane(path, 0);
    let _grpcio = grpcio_client(port);
    let _server = serve(path, port);
    for (version, policy, expected) in &cases {
        write(version, policy);
        let answers = wait_for(&format!("both clients' answers to {version}"), || {
            let grpc = answer_of(path, "grpcio-check", version)?;
            let rebound = answer_of(path, "rebound-test", version)?;
            Some((grpc, rebound))
        });
        assert_eq!(
            answers,
            (expected.to_string(), expected.to_string()),
            "{version}"
        );
    }
}
