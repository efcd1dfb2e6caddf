//! The driver's consistency levels and Rebound's: the same eleven levels of the native
//! protocol, by name.

use rebound::cassandra::ConsistencyLevel;
use scylla::statement::Consistency;

/// Rebound's name for the driver's `level`.
pub fn to_rebound(level: Consistency) -> ConsistencyLevel {
    match level {
        Consistency::Any => ConsistencyLevel::Any,
        Consistency::One => ConsistencyLevel::One,
        Consistency::Two => ConsistencyLevel::Two,
        Consistency::Three => ConsistencyLevel::Three,
        Consistency::Quorum => ConsistencyLevel::Quorum,
        Consistency::All => ConsistencyLevel::All,
        Consistency::LocalQuorum => ConsistencyLevel::LocalQuorum,
        Consistency::EachQuorum => ConsistencyLevel::EachQuorum,
        Consistency::LocalOne => ConsistencyLevel::LocalOne,
        Consistency::Serial => ConsistencyLevel::Serial,
        Consistency::LocalSerial => ConsistencyLevel::LocalSerial,
    }
}

/// The driver's name for Rebound's `level`.
pub fn to_driver(level: ConsistencyLevel) -> Consistency {
    match level {
        ConsistencyLevel::Any => Consistency::Any,
        ConsistencyLevel::One => Consistency::One,
        ConsistencyLevel::Two => Consistency::Two,
        ConsistencyLevel::Three => Consistency::Three,
        ConsistencyLevel::Quorum => Consistency::Quorum,
        ConsistencyLevel::All => Consistency::All,
        ConsistencyLevel::LocalQuorum => Consistency::LocalQuorum,
        ConsistencyLevel::EachQuorum => Consistency::EachQuorum,
        ConsistencyLevel::LocalOne => Consistency::LocalOne,
        ConsistencyLevel::Serial => Consistency::Serial,
        ConsistencyLevel::LocalSerial => Consistency::LocalSerial,
    }
}
