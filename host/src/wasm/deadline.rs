//! The per-call wall-clock deadline, forgiving of preemption. The epoch ticker raises the
//! deadline after `deadline_ms`; from then on the call is stopped only once its thread has
//! spent [`SPIN_CPU`] of CPU time past the deadline (a policy really running that long past
//! its budget is spinning), or after [`GRACE_TICKS`] more ticks of wall time whatever it did.
//! A call that overran only because the machine was overloaded (its thread descheduled) needs
//! microseconds of CPU to finish, and is let finish. A spinning policy is thus stopped about a
//! millisecond after its deadline on an idle machine, and an honest one is not blamed for a
//! busy machine. Nothing here runs on a call that meets its deadline.

use std::time::Duration;

use wasmtime::UpdateDeadline;

/// The most ticks a call is extended past its deadline.
const GRACE_TICKS: u32 = 100;

/// The longest a call runs past its deadline in wall time: the grace a preempted call is given.
#[cfg(feature = "registry")]
pub(crate) const MOST_PAST_DEADLINE: Duration =
    Duration::from_millis(super::runtime::EPOCH_TICK.as_millis() as u64 * GRACE_TICKS as u64);

/// CPU time past the deadline after which a call is stopped.
const SPIN_CPU: Duration = Duration::from_millis(1);

/// Where a call stands past its deadline.
#[derive(Debug, Default)]
pub(crate) struct DeadlineGrace {
    /// The thread's CPU time when the deadline first passed in this call.
    cpu_at_deadline: Option<Duration>,
    /// Ticks granted so far in this call.
    granted: u32,
}

impl DeadlineGrace {
    /// Forgets the previous call.
    pub fn reset(&mut self) {
        self.cpu_at_deadline = None;
        self.granted = 0;
    }

    /// The epoch deadline passed: stop the call, or extend it by one tick.
    pub fn on_deadline(&mut self) -> UpdateDeadline {
        let Ok(cpu) = cpu_time::ThreadTime::try_now().map(|t| t.as_duration()) else {
            return UpdateDeadline::Interrupt; // cannot tell: the deadline stands
        };
        let since = *self.cpu_at_deadline.get_or_insert(cpu);
        if cpu.saturating_sub(since) >= SPIN_CPU || self.granted >= GRACE_TICKS {
            return UpdateDeadline::Interrupt;
        }
        self.granted += 1;
        UpdateDeadline::Continue(1)
    }
}
