//! How far a failed attempt got. A request the server's application never saw is safe to send
//! again whatever it does, and one the server has begun to answer must never be sent again
//! whatever a policy says (gRFC A6 "Transparent Retries" and "When Retries are Valid"). Only the
//! layer that sent the attempt knows which; it says so here, and the orchestrator's rules read
//! it before any policy is asked.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How far a failed attempt got, as gRFC A6 tells the four ways an RPC fails apart, and whether
/// the call was committed.
///
/// ```
/// use rebound::Progress;
///
/// assert_eq!(Progress::default(), Progress::Processed);
/// assert_eq!(Progress::Refused.name(), "refused");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Progress {
    /// Seen by the server's application, or not known to be otherwise, including a
    /// load-balancing pick that failed transiently (A6: "handled by the configured retry
    /// policy"). The policy decides.
    #[default]
    Processed,
    /// The pick succeeded but the attempt never left the client (A6's second case): retried
    /// transparently until it succeeds or the deadline passes.
    NotSent,
    /// It reached the server's transport but not its application (A6's third case: an HTTP/2
    /// `RST_STREAM` with `REFUSED_STREAM`): retried transparently once, at once; if that attempt
    /// fails too, the policy decides.
    Refused,
    /// The load balancer dropped it (A6's first case, a `DROP` pick): it fails at once, never
    /// retried.
    Dropped,
    /// The server's response headers or a message arrived before it failed (A6 "When Retries
    /// are Valid": the call is committed): never retried or hedged, whatever the policy answers.
    Committed,
}

impl Progress {
    /// Every progress, in declaration order.
    pub const ALL: [Progress; 5] = [
        Progress::Processed,
        Progress::NotSent,
        Progress::Refused,
        Progress::Dropped,
        Progress::Committed,
    ];

    /// The name the decision JSON and the decision log use (`not_sent`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Progress::Processed => "processed",
            Progress::NotSent => "not_sent",
            Progress::Refused => "refused",
            Progress::Dropped => "dropped",
            Progress::Committed => "committed",
        }
    }

    /// Whether the attempt is retried without asking the policy, not counted as an attempt
    /// nor in a throttle (A6: transparent retries "do not count toward the limit of configured
    /// RPC attempts" and "do not count as failures" for throttling), given whether the request
    /// had its one transparent retry of a refused attempt already.
    pub(crate) const fn is_transparent(self, refused_retried: bool) -> bool {
        match self {
            Progress::NotSent => true,
            Progress::Refused => !refused_retried,
            _ => false,
        }
    }
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decision JSON spells each progress by its name.
    #[test]
    fn names_are_the_json_spelling() {
        for progress in Progress::ALL {
            let json = serde_json::to_value(progress).unwrap();
            assert_eq!(json, progress.name());
            assert_eq!(serde_json::from_value::<Progress>(json).unwrap(), progress);
        }
    }

    /// gRFC A6 "Transparent Retries": a call that never left the client is retried every time,
    /// a refused one once; a dropped, processed or committed one never transparently.
    #[test]
    fn only_unsent_and_a_first_refusal_are_transparent() {
        assert!(Progress::NotSent.is_transparent(true));
        assert!(Progress::Refused.is_transparent(false));
        assert!(!Progress::Refused.is_transparent(true));
        for progress in [Progress::Processed, Progress::Dropped, Progress::Committed] {
            assert!(!progress.is_transparent(false));
        }
    }
}
