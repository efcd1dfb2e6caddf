//! What a policy component's sandbox and the engine are configured with — plain values a
//! registry configuration holds (`[engine]`, a policy's `limits`, `fail_safe`, `quarantine`,
//! `wasi`) — and the snapshot of a component's health a status carries: there whether or not
//! this build runs components (feature `wasm`), so that a configuration reads the same
//! everywhere and a build without the engine can say which feature a component needs.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::action::{PolicyFailure, RetryAction};
use crate::request::Request;
use crate::strategy::BestEffort;
use crate::strategy::DecisionContext;

/// The most bytes the compiled-artifact cache's entries take together unless configured
/// (`cache_max_mb`): 2 GiB.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 2 << 30;

/// Per-call and per-instance limits of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct SandboxLimits {
    /// Wall-clock budget of one call, in milliseconds (epoch interruption): 1 to 600 000.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 600_000>")]
    pub deadline_ms: u64,
    /// Instruction budget of one call (wasmtime fuel units): 1 to 10^12.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 1_000_000_000_000>")]
    pub fuel: u64,
    /// Largest linear memory an instance may grow to, in bytes: 64 KiB (one page) to 4 GiB.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 65_536, 4_294_967_296>")]
    pub memory_bytes: u64,
    /// Largest delay a policy may answer, in milliseconds (0 to a day); a larger one is an
    /// invalid answer.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 86_400_000>")]
    pub max_delay_ms: u64,
    /// Wall-clock budget of creating and configuring an instance, in milliseconds (a Python
    /// runtime takes about half a millisecond to instantiate); the fuel budget is then
    /// 100 times `fuel`. 1 to 600 000.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 600_000>")]
    pub setup_deadline_ms: u64,
}

impl SandboxLimits {
    /// `deadline_ms` as a duration.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms)
    }
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            deadline_ms: 10,
            fuel: 10_000_000,
            memory_bytes: 64 << 20,
            max_delay_ms: 10 * 60 * 1000,
            setup_deadline_ms: 1000,
        }
    }
}

/// How many policy instances an engine holds: the pooling allocator's slots, shared by every
/// policy of the engine, and how many instances one policy keeps idle for reuse. Half of the
/// slots at most are ever idle (all policies together), so the other half is always free for
/// calls in flight (one per thread deciding at that moment) however many policies are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Component instances the engine can hold at once; each may use up to eight core
    /// instances and tables (a Rust policy uses three: its module, wit-component's shim and
    /// fixups) and two memories. Default: 256, or 8 per available core when that is more;
    /// 1 to 4096.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 4_096>")]
    pub instances: u32,
    /// Instances one policy keeps idle for its next calls. Default: 2 per available core;
    /// 0 to 4096.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 4_096>")]
    pub idle_per_policy: u32,
}

impl Default for PoolConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cores = u32::try_from(cores).unwrap_or(u32::MAX);
        PoolConfig {
            instances: cores.saturating_mul(8).max(256),
            idle_per_policy: cores.saturating_mul(2),
        }
    }
}

/// What a failed (or quarantined) policy call answers instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailSafe {
    /// No retry: the request is cancelled with a reason saying the policy failed.
    #[default]
    NoRetry,
    /// The built-in best-effort decision.
    BestEffort,
}

impl FailSafe {
    /// The answer for a policy that failed as `failure` describes: the failure is noted in
    /// `context` (its detail reaches the decision), then no retry or best effort.
    pub(crate) fn answer(
        self,
        failure: PolicyFailure,
        request: &Request,
        context: &DecisionContext<'_>,
    ) -> RetryAction {
        let kind = failure.kind;
        context.note_failure(failure);
        match self {
            FailSafe::NoRetry => RetryAction::PolicyFailed(kind),
            FailSafe::BestEffort => BestEffort::default_decision(request, context.reason()),
        }
    }
}

/// When a failing policy is quarantined, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct QuarantineConfig {
    /// Consecutive failed calls that quarantine the policy (0: never; at most 1 000 000).
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 1_000_000>")]
    pub after_failures: u32,
    /// How long a quarantine lasts before one call is let through to probe recovery, in
    /// milliseconds (0 to a day).
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 86_400_000>")]
    pub cooldown_ms: u64,
}

impl Default for QuarantineConfig {
    fn default() -> Self {
        QuarantineConfig {
            after_failures: 5,
            cooldown_ms: 30_000,
        }
    }
}

/// The clocks a policy reads through `wasi:clocks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WasiClocks {
    /// Both clocks stand still: the monotonic clock at 1 ns (not 0, which Go's runtime
    /// refuses) and the wall clock at the Unix epoch, so a policy cannot decide on anything
    /// but its inputs.
    #[default]
    Frozen,
    /// The monotonic clock counts from the instance's creation; the wall clock is the host's.
    Real,
}

/// The randomness a policy reads through `wasi:random`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WasiRandom {
    /// A ChaCha generator seeded with `seed`: the same bytes in every instance.
    #[default]
    Seeded,
    /// A ChaCha generator seeded from the operating system for each instance.
    Os,
}

/// What a policy's WASI imports answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct WasiConfig {
    /// The clocks.
    pub clocks: WasiClocks,
    /// The randomness.
    pub random: WasiRandom,
    /// The seed of `random = "seeded"`.
    pub seed: u64,
}

/// How hard Cranelift optimises policy code. The engine-wide choice: every policy of a runtime
/// is compiled the same way (and the compiled-artifact cache keys on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Optimization {
    /// No optimisation passes. A decision's cost is dominated by the host/guest transition,
    /// not the policy's own code, so this measured as fast per call as `speed` for the Rust
    /// policies while compiling 2.4× faster (docs/performance.md): the default, as it makes a
    /// hot swap faster.
    #[default]
    None,
    /// Cranelift's `speed` level: for policies whose own code is heavy (e.g. an interpreter).
    Speed,
}

/// The scheduling asked for the epoch ticker's thread (`[engine] ticker_priority`); each
/// falls back to the next below where the process is not permitted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TickerPriority {
    /// As the process's other threads: the library's default, so that embedding Rebound
    /// never changes how the application's threads are scheduled unasked.
    #[default]
    Normal,
    /// The shortest time slice Linux's EEVDF scheduler grants a normal thread (0.1 ms, Linux
    /// 6.12 or later; any user may ask it): woken, the thread preempts a running one sooner.
    ShortSlice,
    /// `SCHED_FIFO` at the lowest real-time priority, 1 (needs `CAP_SYS_NICE` or an
    /// `RLIMIT_RTPRIO` of at least 1): woken, the thread runs at once. Not inherited by
    /// threads it would start (it starts none). `rebound serve` asks for it unless its
    /// configuration says otherwise.
    Realtime,
}

/// A snapshot of a policy's health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PolicyStats {
    /// Calls answered by the policy itself.
    pub decisions: u64,
    /// Failed or skipped calls, by kind name.
    pub failures: BTreeMap<&'static str, u64>,
    /// Times the policy was quarantined.
    pub quarantines: u64,
    /// Whether it is quarantined now.
    pub quarantined: bool,
    /// Consecutive failures so far.
    pub consecutive_failures: u32,
    /// What the last failure was (kind and detail, e.g. the guest's panic message).
    pub last_failure: Option<String>,
    /// Its `host.retry-budget` buckets in use.
    pub budget_buckets: usize,
    /// Its `host.retry-budget` calls refused a bucket (a name too long, one bucket too many).
    pub budget_refusals: u64,
}
