//! Hedges as its parameters say, so a test sees the host ask a WebAssembly policy about the
//! copies of a request in flight (`hedging`, since `rebound:policy@0.5.0`): the next copy goes
//! `delay_ms` after the last one (default 20), to the next node, while fewer than `copies` are
//! out (default 3); none for a request whose client context says `hedge=no` (the `failure`
//! facts answer for the request in flight). With `percentile`, the delay is that percentile of
//! the latencies the host observed for the request's authority (`host.observed-latency-ms`,
//! since 0.6.0), `delay_ms` while the host has none. A gRPC `INVALID_ARGUMENT` (3) is fatal,
//! every other failure is not. A failure left when no copy is due is not retried, so a test counts copies
//! only.

use rebound_guest::hedging::{Hedge, HedgeAction, InFlight};
use rebound_guest::{
    export_policy, host, NodeChoice, Params, Policy, Request, RetryAction, RetryReason,
};

struct HedgeEcho {
    delay_ms: u64,
    copies: u32,
    percentile: Option<f64>,
}

impl Policy for HedgeEcho {
    fn configure(params: &Params) -> Result<Self, String> {
        let number = |name: &str, default: u64| match params.get(name) {
            None => Ok(default),
            Some(text) => text
                .parse::<u64>()
                .map_err(|_| format!("{name}: expected a whole number, got {text:?}")),
        };
        let percentile = match params.get("percentile") {
            None => None,
            Some(text) => Some(
                text.parse::<f64>()
                    .map_err(|_| format!("percentile: expected a number, got {text:?}"))?,
            ),
        };
        Ok(HedgeEcho {
            delay_ms: number("delay_ms", 20)?,
            copies: u32::try_from(number("copies", 3)?).map_err(|e| e.to_string())?,
            percentile,
        })
    }

    fn retry_after(&self, _request: &Request, _reason: &RetryReason) -> RetryAction {
        RetryAction::NoRetry
    }

    fn next_copy(&self, _request: &Request, flight: &InFlight) -> HedgeAction {
        if host::client_context("hedge").as_deref() == Some("no") || flight.copies >= self.copies {
            return HedgeAction::Wait;
        }
        let observed = self.percentile.and_then(host::observed_latency_ms);
        HedgeAction::Send(Hedge {
            delay_ms: observed.unwrap_or(self.delay_ms),
            node: NodeChoice::Next,
        })
    }

    fn is_fatal(&self, _request: &Request, reason: &RetryReason) -> bool {
        matches!(reason, RetryReason::GrpcStatus(3))
    }
}

export_policy!(HedgeEcho);
