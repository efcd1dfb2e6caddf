//! The controlled backoff for always-retry reasons (reference 001 "Controlled Backoff for
//! Always Retry"): 1, 10, 50, 100, 500 ms, then 1000 ms.

use std::time::Duration;

/// The delay for an always-retry reason after `attempt` retries already made.
pub const fn controlled_backoff(attempt: u32) -> Duration {
    Duration::from_millis(match attempt {
        0 => 1,
        1 => 10,
        2 => 50,
        3 => 100,
        4 => 500,
        _ => 1000,
    })
}
