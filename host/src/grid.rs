//! Sample inputs that cover what a strategy can be asked: one of every reason variant, with
//! Cassandra data around its thresholds. The parity tests and `rebound check` run policies over
//! it.

use crate::aws_error::{AwsError, AwsErrorKind};
use crate::cassandra_types::{AbortKind, ConsistencyLevel, ServerErrorKind, WriteType};
use crate::grpc::GrpcCode;
use crate::reason::{ReadTimeout, ReasonKind, RetryReason, Unavailable, WriteTimeout};

/// One of every reason a strategy can be asked about: each data-less kind, the Cassandra
/// kinds with data on both sides of their thresholds (read and write timeouts at several
/// consistency levels and write types, unavailable, aborts, every server error), HTTP and
/// gRPC statuses retried and not by default, and a name no table knows. The parity tests and `rebound check` run policies over it.
pub fn every_reason() -> Vec<RetryReason> {
    let mut reasons: Vec<RetryReason> = ReasonKind::ALL
        .iter()
        .filter_map(|k| RetryReason::simple(*k))
        .collect();
    for consistency in [
        ConsistencyLevel::Quorum,
        ConsistencyLevel::EachQuorum,
        ConsistencyLevel::Serial,
    ] {
        for (block_for, received) in [(2, 0), (2, 1), (2, 2), (5, 4)] {
            for data_present in [false, true] {
                reasons.push(
                    ReadTimeout {
                        consistency,
                        block_for,
                        received,
                        data_present,
                    }
                    .into(),
                );
            }
            for write_type in [
                WriteType::Simple,
                WriteType::Batch,
                WriteType::UnloggedBatch,
                WriteType::BatchLog,
                WriteType::Counter,
            ] {
                reasons.push(
                    WriteTimeout {
                        consistency,
                        write_type,
                        block_for,
                        received,
                    }
                    .into(),
                );
            }
            reasons.push(
                Unavailable {
                    consistency,
                    required: block_for,
                    alive: received,
                }
                .into(),
            );
        }
    }
    for kind in [
        AbortKind::ClosedConnection,
        AbortKind::Heartbeat,
        AbortKind::Other,
    ] {
        reasons.push(RetryReason::RequestAborted(kind));
    }
    for kind in [
        ServerErrorKind::Overloaded,
        ServerErrorKind::ServerError,
        ServerErrorKind::Truncate,
        ServerErrorKind::ReadFailure,
        ServerErrorKind::WriteFailure,
        ServerErrorKind::QueryValidation,
        ServerErrorKind::FunctionFailure,
        ServerErrorKind::ProtocolError,
    ] {
        reasons.push(RetryReason::ErrorResponse(kind));
    }
    reasons.push(RetryReason::HttpStatus(503));
    reasons.push(RetryReason::HttpStatus(404));
    reasons.push(RetryReason::GrpcStatus(GrpcCode::Unavailable));
    reasons.push(RetryReason::GrpcStatus(GrpcCode::InvalidArgument));
    let throttled = AwsError::new(AwsErrorKind::Throttling).with_code("ThrottlingException");
    reasons.push(RetryReason::Aws(throttled.with_status(400)));
    reasons.push(RetryReason::Aws(
        AwsError::new(AwsErrorKind::Transient).with_status(503),
    ));
    reasons.push("A_REASON_FROM_THE_FUTURE".parse().unwrap());
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_sampled() {
        let sampled: Vec<ReasonKind> = every_reason().iter().map(RetryReason::kind).collect();
        for kind in ReasonKind::ALL {
            assert!(sampled.contains(kind), "{kind:?} has no sample");
        }
    }
}
