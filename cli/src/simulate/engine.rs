//! One policy's run of a scenario: a discrete-event simulation on a virtual clock. Requests
//! arrive as the workload says; each attempt goes to a node, takes a drawn latency and ends
//! as the faults active at that moment say; a failed attempt is classified (KV statuses by
//! the host's classifier) and handed to the request's [`RetryLoop`] — the same loop the
//! executor drives in production — which the policy decides through the registry at that
//! virtual moment; a retry is dispatched after the delay it asks, to the node it names. A
//! node with a capacity slows and fails attempts as its last second's load grows past it; an
//! attempt the policy's attempt timeout (or the deadline) cuts is abandoned by the client while
//! its node still serves it (wasted work); a policy's breakers admit each attempt; a policy that hedges sends copies of an attempt as
//! the host's hedge schedule says. Nothing sleeps. Every draw comes from generators seeded by
//! the scenario's seed — the workload's from the seed, an attempt's (or copy's) from the seed,
//! the request and the attempts started for it — so a run is the same for the same seed, and
//! the same request meets the same first-attempt fate under every policy.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use rebound::breaker::{self, Admission};
use rebound::classify::KvOpcode;
use rebound::grpc::GrpcCode;
use rebound::hedge::{CopyEnd, HedgeSchedule};
use rebound::registry::PolicyRegistry;
use rebound::{
    reasons, Cause, Ending, NodeChoice, Outcome, PolicyControls, Progress, RetryReason, Step,
};

use super::arrivals::Arrival;
use super::fate::{refused_before_dispatch, AttemptEnd, Draws, Effects, Target};
use super::live::{CopyInFlight, Live};
use super::load::overloaded;
use super::node::Node;
use super::results::{Bucket, Run};
use super::scenario::{Fault, Scenario};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// An attempt (first or retry) starts.
    Dispatch,
    /// The next copy of round `.0`'s attempt is due.
    Hedge(u32),
    /// Copy `.1` of round `.0`'s attempt ends.
    End(u32, usize),
}

/// A client process: its registry, whose policy state (budgets, throttles, breakers, hedging
/// windows) is its own, and the controls of its one policy.
struct Client<'a> {
    registry: &'a PolicyRegistry,
    controls: PolicyControls,
}

/// The simulation of one policy.
struct Simulation<'a> {
    scenario: &'a Scenario,
    clients: Vec<Client<'a>>,
    base: Instant,
    queue: BinaryHeap<Reverse<(u64, u64, usize, Event)>>,
    sequence: u64,
    live: Vec<Live>,
    run: Run,
    /// The nodes' load and queues.
    nodes: Vec<Node>,
}

