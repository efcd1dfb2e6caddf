//! One call into a policy: arming its store with the call's budgets (fuel, the epoch
//! deadline), and turning every way the call can fail into a [`PolicyFailure`] of a known kind.

use std::time::Duration;

use wasmtime::{Store, Trap};

use super::deadline::Due;
use super::host_trap::HostTrap;
use super::runtime::{WasmRuntime, SETUP_FUEL_FACTOR};
use super::settings::SandboxLimits;
use super::store::CallState;
use crate::action::{PolicyFailure, PolicyFailureKind};

/// Which budgets a call runs under.
#[derive(Debug, Clone, Copy)]
pub(super) enum Budgets<'a> {
    /// A decision, due when given (at most `deadline_ms` after it starts), and `fuel`.
    Decision(Due<'a>),
    /// Creating and configuring an instance: `setup_deadline_ms` and
    /// [`SETUP_FUEL_FACTOR`] × `fuel`.
    Setup,
}

/// Arms `store` for one call under `limits`.
pub(super) fn arm(
    store: &mut Store<CallState>,
    runtime: &WasmRuntime,
    limits: &SandboxLimits,
    budgets: Budgets<'_>,
) -> Result<(), PolicyFailure> {
    let (fuel, due) = match budgets {
        Budgets::Setup => (
            limits.fuel.saturating_mul(SETUP_FUEL_FACTOR),
            Due::Within(Duration::from_millis(limits.setup_deadline_ms)),
        ),
        Budgets::Decision(due) => (limits.fuel, due),
    };
    store
        .set_fuel(fuel)
        .map_err(|e| PolicyFailure::new(PolicyFailureKind::Trap, format!("{e:#}")))?;
    let first = (store.data_mut().deadline).arm(due.ticks_to_eve(runtime));
    store.set_epoch_deadline(first);
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
    let trap = error.downcast_ref::<Trap>();
    let kind = match trap {
        Some(Trap::OutOfFuel) => PolicyFailureKind::FuelExhausted,
        Some(Trap::Interrupt) => PolicyFailureKind::Timeout,
        Some(Trap::StackOverflow) => PolicyFailureKind::StackOverflow,
        _ => PolicyFailureKind::Trap,
    };
    // A trap's detail is what trapped; the wasm backtrace wasmtime attaches (a dozen frames
    // of a language runtime) is for whoever debugs the runtime, at debug level.
    match trap {
        Some(trap) => {
            tracing::debug!("policy call trapped: {error:#}");
            PolicyFailure::new(kind, trap.to_string())
        }
        None => PolicyFailure::new(kind, format!("{error:#}")),
    }
}
