//! The copies of one hedged request as an I/O-free state machine: which are out, when the next
//! one is due and where, and what a copy's failure does. Its driver (the executor) sends the
//! copies, sleeps until the next is due and tells it what happened and when.

use std::time::Instant;

use super::{Asked, HedgeAction, Hedging, InFlight, MAX_COPIES};
use crate::action::NodeChoice;
use crate::progress::Progress;
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::throttle::FailureClass;

/// What a copy's failure does to the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyEnd {
    /// The other copies go on (or one is due): wait for them.
    Wait,
    /// The request ends with this failure: it was fatal (the other copies are cancelled), or it
    /// was the last copy out and no more are due.
    End,
}

/// One request's copies (see the [module docs](super)).
#[derive(Debug)]
pub struct HedgeSchedule {
    hedging: Hedging,
    first: Instant,
    last: Instant,
    copies: u32,
    outstanding: u32,
    failures: Vec<RetryReason>,
    pushback: Option<Pushback>,
    next: Option<(Instant, NodeChoice)>,
    /// No more copies go: the host refused one, a pushback said stop, or the limit is reached.
    closed: bool,
}

impl HedgeSchedule {
    /// The schedule of `request`, whose first copy was sent at `now`; `None` when the request
    /// may not be hedged (it is not idempotent), so it runs one copy at a time as any request.
    pub fn start(hedging: &Hedging, request: &Request, now: Instant) -> Option<Self> {
        if !Hedging::may_hedge(request) {
            return None;
        }
        let mut schedule = HedgeSchedule {
            hedging: hedging.clone(),
            first: now,
            last: now,
            copies: 1,
            outstanding: 1,
            failures: Vec::new(),
            pushback: None,
            next: None,
            closed: false,
        };
        schedule.ask(request, Asked::AfterCopy, now);
        Some(schedule)
    }

    /// Copies sent so far, the first included.
    pub fn copies(&self) -> u32 {
        self.copies
    }

    /// Copies sent and not answered yet.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// When the next copy is due and where, if one is.
    pub fn next_due(&self) -> Option<(Instant, NodeChoice)> {
        self.next
    }

    /// The next copy is due at `now`: `Some(node)` when the host pays for it and it is to be
    /// sent now (counted as sent), `None` when the host refuses it, which closes the schedule.
    pub fn send_due(&mut self, request: &Request, now: Instant) -> Option<NodeChoice> {
        let (_, node) = self.next.take()?;
        if self.closed || self.copies >= MAX_COPIES || !self.hedging.pay_for_copy(now) {
            self.closed = true;
            tracing::debug!(
                copy = self.copies,
                "hedge not sent: the throttle or budget refused it"
            );
            return None;
        }
        self.copies += 1;
        self.outstanding += 1;
        self.last = now;
        tracing::debug!(copy = self.copies - 1, ?node, "hedge sent");
        self.ask(request, Asked::AfterCopy, now);
        Some(node)
    }

    /// No more copies go (the request's deadline has passed, for a driver that does not drop
    /// the copies out at the deadline); those out go on.
    pub fn close(&mut self) {
        self.closed = true;
        self.next = None;
    }

    /// A copy failed at `now` for `reason`, the server pushing back as `pushback` says, having
    /// got as far as `progress` says: a committed or dropped copy ends the request (gRFC A6: a
    /// committed call starts no copy, a dropped one fails at once).
    pub fn failed(
        &mut self,
        request: &Request,
        reason: &RetryReason,
        pushback: Option<Pushback>,
        progress: Progress,
        now: Instant,
    ) -> CopyEnd {
        self.outstanding = self.outstanding.saturating_sub(1);
        let ends = matches!(progress, Progress::Committed | Progress::Dropped);
        if ends || self.hedging.policy().is_fatal(request, reason) {
            self.next = None;
            return CopyEnd::End;
        }
        self.failures.push(reason.clone());
        self.pushback = pushback;
        if pushback == Some(Pushback::Stop) {
            // gRFC A6 "Pushback": no further hedged requests; those in flight go on.
            self.closed = true;
            self.next = None;
        } else {
            self.ask(request, Asked::AfterFailure, now);
        }
        if self.outstanding == 0 && self.next.is_none() {
            return CopyEnd::End;
        }
        // Another copy will answer: this failure counts in the throttle now, as gRPC counts
        // every failed RPC; the request's last failure is counted when it is decided. A copy the
        // server's application never saw is not a failure a throttle counts (A6).
        let unseen = matches!(progress, Progress::NotSent | Progress::Refused);
        if let Some(throttle) = self.hedging.throttle().filter(|_| !unseen) {
            throttle.failed_at(FailureClass::of(reason, pushback), now);
        }
        CopyEnd::Wait
    }

