//! Setters for the policy settings an application builds in code: the settings structs are
//! `#[non_exhaustive]`, so that a later version may add a setting without breaking a program,
//! and a program starts from `Default` (or a constructor) and sets what it needs here.

use super::settings::{
    PoolConfig, QuarantineConfig, SandboxLimits, WasiClocks, WasiConfig, WasiRandom,
};

impl SandboxLimits {
    /// These limits with a call's deadline of `ms` milliseconds.
    pub fn with_deadline_ms(mut self, ms: u64) -> Self {
        self.deadline_ms = ms;
        self
    }

    /// These limits with `fuel` per call.
    pub fn with_fuel(mut self, fuel: u64) -> Self {
        self.fuel = fuel;
        self
    }

    /// These limits with at most `bytes` of linear memory per instance.
    pub fn with_memory_bytes(mut self, bytes: u64) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// These limits with answered delays capped at `ms` milliseconds.
    pub fn with_max_delay_ms(mut self, ms: u64) -> Self {
        self.max_delay_ms = ms;
        self
    }

    /// These limits with a deadline of `ms` milliseconds for `configure`.
    pub fn with_setup_deadline_ms(mut self, ms: u64) -> Self {
        self.setup_deadline_ms = ms;
        self
    }
}

impl QuarantineConfig {
    /// Quarantine after `after_failures` consecutive failures (0: never), for `cooldown_ms`.
    pub fn new(after_failures: u32, cooldown_ms: u64) -> Self {
        QuarantineConfig {
            after_failures,
            cooldown_ms,
        }
    }
}

impl PoolConfig {
    /// A pool of `instances` slots keeping `idle_per_policy` idle instances per policy.
    pub fn new(instances: u32, idle_per_policy: u32) -> Self {
        PoolConfig {
            instances,
            idle_per_policy,
        }
    }
}

impl WasiConfig {
    /// These settings answering clocks as `clocks` says.
    pub fn with_clocks(mut self, clocks: WasiClocks) -> Self {
        self.clocks = clocks;
        self
    }

    /// These settings answering randomness as `random` says.
    pub fn with_random(mut self, random: WasiRandom) -> Self {
        self.random = random;
        self
    }

    /// These settings seeding `random = "seeded"` with `seed`.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}
