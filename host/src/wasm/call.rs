//! One call into a policy: arming its store with the call's budgets (fuel, the epoch
//! deadline), and turning every way the call can fail into a [`PolicyFailure`] of a known kind.

use wasmtime::{Store, Trap};

use super::imports::HostTrap;
use super::runtime::{SandboxLimits, EPOCH_TICK, SETUP_FUEL_FACTOR};
use super::store::CallState;
use crate::action::{PolicyFailure, PolicyFailureKind};

/// Which budgets a call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Budgets {
    /// A decision: `deadline_ms` and `fuel`.
    Decision,
    /// Creating and configuring an instance: `setup_deadline_ms` and
    /// [`SETUP_FUEL_FACTOR`] × `fuel`.
    Setup,
}

/// Arms `store` for one call under `limits`.
pub(super) fn arm(
    store: &mut Store<CallState>,
    limits: &SandboxLimits,
    budgets: Budgets,
) -> Result<(), PolicyFailure> {
    let (fuel, deadline_ms) = match budgets {
        Budgets::Setup => (
            limits.fuel.saturating_mul(SETUP_FUEL_FACTOR),
            limits.setup_deadline_ms,
        ),
        Budgets::Decision => (limits.fuel, limits.deadline_ms),
    };
    store
        .set_fuel(fuel)
        .map_err(|e| PolicyFailure::new(PolicyFailureKind::Trap, format!("{e:#}")))?;
    let ticks = deadline_ms.div_ceil(EPOCH_TICK.as_millis() as u64) + 1;
    store.set_epoch_deadline(ticks);
    store.data_mut().deadline.reset();
    store.data_mut().wasi.begin_call();
    Ok(())
}

/// Maps a call error to its failure kind.
pub(super) fn classify(error: wasmtime::Error) -> PolicyFailure {
    if let Some(trap) = error.downcast_ref::<HostTrap>() {
        let kind = match trap {
            HostTrap::Panic(_) => PolicyFailureKind::Panic,
            HostTrap::Denied(_) | HostTrap::NoFailure(_) => PolicyFailureKind::Trap,
            HostTrap::MemoryLimitExceeded { .. } => PolicyFailureKind::MemoryLimitExceeded,
        };
        return PolicyFailure::new(kind, trap.to_string());
    }
    let kind = match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => PolicyFailureKind::FuelExhausted,
        Some(Trap::Interrupt) => PolicyFailureKind::Timeout,
        Some(Trap::StackOverflow) => PolicyFailureKind::StackOverflow,
        _ => PolicyFailureKind::Trap,
    };
    PolicyFailure::new(kind, format!("{error:#}"))
}
