//! gRFC A6 "Throttling Retry Attempts and Hedged RPCs": a token count per server name,
//! starting at `maxTokens`; a failed attempt takes one, a successful call gives `tokenRatio`
//! back, and while the count is at or below half of `maxTokens` nothing is retried. Counted in
//! thousandths (the ratio has at most three decimal places), so the arithmetic is exact.

use std::collections::HashMap;
use std::sync::Mutex;

use super::service_config::RetryThrottling;

/// The most server names counted apart; past them, new names share one count.
pub const MAX_THROTTLED_SERVERS: usize = 1024;

/// The token counts of one service config's `retryThrottling`.
#[derive(Debug)]
pub struct Throttle {
    /// `maxTokens`, in thousandths.
    max: i64,
    /// `tokenRatio`, in thousandths.
    ratio: i64,
    /// Each server name's count, in thousandths; `""` holds the names past the limit.
    counts: Mutex<HashMap<String, i64>>,
}

impl Throttle {
    /// Counts as `config` says.
    pub fn new(config: RetryThrottling) -> Self {
        Throttle {
            max: i64::from(config.max_tokens) * 1000,
            ratio: (config.token_ratio * 1000.0).round() as i64,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Applies `change` to `server`'s count (kept within 0 and `maxTokens`) and returns the
    /// new count.
    fn update(&self, server: &str, change: i64) -> i64 {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let known = counts.contains_key(server) || counts.len() < MAX_THROTTLED_SERVERS;
        let key = if known { server } else { "" };
        let count = match counts.get_mut(key) {
            Some(count) => count,
            None => counts.entry(key.to_owned()).or_insert(self.max),
        };
        *count = (*count + change).clamp(0, self.max);
        *count
    }

    /// A failed attempt to `server`: one token taken. Whether retries are throttled now (the
    /// count at or below half of `maxTokens`).
    pub fn failed(&self, server: &str) -> bool {
        self.update(server, -1000) * 2 <= self.max
    }

    /// A successful call to `server`: `tokenRatio` given back.
    pub fn succeeded(&self, server: &str) {
        self.update(server, self.ratio);
    }

    /// `server`'s count now, in tokens.
    pub fn tokens(&self, server: &str) -> f64 {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.get(server).copied().unwrap_or(self.max);
        count as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle(max_tokens: u32, token_ratio: f64) -> Throttle {
        Throttle::new(RetryThrottling {
            max_tokens,
            token_ratio,
        })
    }

    /// gRFC A6 "Throttling Retry Attempts and Hedged RPCs" with its example (`maxTokens` 10,
    /// `tokenRatio` 0.1), a failure counted before the threshold is looked at (as grpc-go
    /// does): the fifth failure leaves 5 tokens, at the threshold, and throttles; another
    /// server name has its own count; from 4 tokens, 20 successes (6.0) leave the next failure
    /// at the threshold, 21 (6.1) let it be retried; the count never passes `maxTokens`.
    #[test]
    fn throttling_engages_at_half_and_releases_above_it() {
        let t = throttle(10, 0.1);
        let throttled: Vec<bool> = (0..6).map(|_| t.failed("a:443")).collect();
        assert_eq!(throttled, [false, false, false, false, true, true]);
        assert_eq!(t.tokens("a:443"), 4.0);
        assert!(!t.failed("b:443"), "another server name");
        for (successes, still_throttled) in [(20, true), (21, false)] {
            let t = throttle(10, 0.1);
            (0..6).for_each(|_| {
                t.failed("a:443");
            });
            (0..successes).for_each(|_| t.succeeded("a:443"));
            assert_eq!(t.failed("a:443"), still_throttled, "{successes} successes");
        }
        for _ in 0..1000 {
            t.succeeded("a:443");
        }
        assert_eq!(t.tokens("a:443"), 10.0, "never above maxTokens");
    }

    /// Past `MAX_THROTTLED_SERVERS` names, new names share one count: memory stays bounded.
    #[test]
    fn server_names_past_the_limit_share_one_count() {
        let t = throttle(4, 1.0);
        for n in 0..MAX_THROTTLED_SERVERS + 10 {
            t.failed(&format!("server-{n}"));
        }
        let counted = t.counts.lock().unwrap().len();
        assert_eq!(counted, MAX_THROTTLED_SERVERS + 1);
        assert_eq!(t.tokens(""), 0.0, "ten failures shared, floored at 0");
    }
}
