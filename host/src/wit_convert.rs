//! Conversions between the engine's types and the Rust types generated from the WIT package
//! `rebound:policy` (`wit/policy.wit`). The host (wasmtime's `bindgen!`) and the guest SDK's
//! native shim (wit-bindgen's `generate!`) generate types with the same names but distinct
//! identities, so the conversions are written once, as a macro applied to either module.

/// Generates, in the calling module, conversion functions between the engine and the module
/// `$w` of WIT-generated types (the `rebound:policy/types` interface of one released version).
/// `best_effort = V` names the `retry-action` case that delegates to the built-in best effort,
/// for the versions that have one (0.2.0 on); `protocols` adds the HTTP and gRPC cases and the
/// HTTP method, for the versions that have them (0.4.0 on); `attempt_timeouts` adds the
/// `attempt-timeout` reason, the retry's `attempt-timeout-ms`, the attempt's progress and the
/// AWS reasons (0.6.0 on). Not for direct use.
#[doc(hidden)]
#[macro_export]
macro_rules! __wit_conversions {
    ($w:ident $(, best_effort = $best_effort:ident)?) => {
        $crate::__wit_conversions!(@all $w, [$($best_effort)?], [], [], [], {}, {});
    };

    ($w:ident, best_effort = $best_effort:ident, protocols) => {
        $crate::__wit_conversions!(@protocols $w, $best_effort, [], [], {}, {});
    };

    ($w:ident, best_effort = $best_effort:ident, protocols, attempt_timeouts) => {
        $crate::__wit_conversions!(@protocols $w, $best_effort, [AttemptTimeout],
            [attempt_timeouts], {
            $w::RetryReason::AwsThrottling(e) | $w::RetryReason::AwsTransient(e) => {
                H::Aws(aws_error_to_host(e))
            }
        }, {
            H::Aws(e) if e.kind == $crate::aws_error::AwsErrorKind::Throttling => {
                $w::RetryReason::AwsThrottling(aws_error_to_wit(e))
            }
            H::Aws(e) => $w::RetryReason::AwsTransient(aws_error_to_wit(e)),
        });
        $crate::__wit_conversions!(@enum aws_kind_to_host, aws_kind_to_wit,
            $w::AwsErrorKind, $crate::aws_error::AwsErrorKind,
            [Throttling, Transient, Server, Client]);

        /// An AWS error as the WIT record.
        #[allow(dead_code)]
        pub(crate) fn aws_error_to_wit(e: &$crate::aws_error::AwsError) -> $w::AwsError {
            $w::AwsError {
                kind: aws_kind_to_wit(e.kind),
                code: e.code.as_deref().map(str::to_owned),
                status: e.status,
            }
        }

        /// A WIT AWS error as the engine's.
        #[allow(dead_code)]
        pub(crate) fn aws_error_to_host(e: &$w::AwsError) -> $crate::aws_error::AwsError {
            $crate::aws_error::AwsError {
                kind: aws_kind_to_host(e.kind),
                code: e.code.as_deref().map(Into::into),
                status: e.status,
            }
        }
        $crate::__wit_conversions!(@enum progress_to_host, progress_to_wit,
            $w::Progress, $crate::Progress, [Processed, NotSent, Refused, Dropped, Committed]);
    };

    (@protocols $w:ident, $best_effort:ident, [$($kind:ident)?], [$($timeouts:ident)?],
        { $($more_to_host:tt)* }, { $($more_to_wit:tt)* }) => {
        $crate::__wit_conversions!(@all $w, [$best_effort], [Http, Grpc], [$($kind)?],
            [$($timeouts)?], {
            $w::RetryReason::HttpStatus(status) => H::HttpStatus(*status),
            $w::RetryReason::GrpcStatus(code) => H::GrpcStatus(
                $crate::grpc::GrpcCode::from_number(u64::from(*code))
                    .unwrap_or($crate::grpc::GrpcCode::Unknown),
            ),
            $($more_to_host)*
        }, {
            H::HttpStatus(status) => $w::RetryReason::HttpStatus(*status),
            H::GrpcStatus(code) => $w::RetryReason::GrpcStatus(code.number()),
            $($more_to_wit)*
        });
        $crate::__wit_conversions!(@enum http_method_to_host, http_method_to_wit,
            $w::HttpMethod, $crate::HttpMethod,
            [Get, Head, Post, Put, Delete, Connect, Options, Trace, Patch]);
    };

    (@all $w:ident, [$($best_effort:ident)?], [$($protocol:ident),*], [$($kind:ident)?],
        [$($timeouts:ident)?], { $($reason_to_host:tt)* }, { $($reason_to_wit:tt)* }) => {
        $crate::__wit_conversions!(@enum consistency_to_host, consistency_to_wit,
            $w::ConsistencyLevel, $crate::cassandra::ConsistencyLevel,
            [Any, One, Two, Three, Quorum, All, LocalQuorum, EachQuorum, Serial, LocalSerial, LocalOne]);
        $crate::__wit_conversions!(@enum write_type_to_host, write_type_to_wit,
            $w::WriteType, $crate::cassandra::WriteType,
            [Simple, Batch, UnloggedBatch, Counter, BatchLog, Cas, View, Cdc]);
        $crate::__wit_conversions!(@enum abort_to_host, abort_to_wit,
            $w::AbortKind, $crate::cassandra::AbortKind, [ClosedConnection, Heartbeat, Other]);
        $crate::__wit_conversions!(@enum server_error_to_host, server_error_to_wit,
            $w::ServerErrorKind, $crate::cassandra::ServerErrorKind,
            [Overloaded, ServerError, Truncate, ReadFailure, WriteFailure, QueryValidation,
             FunctionFailure, ProtocolError]);
        $crate::__wit_conversions!(@enum node_to_host, node_to_wit,
            $w::NodeChoice, $crate::NodeChoice, [Same, Next]);
        $crate::__wit_conversions!(@enum spec_strategy_to_host, spec_strategy_to_wit,
            $w::SpecStrategy, $crate::errormap::SpecStrategy, [Constant, Linear, Exponential]);
        $crate::__wit_conversions!(@enum service_to_host, service_to_wit,
            $w::Service, $crate::Service,
            [Kv, Query, Analytics, Search, Views, Management, Cql $(, $protocol)*]);
        $crate::__wit_conversions!(@enum request_type_to_host, request_type_to_wit,
            $w::RequestType, $crate::RequestType,
            [Get, GetAndLock, GetAndTouch, GetReplica, Exists, LookupIn, GetCollectionId,
             GetCollectionManifest, Noop, ObserveCas, ObserveSeqno, CarrierConfig, GlobalConfig,
             Insert, Upsert, Replace, Remove, Append, Prepend, Increment, Decrement, Touch, Unlock,
             MutateIn, Query, Analytics, Search, View, ClusterManager, Management, Cql
             $(, $protocol)*]);
        $crate::__wit_conversions!(@reasons $w, { $($reason_to_host)* }, { $($reason_to_wit)* },
            [Unknown, SocketNotAvailable, ServiceNotAvailable, NodeNotAvailable,
             EndpointNotWritable, KvNotMyVbucket, KvCollectionOutdated, KvErrorMapRetryIndicated,
             KvLocked, KvTemporaryFailure, KvSyncWriteInProgress, KvSyncWriteReCommitInProgress,
             ServiceResponseCodeIndicated, SocketClosedWhileInFlight, CircuitBreakerOpen,
             QueryPreparedStatementFailure, QueryIndexNotFound, AnalyticsTemporaryFailure,
             SearchTooManyRequests, ViewsTemporaryFailure, ViewsNoActivePartition,
             BucketNotAvailable, BucketOpenInProgress, GlobalConfigLoadInProgress,
             CollectionMapRefreshInProgress, AuthenticationError, TlsError, BucketAccessError,
             ScopeNotFound, CollectionNotFound, Bootstrapping, Unprepared $(, $kind)?]);

        #[allow(dead_code)]
        pub(crate) fn terminal_to_host(t: $w::TerminalError) -> $crate::TerminalError {
            use $crate::TerminalError as H;
            match t {
                $w::TerminalError::AuthenticationFailure => H::AuthenticationFailureException,
                $w::TerminalError::Couchbase => H::CouchbaseException,
                $w::TerminalError::ScopeNotFound => H::ScopeNotFoundException,
                $w::TerminalError::CollectionNotFound => H::CollectionNotFoundException,
            }
        }

        #[allow(dead_code)]
        pub(crate) fn terminal_to_wit(t: $crate::TerminalError) -> $w::TerminalError {
            use $crate::TerminalError as H;
            match t {
                H::AuthenticationFailureException => $w::TerminalError::AuthenticationFailure,
                H::CouchbaseException => $w::TerminalError::Couchbase,
                H::ScopeNotFoundException => $w::TerminalError::ScopeNotFound,
                H::CollectionNotFoundException => $w::TerminalError::CollectionNotFound,
            }
        }

        /// The policy's answer for `request`, which failed for `reason`, as an engine action
        /// (`best-effort`, where the version has it, is the built-in best effort's decision;
        /// without it the request and reason are unused).
        #[allow(dead_code, unused_variables)]
        pub(crate) fn action_to_host(
            a: &$w::RetryAction,
            request: &$crate::Request,
            reason: &$crate::RetryReason,
        ) -> $crate::RetryAction {
            use $crate::RetryAction as H;
            match a {
                $($w::RetryAction::$best_effort => {
                    $crate::BestEffort::default_decision(request, reason)
                })?
                $w::RetryAction::NoRetry => H::NoRetry,
                $w::RetryAction::Retry(r) => H::RetryAfter {
                    delay: ::std::time::Duration::from_millis(r.delay_ms),
                    node: node_to_host(r.node),
                    consistency: r.consistency.map(consistency_to_host),
                    attempt_timeout: $crate::__wit_conversions!(@timeout_to_host r,
                        [$($timeouts)?]),
                },
                $w::RetryAction::Ignore => H::Ignore,
                $w::RetryAction::Rethrow => H::Rethrow,
                $w::RetryAction::Fail(t) => H::Fail(terminal_to_host(*t)),
            }
        }

        /// An engine action as a WIT action (delays in whole ms, saturating).
        #[allow(dead_code)]
        pub(crate) fn action_to_wit(a: &$crate::RetryAction) -> $w::RetryAction {
            use $crate::RetryAction as H;
            match a {
                // A policy failure is host-side only; outward it is a plain no-retry.
                H::NoRetry | H::PolicyFailed(_) => $w::RetryAction::NoRetry,
                #[allow(unused_variables)]
                H::RetryAfter { delay, node, consistency, attempt_timeout } => {
                    $w::RetryAction::Retry($w::Retry {
                        delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        node: node_to_wit(*node),
                        consistency: consistency.map(consistency_to_wit),
                        $(attempt_timeout_ms: $crate::__wit_conversions!(@timeout_to_wit
                            attempt_timeout, $timeouts),)?
                    })
                }
                H::Ignore => $w::RetryAction::Ignore,
                H::Rethrow => $w::RetryAction::Rethrow,
                H::Fail(t) => $w::RetryAction::Fail(terminal_to_wit(*t)),
                // An action this version of the WIT cannot express answers the safe default.
                #[allow(unreachable_patterns)]
                _ => $w::RetryAction::NoRetry,
            }
        }

        /// The engine's request as the WIT record, at `now`.
        #[allow(dead_code)]
        pub(crate) fn request_to_wit(r: &$crate::Request, now: ::std::time::Instant) -> $w::Request {
            $w::Request {
                id: r.id(),
                request_type: request_type_to_wit(r.request_type()),
                service: service_to_wit(r.service()),
                idempotent: r.is_idempotent(),
                readonly: r.is_readonly(),
                retry_attempts: r.retry_attempts(),
                elapsed_ms: u64::try_from(r.elapsed_at(now).as_millis()).unwrap_or(u64::MAX),
                timeout_ms: u64::try_from(r.timeout().as_millis()).unwrap_or(u64::MAX),
                dispatched: r.was_dispatched(),
                consistency: r.consistency().map(consistency_to_wit),
            }
        }

        /// A WIT request as an engine request (a zero timeout counts as 1 ms), started
        /// `elapsed-ms` before `now`.
        #[allow(dead_code)]
        pub(crate) fn request_to_host(r: &$w::Request, now: ::std::time::Instant) -> $crate::Request {
            let timeout = ::std::time::Duration::from_millis(r.timeout_ms.max(1));
            let start = now
                .checked_sub(::std::time::Duration::from_millis(r.elapsed_ms))
                .unwrap_or(now);
            let mut req = match $crate::Request::new_at(r.id, request_type_to_host(r.request_type), timeout, start) {
                Ok(req) => req,
                Err(_) => unreachable!("timeout is at least 1 ms"),
            };
            req = req
                .with_readonly(r.readonly)
                .with_idempotent(r.idempotent)
                .with_retry_attempts(r.retry_attempts);
            if let Some(level) = r.consistency {
                req = req.with_consistency(consistency_to_host(level));
            }
            if r.dispatched {
                req.mark_dispatched("");
            }
            req
        }

        /// An error-map retry spec as the WIT record.
        #[allow(dead_code)]
        pub(crate) fn spec_to_wit(s: &$crate::errormap::RetrySpec) -> $w::RetrySpec {
            $w::RetrySpec {
                strategy: spec_strategy_to_wit(s.strategy),
                after: s.after,
                interval: s.interval,
                ceil: s.ceil,
                max_duration: s.max_duration,
            }
        }

        /// A WIT retry spec as the engine's.
        #[allow(dead_code)]
        pub(crate) fn spec_to_host(s: &$w::RetrySpec) -> $crate::errormap::RetrySpec {
            $crate::errormap::RetrySpec {
                strategy: spec_strategy_to_host(s.strategy),
                after: s.after,
                interval: s.interval,
                ceil: s.ceil,
                max_duration: s.max_duration,
            }
        }
    };

    (@timeout_to_host $r:ident, []) => { None };
    (@timeout_to_host $r:ident, [$timeouts:ident]) => {
        $r.attempt_timeout_ms.map(::std::time::Duration::from_millis)
    };
    (@timeout_to_wit $timeout:ident, $timeouts:ident) => {
        $timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
    };

    (@enum $to_host:ident, $to_wit:ident, $wt:ty, $ht:ty, [$($v:ident),* $(,)?]) => {
        #[allow(dead_code)]
        pub(crate) fn $to_host(v: $wt) -> $ht {
            type W = $wt;
            type H = $ht;
            match v { $(W::$v => H::$v,)* }
        }
        #[allow(dead_code)]
        pub(crate) fn $to_wit(v: $ht) -> $wt {
            type W = $wt;
            type H = $ht;
            match v {
                $(H::$v => W::$v,)*
                // A `#[non_exhaustive]` engine enum seen from another crate (the guest SDK):
                // a value a newer engine adds has no case in this package version.
                #[allow(unreachable_patterns)]
                other => unreachable!("{other:?} has no case in this rebound:policy version"),
            }
        }
    };

    (@reasons $w:ident, { $($to_host:tt)* }, { $($to_wit:tt)* }, [$($k:ident),* $(,)?]) => {
        /// A WIT reason as the engine's.
        #[allow(dead_code)]
        pub(crate) fn reason_to_host(r: &$w::RetryReason) -> $crate::RetryReason {
            use $crate::{ReasonKind, RetryReason as H};
            match r {
                $($w::RetryReason::$k => match H::simple(ReasonKind::$k) {
                    Some(reason) => reason,
                    None => unreachable!("data-less kind"),
                },)*
                $w::RetryReason::ReadTimeout(d) => H::ReadTimeout($crate::ReadTimeout {
                    consistency: consistency_to_host(d.consistency),
                    block_for: d.block_for,
                    received: d.received,
                    data_present: d.data_present,
                }),
                $w::RetryReason::WriteTimeout(d) => H::WriteTimeout($crate::WriteTimeout {
                    consistency: consistency_to_host(d.consistency),
                    write_type: write_type_to_host(d.write_type),
                    block_for: d.block_for,
                    received: d.received,
                }),
                $w::RetryReason::Unavailable(d) => H::Unavailable($crate::Unavailable {
                    consistency: consistency_to_host(d.consistency),
                    required: d.required,
                    alive: d.alive,
                }),
                $w::RetryReason::RequestAborted(k) => H::RequestAborted(abort_to_host(*k)),
                $w::RetryReason::ErrorResponse(k) => H::ErrorResponse(server_error_to_host(*k)),
                $($to_host)*
                $w::RetryReason::Other(name) => H::Other(name.as_str().into()),
            }
        }

        /// An engine reason as the WIT variant.
        #[allow(dead_code)]
        pub(crate) fn reason_to_wit(r: &$crate::RetryReason) -> $w::RetryReason {
            use $crate::{ReasonKind, RetryReason as H};
            match r {
                H::Simple(s) => match s.kind() {
                    $(ReasonKind::$k => $w::RetryReason::$k,)*
                    other => $w::RetryReason::Other(other.name().to_owned()),
                },
                H::ReadTimeout(d) => $w::RetryReason::ReadTimeout($w::ReadTimeout {
                    consistency: consistency_to_wit(d.consistency),
                    block_for: d.block_for,
                    received: d.received,
                    data_present: d.data_present,
                }),
                H::WriteTimeout(d) => $w::RetryReason::WriteTimeout($w::WriteTimeout {
                    consistency: consistency_to_wit(d.consistency),
                    write_type: write_type_to_wit(d.write_type),
                    block_for: d.block_for,
                    received: d.received,
                }),
                H::Unavailable(d) => $w::RetryReason::Unavailable($w::Unavailable {
                    consistency: consistency_to_wit(d.consistency),
                    required: d.required,
                    alive: d.alive,
                }),
                H::RequestAborted(k) => $w::RetryReason::RequestAborted(abort_to_wit(*k)),
                H::ErrorResponse(k) => $w::RetryReason::ErrorResponse(server_error_to_wit(*k)),
                $($to_wit)*
                H::Other(name) => $w::RetryReason::Other(name.to_string()),
                // `RetryReason` is `#[non_exhaustive]`: a reason a newer engine adds reaches an
                // older package version by its name, as `other` says.
                #[allow(unreachable_patterns)]
                other => $w::RetryReason::Other(other.name().to_owned()),
            }
        }
    };
}
