//! The per-call wall-clock deadline, forgiving of preemption. The epoch ticker raises the
//! deadline after `deadline_ms`; the call is then stopped only if its thread has actually been
//! running: each further tick, the thread's CPU time is compared with the wall time, and a call
//! whose thread got at least half of the tick is interrupted. A call that overran only because
//! the machine was overloaded (its thread descheduled) is let finish, up to [`GRACE_TICKS`]
//! more ticks. A spinning policy is thus stopped one tick after its deadline on an idle machine,
//! and an honest one is not blamed for a busy machine. Nothing here runs on a call that meets
//! its deadline.

use std::time::{Duration, Instant};

use wasmtime::UpdateDeadline;

/// The most ticks a call is extended past its deadline while its thread is not running.
pub(crate) const GRACE_TICKS: u32 = 100;

/// Where a call stands past its deadline.
#[derive(Debug, Default)]
pub(crate) struct DeadlineGrace {
    /// Wall and thread CPU time when the last extension was granted.
    mark: Option<(Instant, Duration)>,
    /// Ticks granted so far in this call.
    granted: u32,
}

impl DeadlineGrace {
    /// Forgets the previous call.
    pub fn reset(&mut self) {
        self.mark = None;
        self.granted = 0;
    }

    /// The epoch deadline passed: stop the call, or extend it by one tick.
    pub fn on_deadline(&mut self) -> UpdateDeadline {
        let Ok(cpu) = cpu_time::ThreadTime::try_now().map(|t| t.as_duration()) else {
            return UpdateDeadline::Interrupt; // cannot tell: the deadline stands
        };
        let now = Instant::now();
        if let Some((wall_mark, cpu_mark)) = self.mark {
            let ran = cpu.saturating_sub(cpu_mark);
            let wall = now.saturating_duration_since(wall_mark);
            if ran * 2 >= wall || self.granted >= GRACE_TICKS {
                return UpdateDeadline::Interrupt;
            }
        }
        self.mark = Some((now, cpu));
        self.granted += 1;
        UpdateDeadline::Continue(1)
    }
}
