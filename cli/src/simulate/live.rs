//! A request as the simulation follows it: its retry loop, where it stands (its node, its
//! attempt's round and copies, its hedge schedule) and when its deadline falls. Apart from the
//! engine that moves it, so that the engine holds the order of events and nothing else.

use std::time::{Duration, Instant};

use rebound::breaker::Admission;
use rebound::hedge::HedgeSchedule;
use rebound::{Request, RetryLoop};

use super::arrivals::Arrival;
use super::fate::AttemptEnd;
use super::scenario::Scenario;
use crate::wire::input::default_timeout_ms;

/// A request being simulated.
pub(super) struct Live {
    pub(super) retry: RetryLoop,
    /// The client process that sends it.
    pub(super) client: usize,
    pub(super) key: u64,
    pub(super) start_us: u64,
    pub(super) deadline_us: u64,
    /// Added to the key's node when the policy asks for the next node.
    pub(super) node_offset: u32,
    pub(super) attempts: u64,
    /// The attempt's round: a retry starts a new one, and the events of an earlier round are
    /// stale.
    pub(super) round: u32,
    /// When the attempt of this round started, in microseconds: its attempt timeout counts
    /// from then, for every copy.
    pub(super) round_start_us: u64,
    /// The copies of the attempt in flight: one, unless the policy hedges.
    pub(super) copies: Vec<CopyInFlight>,
    /// The attempt's hedge schedule, if the policy hedges the request.
    pub(super) schedule: Option<HedgeSchedule>,
    /// When the next copy is due, in microseconds: a hedge event at another moment is stale.
    pub(super) hedge_at: Option<u64>,
    /// The request has ended: the events still queued for it are stale.
    pub(super) finished: bool,
}

/// One copy of an attempt in flight.
pub(super) struct CopyInFlight {
    pub(super) end: Option<AttemptEnd>,
    /// When it was sent, in microseconds: its latency, if a node answers it, counts from here.
    pub(super) sent_us: u64,
    /// Its node and how its breaker admitted it, if the policy has breakers.
    pub(super) admitted: Option<(String, Admission)>,
}

impl Live {
    /// Request `id` of `scenario`'s workload as it arrives, `arrival`, at `start`.
    pub(super) fn of(
        scenario: &Scenario,
        arrival: &Arrival,
        id: u64,
        start: Instant,
    ) -> anyhow::Result<Self> {
        let entry = &scenario.workload.mix[arrival.mix];
        let timeout_ms = entry
            .timeout_ms
            .unwrap_or_else(|| default_timeout_ms(entry.request_type.service()));
        let timeout = Duration::from_millis(timeout_ms);
        let mut request =
            Request::new_at(id, entry.request_type, timeout, start)?.with_readonly(entry.readonly);
        if let Some(method) = entry.method {
            request = request.with_method(method);
        }
        if let Some(route) = &entry.route {
            request = request.with_route(route.as_str());
        }
        if let Some(idempotent) = entry.idempotent {
            request = request.with_idempotent(idempotent);
        }
        Ok(Live {
            retry: RetryLoop::new(request),
            client: 0,
            key: arrival.key,
            start_us: arrival.t_us,
            deadline_us: arrival.t_us + timeout_ms * 1000,
            node_offset: 0,
            attempts: 0,
            round: 0,
            round_start_us: arrival.t_us,
            copies: Vec::new(),
            schedule: None,
            hedge_at: None,
            finished: false,
        })
    }
}
