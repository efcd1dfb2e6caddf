//! The `[decision_log]` table of a registry configuration: where lines go (standard output or
//! a file rotated by size), which share of decisions is logged, what is masked, and how many
//! lines may wait for the writer.

use std::path::PathBuf;

use serde::Deserialize;

use crate::field_error::FieldError;

/// The request fields a decision line's input carries, as `mask` names them (`request.FIELD`).
pub const REQUEST_FIELDS: [&str; 14] = [
    "id",
    "type",
    "idempotent",
    "readonly",
    "method",
    "retry_attempts",
    "elapsed_ms",
    "timeout_ms",
    "dispatched",
    "last_dispatched_to",
    "completed",
    "client_context",
    "consistency",
    "profile",
];

/// The decision log's configuration (`[decision_log]`).
///
/// ```toml
/// [decision_log]
/// file = "decisions.log"   # absent: standard output
/// max_bytes = 104857600    # a file is rotated before it would grow past this
/// keep = 5                 # rotated files kept: decisions.log.N, the highest N the newest
/// sample = 1.0             # the share of decisions logged
/// mask = ["client_context.user", "request.last_dispatched_to"]
/// buffer = 8192            # lines waiting for the writer; past it lines are dropped, counted
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct DecisionLogConfig {
    /// The file lines are appended to (relative paths against the configuration's directory);
    /// `None`: standard output.
    pub file: Option<PathBuf>,
    /// The largest a file may grow, in bytes ([`MIN_MAX_BYTES`] to [`MAX_MAX_BYTES`]): a line
    /// that would pass it goes to a new file (the full one becomes `FILE.1`, `FILE.1` becomes
    /// `FILE.2`, …). A line longer than this alone is dropped and counted.
    pub max_bytes: u64,
    /// Rotated files kept besides the current one (0 to [`MAX_KEEP`]); older ones are deleted.
    /// 0: the full file is deleted when the next line needs room.
    pub keep: u32,
    /// The share of decisions logged, from 0.0 (none) to 1.0 (all).
    pub sample: f64,
    /// What a line leaves out: `request.FIELD` (a field of the input's request, see
    /// [`REQUEST_FIELDS`]) or `client_context.KEY` (one client-context entry, in the input and
    /// in the answer's error context).
    pub mask: Vec<String>,
    /// Lines that may wait for the writer (besides the writer's own 8 KiB output buffer). A
    /// decision never waits for the log: when the buffer is full its line is dropped and
    /// counted. 1 to 100 000 (each waiting line holds its decision: about 40 MB at most).
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 100_000>")]
    pub buffer: usize,
}

impl Default for DecisionLogConfig {
    fn default() -> Self {
        DecisionLogConfig {
            file: None,
            max_bytes: 100 * 1024 * 1024,
            keep: 5,
            sample: 1.0,
            mask: Vec::new(),
            buffer: 8192,
        }
    }
}

/// The smallest `max_bytes`: room for a few lines.
pub const MIN_MAX_BYTES: u64 = 4096;

/// The largest `max_bytes`: 1 TiB, a file no filesystem holds by accident.
pub const MAX_MAX_BYTES: u64 = 1 << 40;

/// The most rotated files kept, bounding the disk a log takes to `(keep + 1) × max_bytes`
/// (a rotation renames one file and removes one, whatever `keep` is).
pub const MAX_KEEP: u32 = 100;

impl DecisionLogConfig {
    /// Checks the ranges and the mask's names.
    pub fn validate(&self) -> Result<(), FieldError> {
        let error = |field: &str, message: String| Err(FieldError::new(field, message));
        if !(0.0..=1.0).contains(&self.sample) {
            return error(
                "sample",
                format!("{} is out of range; expected 0.0 to 1.0", self.sample),
            );
        }
        if self.buffer == 0 {
            return error("buffer", "expected at least 1 line".into());
        }
        if !(MIN_MAX_BYTES..=MAX_MAX_BYTES).contains(&self.max_bytes) {
            return error(
                "max_bytes",
                format!(
                    "{} is out of range; expected at least {MIN_MAX_BYTES} and at most {MAX_MAX_BYTES} (1 TiB)",
                    self.max_bytes
                ),
            );
        }
        if self.keep > MAX_KEEP {
            return error(
                "keep",
                format!(
                    "{} is out of range; expected 0 to {MAX_KEEP} rotated files",
                    self.keep
                ),
            );
        }
        for entry in &self.mask {
            let known = match entry.split_once('.') {
                Some(("request", field)) => REQUEST_FIELDS.contains(&field),
                Some(("client_context", key)) => !key.is_empty(),
                _ => false,
            };
            if !known {
                return error(
                    "mask",
                    format!(
                        "`{entry}` is not a request field or a client-context key; expected `client_context.KEY` or `request.FIELD` with FIELD one of {}",
                        REQUEST_FIELDS.join(", ")
                    ),
                );
            }
        }
        Ok(())
    }
}
