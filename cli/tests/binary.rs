//! Tests of the `rebound` binary as a user runs it, one test binary: each module checks one
//! command (its own header names the rules).

mod support;

mod check;
mod commands;
mod container;
mod deploy;
mod eval;
mod new_build;
mod oci;
mod packages;
mod policy_test;
mod serve;
mod serve_connections;
mod serve_hostile;
mod simulate;
mod simulate_lab;
mod simulate_live;
mod telemetry;
mod xds_listeners;
mod xds_offline;
mod xds_source;
mod xds_tls;
