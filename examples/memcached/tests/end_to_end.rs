//! End to end: the example client against a real memcached on loopback,
//! with faults made by the test (the server down at first, connections cut in flight,
//! responses held past the deadline, TMPFAIL injected by a proxy). Whether a non-idempotent
//! increment was applied more than once is read from the server's own counters.

mod support;

use std::time::{Duration, Instant};

use rebound::executor::ExecuteError;
use rebound_memcached::protocol::opcode;
use rebound_memcached::Client;
use support::proxy::{FaultProxy, Faults};
use support::server::{free_port, Memcached};

const TIMEOUT: Duration = Duration::from_secs(5);

/// The client through a fault proxy in front of a fresh memcached.
async fn proxied(timeout: Duration) -> (Memcached, FaultProxy, Client) {
    let server = Memcached::start(free_port());
    let proxy = FaultProxy::start(server.addr).await;
    let client = Client::new(proxy.addr, timeout);
    (server, proxy, client)
}

fn outcome(error: &ExecuteError<rebound_memcached::AttemptError>) -> (&'static str, String) {
    let retry_error = error.retry_error().unwrap_or_else(|| panic!("{error:?}"));
    (retry_error.name(), retry_error.to_string())
}

/// Reference 001: a refused connection is a pre-dispatch failure (SOCKET_NOT_AVAILABLE), which
/// allows the retry of any request, so even an increment waits for a server that is down at
/// first, and is applied once when it comes up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_wait_for_a_server_that_is_down_at_first() {
    let addr = free_port();
    let client = Client::new(addr, TIMEOUT);
    let starter = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(300));
        Memcached::start(addr)
    });
    let started = Instant::now();
    client.set("visits", b"10").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    let server = starter.await.unwrap();
    assert_eq!(client.incr("visits", 1, 0).await.unwrap(), 11);
    assert_eq!(client.get("visits").await.unwrap(), Some(b"11".to_vec()));
    assert_eq!(server.increments_applied().await, 1);
}

/// Reference 001 (unsafe retries): when the connection is cut after the server applied the
/// request, an idempotent get is sent again and answers; a non-idempotent increment ends
/// RequestCanceled, is never re-sent, and the server applied it exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_in_flight_retries_a_get_and_never_resends_an_increment() {
    let (server, proxy, client) = proxied(TIMEOUT).await;
    client.set("k", b"v").await.unwrap();
    client.set("n", b"0").await.unwrap();

    proxy.arm(Faults {
        cut_after_forwarding: 1,
        ..Faults::default()
    });
    assert_eq!(client.get("k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(proxy.forwarded(opcode::GET), 2, "the get was sent again");

    proxy.arm(Faults {
        cut_after_forwarding: 1,
        ..Faults::default()
    });
    let error = client.incr("n", 1, 0).await.unwrap_err();
    let (name, text) = outcome(&error);
    assert_eq!(name, "RequestCanceled");
    assert!(text.contains("SOCKET_CLOSED_WHILE_IN_FLIGHT"), "{text}");
    let context = error.context().unwrap();
    assert_eq!(context.last_dispatched_to, Some(proxy.addr.to_string()));
    assert!(!context.idempotent);
    assert_eq!(proxy.received(opcode::INCREMENT), 1, "never re-sent");
    assert_eq!(server.increments_applied().await, 1, "applied once");

    assert_eq!(client.get("n").await.unwrap(), Some(b"1".to_vec()));
    // The client recovers: the next increment counts once more.
    assert_eq!(client.incr("n", 1, 0).await.unwrap(), 2);
    assert_eq!(server.increments_applied().await, 2);
}

/// Reference 002 "The Ubiquitous TimeoutException": a response held past the deadline ends an
/// increment (dispatched, not idempotent) as an ambiguous timeout, and a get as an unambiguous
/// one, at the deadline; the increment was applied once and never re-sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_held_past_the_deadline_times_out_ambiguous_only_for_the_increment() {
    let timeout = Duration::from_millis(300);
    let (server, proxy, client) = proxied(timeout).await;
    client.set("k", b"v").await.unwrap();
    client.set("n", b"0").await.unwrap();

    proxy.arm(Faults {
        hold_response: 1,
        ..Faults::default()
    });
    let started = Instant::now();
    let error = client.incr("n", 1, 0).await.unwrap_err();
    let waited = started.elapsed();
    assert_eq!(outcome(&error).0, "AmbiguousTimeout");
    assert!(waited >= timeout && waited < timeout * 3, "{waited:?}");
    assert_eq!(proxy.received(opcode::INCREMENT), 1, "never re-sent");
    assert_eq!(server.increments_applied().await, 1, "applied once");
    assert_eq!(client.get("n").await.unwrap(), Some(b"1".to_vec()));

    proxy.arm(Faults {
        hold_response: 1,
        ..Faults::default()
    });
    let error = client.get("k").await.unwrap_err();
    assert_eq!(outcome(&error).0, "UnambiguousTimeout");
}

/// Reference 001 "Response Code Classification": TMPFAIL (0x86) is KV_TEMPORARY_FAILURE, which
/// allows the retry of a non-idempotent request (the server did not apply it): the increment
/// is sent until the server takes it, and applied once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_failures_are_retried_and_the_increment_applied_once() {
    let (server, proxy, client) = proxied(TIMEOUT).await;
    client.set("n", b"100").await.unwrap();
    proxy.arm(Faults {
        tmpfail: 3,
        ..Faults::default()
    });
    assert_eq!(client.incr("n", 5, 0).await.unwrap(), 105);
    assert_eq!(proxy.received(opcode::INCREMENT), 4);
    assert_eq!(proxy.forwarded(opcode::INCREMENT), 1);
    assert_eq!(server.increments_applied().await, 1);
    assert_eq!(client.get("n").await.unwrap(), Some(b"105".to_vec()));
}
