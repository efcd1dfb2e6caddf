//! Host-side bindings, one set per released version of the WIT package `rebound:policy`, each
//! generated from that version's WIT and converted to the engine's types, so a component built
//! for any released version keeps loading (docs/wit-versions.md).

pub(crate) mod v0_1;
pub(crate) mod v0_2;
pub(crate) mod v0_3;
pub(crate) mod v0_4;
pub(crate) mod v0_5;
