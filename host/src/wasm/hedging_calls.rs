//! The `hedging.next-copy` call of each version that has one, in the engine's words: the
//! request in flight as the version's record, its answer as a [`HedgeAction`]. The versions'
//! types have the same shape and distinct identities, so the conversion is written once.

use std::time::Duration;

use wasmtime::Store;

use super::bindings::{v0_5, v0_6};
use super::store::CallState;
use crate::action::NodeChoice;
use crate::hedge::{Asked, HedgeAction, InFlight};

/// `next_copy_vX_Y`: asks a component of the version whose bindings module is `$b`.
macro_rules! next_copy {
    ($name:ident, $b:ident) => {
        pub(super) fn $name(
            policy: &$b::hedging::HedgingPolicy,
            store: &mut Store<CallState>,
            flight: &InFlight<'_>,
        ) -> wasmtime::Result<Option<HedgeAction>> {
            use $b::hedging::exports::rebound::policy::hedging as wit;
            let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
            let flight = wit::InFlight {
                asked: match flight.asked {
                    Asked::AfterCopy => wit::Asked::AfterCopy,
                    Asked::AfterFailure => wit::Asked::AfterFailure,
                },
                copies: flight.copies,
                outstanding: flight.outstanding,
                since_first_ms: ms(flight.since_first),
                since_last_ms: ms(flight.since_last),
                failures: flight.failures.iter().map($b::reason_to_wit).collect(),
            };
            let answer = policy
                .rebound_policy_hedging()
                .call_next_copy(store, &flight)?;
            Ok(Some(match answer {
                wit::HedgeAction::Wait => HedgeAction::Wait,
                wit::HedgeAction::Send(hedge) => HedgeAction::SendAfter {
                    after: Duration::from_millis(hedge.delay_ms),
                    node: match hedge.node {
                        $b::wit::NodeChoice::Same => NodeChoice::Same,
                        $b::wit::NodeChoice::Next => NodeChoice::Next,
                    },
                },
            }))
        }
    };
}

next_copy!(next_copy_v0_5, v0_5);
next_copy!(next_copy_v0_6, v0_6);
