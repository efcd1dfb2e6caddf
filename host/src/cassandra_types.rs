//! Value types of the Cassandra driver's retry model (reference 003): consistency levels,
//! write types, and the kinds of aborted requests and coordinator errors.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A Cassandra consistency level (names as in CQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsistencyLevel {
    /// ANY
    Any,
    /// ONE
    One,
    /// TWO
    Two,
    /// THREE
    Three,
    /// QUORUM
    Quorum,
    /// ALL
    All,
    /// LOCAL_QUORUM
    LocalQuorum,
    /// EACH_QUORUM
    EachQuorum,
    /// SERIAL
    Serial,
    /// LOCAL_SERIAL
    LocalSerial,
    /// LOCAL_ONE
    LocalOne,
}

impl ConsistencyLevel {
    /// Serial levels are those of lightweight transactions (Paxos phase).
    pub const fn is_serial(self) -> bool {
        matches!(
            self,
            ConsistencyLevel::Serial | ConsistencyLevel::LocalSerial
        )
    }

    /// The CQL name.
    pub const fn name(self) -> &'static str {
        match self {
            ConsistencyLevel::Any => "ANY",
            ConsistencyLevel::One => "ONE",
            ConsistencyLevel::Two => "TWO",
            ConsistencyLevel::Three => "THREE",
            ConsistencyLevel::Quorum => "QUORUM",
            ConsistencyLevel::All => "ALL",
            ConsistencyLevel::LocalQuorum => "LOCAL_QUORUM",
            ConsistencyLevel::EachQuorum => "EACH_QUORUM",
            ConsistencyLevel::Serial => "SERIAL",
            ConsistencyLevel::LocalSerial => "LOCAL_SERIAL",
            ConsistencyLevel::LocalOne => "LOCAL_ONE",
        }
    }
}

impl fmt::Display for ConsistencyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of write that timed out (reference 003 `onWriteTimeoutVerdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WriteType {
    /// A single-partition write.
    Simple,
    /// A logged batch (atomic).
    Batch,
    /// An unlogged batch: parts may have been persisted.
    UnloggedBatch,
    /// A counter update.
    Counter,
    /// The write of the distributed batch log itself.
    BatchLog,
    /// A lightweight transaction (compare-and-set).
    Cas,
    /// A materialised-view update.
    View,
    /// A change-data-capture write.
    Cdc,
}

/// Why a request was aborted before a response (reference 003 `onRequestAbortedVerdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortKind {
    /// The connection closed due to an external event (ClosedConnectionException).
    ClosedConnection,
    /// A heartbeat was missed (HeartbeatException).
    Heartbeat,
    /// Anything else, e.g. an error while decoding the response (a driver bug).
    Other,
}

/// A coordinator error other than READ_TIMEOUT, WRITE_TIMEOUT and UNAVAILABLE
/// (reference 003 `onErrorResponseVerdict` and "Hard-coded rules").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerErrorKind {
    /// OverloadedException.
    Overloaded,
    /// ServerError.
    ServerError,
    /// TruncateException.
    Truncate,
    /// ReadFailureException.
    ReadFailure,
    /// WriteFailureException.
    WriteFailure,
    /// QueryValidationException and subclasses: never retried.
    QueryValidation,
    /// FunctionFailureException: never retried.
    FunctionFailure,
    /// ProtocolError: never retried.
    ProtocolError,
}

impl ServerErrorKind {
    /// The errors reference 003 "Hard-coded rules" always rethrows, whatever the policy.
    pub const fn is_never_retried(self) -> bool {
        matches!(
            self,
            ServerErrorKind::QueryValidation
                | ServerErrorKind::FunctionFailure
                | ServerErrorKind::ProtocolError
        )
    }
}