impl Simulation<'_> {
    /// The controls of request `i`'s client (its breakers, hedging, budget and throttle).
    fn controls(&self, i: usize) -> &PolicyControls {
        &self.clients[self.live[i].client].controls
    }

    fn at(&self, t_us: u64) -> Instant {
        self.base + Duration::from_micros(t_us)
    }

    fn schedule(&mut self, t_us: u64, request: usize, event: Event) {
        self.sequence += 1;
        self.queue
            .push(Reverse((t_us, self.sequence, request, event)));
    }

    fn bucket(&mut self, t_us: u64) -> &mut Bucket {
        let index = self.bucket_index(t_us);
        &mut self.run.buckets[index]
    }

    /// The index of the bucket of `t_us`, the timeline grown to hold it.
    fn bucket_index(&mut self, t_us: u64) -> usize {
        let index = (t_us as f64 / (self.scenario.bucket_s * 1e6)) as usize;
        if self.run.buckets.len() <= index {
            self.run.buckets.resize(index + 1, Bucket::default());
            self.run.bucket_latencies_us.resize(index + 1, Vec::new());
        }
        index
    }

    fn active(&self, t_us: u64) -> impl Iterator<Item = &Fault> {
        self.scenario
            .faults
            .iter()
            .filter(move |f| f.window().contains(t_us))
    }

    /// The first moment in `(from_us, to_us]` at which `node` goes down, if it does.
    fn goes_down(&self, node: u32, from_us: u64, to_us: u64) -> Option<u64> {
        self.scenario
            .faults
            .iter()
            .filter_map(|f| match f {
                Fault::NodeDown {
                    node: n, from_s, ..
                } if *n == node => Some((from_s * 1e6) as u64),
                _ => None,
            })
            .filter(|down| from_us < *down && *down <= to_us)
            .min()
    }

    /// Starts a new attempt of request `i` at `t` (its first, or a retry): its first copy, and
    /// the hedge schedule of a policy that hedges it.
    fn start_attempt(&mut self, i: usize, t: u64) {
        let live = &mut self.live[i];
        live.round += 1;
        live.round_start_us = t;
        live.copies.clear();
        live.hedge_at = None;
        self.dispatch(i, t, 0);
        let now = self.at(t);
        let hedging = self.controls(i).hedging(self.live[i].retry.request(), now);
        let live = &mut self.live[i];
        live.schedule =
            hedging.and_then(|hedging| HedgeSchedule::start(&hedging, live.retry.request(), now));
        self.arm_hedge(i);
    }

    /// Queues the next copy of request `i`'s attempt, if one is due.
    fn arm_hedge(&mut self, i: usize) {
        let base = self.base;
        let live = &mut self.live[i];
        let due = (live.schedule.as_ref()).and_then(HedgeSchedule::next_due);
        let at = due.map(|(due, _)| u64::try_from((due - base).as_micros()).unwrap_or(u64::MAX));
        if at == live.hedge_at {
            return;
        }
        live.hedge_at = at;
        if let Some(at) = at {
            let round = live.round;
            self.schedule(at, i, Event::Hedge(round));
        }
    }

    /// The next copy of request `i`'s attempt of `round` is due at `t`: sent if the host pays
    /// for it.
    fn hedge(&mut self, i: usize, round: u32, t: u64) {
        let now = self.at(t);
        let live = &mut self.live[i];
        if live.finished || live.round != round || live.hedge_at != Some(t) {
            return;
        }
        live.hedge_at = None;
        let Some(schedule) = live.schedule.as_mut() else {
            return;
        };
        if let Some(node) = schedule.send_due(live.retry.request(), now) {
            let copy = live.copies.len();
            let extra = if node == NodeChoice::Next {
                copy as u32
            } else {
                0
            };
            self.dispatch(i, t, extra);
        }
        self.arm_hedge(i);
    }

    /// Starts a copy of request `i`'s attempt at `t`, `extra` nodes past the attempt's: draws
    /// its fate and schedules its end.
    fn dispatch(&mut self, i: usize, t: u64, extra: u32) {
        let nodes = self.scenario.cluster.nodes;
        let live = &mut self.live[i];
        live.attempts += 1;
        let mean_latency_us = self.scenario.cluster.latency_ms * 1e3;
        let draws = Draws::new(self.scenario.seed, i, live.attempts, mean_latency_us);
        let node = ((live.key % u64::from(nodes)) as u32 + live.node_offset + extra) % nodes;
        let target = Target {
            node,
            key: live.key,
            service: live.retry.request().service(),
            draws: &draws,
        };
        let effects = Effects::of(self.active(t), &target, self.scenario.seed);
        let (admission, admitted) = self.admit(i, node, t);
        let (end, outcome, served) =
            match refused_before_dispatch(admission.allows(), &effects, draws.latency_us) {
                Some((after, outcome)) => (t + after, outcome, false),
                None => self.serve(i, t, &target, effects),
            };
        self.run.attempts += 1;
        self.bucket(t).attempts += 1;
        let (end, outcome, cut) = self.cut(i, end, outcome);
        if served && cut {
            // The client stops waiting; the node serves it all the same.
            self.run.abandoned += 1;
            self.bucket(t).abandoned += 1;
        }
        let live = &mut self.live[i];
        let copy = live.copies.len();
        live.copies.push(CopyInFlight {
            end: Some(outcome),
            sent_us: t,
            admitted,
        });
        let round = live.round;
        self.schedule(end, i, Event::End(round, copy));
    }

    /// Request `i`'s copy that would end at `end` as `outcome`, as the client sees it: cut by
    /// the attempt timeout (counted from the round's start) or the deadline, whichever comes
    /// first and before `end`; with whether it was cut.
    fn cut(&self, i: usize, end: u64, outcome: AttemptEnd) -> (u64, AttemptEnd, bool) {
        let live = &self.live[i];
        let timeout = self.controls(i).attempt_timeout(live.retry.request());
        let timed = timeout.map(|timeout| {
            let us = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
            live.round_start_us.saturating_add(us)
        });
        match timed {
            Some(at) if at < live.deadline_us && at < end => {
                (at, AttemptEnd::Failed(reasons::ATTEMPT_TIMEOUT), true)
            }
            _ if end > live.deadline_us => (live.deadline_us, AttemptEnd::Deadline, true),
            _ if end == live.deadline_us => (end, AttemptEnd::Deadline, false),
            _ => (end, outcome, false),
        }
    }

    /// How the policy's breakers admit an attempt to `node` at `t`, and the node and admission
    /// to count its end against when admitted.
    fn admit(&self, i: usize, node: u32, t: u64) -> (Admission, Option<(String, Admission)>) {
        let Some(breakers) = self.controls(i).breakers() else {
            return (Admission::Admitted, None);
        };
        let name = format!("node-{node}");
        let admission = breakers.admit_at(&name, self.at(t));
        (admission, admission.allows().then_some((name, admission)))
    }

    /// Request `i`'s attempt, dispatched at `t` to `target`'s node, served there: as the node's
    /// load or queue says, cut by the node going down or its socket closing, else answered as
    /// the faults say. When it ends, and how, and whether the node works on it (a node whose
    /// full queue drops it does not).
    fn serve(
        &mut self,
        i: usize,
        t: u64,
        target: &Target<'_>,
        mut effects: Effects,
    ) -> (u64, AttemptEnd, bool) {
        let node = target.node;
        self.live[i].retry.dispatched(format!("node-{node}"));
        self.bucket(t).cluster_attempts += 1;
        self.run.cluster_attempts += 1;
        let served =
            self.nodes[node as usize].serve(node, t, target.draws, effects.slow, self.scenario);
        let latency = served.latency_us;
        let opcode = KvOpcode::of(self.live[i].retry.request().request_type());
        if served.overloaded {
            effects.unavailable = Some(overloaded(target.service, opcode));
            effects.status = None;
        }
        let cut = AttemptEnd::Failed(reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT);
        let worked = !served.dropped;
        if let Some(down) = self.goes_down(node, t, t.saturating_add(latency)) {
            (down, cut, worked)
        } else if effects.closed {
            (
                t + (latency as f64 * target.draws.close_at) as u64,
                cut,
                worked,
            )
        } else {
            (t.saturating_add(latency), effects.answer(opcode), worked)
        }
    }

    /// Reports how request `i` ended at `t` to the registry (its retry budget follows the
    /// whole traffic), as the executor does in production.
    fn report(&self, i: usize, t: u64, ended: fn(u32) -> Outcome) {
        let live = &self.live[i];
        let attempts = u32::try_from(live.attempts).unwrap_or(u32::MAX);
        (self.controls(i)).report(live.retry.request(), ended(attempts), self.at(t));
    }

    /// Records how request `i` ended at `t`: `None` for a success, else the error's name.
    fn finish(&mut self, i: usize, t: u64, error: Option<&str>) {
        self.live[i].finished = true;
        self.bucket(t).ended.count(error);
        self.run.outcomes.count(error);
        match error {
            None => {
                let start = self.live[i].start_us;
                self.run.latencies_us.push(t - start);
                let index = self.bucket_index(t);
                self.run.bucket_latencies_us[index].push(t - start);
            }
            Some(name) => *self.run.errors.entry(name.to_owned()).or_default() += 1,
        }
    }

    /// Counts the end at `t`, as `outcome`, of a copy of request `i` sent at `sent_us` (and
    /// admitted to a node as `admitted`, if the policy has breakers): in its node's breaker, and
    /// its latency when a node answered it.
    fn count_end(
        &self,
        i: usize,
        outcome: &AttemptEnd,
        (sent_us, admitted): (u64, Option<(String, Admission)>),
        t: u64,
    ) {
        let controls = self.controls(i);
        if outcome.answered() {
            let latency = Duration::from_micros(t - sent_us);
            controls.attempt_answered(self.live[i].retry.request(), latency);
        }
        if let (Some(breakers), Some((node, admission))) = (controls.breakers(), admitted) {
            let failed = match outcome {
                AttemptEnd::Success => Some(false),
                AttemptEnd::Deadline => Some(true),
                AttemptEnd::Failed(reason) => breaker::failure_counts(reason, None),
                AttemptEnd::Refused => breaker::failure_counts(&refused_reason(), None),
            };
            if let Some(failed) = failed {
                breakers.record_at(&node, admission, failed, self.at(t));
            }
        }
    }

    /// The attempt of request `i` in flight ended at `t`.
    async fn end(&mut self, i: usize, round: u32, copy: usize, t: u64) -> anyhow::Result<()> {
        let live = &mut self.live[i];
        let stale = live.finished || live.round != round;
        let Some(in_flight) = live.copies.get_mut(copy).filter(|_| !stale) else {
            // A copy of an earlier round, or of a request already ended: the node did the
            // work, but nothing waits for its answer.
            return Ok(());
        };
        let outcome = in_flight.end.take().expect("a copy in flight");
        let ended = (in_flight.sent_us, in_flight.admitted.take());
        self.count_end(i, &outcome, ended, t);
        let (reason, progress) = match outcome {
            AttemptEnd::Success => {
                self.live[i].retry.succeeded();
                self.report(i, t, |attempts| Outcome::Succeeded { attempts });
                self.finish(i, t, None);
                return Ok(());
            }
            AttemptEnd::Deadline => {
                let now = self.at(t);
                let error = self.live[i].retry.deadline_reached(now);
                self.report(i, t, |attempts| Outcome::TimedOut { attempts });
                self.finish(i, t, Some(error.name()));
                return Ok(());
            }
            AttemptEnd::Failed(reason) => (reason, Progress::Processed),
            AttemptEnd::Refused => (refused_reason(), Progress::Refused),
        };
        let now = self.at(t);
        let live = &mut self.live[i];
        if let Some(schedule) = live.schedule.as_mut() {
            // A hedged attempt: the other copies, or one due, may still answer.
            if schedule.failed(live.retry.request(), &reason, None, progress, now) == CopyEnd::Wait
            {
                self.arm_hedge(i);
                return Ok(());
            }
        }
        let registry = self.clients[self.live[i].client].registry;
        let step = self.live[i]
            .retry
            .failed(registry, Cause::Reason(reason), None, progress, now)
            .await?;
        match step {
            Step::Retry { delay, attempt } => {
                if attempt.node == NodeChoice::Next {
                    self.live[i].node_offset += 1;
                }
                let delay = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
                self.schedule(t.saturating_add(delay), i, Event::Dispatch);
            }
            Step::End(Ending::Ended { error, after }) => {
                let at = t.saturating_add(u64::try_from(after.as_micros()).unwrap_or(u64::MAX));
                if error.is_timeout() {
                    self.report(i, at, |attempts| Outcome::TimedOut { attempts });
                } else {
                    self.report(i, at, |attempts| Outcome::Failed { attempts });
                }
                self.finish(i, at, Some(error.name()));
            }
            // A Cassandra IGNORE completes the request with an empty result (an error with an
            // empty result to the executor's caller: reported as a failure, as it reports it).
            Step::End(Ending::Ignored(_)) => {
                self.report(i, t, |attempts| Outcome::Failed { attempts });
                self.finish(i, t, None);
            }
            Step::End(_) => {
                self.report(i, t, |attempts| Outcome::Failed { attempts });
                self.finish(i, t, Some("NotRetried"));
            }
        }
        Ok(())
    }
}

