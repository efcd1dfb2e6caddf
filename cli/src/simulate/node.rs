//! A node of the simulated cluster as the attempts it serves meet it: how long an attempt takes
//! there and whether the node answers "overloaded", under one of two models of its capacity.
//! The load model (`capacity_per_s`) slows and fails attempts as its last second's load grows
//! past its capacity. The queue model (`service_rate_per_s`, `queue`) is a FIFO server with a
//! bounded queue: an attempt waits behind those accepted before it, the client may give up
//! while it waits, and the node serves it all the same — the work a metastable failure wastes.
//! Capacity faults cut either model's capacity while they last.

use std::collections::VecDeque;

use super::fate::Draws;
use super::load::{overload, NodeLoad};
use super::scenario::{Fault, Scenario, WhenFull};

/// One node's state.
#[derive(Debug, Clone, Default)]
pub(super) struct Node {
    /// Its attempts over the last second (the load model).
    load: NodeLoad,
    /// When each attempt it accepted and has not finished will finish, in order (the queue
    /// model): the first is in service, the others wait.
    accepted: VecDeque<u64>,
}

/// How a node serves an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Served {
    /// From the attempt's arrival to its answer, in microseconds.
    pub latency_us: u64,
    /// The node answers "overloaded" (past its capacity, or its queue full).
    pub overloaded: bool,
    /// The node dropped it unanswered (its queue full): it never ends on its own, and the node
    /// does no work for it.
    pub dropped: bool,
}

/// How long a dropped attempt takes: longer than any deadline.
const NEVER_US: u64 = u64::MAX / 4;

/// The factor of `node`'s capacity at `t_us`: the product of the capacity faults active on it.
fn capacity_factor(faults: &[Fault], node: u32, t_us: u64) -> f64 {
    (faults.iter())
        .map(|f| f.capacity_factor(node, t_us))
        .product()
}

impl Node {
    /// Serves an attempt arriving at node `index` at `t_us`, with `draws` and the slow-node
    /// factor `slow` (which multiplies its network latency, and in the queue model its
    /// service time).
    pub(super) fn serve(
        &mut self,
        index: u32,
        t_us: u64,
        draws: &Draws,
        slow: f64,
        scenario: &Scenario,
    ) -> Served {
        let network = (draws.latency_us as f64 * slow) as u64;
        let cluster = &scenario.cluster;
        if let Some(rate) = cluster.service_rate_per_s {
            return self.queue(index, t_us, (draws, network, slow), rate, scenario);
        }
        let Some(capacity) = cluster.capacity_per_s else {
            return Served {
                latency_us: network,
                overloaded: false,
                dropped: false,
            };
        };
        let capacity = capacity * capacity_factor(&scenario.faults, index, t_us);
        let load = self.load.add(t_us);
        let (slowdown, failing) = overload(load as f64 / capacity);
        Served {
            latency_us: (network as f64 * slowdown) as u64,
            overloaded: draws.overload_roll < failing,
            dropped: false,
        }
    }

    /// The queue model: the attempt waits for the attempts accepted before it, then takes an
    /// exponential service time at the rate of the moment its service starts; a full queue
    /// answers at once.
    fn queue(
        &mut self,
        index: u32,
        t_us: u64,
        (draws, network, slow): (&Draws, u64, f64),
        rate: f64,
        scenario: &Scenario,
    ) -> Served {
        while self.accepted.front().is_some_and(|end| *end <= t_us) {
            self.accepted.pop_front();
        }
        let limit = scenario.cluster.queue.map_or(usize::MAX, |q| q as usize);
        if self.accepted.len() > limit {
            let dropped = scenario.cluster.when_full == WhenFull::Drop;
            return Served {
                latency_us: if dropped { NEVER_US } else { network },
                overloaded: !dropped,
                dropped,
            };
        }
        let start = self.accepted.back().map_or(t_us, |last| (*last).max(t_us));
        let rate = rate * capacity_factor(&scenario.faults, index, start);
        let service = (draws.service_units * 1e6 / rate * slow).max(1.0) as u64;
        let end = start.saturating_add(service);
        self.accepted.push_back(end);
        Served {
            latency_us: end - t_us + network,
            overloaded: false,
            dropped: false,
        }
    }

