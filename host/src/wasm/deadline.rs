//! The per-call wall-clock deadline, forgiving of preemption. A call still running two ticks
//! in is first called back to hand a tokio runtime's I/O to another thread (`io_hand_off`).
//! The epoch ticker then calls back one tick before the deadline (its eve), where the thread's
//! CPU time is noted; from the deadline on, the call is stopped once its thread has spent
//! [`SPIN_CPU`] of CPU time since the eve (a policy that ran through the last tick before its
//! deadline and on past it is spinning), or after [`GRACE_TICKS`] more ticks of wall time
//! whatever it did. A call that overran only because the machine was overloaded (its thread
//! descheduled) needs microseconds of CPU to finish, and is let finish. A spinning policy is
//! thus stopped at the first tick past its deadline, and an honest one is not blamed for a
//! busy machine. Nothing here runs on a call that ends within two ticks.

use std::time::{Duration, Instant};

use wasmtime::UpdateDeadline;

use super::call_watch::CallWatch;
use super::io_hand_off::{hand_off_io, HAND_OFF_TICKS};
use super::runtime::{WasmRuntime, EPOCH_TICK};

/// The most ticks a call is extended past its deadline.
const GRACE_TICKS: u32 = 100;

/// The longest a call runs past its deadline in wall time: the grace a preempted call is given.
#[cfg(feature = "registry")]
pub(crate) const MOST_PAST_DEADLINE: Duration =
    Duration::from_millis(EPOCH_TICK.as_millis() as u64 * GRACE_TICKS as u64);

/// CPU time since the deadline's eve after which a call past its deadline is stopped: a tenth
/// of a tick, so that a spinning thread is stopped at the first tick past its deadline even
/// when it shares its core with a few others; a call overrunning only because its thread was
/// descheduled needs microseconds of CPU to finish.
const SPIN_CPU: Duration = Duration::from_micros(EPOCH_TICK.as_micros() as u64 / 10);

/// When a call is due.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Due<'a> {
    /// Within this long of its start, the clock not read: the deadline passes between that
    /// long and a tick more after the start (the epoch may be about to advance when the call
    /// starts).
    Within(Duration),
    /// At this moment: the deadline passes at the first tick at or after it. The call's
    /// caller, on another thread, watches its CPU time through `watch`. Only the
    /// registry's isolation calls this way; the variant stays in every build with the engine,
    /// as the lifetime of `Due` is its.
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    At {
        /// When the call is due.
        at: Instant,
        /// Where the call's thread notes its CPU time as the call starts.
        watch: &'a CallWatch,
    },
}

impl Due<'_> {
    /// Epoch ticks from the current epoch to the deadline's eve (the deadline is one tick
    /// later), as the call starts.
    pub(super) fn ticks_to_eve(self, runtime: &WasmRuntime) -> u64 {
        match self {
            Due::Within(within) => ticks_to_eve(within),
            Due::At { at, watch } => {
                watch.start();
                runtime.ticks_until(at).saturating_sub(1)
            }
        }
    }
}

/// Epoch ticks from now to the deadline's eve, for a call due within `deadline`: the deadline
/// itself is one tick later, and never sooner than `deadline`.
fn ticks_to_eve(deadline: Duration) -> u64 {
    // In 64 bits (a deadline of 584 years at most): this runs on every call.
    const TICK: u64 = EPOCH_TICK.as_nanos() as u64;
    u64::try_from(deadline.as_nanos()).map_or(u64::MAX, |nanos| nanos.div_ceil(TICK))
}

/// Where a call stands on its way to its deadline.
#[derive(Debug, Default)]
pub(crate) struct DeadlineGrace {
    /// While the call's first epoch deadline is its I/O hand-off: the ticks from there to its
    /// deadline's eve.
    eve_after_hand_off: Option<u64>,
    /// The thread's CPU time at the deadline's eve in this call.
    cpu_at_eve: Option<Duration>,
    /// Ticks granted past the deadline so far in this call.
    granted: u32,
}

impl DeadlineGrace {
    /// Forgets the previous call, and arms the next, `ticks_to_eve` epoch ticks from its
    /// deadline's eve. Returns the ticks to the call's first epoch deadline: its I/O hand-off,
    /// when the eve is further.
    pub(crate) fn arm(&mut self, ticks_to_eve: u64) -> u64 {
        self.cpu_at_eve = None;
        self.granted = 0;
        if ticks_to_eve > HAND_OFF_TICKS {
            self.eve_after_hand_off = Some(ticks_to_eve - HAND_OFF_TICKS);
            HAND_OFF_TICKS
        } else {
            self.eve_after_hand_off = None;
            ticks_to_eve
        }
    }

