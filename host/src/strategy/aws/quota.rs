//! The AWS SDKs' retry quota (smithy-rs `TokenBucket`), kept per retry partition: a retry takes
//! tokens by its error's kind, a success gives back what its request's last retry took, or one
//! token when it needed no retry. An empty quota refuses retries, so a client that keeps failing
//! stops retrying until successes refill it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::aws_error::AwsErrorKind;
use crate::request::Request;
use crate::scope_store::ScopeStore;

/// About the most partitions counted apart; past them, the least used are forgotten.
const MAX_PARTITIONS: usize = 1024;

/// What a retry costs, by the SDK's error kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryCosts {
    /// A transient error's retry (smithy-rs `timeout_retry_cost`).
    pub(crate) transient: u32,
    /// A throttling error's retry (`throttling_retry_cost`).
    pub(crate) throttling: u32,
    /// A modeled server or client error's retry (`retry_cost`).
    pub(crate) other: u32,
}

impl RetryCosts {
    /// Retry behaviour 2.0: 10 for a transient error, 5 for any other.
    pub(crate) const V2_0: RetryCosts = RetryCosts {
        transient: 10,
        throttling: 5,
        other: 5,
    };

    /// Retry behaviour 2.1: 5 for a throttling error, 14 for any other.
    pub(crate) const V2_1: RetryCosts = RetryCosts {
        transient: 14,
        throttling: 5,
        other: 14,
    };

    /// What a retry for an error of `kind` costs.
    pub(crate) const fn of(self, kind: AwsErrorKind) -> u32 {
        match kind {
            AwsErrorKind::Transient => self.transient,
            AwsErrorKind::Throttling => self.throttling,
            AwsErrorKind::Server | AwsErrorKind::Client => self.other,
        }
    }
}

/// The tokens of one partition.
#[derive(Debug)]
pub(crate) struct Tokens {
    left: AtomicU32,
    capacity: u32,
}

impl Tokens {
    fn full(capacity: u32) -> Self {
        Tokens {
            left: AtomicU32::new(capacity),
            capacity,
        }
    }

    /// Takes `cost` tokens if that many are left.
    pub(crate) fn take(&self, cost: u32) -> bool {
        (self.left)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(cost)
            })
            .is_ok()
    }

    /// Gives back `tokens`, up to the capacity.
    pub(crate) fn give(&self, tokens: u32) {
        let capacity = self.capacity;
        let _ = (self.left).fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
            Some(left.saturating_add(tokens).min(capacity))
        });
    }

    /// Tokens left now.
    pub(crate) fn left(&self) -> u32 {
        self.left.load(Ordering::Acquire)
    }
}

/// The quotas of every partition: a request's authority (the endpoint, so a service in a
/// region, as the SDK partitions by service and region), for its caller.
#[derive(Debug)]
pub(crate) struct Quotas {
    capacity: u32,
    partitions: ScopeStore<Tokens>,
    /// Requests that name no authority.
    unnamed: Arc<Tokens>,
}

impl Quotas {
    /// Quotas of `capacity` tokens each, all full.
    pub(crate) fn new(capacity: u32) -> Self {
        Quotas {
            capacity,
            partitions: ScopeStore::new(MAX_PARTITIONS, |tokens: &Tokens| u64::from(tokens.left())),
            unnamed: Arc::new(Tokens::full(capacity)),
        }
    }

    /// The quota `request` counts in.
    pub(crate) fn of(&self, request: &Request) -> Arc<Tokens> {
        let caller = request.caller().unwrap_or("");
        request
            .authority()
            .and_then(|name| {
                let capacity = self.capacity;
                self.partitions
                    .get_or_add(caller, name, || Tokens::full(capacity))
            })
            .unwrap_or_else(|| Arc::clone(&self.unnamed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// smithy-rs `TokenBucket`: acquiring takes the cost; what is left cannot go below zero,
    /// and giving back never fills past the capacity.
    #[test]
    fn tokens_are_taken_while_enough_are_left_and_given_back_up_to_the_capacity() {
        let tokens = Tokens::full(12);
        assert!(tokens.take(5));
        assert!(tokens.take(5));
        assert!(!tokens.take(5), "2 left: a retry costing 5 is refused");
        assert_eq!(tokens.left(), 2);
        tokens.give(100);
        assert_eq!(tokens.left(), 12);
    }

    /// smithy-rs `token_bucket_for_spec`: 2.0 charges 10 for a transient error and 5 for any
    /// other; 2.1 charges 5 for throttling and 14 for any other.
    #[test]
    fn costs_follow_the_retry_behaviour() {
        use AwsErrorKind::*;
        let costs = |c: RetryCosts| [Transient, Throttling, Server, Client].map(|k| c.of(k));
        assert_eq!(costs(RetryCosts::V2_0), [10, 5, 5, 5]);
        assert_eq!(costs(RetryCosts::V2_1), [14, 5, 14, 14]);
    }
}
