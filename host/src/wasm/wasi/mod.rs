//! WASI 0.2 for policies whose language runtime imports it (Python's componentize-py imports
//! io, clocks, random, cli, filesystem and sockets), granting no capability: no files, no
//! network, no environment, no real sockets, nothing that blocks. Clocks and randomness are
//! as configured ([`WasiConfig`]); by default both are deterministic. What each import does
//! is listed in `docs/wasi.md`.

mod denied;
mod inert;

use std::time::Instant;

use serde::{Deserialize, Serialize};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};

use super::store::{CallState, PolicyLabel};

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
pub struct WasiConfig {
    /// The clocks.
    pub clocks: WasiClocks,
    /// The randomness.
    pub random: WasiRandom,
    /// The seed of `random = "seeded"`.
    pub seed: u64,
}

/// The WASI state of one policy instance.
pub(crate) struct WasiState {
    config: WasiConfig,
    table: ResourceTable,
    rng: rand::rngs::StdRng,
    started: Instant,
    label: PolicyLabel,
    memory_cap: usize,
}

impl WasiState {
    pub(crate) fn new(config: WasiConfig, label: PolicyLabel, memory_cap: usize) -> Self {
        let seed = match config.random {
            WasiRandom::Seeded => Some(config.seed),
            WasiRandom::Os => None,
        };
        WasiState {
            config,
            table: ResourceTable::new(),
            rng: Self::generator(seed),
            started: Instant::now(),
            label,
            memory_cap,
        }
    }
}

/// The WASI packages a policy may import (any 0.2 version): the inert and the denied ones.
const GRANTED_PACKAGES: [&str; 6] = [
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:cli/",
    "wasi:filesystem/",
    "wasi:sockets/",
];

/// Whether `import` is a WASI 0.2 interface the host defines.
pub(crate) fn is_granted(import: &str) -> bool {
    GRANTED_PACKAGES.iter().any(|p| import.starts_with(p))
        && import
            .split_once('@')
            .is_some_and(|(_, v)| v.starts_with("0.2."))
}

/// Defines the WASI imports of `component` in `linker`.
pub(crate) fn add_to_linker(
    linker: &mut Linker<CallState>,
    component: &Component,
) -> wasmtime::Result<()> {
    inert::Inert::add_to_linker::<CallState, HasSelf<WasiState>>(linker, |s| &mut s.wasi)?;
    denied::add_to_linker(linker, component)
}