    /// An epoch deadline passed (the I/O hand-off, the eve, then the deadline and each tick
    /// after it): stop the call, or say when to look again. The eve is counted from when the
    /// hand-off was seen: on time for a thread running the call, later (never sooner) for one
    /// the machine had preempted across the hand-off's tick.
    pub(crate) fn on_deadline(&mut self) -> UpdateDeadline {
        if let Some(to_eve) = self.eve_after_hand_off.take() {
            hand_off_io();
            return UpdateDeadline::Continue(to_eve);
        }
        let cpu = cpu_time::ThreadTime::try_now()
            .map(|t| t.as_duration())
            .ok();
        self.on_tick(cpu)
    }

    /// The verdict at a tick, the thread's CPU time being `cpu` (`None`: unknown).
    fn on_tick(&mut self, cpu: Option<Duration>) -> UpdateDeadline {
        let Some(eve) = self.cpu_at_eve else {
            // The eve: note the CPU time (zero if unknown) and go on to the deadline.
            self.cpu_at_eve = Some(cpu.unwrap_or_default());
            return UpdateDeadline::Continue(1);
        };
        // Without the thread's CPU time a spinning thread cannot be told from a preempted
        // one: the deadline stands.
        let Some(cpu) = cpu else {
            return UpdateDeadline::Interrupt;
        };
        if cpu.saturating_sub(eve) >= SPIN_CPU || self.granted >= GRACE_TICKS {
            return UpdateDeadline::Interrupt;
        }
        self.granted += 1;
        UpdateDeadline::Continue(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interrupts(verdict: UpdateDeadline) -> bool {
        matches!(verdict, UpdateDeadline::Interrupt)
    }

    #[test]
    fn a_long_call_hands_the_io_off_two_ticks_in_then_goes_on_to_its_eve() {
        let mut grace = DeadlineGrace::default();
        assert_eq!(grace.arm(10), HAND_OFF_TICKS, "the first deadline: the hand-off");
        assert!(matches!(
            grace.on_deadline(),
            UpdateDeadline::Continue(ticks) if ticks == 10 - HAND_OFF_TICKS
        ));
        // The eve: the CPU time is noted and the call goes on to its deadline.
        assert!(matches!(grace.on_deadline(), UpdateDeadline::Continue(1)));
        assert!(grace.cpu_at_eve.is_some());
        // A call due within the hand-off's ticks goes straight to its eve.
        assert_eq!(grace.arm(HAND_OFF_TICKS), HAND_OFF_TICKS);
        assert!(grace.eve_after_hand_off.is_none() && grace.cpu_at_eve.is_none());
    }

    #[test]
    fn the_eve_notes_the_cpu_and_the_call_goes_on_to_its_deadline() {
        let mut grace = DeadlineGrace::default();
        assert!(!interrupts(grace.on_tick(Some(Duration::from_millis(7)))));
    }

    #[test]
    fn a_thread_that_ran_since_the_eve_is_stopped_at_the_deadline() {
        let mut grace = DeadlineGrace::default();
        let eve = Duration::from_millis(7);
        grace.on_tick(Some(eve));
        assert!(interrupts(grace.on_tick(Some(eve + SPIN_CPU))));
    }

    #[test]
    fn a_preempted_thread_is_given_grace_up_to_its_limit() {
        let mut grace = DeadlineGrace::default();
        let eve = Duration::from_millis(7);
        grace.on_tick(Some(eve));
        let barely_ran = eve + Duration::from_micros(10);
        for tick in 0..GRACE_TICKS {
            assert!(!interrupts(grace.on_tick(Some(barely_ran))), "tick {tick}");
        }
        assert!(interrupts(grace.on_tick(Some(barely_ran))));
        // The next call starts afresh.
        grace.arm(1);
        assert!(!interrupts(grace.on_tick(Some(barely_ran))));
    }

    #[test]
    fn without_the_thread_s_cpu_time_the_deadline_stands() {
        let mut grace = DeadlineGrace::default();
        assert!(!interrupts(grace.on_tick(None)), "the eve");
        assert!(interrupts(grace.on_tick(None)), "the deadline");
    }

    #[test]
    fn the_deadline_is_never_sooner_than_asked() {
        // The eve is ⌈deadline ÷ tick⌉ ticks away and the deadline one more: the epoch may
        // advance right after the call starts, so the deadline's tick comes no sooner than
        // `deadline` itself.
        assert_eq!(ticks_to_eve(Duration::ZERO), 0);
        assert_eq!(ticks_to_eve(EPOCH_TICK), 1);
        assert_eq!(ticks_to_eve(EPOCH_TICK * 10), 10);
        assert_eq!(ticks_to_eve(EPOCH_TICK * 10 + Duration::from_nanos(1)), 11);
    }
}