/// The reason of an attempt its node's transport refused: gRPC's UNAVAILABLE.
fn refused_reason() -> RetryReason {
    RetryReason::GrpcStatus(GrpcCode::Unavailable)
}

/// Runs `arrivals` through the clients' `registries` (one per client, each with `policy` as
/// its default policy), dealt among them in turn.
pub async fn run(
    scenario: &Scenario,
    registries: &[PolicyRegistry],
    policy: &str,
    arrivals: &[Arrival],
) -> anyhow::Result<Run> {
    let base = Instant::now();
    let mut sim = Simulation {
        scenario,
        clients: Vec::with_capacity(registries.len()),
        base,
        queue: BinaryHeap::new(),
        sequence: 0,
        live: Vec::with_capacity(arrivals.len()),
        run: Run::new(policy, arrivals.len() as u64),
        nodes: vec![Node::default(); scenario.cluster.nodes as usize],
    };
    for (i, arrival) in arrivals.iter().enumerate() {
        let mut live = Live::of(scenario, arrival, i as u64 + 1, sim.at(arrival.t_us))?;
        live.client = i % registries.len();
        sim.live.push(live);
        sim.bucket(arrival.t_us).arrivals += 1;
        sim.schedule(arrival.t_us, i, Event::Dispatch);
    }
    // Every request is decided by the one policy of its client's registry: its controls are
    // the client's.
    for registry in registries {
        let controls = (sim.live.first())
            .map(|live| registry.controls(live.retry.request()))
            .unwrap_or_default();
        sim.clients.push(Client { registry, controls });
    }
    while let Some(Reverse((t, _, i, event))) = sim.queue.pop() {
        match event {
            Event::Dispatch => sim.start_attempt(i, t),
            Event::Hedge(round) => sim.hedge(i, round, t),
            Event::End(round, copy) => sim.end(i, round, copy, t).await?,
        }
    }
    sim.run.latencies_us.sort_unstable();
    Ok(sim.run)
}
