//! What happens to one attempt of the simulation, decided before the engine moves its clock:
//! the random draws it makes (always all of them, in one order, so the generators' streams stay
//! aligned whatever applies and the same request meets the same fate under every policy), what
//! the faults active at its start do to it, and how an attempt a node serves ends.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rebound::classify::{classify, Classification, KvOpcode, Response};
use rebound::grpc::GrpcCode;
use rebound::{reasons, RetryReason, Service};

use super::arrivals::exponential;
use super::scenario::Fault;

/// How an attempt ends.
#[derive(Debug, Clone)]
pub(super) enum AttemptEnd {
    Success,
    Failed(RetryReason),
    /// Its node's transport refused it before its application saw it (UNAVAILABLE, progress
    /// `refused`).
    Refused,
    /// The deadline came first.
    Deadline,
}

impl AttemptEnd {
    /// Whether a node answered it (a success, or a failure it answered with): how long that
    /// took is the node's latency.
    pub(super) fn answered(&self) -> bool {
        match self {
            AttemptEnd::Success => true,
            AttemptEnd::Failed(reason) => reason.stage() == rebound::Stage::Response,
            AttemptEnd::Refused | AttemptEnd::Deadline => false,
        }
    }
}

/// The draws of one attempt.
pub(super) struct Draws {
    /// Its latency before load and faults, in microseconds.
    pub latency_us: u64,
    close_roll: f64,
    /// When a closed socket closes, as a share of the latency.
    pub close_at: f64,
    rebalance_roll: f64,
    tmpfail_roll: f64,
    /// Whether an overloaded node answers it "overloaded", against the failing share.
    pub overload_roll: f64,
    /// Its service time in the queue model, in units of the node's mean service time
    /// (exponentially distributed, mean 1).
    pub service_units: f64,
}

impl Draws {
    /// The draws of request `request`'s attempt `attempts` (counting copies), on a cluster
    /// whose mean latency is `mean_latency_us`, from the scenario's `seed`.
    pub(super) fn new(seed: u64, request: usize, attempts: u64, mean_latency_us: f64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(
            seed ^ (request as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ attempts.wrapping_mul(0xC2B2_AE3D_27D4_EB4F),
        );
        let latency = (mean_latency_us * 0.1 + exponential(&mut rng, mean_latency_us * 0.9))
            .min(mean_latency_us * 50.0) as u64
            + 1;
        Draws {
            latency_us: latency,
            close_roll: rng.random::<f64>(),
            close_at: rng.random::<f64>(),
            rebalance_roll: rng.random::<f64>(),
            tmpfail_roll: rng.random::<f64>(),
            overload_roll: rng.random::<f64>(),
            service_units: exponential(&mut rng, 1.0),
        }
    }
}

/// What the faults active at an attempt's start do to it.
#[derive(Default)]
pub(super) struct Effects {
    /// The connection is refused at authentication: nothing is dispatched.
    pub auth_failure: bool,
    /// Its node is down: nothing is dispatched.
    pub node_down: bool,
    /// Its socket closes while it is in flight.
    pub closed: bool,
    /// Its node's transport refuses it.
    pub refused: bool,
    /// The KV status its node answers, if a fault sets one.
    pub status: Option<u16>,
    /// The failure its node answers a request that is not KV with, if a fault sets one.
    pub unavailable: Option<RetryReason>,
    /// Its latency's factor from slow nodes.
    pub slow: f64,
}

/// The attempt a fault acts on: its node, the document key, its service and its draws.
pub(super) struct Target<'d> {
    pub node: u32,
    pub key: u64,
    pub service: Service,
    pub draws: &'d Draws,
}

impl Effects {
    /// What `faults` (those active at the attempt's start) do to `target`; `seed` picks the
    /// locked keys.
    pub(super) fn of<'f>(
        faults: impl Iterator<Item = &'f Fault>,
        target: &Target<'_>,
        seed: u64,
    ) -> Self {
        let kv = target.service == Service::Kv;
        let draws = target.draws;
        let mut effects = Effects {
            slow: 1.0,
            ..Effects::default()
        };
        for fault in faults {
            match *fault {
                Fault::AuthFailure { .. } => effects.auth_failure = true,
                Fault::SlowNode { node, factor, .. } if node == target.node => {
                    effects.slow *= factor
                }
                Fault::NodeDown { node, .. } if node == target.node => effects.node_down = true,
                Fault::SocketClose { rate, .. } if draws.close_roll < rate => effects.closed = true,
                Fault::Rebalance { rate, .. } if kv && draws.rebalance_roll < rate => {
                    effects.status = effects.status.or(Some(0x07));
                }
                Fault::Locked { share, .. } if kv && locked(seed, target.key, share) => {
                    effects.status = effects.status.or(Some(0x09));
                }
                Fault::Tmpfail { rate, .. } if kv && draws.tmpfail_roll < rate => {
                    effects.status = effects.status.or(Some(0x86));
                }
                // REBALANCE's draw, which only KV attempts use.
                Fault::RefusedStreams { rate, .. }
                    if target.service == Service::Grpc && draws.rebalance_roll < rate =>
                {
                    effects.refused = true;
                }
                // TMPFAIL's draw, which only KV attempts use: the other streams stay as they
                // are.
                Fault::Unavailable { rate, .. } if !kv && draws.tmpfail_roll < rate => {
                    effects.unavailable = match target.service {
                        Service::Http => Some(RetryReason::HttpStatus(503)),
                        Service::Grpc => Some(RetryReason::GrpcStatus(GrpcCode::Unavailable)),
                        _ => effects.unavailable.take(),
                    };
                }
                _ => {}
            }
        }
        effects
    }

    /// How an attempt its node answers ends: the failure a fault set, a KV status classified
    /// by the host's classifier, else a success.
    pub(super) fn answer(self, opcode: Option<KvOpcode>) -> AttemptEnd {
        if let Some(reason) = self.unavailable {
            return AttemptEnd::Failed(reason);
        }
        match (self.status, opcode) {
            (Some(status), Some(opcode)) => match classify(Response::Kv { opcode, status }, None) {
                Classification::Retry { reason, .. } => AttemptEnd::Failed(reason),
                _ => AttemptEnd::Success,
            },
            _ => AttemptEnd::Success,
        }
    }
}

/// How an attempt ends before its node serves it, if it does: refused by an open breaker, at
/// authentication, because its node is down, or by its node's transport; with how long that takes, in microseconds.
pub(super) fn refused_before_dispatch(
    admitted: bool,
    effects: &Effects,
    latency_us: u64,
) -> Option<(u64, AttemptEnd)> {
    if !admitted {
        // Nothing reaches the node.
        return Some((1, AttemptEnd::Failed(reasons::CIRCUIT_BREAKER_OPEN)));
    }
    if effects.auth_failure {
        return Some((
            latency_us,
            AttemptEnd::Failed(reasons::AUTHENTICATION_ERROR),
        ));
    }
    if effects.node_down {
        return Some((100, AttemptEnd::Failed(reasons::SOCKET_NOT_AVAILABLE)));
    }
    if effects.refused {
        return Some((latency_us, AttemptEnd::Refused));
    }
    None
}

/// Whether document `key` is among the locked `share` of the keys.
fn locked(seed: u64, key: u64, share: f64) -> bool {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ key.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    rng.random::<f64>() < share
}
