//! The simulation checked against a real server (docs/metastability.md "Checked against a real
//! server"): the loopback scenario is simulated, and run for real against a server on
//! loopback with the scenario's service rate, queue and capacity fault, its requests sent by
//! the executor under the same policies of the same registry configuration. Both must put
//! each cell on the same side of the recovery boundary, and a cell that recovers must recover
//! within `TOLERANCE_S` of the simulation's median. Outcomes are compared, not speeds: the
//! cells sit far from the boundary, and the server serves on its own clock.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rebound::config::RegistryConfig;
use rebound::executor::{Executor, Failure};
use rebound::registry::PolicyRegistry;
use rebound::{reasons, Request, RequestType};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

use crate::support::{rebound, success_stdout};

/// How far the real recovery time may fall from the simulation's median, in seconds: two bars
/// of the scenario's chart.
const TOLERANCE_S: f64 = 1.0;

fn scenario_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/scenarios/metastability/loopback.toml")
}

/// What the real run reads from the scenario.
#[derive(Clone, Copy)]
struct Model {
    rate_per_s: f64,
    service_rate_per_s: f64,
    queue: usize,
    cut: f64,
    fault_s: (f64, f64),
    duration_s: f64,
    timeout: Duration,
    bucket_s: f64,
    goodput_share: f64,
    hold_s: f64,
}

impl Model {
    fn read(cut: f64) -> Self {
        let text = std::fs::read_to_string(scenario_path()).unwrap();
        let s: toml::Table = toml::from_str(&text).unwrap();
        let f = |v: &toml::Value| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap();
        let fault = &s["fault"][0];
        Model {
            rate_per_s: f(&s["workload"]["rate_per_s"]),
            service_rate_per_s: f(&s["cluster"]["service_rate_per_s"]),
            queue: f(&s["cluster"]["queue"]) as usize,
            cut,
            fault_s: (f(&fault["from_s"]), f(&fault["until_s"])),
            duration_s: f(&s["duration_s"]),
            timeout: Duration::from_millis(f(&s["workload"]["mix"][0]["timeout_ms"]) as u64),
            bucket_s: f(&s["bucket_s"]),
            goodput_share: f(&s["recovery"]["goodput_share"]),
            hold_s: f(&s["recovery"]["hold_s"]),
        }
    }

    /// The service rate at `t_s` seconds from the start.
    fn rate_at(&self, t_s: f64) -> f64 {
        let (from, until) = self.fault_s;
        if (from..until).contains(&t_s) {
            self.service_rate_per_s * (1.0 - self.cut)
        } else {
            self.service_rate_per_s
        }
    }
}

/// A job waiting for the server: when it arrived, and how to answer it when served (nobody
/// may be listening any more).
type Job = (Instant, oneshot::Sender<()>);

/// The server: one worker serving a bounded FIFO queue, each job for an exponential time at
/// the rate of the moment its service starts; a job that does not fit is dropped unanswered.
async fn serve(model: Model, start: Instant) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let queue: Arc<(Mutex<VecDeque<Job>>, Notify)> = Arc::default();
    let worker = queue.clone();
    tokio::spawn(async move {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut free_at = start;
        loop {
            let (arrived, answer) = loop {
                if let Some(job) = worker.0.lock().unwrap().pop_front() {
                    break job;
                }
                worker.1.notified().await;
            };
            // Service starts when the job arrived or the one before ended, on the schedule
            // rather than when the timer woke: its lateness does not add up.
            let begin = arrived.max(free_at);
            let rate = model.rate_at((begin - start).as_secs_f64());
            let service = -(1.0 - rng.random::<f64>()).ln() / rate;
            free_at = begin + Duration::from_secs_f64(service);
            tokio::time::sleep_until(free_at).await;
            let _ = answer.send(());
        }
    });
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut byte = [0u8];
                if stream.read_exact(&mut byte).await.is_err() {
                    return;
                }
                let (tx, rx) = oneshot::channel();
                {
                    let mut waiting = queue.0.lock().unwrap();
                    // The one in service has left the queue.
                    if waiting.len() >= model.queue {
                        return;
                    }
                    waiting.push_back((Instant::now(), tx));
                }
                queue.1.notify_one();
                if rx.await.is_ok() {
                    let _ = stream.write_all(b"k").await;
                }
            });
        }
    });
    addr
}

/// One attempt: a connection, a request byte, the answer byte.
async fn attempt(addr: std::net::SocketAddr) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(b"q").await?;
    let mut byte = [0u8];
    stream.read_exact(&mut byte).await?;
    Ok(())
}

