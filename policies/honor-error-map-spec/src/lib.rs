//! Opt-in use of the KV error map's retry-spec timings (Couchbase RFC 0013 "Retry
//! Intervals"). The built-in strategies ignore these timings (RFC 0049 "KV Error Map
//! Handling"); this policy follows them for KV_ERROR_MAP_RETRY_INDICATED when the map attached
//! a spec: `after`, then the spec's interval schedule, until its max-duration is used up.
//! Everything else is best effort.

use rebound_guest::{
    export_policy, host, NodeChoice, Params, Policy, Request, Retry, RetryAction, RetryReason,
};

/// The policy.
pub struct HonorErrorMapSpec;

impl Policy for HonorErrorMapSpec {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(HonorErrorMapSpec)
    }

    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        let spec = match (reason, host::error_map_spec()) {
            (RetryReason::KvErrorMapRetryIndicated, Some(spec)) => spec,
            _ => return RetryAction::BestEffort,
        };
        match host::spec_delay(spec, request.retry_attempts(), request.elapsed_ms()) {
            Some(delay_ms) => RetryAction::Retry(Retry {
                delay_ms,
                node: NodeChoice::Same,
                consistency: None,
                attempt_timeout_ms: None,
            }),
            None => RetryAction::NoRetry,
        }
    }
}

export_policy!(HonorErrorMapSpec);

#[cfg(test)]
mod tests {
    use super::*;
    use rebound_guest::testing::{request, Call};
    use rebound_guest::{RequestType, RetrySpec, SpecStrategy};

    #[test]
    fn follows_the_spec_schedule_then_stops() {
        let spec = RetrySpec {
            strategy: SpecStrategy::Linear,
            after: 50,
            interval: 10,
            ceil: Some(25),
            max_duration: Some(100),
        };
        let call = || Call::new().error_map_spec(spec);
        let delays: Vec<_> = (0..4)
            .map(|attempts| {
                call().run(|| {
                    HonorErrorMapSpec.retry_after(
                        &request(RequestType::Get, attempts),
                        &RetryReason::KvErrorMapRetryIndicated,
                    )
                })
            })
            .collect();
        let ms = |d| {
            RetryAction::Retry(Retry {
                delay_ms: d,
                node: NodeChoice::Same,
                consistency: None,
                attempt_timeout_ms: None,
            })
        };
        assert_eq!(delays, vec![ms(50), ms(10), ms(20), ms(25)]);
        let mut late = request(RequestType::Get, 5);
        late.elapsed_ms = 100;
        assert_eq!(
            call().run(
                || HonorErrorMapSpec.retry_after(&late, &RetryReason::KvErrorMapRetryIndicated)
            ),
            RetryAction::NoRetry
        );
    }
}
