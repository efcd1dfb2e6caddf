//! A policy that misbehaves on demand. The client-context key of a call picks the behaviour,
//! its value the amount, so each sandbox limit can be tested both obeyed and violated on the
//! same instance:
//!
//! | key | behaviour |
//! | --- | --- |
//! | `spin` | loops forever |
//! | `loop` | loops N iterations, then answers |
//! | `alloc` | allocates and touches N bytes, then answers |
//! | `recurse` | recurses N deep, then answers |
//! | `panic` | panics with the value as message |
//! | `trap` | executes `unreachable` |
//! | `invalid` | answers a retry delay of u64::MAX ms |
//! | `delay` | answers a retry after N ms |
//! | `attempt_timeout` | answers a retry after 7 ms whose attempt is cut after N ms |
//! | `count` | answers a retry after as many ms as calls this instance has answered (state kept between calls: not deterministic) |
//! | `buckets` | empties the bucket `retry-budget` (asked with a burst of 1,000), then asks `host.retry-budget` for N buckets of names it invents (new ones on each call), then answers |
//!
//! Without any of these it answers "retry after 7 ms on the same node".
//! Configured with parameter `reject=yes`, it refuses its configuration; with
//! `always_panic=yes`, it panics on every call (a version that fails its smoke calls); with
//! `read_failure=yes`, it reads the failed request while configuring, when there is none.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use rebound_guest::{
    export_policy, host, NodeChoice, Params, Policy, Request, Retry, RetryAction, RetryReason,
};

/// Calls answered by this instance, for `count`.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// The adversary.
pub struct Adversary {
    always_panic: bool,
}

fn amount(key: &str) -> Option<u64> {
    host::client_context(key).map(|v| v.parse().unwrap_or(0))
}

fn recurse(depth: u64) -> u64 {
    if depth == 0 {
        0
    } else {
        black_box(recurse(black_box(depth - 1))) + 1
    }
}

fn retry(delay_ms: u64) -> RetryAction {
    RetryAction::Retry(Retry {
        delay_ms,
        node: NodeChoice::Same,
        consistency: None,
        attempt_timeout_ms: None,
    })
}

fn retry_cut_after(attempt_timeout_ms: u64) -> RetryAction {
    RetryAction::Retry(Retry {
        delay_ms: 7,
        node: NodeChoice::Same,
        consistency: None,
        attempt_timeout_ms: Some(attempt_timeout_ms),
    })
}

impl Policy for Adversary {
    fn configure(params: &Params) -> Result<Self, String> {
        if params.get("read_failure").is_some() {
            host::client_context("spin");
        }
        match params.get("reject") {
            Some(_) => {
                Err("parameter `reject` asks this policy to refuse its configuration".into())
            }
            None => Ok(Adversary {
                always_panic: params.get("always_panic").is_some(),
            }),
        }
    }

    fn retry_after(&self, _: &Request, _: &RetryReason) -> RetryAction {
        if self.always_panic {
            panic!("adversary configured to panic on every call");
        }
        if host::client_context("spin").is_some() {
            let mut x = 0u64;
            loop {
                x = black_box(x.wrapping_add(1));
            }
        }
        if let Some(n) = amount("loop") {
            let mut x = 0u64;
            for i in 0..n {
                x = black_box(x.wrapping_add(i));
            }
            black_box(x);
        }
        if let Some(n) = amount("alloc") {
            let buf = vec![1u8; n as usize];
            black_box(&buf);
        }
        if let Some(n) = amount("recurse") {
            black_box(recurse(n));
        }
        if let Some(n) = amount("buckets") {
            while host::retry_budget("retry-budget", 0, 1_000) {}
            let offset = CALLS.fetch_add(1, Ordering::Relaxed) * n;
            for i in 0..n {
                black_box(host::retry_budget(
                    &format!("invented-{}", offset + i),
                    1,
                    1,
                ));
            }
        }
        if let Some(message) = host::client_context("panic") {
            panic!("adversary panicked: {message}");
        }
        if host::client_context("trap").is_some() {
            std::process::abort(); // `unreachable` in wasm
        }
        if host::client_context("invalid").is_some() {
            return retry(u64::MAX);
        }
        if let Some(n) = amount("delay") {
            return retry(n);
        }
        if let Some(n) = amount("attempt_timeout") {
            return retry_cut_after(n);
        }
        if host::client_context("count").is_some() {
            return retry(CALLS.fetch_add(1, Ordering::Relaxed));
        }
        retry(7)
    }
}

export_policy!(Adversary);
