//! What an armed attempt timeout adds to an attempt (docs/executor.md "Timing"), in one run:
//! the executor and the tower layer running a request answered at once, and one that fails
//! once (`SOCKET_NOT_AVAILABLE`, retried by best effort) and then succeeds, each without an
//! attempt timeout and with one of 1 s that never fires, interleaved round by round. The
//! runtime's clock is paused, so the retry's wait is not what is measured. Run:
//! `env -u RUST_BACKTRACE cargo bench -p rebound-core --bench attempt_timeout`.

use std::sync::Arc;
use std::time::Duration;

use rebound::executor::{Executor, Failure};
use rebound::layer::{Classifier, RetryLayer};
use rebound::{reasons, Orchestrator, Request, RequestType};
use tower::{service_fn, Layer, Service, ServiceExt};

#[path = "support/measure.rs"]
mod measure;
use measure::measure_interleaved;

/// The layer's request: whether the first attempt fails.
#[derive(Clone, Copy)]
struct Call {
    fails_once: bool,
}

#[derive(Clone)]
struct Describe;

impl Classifier<Call, &'static str> for Describe {
    fn request(&self, _: &Call) -> Request {
        Request::new(1, RequestType::Get, Duration::from_secs(10))
            .unwrap()
            .with_start(tokio::time::Instant::now().into_std())
    }
    fn failure(&self, error: &'static str) -> Failure<&'static str> {
        Failure::reason(error, reasons::SOCKET_NOT_AVAILABLE)
    }
}

/// A row's two paths: without an attempt timeout, and with one armed.
type Pair<'a> = [Box<dyn FnMut() + 'a>; 2];

fn orchestrator(armed: bool) -> Arc<Orchestrator> {
    let orchestrator = Orchestrator::default();
    Arc::new(match armed {
        true => orchestrator.with_attempt_timeout(Duration::from_secs(1)),
        false => orchestrator,
    })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let executors = [false, true].map(|armed| Executor::new(orchestrator(armed)));
    let run = |executor: &Executor<Arc<Orchestrator>>, fails_once: bool| {
        runtime
            .block_on(async {
                let request = Request::new(1, RequestType::Get, Duration::from_secs(10))
                    .unwrap()
                    .with_start(tokio::time::Instant::now().into_std());
                executor
                    .run(request, |attempt| async move {
                        match attempt.number() {
                            0 if fails_once => {
                                Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE))
                            }
                            _ => Ok(()),
                        }
                    })
                    .await
            })
            .unwrap();
    };
    let layers = executors.clone().map(|executor| {
        RetryLayer::new(executor, Describe).layer(service_fn(|call: Call| async move {
            Ok::<_, &'static str>(call.fails_once)
        }))
    });
    let through = |index: usize, fails_once: bool| {
        let mut service = layers[index].clone();
        runtime
            .block_on(async move { service.ready().await?.call(Call { fails_once }).await })
            .unwrap();
    };
    let mut rows: Vec<(&str, Pair)> = vec![
        (
            "the executor, a request answered at once",
            [
                Box::new(|| run(&executors[0], false)),
                Box::new(|| run(&executors[1], false)),
            ],
        ),
        (
            "the executor, a request failing once, then answered",
            [
                Box::new(|| run(&executors[0], true)),
                Box::new(|| run(&executors[1], true)),
            ],
        ),
        (
            "the tower layer, a call answered at once",
            [
                Box::new(|| through(0, false)),
                Box::new(|| through(1, false)),
            ],
        ),
    ];
    println!("| row | ns without | ns with an attempt timeout armed | added |");
    println!("| --- | ---: | ---: | ---: |");
    for (row, [without, with]) in &mut rows {
        let times = measure_interleaved(21, 20_000, &mut [&mut **without, &mut **with]);
        let [without, with] = [times[0], times[1]].map(|t| t.as_secs_f64() * 1e9);
        println!(
            "| {row} | {without:.0} | {with:.0} | {:+.0} ({:+.1} %) |",
            with - without,
            (with / without - 1.0) * 100.0
        );
    }
}