    /// Attempts accepted and not finished at the last attempt's arrival (the queue model).
    #[cfg(test)]
    pub(super) fn backlog(&self) -> usize {
        self.accepted.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "duration_s = 20\n[compare]\nconfig = \"x.toml\"\npolicies = [\"p\"]\n\
             [workload]\nrate_per_s = 10\n[[workload.mix]]\ntype = \"get\"\nweight = 1\n{extra}"
        );
        toml::from_str(&text).unwrap()
    }

    /// Draws whose service takes exactly the mean service time and whose network takes 1 µs.
    fn draws() -> Draws {
        let mut draws = Draws::new(1, 0, 1, 1.0);
        draws.latency_us = 1;
        draws.service_units = 1.0;
        draws
    }

    /// docs/simulate.md "The queue model": one attempt at a time, in arrival order, each for
    /// its service time; a full queue answers "overloaded" at once, or drops the attempt.
    #[test]
    fn a_node_serves_in_order_and_a_full_queue_answers_or_drops() {
        let scenario = scenario("[cluster]\nnodes = 1\nservice_rate_per_s = 10\nqueue = 1\n");
        let mut node = Node::default();
        let d = draws();
        // 100 ms of service each: the second waits for the first.
        assert_eq!(node.serve(0, 0, &d, 1.0, &scenario).latency_us, 100_001);
        assert_eq!(node.serve(0, 0, &d, 1.0, &scenario).latency_us, 200_001);
        let full = node.serve(0, 10, &d, 1.0, &scenario);
        assert!(full.overloaded && !full.dropped && full.latency_us == 1);
        assert_eq!(node.backlog(), 2);
        // The first is done at 100 ms: room for one more, after the second.
        assert_eq!(
            node.serve(0, 100_000, &d, 1.0, &scenario).latency_us,
            200_001
        );
        let drop = scenario_with_drop();
        let mut node = Node::default();
        node.serve(0, 0, &d, 1.0, &drop);
        let dropped = node.serve(0, 0, &d, 1.0, &drop);
        assert!(dropped.dropped && !dropped.overloaded && dropped.latency_us >= NEVER_US);
    }

    fn scenario_with_drop() -> Scenario {
        scenario("[cluster]\nnodes = 1\nservice_rate_per_s = 10\nqueue = 0\nwhen_full = \"drop\"\n")
    }

    /// docs/simulate.md "Faults": a capacity fault multiplies the service rate by `1 − cut`
    /// at the moment an attempt's service starts, on its node or on every node.
    #[test]
    fn a_capacity_cut_slows_the_service_that_starts_during_it() {
        let scenario = scenario(
            "[cluster]\nnodes = 2\nservice_rate_per_s = 10\n\
             [[fault]]\nkind = \"capacity\"\ncut = 0.8\nnode = 1\nfrom_s = 1\nuntil_s = 2\n",
        );
        let d = draws();
        let mut other = Node::default();
        assert_eq!(
            other.serve(0, 1_500_000, &d, 1.0, &scenario).latency_us,
            100_001
        );
        let mut cut = Node::default();
        // Before the cut, during it (five times slower), and after it.
        assert_eq!(
            cut.serve(1, 500_000, &d, 1.0, &scenario).latency_us,
            100_001
        );
        assert_eq!(
            cut.serve(1, 1_000_000, &d, 1.0, &scenario).latency_us,
            500_001
        );
        assert_eq!(
            cut.serve(1, 2_000_000, &d, 1.0, &scenario).latency_us,
            100_001
        );
    }
}
