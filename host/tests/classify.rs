//! Spec: response classification (reference 001 "Response Code Retry List") and the error map
//! fallback for unknown KV statuses (reference 001 "KV Error Map Handling").

use crate::common;

use rebound::classify::{classify, Classification, FailureKind, KvOpcode, Response};
use rebound::errormap::ErrorMap;
use rebound::{reasons, RequestType, RetryReason};

fn kv(ty: RequestType, status: u16, map: Option<&ErrorMap>) -> Classification {
    classify(
        Response::Kv {
            opcode: KvOpcode::of(ty).unwrap(),
            status,
        },
        map,
    )
}

fn failure_kind(c: &Classification) -> FailureKind {
    match c {
        Classification::Fail(f) => f.kind,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// KV list: 0x07, 0x88, 0x09, 0x86, 0xa2, 0xa4 and their reasons, on every KV request type
/// (barring the two named exceptions below).
#[test]
fn kv_retry_list() {
    let table = [
        (0x07, reasons::KV_NOT_MY_VBUCKET),
        (0x88, reasons::KV_COLLECTION_OUTDATED),
        (0x09, reasons::KV_LOCKED),
        (0x86, reasons::KV_TEMPORARY_FAILURE),
        (0xa2, reasons::KV_SYNC_WRITE_IN_PROGRESS),
        (0xa4, reasons::KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS),
    ];
    for ty in [
        RequestType::Get,
        RequestType::Upsert,
        RequestType::LookupIn,
        RequestType::MutateIn,
    ] {
        for (status, reason) in &table {
            assert_eq!(
                kv(ty, *status, None).reason(),
                Some(reason),
                "{ty} status {status:#x}"
            );
        }
    }
}

/// KV list note: GetCollectionID is excluded from 0x88 (it means the collection is not found).
#[test]
fn kv_collection_outdated_excluded_for_get_collection_id() {
    assert_eq!(
        failure_kind(&kv(RequestType::GetCollectionId, 0x88, None)),
        FailureKind::CollectionNotFound
    );
}

/// KV list note: LOCKED on Unlock is a CAS mismatch and never reaches the retry handler.
#[test]
fn kv_locked_on_unlock_is_cas_mismatch() {
    assert_eq!(
        failure_kind(&kv(RequestType::Unlock, 0x09, None)),
        FailureKind::CasMismatch
    );
}

/// KV list note: DCP commands are excluded.
#[test]
fn kv_dcp_commands_excluded() {
    for opcode in [0x50u8, 0x57, 0x5f, 0x65] {
        for status in [0x07u16, 0x09, 0x86] {
            let c = classify(
                Response::Kv {
                    opcode: KvOpcode(opcode),
                    status,
                },
                None,
            );
            assert_eq!(
                failure_kind(&c),
                FailureKind::DcpExcluded,
                "opcode {opcode:#x} status {status:#x}"
            );
        }
    }
}

/// "once a complete, known response is received it should not be retried, unless specifically
/// outlined in this list".
#[test]
fn kv_known_statuses_off_the_list_are_not_retried() {
    for status in [
        0x01u16, 0x02, 0x03, 0x04, 0x05, 0x20, 0x24, 0x81, 0x84, 0xa0, 0xa3, 0xc0,
    ] {
        let c = kv(RequestType::Get, status, None);
        assert_eq!(failure_kind(&c), FailureKind::NotRetryable, "{status:#x}");
    }
    assert_eq!(kv(RequestType::Get, 0x00, None), Classification::Success);
}

/// "KV Error Map Handling": an unknown status whose entry says retry-now/retry-later goes to
/// the orchestrator as KV_ERROR_MAP_RETRY_INDICATED; otherwise it is cancelled. Checked on the
/// real v2 server map: EBUSY (0x85, retry-now), ENOMEM (0x82, retry-later),
/// RATE_LIMITED_MAX_COMMANDS (0x33, retry-later), BUCKET_SIZE_LIMIT_EXCEEDED (0x35, no-retry),
/// UNKNOWN_FRAME_INFO-like entries without retry attributes.
#[test]
fn kv_unknown_status_consults_the_error_map() {
    let map = ErrorMap::parse(
        &std::fs::read_to_string(common::error_map_path("error_map_v2.json")).unwrap(),
    )
    .unwrap();
    let retried = reasons::KV_ERROR_MAP_RETRY_INDICATED;
    for status in [0x85u16, 0x82, 0x33, 0x0c] {
        assert_eq!(
            kv(RequestType::Upsert, status, Some(&map)).reason(),
            Some(&retried),
            "{status:#x}"
        );
    }
    let no_retry = kv(RequestType::Upsert, 0x35, Some(&map));
    assert_eq!(failure_kind(&no_retry), FailureKind::ErrorMapNoRetry);
    match no_retry {
        Classification::Fail(f) => {
            assert_eq!(f.name.as_deref(), Some("BUCKET_SIZE_LIMIT_EXCEEDED"))
        }
        _ => unreachable!(),
    }
    // Not in the map, or no map at all: cancelled.
    assert_eq!(
        failure_kind(&kv(RequestType::Upsert, 0x7777, Some(&map))),
        FailureKind::UnknownStatus
    );
    assert_eq!(
        failure_kind(&kv(RequestType::Upsert, 0x85, None)),
        FailureKind::UnknownStatus
    );
}

/// Known statuses are classified by the host even when the map says otherwise ("SDK settings
/// must always take precedence", reference 004 "Questions").
#[test]
fn kv_known_statuses_ignore_the_error_map() {
    let map = ErrorMap::parse(
        &std::fs::read_to_string(common::error_map_path("error_map_v2.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        kv(RequestType::Get, 0x09, Some(&map)).reason(),
        Some(&reasons::KV_LOCKED)
    );
    assert_eq!(
        failure_kind(&kv(RequestType::Unlock, 0x09, Some(&map))),
        FailureKind::CasMismatch
    );
}

/// The mock map's auto-retry codes are retried and carry their retry spec (opt-in timings).
#[test]
fn kv_auto_retry_codes_carry_their_spec() {
    let map = ErrorMap::parse(
        &std::fs::read_to_string(common::error_map_path("couchbasemock_errmap_v1.json")).unwrap(),
    )
    .unwrap();
    match kv(RequestType::Get, 0x7ff1, Some(&map)) {
        Classification::Retry {
            reason,
            retry_spec: Some(spec),
        } => {
            assert_eq!(reason, reasons::KV_ERROR_MAP_RETRY_INDICATED);
            assert_eq!((spec.interval, spec.after, spec.ceil), (2, 50, Some(50)));
        }
        other => panic!("{other:?}"),
    }
}

/// Query: 4040, 4050, 4070 → QUERY_PREPARED_STATEMENT_FAILURE; 5000 only with
/// "queryport.indexNotFound" → QUERY_INDEX_NOT_FOUND; others not retried.
#[test]
fn query_codes() {
    let q = |code, message| classify(Response::Query { code, message }, None);
    for code in [4040, 4050, 4070] {
        assert_eq!(
            q(code, "").reason(),
            Some(&reasons::QUERY_PREPARED_STATEMENT_FAILURE),
            "{code}"
        );
    }
    assert_eq!(
        q(5000, "GSI: queryport.indexNotFound on idx_1").reason(),
        Some(&reasons::QUERY_INDEX_NOT_FOUND)
    );
    assert_eq!(q(5000, "Internal error").reason(), None);
    for code in [3000, 4000, 12003, 1080] {
        assert_eq!(q(code, "queryport.indexNotFound").reason(), None, "{code}");
    }
}

/// Analytics: 23000, 23003, 23007 → ANALYTICS_TEMPORARY_FAILURE.
#[test]
fn analytics_codes() {
    for code in [23000, 23003, 23007] {
        assert_eq!(
            classify(Response::Analytics { code }, None).reason(),
            Some(&reasons::ANALYTICS_TEMPORARY_FAILURE)
        );
    }
    for code in [23001, 23002, 24000, 21002] {
        assert_eq!(
            classify(Response::Analytics { code }, None).reason(),
            None,
            "{code}"
        );
    }
}

/// Search: HTTP 429 → SEARCH_TOO_MANY_REQUESTS.
#[test]
fn search_statuses() {
    assert_eq!(
        classify(Response::Search { status: 429 }, None).reason(),
        Some(&reasons::SEARCH_TOO_MANY_REQUESTS)
    );
    assert_eq!(
        classify(Response::Search { status: 200 }, None),
        Classification::Success
    );
    for status in [400, 404, 500, 503] {
        assert_eq!(
            classify(Response::Search { status }, None).reason(),
            None,
            "{status}"
        );
    }
}

/// View: 302 → VIEWS_NO_ACTIVE_PARTITION; the listed statuses, 404 with "reason":"missing",
/// and 500 unless the named exceptions → VIEWS_TEMPORARY_FAILURE.
#[test]
fn views_statuses() {
    let v = |status, body| {
        classify(Response::Views { status, body }, None)
            .reason()
            .cloned()
    };
    let temp = Some(reasons::VIEWS_TEMPORARY_FAILURE);
    assert_eq!(v(302, ""), Some(reasons::VIEWS_NO_ACTIVE_PARTITION));
    for status in [
        300, 301, 303, 307, 401, 408, 409, 412, 416, 417, 501, 502, 503, 504,
    ] {
        assert_eq!(v(status, ""), temp, "{status}");
    }
    assert_eq!(v(404, r#"{"error":"not_found","reason":"missing"}"#), temp);
    assert_eq!(v(404, r#"{"error":"not_found","reason":"deleted"}"#), None);
    assert_eq!(v(500, r#"{"error":"unknown"}"#), temp);
    assert_eq!(
        v(
            500,
            r#"{"error":"x","reason":"{not_found, missing_named_view}"}"#
        ),
        None
    );
    assert_eq!(v(500, r#"{"error":"badarg","reason":"x"}"#), None);
    assert_eq!(
        v(500, r#"{"reason":"badarg"}"#),
        temp,
        "badarg without error is still retried"
    );
    for status in [400, 403, 405, 406, 505] {
        assert_eq!(v(status, ""), None, "{status}");
    }
    assert_eq!(
        classify(
            Response::Views {
                status: 200,
                body: ""
            },
            None
        ),
        Classification::Success
    );
}

/// An unknown status with a retry indication goes on to the orchestrator, which lets the
/// strategy decide (reference 001 "KV Error Map Handling").
#[test]
fn error_map_retry_goes_to_the_orchestrator() {
    let reason: &RetryReason = &reasons::KV_ERROR_MAP_RETRY_INDICATED;
    assert!(!reason.always_retry() && reason.allows_non_idempotent_retry());
}

/// docs/http-and-grpc.md: a plain HTTP service's answer below 400 is a success (RFC 9110 §15:
/// informational, successful, redirection); a status in the table is an `HTTP_STATUS` failure
/// carrying it; any other error status is not retried.
#[test]
fn plain_http_statuses_are_classified_by_a_table() {
    use rebound::classify::{classify_http, DEFAULT_HTTP_RETRY_STATUSES};
    for status in [100, 200, 204, 301, 304, 399] {
        let c = classify_http(status, &DEFAULT_HTTP_RETRY_STATUSES);
        assert_eq!(c, Classification::Success, "{status}");
    }
    for status in [408, 429, 500, 502, 503, 504] {
        let c = classify_http(status, &DEFAULT_HTTP_RETRY_STATUSES);
        assert_eq!(
            c.reason(),
            Some(&RetryReason::HttpStatus(status)),
            "{status}"
        );
    }
    for status in [400, 401, 404, 409, 501, 505] {
        let c = classify_http(status, &DEFAULT_HTTP_RETRY_STATUSES);
        assert_eq!(failure_kind(&c), FailureKind::NotRetryable, "{status}");
    }
    assert_eq!(
        failure_kind(&classify_http(503, &[502])),
        FailureKind::NotRetryable
    );
}
