//! A hedge after an observed percentile, against two real servers on loopback that the test
//! starts (docs/hedging.md "Delays from observed latency"): a node that answered quickly and
//! then stalls is hedged after the percentile of its authority's answers, not after the
//! ceiling, and the copy goes to the next node of the plan (`NodeChoice::Next`: Cassandra's
//! speculative execution, reference 003), which answers. A non-idempotent request to the same
//! stalled node is never copied: it waits for its one attempt (RFC 9110 §9.2.2).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rebound::config::RegistryConfig;
use rebound::executor::{Attempt, Executor, Failure};
use rebound::registry::PolicyRegistry;
use rebound::{HttpMethod, NodeChoice, Request, RequestType};

use crate::line_servers::{send_line, LineServer};

/// One attempt to the node its attempt names: the first for `Same`, the second for `Next`.
async fn ask(attempt: &Attempt, nodes: [SocketAddr; 2]) -> Result<String, Failure<String>> {
    let addr = match attempt.node() {
        NodeChoice::Same => nodes[0],
        NodeChoice::Next => nodes[1],
    };
    send_line(attempt, addr).await
}

fn request(id: u64, method: HttpMethod) -> Request {
    Request::new(id, RequestType::Http, Duration::from_secs(120))
        .unwrap()
        .with_method(method)
        .with_authority("inventory.example")
}

/// The slow node's peer answers the hedge: 70 reads answered by the first node teach the
/// authority's 95th percentile (a few ms; the floor is 20 ms), then the first node stalls; the
/// next read is copied to the second node after the percentile, far sooner than the 60 s
/// ceiling, and its answer is the second node's. A POST to the stalled node is not copied. The
/// test allows 30 s, half the ceiling: only a delay taken from the observed latencies fits in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_percentile_hedge_goes_to_the_slow_node_s_peer() {
    // The first node answers 70 lines, then stalls; the second answers every line.
    let first = LineServer::start(|n| (n < 70).then_some("first")).await;
    let second = LineServer::start(|_| Some("second")).await;
    let nodes = [first.addr, second.addr];
    let config = "default_policy = \"reads\"\n[watch]\nenabled = false\n[policies.reads]\nbuiltin = \"best-effort\"\nspeculative_execution = { percentile = 95, min_delay_ms = 20, max_delay_ms = 60000, max_executions = 2 }\n";
    let config = RegistryConfig::parse(
        config,
        std::path::Path::new("rebound.toml"),
        std::path::Path::new("."),
    )
    .unwrap();
    let executor = Executor::new(Arc::new(PolicyRegistry::new(config).unwrap()));
    for id in 0..70 {
        let answer = executor
            .run(request(id, HttpMethod::Get), |attempt| async move {
                ask(&attempt, nodes).await
            })
            .await
            .unwrap();
        assert_eq!(answer, "first");
    }
    assert_eq!((first.lines(), second.lines()), (70, 0));
    let hedged = tokio::time::timeout(
        Duration::from_secs(30),
        executor.run(request(70, HttpMethod::Get), |attempt| async move {
            ask(&attempt, nodes).await
        }),
    )
    .await
    .expect("hedged after the observed percentile, not after the 60 s ceiling");
    assert_eq!(hedged.unwrap(), "second");
    assert_eq!((first.lines(), second.lines()), (71, 1));

    // A non-idempotent request is never copied: it waits on the stalled node, alone.
    let post = tokio::time::timeout(
        Duration::from_secs(1),
        executor.run(request(71, HttpMethod::Post), |attempt| async move {
            ask(&attempt, nodes).await
        }),
    )
    .await;
    assert!(
        post.is_err(),
        "the POST is still waiting for its one attempt"
    );
    assert_eq!((first.lines(), second.lines()), (72, 1));
}
