//! Why a request could not be decided, apart from what decides: the registry refuses a
//! request naming a policy or profile it does not have, and the `Decider` trait, the executor
//! and the retry loop all hand that refusal on, so none of them depends on another for it.

/// Why nothing could decide for a request: it names a policy or a profile no policy or profile
/// of the registry has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecideError {
    /// No policy has the name the request gives.
    #[error("no policy named `{name}`; known policies: {known}")]
    UnknownPolicy {
        /// The name asked for.
        name: String,
        /// The configured names.
        known: String,
    },
    /// No profile has the name the request gives.
    #[error("no profile named `{name}`; known profiles: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The configured names.
        known: String,
    },
}