    /// Asks the policy when the next copy goes, unless no more may.
    fn ask(&mut self, request: &Request, asked: Asked, now: Instant) {
        if self.closed || self.copies >= MAX_COPIES {
            self.next = None;
            return;
        }
        let flight = InFlight {
            asked,
            copies: self.copies,
            outstanding: self.outstanding,
            since_first: now.saturating_duration_since(self.first),
            since_last: now.saturating_duration_since(self.last),
            failures: &self.failures,
            pushback: self.pushback,
            latencies: self.hedging.latencies(),
        };
        self.next = match self.hedging.policy().next_copy(request, &flight) {
            HedgeAction::Wait => None,
            // A delay past what the clock holds never comes: no copy.
            HedgeAction::SendAfter { after, node } => now.checked_add(after).map(|at| (at, node)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hedge::{HedgingPolicy, MAX_COPIES};
    use crate::request::RequestType;
    use crate::traffic_budget::{BudgetConfig, TrafficBudget};
    use std::sync::Arc;
    use std::time::Duration;

    /// Always wants another copy at once; every failure non-fatal.
    #[derive(Debug)]
    struct Eager;

    impl HedgingPolicy for Eager {
        fn name(&self) -> &str {
            "eager"
        }
        fn next_copy(&self, _: &Request, _: &InFlight<'_>) -> HedgeAction {
            HedgeAction::SendAfter {
                after: Duration::ZERO,
                node: NodeChoice::Next,
            }
        }
        fn is_fatal(&self, _: &Request, reason: &RetryReason) -> bool {
            *reason == RetryReason::HttpStatus(400)
        }
    }

    fn get() -> Request {
        Request::new(1, RequestType::Get, Duration::from_secs(1)).unwrap()
    }

    /// Wants its next copy after the longest delay there is.
    #[derive(Debug)]
    struct Never;

    impl HedgingPolicy for Never {
        fn name(&self) -> &str {
            "never"
        }
        fn next_copy(&self, _: &Request, _: &InFlight<'_>) -> HedgeAction {
            HedgeAction::SendAfter {
                after: Duration::MAX,
                node: NodeChoice::Next,
            }
        }
        fn is_fatal(&self, _: &Request, _: &RetryReason) -> bool {
            false
        }
    }

    /// SECURITY.md "Clients of `rebound serve`", numbers: a delay past what the clock holds
    /// (a `hedgingDelay` of 2^64 − 1 s) is no copy at all, never a panic adding it to an
    /// instant.
    #[test]
    fn a_delay_past_the_clock_sends_no_copy() {
        let hedging = Hedging::new(Arc::new(Never));
        let now = Instant::now();
        let mut schedule = HedgeSchedule::start(&hedging, &get(), now).unwrap();
        assert_eq!(schedule.next_due(), None);
        assert_eq!(schedule.send_due(&get(), now), None);
        assert_eq!(schedule.copies(), 1);
    }

    /// The host caps the copies at `MAX_COPIES` whatever the policy asks.
    #[test]
    fn copies_stop_at_the_host_s_limit() {
        let hedging = Hedging::new(Arc::new(Eager));
        let now = Instant::now();
        let mut schedule = HedgeSchedule::start(&hedging, &get(), now).unwrap();
        while schedule.send_due(&get(), now).is_some() {}
        assert_eq!(schedule.copies(), MAX_COPIES);
        assert_eq!(schedule.next_due(), None);
    }

    /// A budget that refuses closes the schedule: no copy goes after it.
    #[test]
    fn a_refusing_budget_closes_the_schedule() {
        let budget = TrafficBudget::new(BudgetConfig {
            percent: 0.0,
            min_per_second: 1,
            ttl_ms: 1_000,
        })
        .unwrap();
        let hedging = Hedging::new(Arc::new(Eager)).with_budget(Some(Arc::new(budget)));
        let now = Instant::now();
        let mut schedule = HedgeSchedule::start(&hedging, &get(), now).unwrap();
        let mut sent = 0;
        while schedule.send_due(&get(), now).is_some() {
            sent += 1;
        }
        assert_eq!(sent, 1, "the budget's floor: one retry a second");
        assert_eq!(schedule.next_due(), None);
        assert_eq!(
            schedule.failed(
                &get(),
                &RetryReason::HttpStatus(503),
                None,
                Progress::Processed,
                now
            ),
            CopyEnd::Wait,
            "copies still out"
        );
    }

    /// A fatal failure ends the request; the last copy's failure with none due does too.
    #[test]
    fn fatal_and_last_failures_end_the_request() {
        let hedging = Hedging::new(Arc::new(Eager));
        let now = Instant::now();
        let mut schedule = HedgeSchedule::start(&hedging, &get(), now).unwrap();
        assert_eq!(
            schedule.failed(
                &get(),
                &RetryReason::HttpStatus(400),
                None,
                Progress::Processed,
                now
            ),
            CopyEnd::End
        );
        let mut schedule = HedgeSchedule::start(&hedging, &get(), now).unwrap();
        let stop = Some(Pushback::Stop);
        assert_eq!(
            schedule.failed(
                &get(),
                &RetryReason::HttpStatus(503),
                stop,
                Progress::Processed,
                now
            ),
            CopyEnd::End,
            "stopped, and nothing out"
        );
        assert!(HedgeSchedule::start(&hedging, &get().with_idempotent(false), now).is_none());
    }

    /// gRFC A6 "When Retries are Valid": once a copy is committed no other starts; "Transparent
    /// Retries": a dropped call fails at once. Either ends the request while copies are out.
    #[test]
    fn a_committed_or_dropped_copy_ends_the_request() {
        let hedging = Hedging::new(Arc::new(Eager));
        let now = Instant::now();
        for progress in [Progress::Committed, Progress::Dropped] {
            let mut schedule = HedgeSchedule::start(&hedging, &get(), now).unwrap();
            while schedule.send_due(&get(), now).is_some() {}
            let unavailable = RetryReason::HttpStatus(503);
            let end = schedule.failed(&get(), &unavailable, None, progress, now);
            assert_eq!(end, CopyEnd::End, "{progress}");
            assert_eq!(schedule.next_due(), None);
        }
    }
}
