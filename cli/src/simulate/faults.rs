//! The faults a scenario's timeline holds, as written in its `[[fault]]` tables: what each
//! does is the engine's and `fate`'s business; here, what can be written and what is refused.

use serde::Deserialize;

/// A time window, in seconds from the start.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Start.
    pub from_s: f64,
    /// End (exclusive).
    pub until_s: f64,
}

impl Window {
    /// Whether `t_us` (microseconds from the start) falls in the window.
    pub fn contains(&self, t_us: u64) -> bool {
        let t = t_us as f64 / 1e6;
        self.from_s <= t && t < self.until_s
    }
}

/// A fault.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// A node is down: attempts sent to it fail at once (SOCKET_NOT_AVAILABLE, never
    /// dispatched); attempts on it when it goes down fail as SOCKET_CLOSED_WHILE_IN_FLIGHT.
    NodeDown {
        /// The node (0-based).
        node: u32,
        /// When it goes down (seconds from the start).
        from_s: f64,
        /// When it is back.
        until_s: f64,
    },
    /// A node is slow: attempts on it take `factor` times their drawn latency.
    SlowNode {
        /// The node (0-based).
        node: u32,
        /// How many times slower, at least 1.
        factor: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// A rebalance: this share of KV attempts is answered NOT_MY_VBUCKET (0x07).
    Rebalance {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of KV attempts is answered TMPFAIL (0x86).
    Tmpfail {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of attempts loses its connection while in flight
    /// (SOCKET_CLOSED_WHILE_IN_FLIGHT).
    SocketClose {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of the documents is locked: KV attempts on them are answered LOCKED (0x09).
    Locked {
        /// Share of the keys, 0 to 1.
        share: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of plain HTTP and gRPC attempts is answered 503 or UNAVAILABLE
    /// (HTTP_STATUS, GRPC_STATUS).
    Unavailable {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of gRPC attempts is refused by its node's transport before its application
    /// sees it (HTTP/2 `REFUSED_STREAM`: UNAVAILABLE, progress `refused`), costing the node
    /// nothing; gRFC A6 sends such an attempt again once, transparently.
    RefusedStreams {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// A node's (or, without `node`, every node's) capacity is cut: its service rate (the queue
    /// model) or its capacity (the load model) is multiplied by `1 − cut` while it lasts.
    Capacity {
        /// The share of the capacity lost, 0 to 1 (1 excluded).
        cut: f64,
        /// The node (0-based); every node when absent.
        node: Option<u32>,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// The credentials are wrong: connections fail authentication and no attempt is
    /// dispatched (AUTHENTICATION_ERROR).
    AuthFailure {
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
}

impl Fault {
    /// The fault's name as written in the scenario.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::NodeDown { .. } => "node_down",
            Fault::SlowNode { .. } => "slow_node",
            Fault::Rebalance { .. } => "rebalance",
            Fault::Tmpfail { .. } => "tmpfail",
            Fault::SocketClose { .. } => "socket_close",
            Fault::Locked { .. } => "locked",
            Fault::Unavailable { .. } => "unavailable",
            Fault::RefusedStreams { .. } => "refused_streams",
            Fault::Capacity { .. } => "capacity",
            Fault::AuthFailure { .. } => "auth_failure",
        }
    }

    /// When it happens.
    pub fn window(&self) -> Window {
        let (from_s, until_s) = match *self {
            Fault::NodeDown {
                from_s, until_s, ..
            }
            | Fault::SlowNode {
                from_s, until_s, ..
            }
            | Fault::Rebalance {
                from_s, until_s, ..
            }
            | Fault::Tmpfail {
                from_s, until_s, ..
            }
            | Fault::SocketClose {
                from_s, until_s, ..
            }
            | Fault::Locked {
                from_s, until_s, ..
            }
            | Fault::Unavailable {
                from_s, until_s, ..
            }
            | Fault::RefusedStreams {
                from_s, until_s, ..
            }
            | Fault::Capacity {
                from_s, until_s, ..
            }
            | Fault::AuthFailure { from_s, until_s } => (from_s, until_s),
        };
        Window { from_s, until_s }
    }
}

impl Fault {
    /// Checks the fault's window and values on a cluster of `nodes`: the field (of the fault)
    /// and what was expected.
    pub(super) fn validate(&self, nodes: u32) -> Result<(), (&'static str, String)> {
        let window = self.window();
        if !(window.from_s >= 0.0 && window.from_s < window.until_s) {
            return Err((
                "until_s",
                format!(
                    "expected 0 <= from_s < until_s, got from_s = {} and until_s = {}",
                    window.from_s, window.until_s
                ),
            ));
        }
        match self {
            Fault::NodeDown { node, .. }
            | Fault::SlowNode { node, .. }
            | Fault::Capacity {
                node: Some(node), ..
            } if *node >= nodes => Err((
                "node",
                format!("the cluster has nodes 0 to {}, not {node}", nodes - 1),
            )),
            Fault::Rebalance { rate, .. }
            | Fault::Tmpfail { rate, .. }
            | Fault::SocketClose { rate, .. }
            | Fault::Unavailable { rate, .. }
            | Fault::RefusedStreams { rate, .. }
                if !(0.0..=1.0).contains(rate) =>
            {
                Err(("rate", format!("expected 0 to 1, got {rate}")))
            }
            Fault::SlowNode { factor, .. } if !(factor.is_finite() && *factor >= 1.0) => {
                Err(("factor", format!("expected at least 1, got {factor}")))
            }
            Fault::Capacity { cut, .. } if !(0.0..1.0).contains(cut) => Err((
                "cut",
                format!("expected a share of the capacity from 0 to below 1, got {cut}"),
            )),
            Fault::Locked { share, .. } if !(0.0..=1.0).contains(share) => {
                Err(("share", format!("expected 0 to 1, got {share}")))
            }
            _ => Ok(()),
        }
    }
}

impl Fault {
    /// The factor this fault applies to `node`'s capacity at `t_us`: `1 − cut` while a
    /// capacity fault on it (or on every node) is active, else 1.
    pub fn capacity_factor(&self, node: u32, t_us: u64) -> f64 {
        match *self {
            Fault::Capacity { cut, node: on, .. }
                if on.is_none_or(|on| on == node) && self.window().contains(t_us) =>
            {
                1.0 - cut
            }
            _ => 1.0,
        }
    }
}