/// Runs the scenario for real under `policy`: Poisson arrivals, each request through the
/// executor; when each request arrived and, if it succeeded, when it ended (seconds).
async fn live(model: Model, policy: &str) -> Vec<(f64, Option<f64>)> {
    let path = scenario_path().parent().unwrap().join("rebound.toml");
    let mut config = RegistryConfig::load(&path).unwrap();
    config.default_policy = policy.to_owned();
    config.watch.enabled = false;
    let executor = Arc::new(Executor::new(PolicyRegistry::new(config).unwrap()));
    let start = Instant::now();
    let addr = serve(model, start).await;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let mut t = 0.0;
    let mut requests = Vec::new();
    loop {
        t += -(1.0 - rng.random::<f64>()).ln() / model.rate_per_s;
        if t >= model.duration_s {
            break;
        }
        tokio::time::sleep_until(start + Duration::from_secs_f64(t)).await;
        let executor = executor.clone();
        let id = requests.len() as u64 + 1;
        requests.push(tokio::spawn(async move {
            let arrived = start.elapsed().as_secs_f64();
            let request = Request::new(id, RequestType::Get, model.timeout).unwrap();
            let result = executor
                .run(request, |a| async move {
                    a.dispatched("node-0");
                    (attempt(addr).await)
                        .map_err(|e| Failure::reason(e, reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT))
                })
                .await;
            (arrived, result.ok().map(|()| start.elapsed().as_secs_f64()))
        }));
    }
    let mut ends = Vec::new();
    for request in requests {
        ends.push(request.await.unwrap());
    }
    ends
}

/// Seconds from the fault's end to recovery, as docs/simulate.md "Recovery" defines it.
fn recovered_after_s(model: &Model, requests: &[(f64, Option<f64>)]) -> Option<f64> {
    let bars = (model.duration_s / model.bucket_s) as usize;
    let (mut arrived, mut succeeded) = (vec![0u64; bars], vec![0u64; bars]);
    let bar = |t: f64| (t / model.bucket_s) as usize;
    for (at, end) in requests {
        arrived[bar(*at).min(bars - 1)] += 1;
        if let Some(end) = end.filter(|e| bar(*e) < bars) {
            succeeded[bar(end)] += 1;
        }
    }
    let hold = (model.hold_s / model.bucket_s).ceil() as usize;
    let first = (model.fault_s.1 / model.bucket_s).ceil() as usize;
    (first..=bars - hold)
        .find(|b| {
            let a: u64 = arrived[*b..b + hold].iter().sum();
            let s: u64 = succeeded[*b..b + hold].iter().sum();
            s as f64 >= model.goodput_share * a as f64
        })
        .map(|b| b as f64 * model.bucket_s - model.fault_s.1)
}

#[test]
fn the_simulation_and_a_real_server_agree_on_each_cell() {
    let dir = tempfile::tempdir().unwrap();
    let output = success_stdout(
        rebound()
            .arg("simulate")
            .arg(scenario_path())
            .args([
                "--json",
                "--seeds",
                "20",
                "--sweep",
                "fault[0].cut=0.3..0.9:2",
                "--chart",
            ])
            .arg(dir.path().join("map.svg")),
    );
    let simulated: Value = serde_json::from_slice(&output).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let cells = [
        (0, 0.3, "retries-fast"),
        (1, 0.9, "retries-fast"),
        (1, 0.9, "no-retries-fast"),
    ];
    let runs = runtime.block_on(async {
        let runs = cells.map(|(_, cut, policy)| tokio::spawn(live(Model::read(cut), policy)));
        let mut ends = Vec::new();
        for run in runs {
            ends.push(run.await.unwrap());
        }
        ends
    });
    for ((cell, cut, policy), requests) in cells.iter().zip(&runs) {
        let sim = (simulated["cells"][cell]["policies"]
            .as_array()
            .unwrap()
            .iter())
        .find(|p| p["policy"] == *policy)
        .unwrap();
        let stuck = sim["p_no_recovery"].as_f64().unwrap() > 0.5;
        let real = recovered_after_s(&Model::read(*cut), requests);
        let at = format!("cut {cut}, {policy}: simulated {sim}, real {real:?}");
        eprintln!("{at}");
        assert_eq!(stuck, real.is_none(), "{at}");
        if let (Some(real), Some(median)) = (real, sim["median_recovery_s"].as_f64()) {
            assert!((real - median).abs() <= TOLERANCE_S, "{at}");
        }
    }
}
