//! [`HostTrap`]: why a call failed inside a host import, the WASI answers or the memory
//! limiter, recovered from the trap's error to name the policy's failure.

/// Why a call failed inside a host import or the limiter (recovered from the trap's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostTrap {
    /// The guest called `abort` (its panic hook).
    #[error("policy panicked: {0}")]
    Panic(String),
    /// The guest used a WASI function the sandbox denies (exit, sleeping, files, sockets).
    #[error("denied: {0}")]
    Denied(String),
    /// The guest read the failure outside a `retry-after` call (while configuring).
    #[error("no failure is being decided: `failure.{0}` is answered only during retry-after")]
    NoFailure(&'static str),
    /// The guest tried to grow memory past the cap.
    #[error("memory limit exceeded: the policy asked for {desired} bytes, the cap is {cap}")]
    MemoryLimitExceeded {
        /// Bytes requested.
        desired: usize,
        /// The cap.
        cap: usize,
    },
}
