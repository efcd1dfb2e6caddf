//! What load does to a node with a capacity: its attempts over the last second, the slowdown
//! and the share of "overloaded" answers past capacity (congestion collapse), and the failure an
//! overloaded node answers with for each service.

use rebound::cassandra::ServerErrorKind;
use rebound::classify::{classify, Classification, KvOpcode, Response};
use rebound::grpc::GrpcCode;
use rebound::{reasons, RetryReason, Service};

/// Slots of a node's rolling second.
const LOAD_SLOTS: u64 = 10;

/// A node's attempts over the last second, in tenths of a second.
#[derive(Debug, Clone, Default)]
pub(super) struct NodeLoad {
    slots: [(u64, u64); LOAD_SLOTS as usize],
}

impl NodeLoad {
    /// Counts an attempt started at `t_us`; returns the attempts of the second up to it.
    pub(super) fn add(&mut self, t_us: u64) -> u64 {
        let tenth = t_us / 100_000;
        let slot = &mut self.slots[(tenth % LOAD_SLOTS) as usize];
        if slot.0 != tenth {
            *slot = (tenth, 0);
        }
        slot.1 += 1;
        (self.slots.iter())
            .filter(|(at, _)| tenth.saturating_sub(*at) < LOAD_SLOTS)
            .map(|(_, n)| n)
            .sum()
    }
}

/// What the load offered to a node does to an attempt it serves, at `utilisation` (attempts of
/// the last second over capacity): latency multiplied by `1 / (1 − u)` (a queue's sojourn time,
/// at most 10×), and past capacity a share `1 − 1/u²` of the attempts answered "overloaded"
/// (congestion collapse: the work done falls as the load grows, so retries that add load
/// take goodput away).
pub(super) fn overload(utilisation: f64) -> (f64, f64) {
    let slowdown = if utilisation < 0.9 {
        1.0 / (1.0 - utilisation)
    } else {
        10.0
    };
    let failing = if utilisation > 1.0 {
        1.0 - 1.0 / (utilisation * utilisation)
    } else {
        0.0
    };
    (slowdown, failing)
}

/// The failure an overloaded node answers a request of `service` with.
pub(super) fn overloaded(service: Service, opcode: Option<KvOpcode>) -> RetryReason {
    match (service, opcode) {
        (Service::Http, _) => RetryReason::HttpStatus(503),
        (Service::Grpc, _) => RetryReason::GrpcStatus(GrpcCode::ResourceExhausted),
        (Service::Cql, _) => RetryReason::ErrorResponse(ServerErrorKind::Overloaded),
        (_, Some(opcode)) => match classify(
            Response::Kv {
                opcode,
                status: 0x86,
            },
            None,
        ) {
            Classification::Retry { reason, .. } => reason,
            _ => reasons::KV_TEMPORARY_FAILURE,
        },
        _ => reasons::KV_TEMPORARY_FAILURE,
    }
}
