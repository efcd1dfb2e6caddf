//! The error map document (reference 004 "Parsing the Error Map", "Error Attributes"): codes,
//! names, attributes and optional retry specifications, parsed strictly enough that a corrupt
//! map is rejected with the path of what is wrong.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::spec::RetrySpec;

/// An error attribute (reference 004 "Error Attributes"; v2 adds `no-retry`, `rate-limit`,
/// `system-constraint`). Attributes this host does not know are kept and ignored, as
/// reference 004 "Questions" says.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attribute {
    /// success
    Success,
    /// item-only
    ItemOnly,
    /// item-locked
    ItemLocked,
    /// item-deleted
    ItemDeleted,
    /// invalid-input
    InvalidInput,
    /// fetch-config
    FetchConfig,
    /// conn-state-invalidated
    ConnStateInvalidated,
    /// auth
    Auth,
    /// special-handling
    SpecialHandling,
    /// support
    Support,
    /// temp
    Temp,
    /// internal
    Internal,
    /// retry-now
    RetryNow,
    /// retry-later
    RetryLater,
    /// auto-retry: retry per the attached retry spec (reference 004 "Retry Intervals").
    AutoRetry,
    /// no-retry (v2)
    NoRetry,
    /// rate-limit (v2)
    RateLimit,
    /// system-constraint (v2)
    SystemConstraint,
    /// subdoc
    Subdoc,
    /// dcp
    Dcp,
    /// An attribute this host does not know.
    #[serde(untagged)]
    Unknown(String),
}

/// One entry of the map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCode {
    /// The status name, e.g. `ETMPFAIL`.
    pub name: String,
    /// A human description.
    #[serde(default)]
    pub desc: String,
    /// The attributes.
    pub attrs: Vec<Attribute>,
    /// The retry specification, when the server attaches one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetrySpec>,
}

impl ErrorCode {
    /// Whether the attributes indicate a retry: `retry-now`, `retry-later` (reference 001 "KV
    /// Error Map Handling") or `auto-retry` (reference 004 "Retry Intervals"), unless the v2
    /// `no-retry` attribute is also present (see docs/decisions.md).
    pub fn retry_indicated(&self) -> bool {
        let has = |a: &Attribute| self.attrs.contains(a);
        !has(&Attribute::NoRetry)
            && (has(&Attribute::RetryNow)
                || has(&Attribute::RetryLater)
                || has(&Attribute::AutoRetry))
    }
}

/// A parsed error map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMap {
    version: u16,
    revision: u32,
    errors: BTreeMap<u16, ErrorCode>,
}

/// What the error map says about a status code the host does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorMapVerdict<'a> {
    /// The entry indicates a retry: forward to the orchestrator.
    Retry(&'a ErrorCode),
    /// The entry has no retry indication: cancel.
    NoRetry(&'a ErrorCode),
    /// The code is not in the map: cancel.
    NotInMap,
}

/// A map that could not be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorMapError {
    /// Not valid JSON, or a field of the wrong shape.
    #[error("error map is invalid at `{path}` (line {line}, column {column}): {message}")]
    Invalid {
        /// Where in the document (e.g. `errors.7ff0.retry.interval`).
        path: String,
        /// Line of the problem.
        line: usize,
        /// Column of the problem.
        column: usize,
        /// What serde expected.
        message: String,
    },
    /// A key of `errors` is not a 16-bit hexadecimal status code.
    #[error("error map key `errors.{key}` is not a hexadecimal status code in 0..=ffff")]
    BadCode {
        /// The key as written.
        key: String,
    },
    /// A format version this host cannot read.
    #[error("error map version {0} is not supported (expected 1 or 2)")]
    UnsupportedVersion(u16),
    /// A retry specification that cannot be followed.
    #[error("error map entry `errors.{code:x}.retry` is invalid: {why}")]
    BadRetrySpec {
        /// The status code.
        code: u16,
        /// What is wrong.
        why: &'static str,
    },
}

#[derive(Deserialize)]
struct RawErrorMap {
    version: u16,
    revision: u32,
    errors: BTreeMap<String, ErrorCode>,
}

impl ErrorMap {
    /// Parses a v1 or v2 error map from JSON text.
    pub fn parse(json: &str) -> Result<ErrorMap, ErrorMapError> {
        let mut de = serde_json::Deserializer::from_str(json);
        let raw: RawErrorMap = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            ErrorMapError::Invalid {
                path,
                line: inner.line(),
                column: inner.column(),
                message: inner.to_string(),
            }
        })?;
        if !(1..=2).contains(&raw.version) {
            return Err(ErrorMapError::UnsupportedVersion(raw.version));
        }
        let mut errors = BTreeMap::new();
        for (key, entry) in raw.errors {
            let code = u16::from_str_radix(&key, 16)
                .map_err(|_| ErrorMapError::BadCode { key: key.clone() })?;
            if let Some(spec) = &entry.retry {
                spec.validate()
                    .map_err(|why| ErrorMapError::BadRetrySpec { code, why })?;
            }
            if errors.insert(code, entry).is_some() {
                return Err(ErrorMapError::BadCode { key });
            }
        }
        Ok(ErrorMap {
            version: raw.version,
            revision: raw.revision,
            errors,
        })
    }

    /// The format version (1 or 2).
    pub fn version(&self) -> u16 {
        self.version
    }
    /// The revision: higher is newer.
    pub fn revision(&self) -> u32 {
        self.revision
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.errors.len()
    }
    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }
    /// The entry for `code`.
    pub fn get(&self, code: u16) -> Option<&ErrorCode> {
        self.errors.get(&code)
    }
    /// Every entry, by code.
    pub fn entries(&self) -> impl Iterator<Item = (u16, &ErrorCode)> {
        self.errors.iter().map(|(c, e)| (*c, e))
    }

    /// Reference 001 "KV Error Map Handling": what to do with an unknown status `code`.
    pub fn verdict(&self, code: u16) -> ErrorMapVerdict<'_> {
        match self.errors.get(&code) {
            Some(entry) if entry.retry_indicated() => ErrorMapVerdict::Retry(entry),
            Some(entry) => ErrorMapVerdict::NoRetry(entry),
            None => ErrorMapVerdict::NotInMap,
        }
    }
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => f.write_str(&s),
            _ => Err(fmt::Error),
        }
    }
}
