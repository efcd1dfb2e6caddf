//! What the OTLP export adds to a request: the executor running a request that fails once
//! (`SOCKET_NOT_AVAILABLE`, retried by best effort) and then succeeds — two attempt spans, one
//! decision, the library's metrics — with nothing installed, and with the export's span layer
//! and metrics recorder sending to an OTLP/HTTP collector on loopback (a thread that answers
//! every export 200), measured in one run, interleaved, and printed as a table with the
//! difference. The export's own thread shares the machine with the requests, as it would.
//! Run: `env -u RUST_BACKTRACE cargo bench -p rebound-core --no-default-features --features otlp
//! --bench otlp`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rebound::executor::{Executor, Failure};
use rebound::otlp::{OtlpConfig, OtlpExport, OtlpProtocol};
use rebound::{reasons, Orchestrator, Request, RequestType};
use tracing_subscriber::layer::SubscriberExt;

#[path = "support/measure.rs"]
mod measure;
use measure::measure_interleaved;

/// Bytes of exports the collector received.
static RECEIVED: AtomicU64 = AtomicU64::new(0);

/// A collector on loopback that reads each export and answers 200; its address.
fn collector() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).unwrap();
                        if header.trim().is_empty() {
                            break;
                        }
                        let lower = header.to_ascii_lowercase();
                        if let Some(value) = lower.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    RECEIVED.fetch_add(length as u64, Ordering::Relaxed);
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
                }
            });
        }
    });
    address
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let executor = Executor::new(Orchestrator::default());
    let request = |executor: &Executor<Orchestrator>| {
        runtime
            .block_on(async {
                // Started on the runtime's paused clock, which the retry delay advances.
                let request = Request::new(1, RequestType::Get, Duration::from_secs(10))
                    .unwrap()
                    .with_start(tokio::time::Instant::now().into_std());
                executor
                    .run(request, |attempt| async move {
                        match attempt.number() {
                            0 => Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE)),
                            _ => Ok(()),
                        }
                    })
                    .await
            })
            .unwrap();
    };
    let mut config = OtlpConfig::default();
    config.endpoint = Some(collector());
    config.protocol = Some(OtlpProtocol::HttpProtobuf);
    config.metrics_interval_ms = 1_000;
    let export = OtlpExport::start(&config).unwrap();
    let exported = tracing::Dispatch::new(tracing_subscriber::registry().with(export.layer()));
    let recorder = export.recorder().unwrap();
    let nothing = tracing::Dispatch::none();
    rebound::telemetry::enable();
    let mut off = || {
        tracing::dispatcher::with_default(&nothing, || {
            metrics::with_local_recorder(&metrics::NoopRecorder, || request(&executor))
        })
    };
    let mut on = || {
        tracing::dispatcher::with_default(&exported, || {
            metrics::with_local_recorder(&recorder, || request(&executor))
        })
    };
    // The export's row first: a span's callsite first reached with no subscriber at all is
    // never enabled afterwards (tracing caches its interest), as in an application that
    // installs its subscriber at start.
    let times = measure_interleaved(21, 2_000, &mut [&mut on, &mut off]);
    println!("| request (fails once, then succeeds; 1 thread) | µs | added by the export |");
    println!("| --- | ---: | ---: |");
    let [on, off] = [times[0], times[1]].map(|t| t.as_secs_f64() * 1e6);
    println!("| nothing installed (recording enabled, no-op recorder) | {off:.2} | |");
    println!(
        "| OTLP/HTTP export: spans and metrics | {on:.2} | {:.2} ({:.1}×) |",
        on - off,
        on / off
    );
    let dropped = export.dropped_spans();
    export.shutdown();
    println!(
        "spans dropped (queue full) of {} ended: {dropped}; exports received: {:.1} MB",
        22 * 2_000 * 3,
        RECEIVED.load(Ordering::Relaxed) as f64 / 1e6
    );
}
