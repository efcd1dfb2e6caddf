//! gRFC A6 "Throttling Retry Attempts and Hedged RPCs" as a count of tokens: it starts at
//! `maxTokens`; a failed attempt takes its cost (one token unless its reason class says
//! otherwise), a successful call gives `tokenRatio` back, and while the count is at or below
//! half of `maxTokens` nothing is retried. Counted in thousandths (A6 keeps three decimal
//! places), so the arithmetic is exact, in one atomic word: no lock.

use std::sync::atomic::{AtomicI64, Ordering};

/// Thousandths in a token.
pub(crate) const MILLI: i64 = 1000;

/// Turns a number of tokens into thousandths, ignoring decimal places beyond three (A6:
/// "0.5466 is treated as 0.546"). The small addend keeps a decimal such as 0.29, whose
/// nearest binary value is just below it, at 290.
pub(crate) fn thousandths(tokens: f64) -> i64 {
    (tokens * MILLI as f64 + 1e-6).floor() as i64
}

/// One token count.
#[derive(Debug)]
pub struct TokenThrottle {
    /// `maxTokens`, in thousandths.
    max: i64,
    /// `tokenRatio`, in thousandths.
    ratio: i64,
    /// The count, in thousandths, within 0 and `max`.
    count: AtomicI64,
}

impl TokenThrottle {
    /// A full count of `max_tokens` given back `token_ratio` per success. The caller has
    /// checked both are positive (`ThrottleConfig::validate`).
    pub fn new(max_tokens: f64, token_ratio: f64) -> Self {
        let max = thousandths(max_tokens);
        TokenThrottle {
            max,
            // A success never gives back more than the count holds.
            ratio: thousandths(token_ratio).min(max),
            count: AtomicI64::new(max),
        }
    }

    /// Adds `change` (thousandths), kept within 0 and `maxTokens`; returns the new count.
    fn change(&self, change: i64) -> i64 {
        let clamp = |count: i64| count.saturating_add(change).clamp(0, self.max);
        // `fetch_update` retries until no other thread changed the word in between.
        let before = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                Some(clamp(count))
            })
            .unwrap_or_else(|count| count);
        clamp(before)
    }

    /// A failed attempt costing `cost` thousandths. Whether retries may go now: the count is
    /// taken before the threshold is looked at (as grpc-go and grpc-java do).
    pub fn failed(&self, cost: i64) -> bool {
        self.above_threshold(self.change(-cost))
    }

    /// A successful call: `tokenRatio` given back.
    pub fn succeeded(&self) {
        self.change(self.ratio);
    }

    /// Whether a retry may go: the count is above half of `maxTokens`.
    pub fn allows(&self) -> bool {
        self.above_threshold(self.count.load(Ordering::Acquire))
    }

    fn above_threshold(&self, count: i64) -> bool {
        count * 2 > self.max
    }

    /// The count now, in tokens.
    pub fn tokens(&self) -> f64 {
        self.count.load(Ordering::Acquire) as f64 / MILLI as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A6 "Validation of retryThrottling": decimal places beyond three are ignored.
    #[test]
    fn decimals_beyond_three_are_ignored() {
        assert_eq!(thousandths(0.5466), 546);
        assert_eq!(thousandths(0.29), 290);
        assert_eq!(thousandths(0.1), 100);
        assert_eq!(thousandths(1000.0), 1_000_000);
    }

    proptest! {
        /// A6: a throttle never lets a retry go at or below its threshold. Against a model in
        /// exact thousandths over any sequence of failures (of any cost) and successes.
        #[test]
        fn never_grants_at_or_below_the_threshold(
            max in 1u32..=1000,
            ratio in 1i64..=5000,
            steps in prop::collection::vec(prop::option::of(0i64..=3000), 0..400),
        ) {
            let t = TokenThrottle::new(f64::from(max), ratio as f64 / 1000.0);
            let max = i64::from(max) * MILLI;
            let mut model = max;
            for step in steps {
                match step {
                    Some(cost) => {
                        model = (model - cost).clamp(0, max);
                        prop_assert_eq!(t.failed(cost), model * 2 > max);
                    }
                    None => {
                        model = (model + ratio).clamp(0, max);
                        t.succeeded();
                    }
                }
                prop_assert_eq!(t.allows(), model * 2 > max);
                prop_assert!(!t.allows() || t.tokens() * 2.0 > max as f64 / 1000.0);
            }
        }
    }
}
