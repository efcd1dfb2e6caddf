//! A small memcached binary-protocol client whose operations run under Rebound's retry
//! executor: the executor's end-to-end example (docs/executor.md). [`protocol`] is the wire format, [`Client`]
//! the operations (get, set, incr) and how their failures map to Rebound's reasons.

// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

pub mod client;
pub mod protocol;

pub use client::{AttemptError, Client, Error};
