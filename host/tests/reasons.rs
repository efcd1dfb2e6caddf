//! Spec: the reason table (reference 001 "RetryReason", reference 002 "RetryReasons").

use rebound::reasons;
use rebound::{ReasonKind, RetryReason, Stage};

/// Reference 001 "RetryReason": the table, name by name, both flags.
#[test]
fn rfc_0049_reason_table_flags() {
    let table: &[(&str, bool, bool)] = &[
        ("UNKNOWN", false, false),
        ("SOCKET_NOT_AVAILABLE", true, false),
        ("SERVICE_NOT_AVAILABLE", true, false),
        ("NODE_NOT_AVAILABLE", true, false),
        ("KV_NOT_MY_VBUCKET", true, true),
        ("KV_COLLECTION_OUTDATED", true, true),
        ("KV_ERROR_MAP_RETRY_INDICATED", true, false),
        ("KV_LOCKED", true, false),
        ("KV_TEMPORARY_FAILURE", true, false),
        ("KV_SYNC_WRITE_IN_PROGRESS", true, false),
        ("KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS", true, false),
        ("SERVICE_RESPONSE_CODE_INDICATED", true, false),
        ("SOCKET_CLOSED_WHILE_IN_FLIGHT", false, false),
        ("CIRCUIT_BREAKER_OPEN", true, false),
        ("QUERY_PREPARED_STATEMENT_FAILURE", true, false),
        ("QUERY_INDEX_NOT_FOUND", true, false),
        ("ANALYTICS_TEMPORARY_FAILURE", true, false),
        ("SEARCH_TOO_MANY_REQUESTS", true, false),
        ("VIEWS_TEMPORARY_FAILURE", true, false),
        ("VIEWS_NO_ACTIVE_PARTITION", true, true),
    ];
    for &(name, non_idempotent, always) in table {
        let reason: RetryReason = name.parse().unwrap();
        assert_eq!(reason.name(), name);
        assert_eq!(
            reason.allows_non_idempotent_retry(),
            non_idempotent,
            "{name} non-idempotent flag"
        );
        assert_eq!(reason.always_retry(), always, "{name} always-retry flag");
    }
}

/// Reference 001 revision 16 leaves the flags of the five terminal reasons "todo"; chosen
/// (docs/decisions.md): non-idempotent retry allowed (they arise before dispatch), not
/// always-retry (the strategy must see them to fast-fail).
#[test]
fn rfc_0049_rev16_terminal_reasons_flags_as_decided() {
    for name in [
        "AUTHENTICATION_ERROR",
        "TLS_ERROR",
        "BUCKET_ACCESS_ERROR",
        "SCOPE_NOT_FOUND",
        "COLLECTION_NOT_FOUND",
    ] {
        let reason: RetryReason = name.parse().unwrap();
        assert!(reason.allows_non_idempotent_retry(), "{name}");
        assert!(!reason.always_retry(), "{name}");
        assert_eq!(reason.stage(), Stage::PreDispatch, "{name}");
    }
}

/// Reference 002 "RetryReasons": every user-visible reason parses, with the table's
/// non-idempotent flag; differing names are aliases of the RFC's.
#[test]
fn reference_002_user_visible_reasons_and_aliases() {
    let table: &[(&str, &str, bool)] = &[
        ("NODE_NOT_AVAILABLE", "NODE_NOT_AVAILABLE", true),
        ("SERVICE_NOT_AVAILABLE", "SERVICE_NOT_AVAILABLE", true),
        ("ENDPOINT_NOT_AVAILABLE", "SOCKET_NOT_AVAILABLE", true),
        ("ENDPOINT_CIRCUIT_OPEN", "CIRCUIT_BREAKER_OPEN", true),
        ("ENDPOINT_NOT_WRITABLE", "ENDPOINT_NOT_WRITABLE", true),
        (
            "KV_ERROR_MAP_INDICATED",
            "KV_ERROR_MAP_RETRY_INDICATED",
            true,
        ),
        ("KV_LOCKED", "KV_LOCKED", true),
        ("KV_TEMPORARY_FAILURE", "KV_TEMPORARY_FAILURE", true),
        (
            "KV_SYNC_WRITE_IN_PROGRESS",
            "KV_SYNC_WRITE_IN_PROGRESS",
            true,
        ),
        (
            "KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS",
            "KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS",
            true,
        ),
        (
            "CHANNEL_CLOSED_WHILE_IN_FLIGHT",
            "SOCKET_CLOSED_WHILE_IN_FLIGHT",
            false,
        ),
        ("BUCKET_NOT_AVAILABLE", "BUCKET_NOT_AVAILABLE", true),
        ("BUCKET_OPEN_IN_PROGRESS", "BUCKET_OPEN_IN_PROGRESS", true),
        (
            "GLOBAL_CONFIG_LOAD_IN_PROGRESS",
            "GLOBAL_CONFIG_LOAD_IN_PROGRESS",
            true,
        ),
        (
            "COLLECTION_MAP_REFRESH_IN_PROGRESS",
            "COLLECTION_MAP_REFRESH_IN_PROGRESS",
            true,
        ),
        ("VIEWS_TEMPORARY_FAILURE", "VIEWS_TEMPORARY_FAILURE", true),
        ("SEARCH_TOO_MANY_REQUESTS", "SEARCH_TOO_MANY_REQUESTS", true),
        (
            "QUERY_PREPARED_STATEMENT_FAILURE",
            "QUERY_PREPARED_STATEMENT_FAILURE",
            true,
        ),
        ("QUERY_INDEX_NOT_FOUND", "QUERY_INDEX_NOT_FOUND", true),
        (
            "ANALYTICS_TEMPORARY_FAILURE",
            "ANALYTICS_TEMPORARY_FAILURE",
            true,
        ),
    ];
    for &(given, canonical, non_idempotent) in table {
        let reason: RetryReason = given.parse().unwrap();
        assert_eq!(reason.name(), canonical, "{given}");
        assert_eq!(
            reason.allows_non_idempotent_retry(),
            non_idempotent,
            "{given}"
        );
    }
}

/// Reference 001 "Response Code Retry List" spells KV_SYNC_RE_COMMIT_IN_PROGRESS; accepted as
/// an alias of the table's name.
#[test]
fn rfc_0049_response_list_spelling_is_an_alias() {
    let reason: RetryReason = "KV_SYNC_RE_COMMIT_IN_PROGRESS".parse().unwrap();
    assert_eq!(reason, reasons::KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS);
}

/// Reference 001 "RetryReason": unknown reasons are never retried; an unknown name is kept
/// (for logs) but carries no retry flag.
#[test]
fn rfc_0049_unknown_reasons_never_retried() {
    let other: RetryReason = "SOMETHING_NEW".parse().unwrap();
    assert_eq!(other.kind(), ReasonKind::Other);
    assert_eq!(other.name(), "SOMETHING_NEW");
    assert!(other.never_retry() && !other.allows_non_idempotent_retry() && !other.always_retry());
    assert!(reasons::UNKNOWN.never_retry());
    assert!(!reasons::KV_LOCKED.never_retry());
}

/// Reference 003 "Behavior": the Cassandra kinds need their data and cannot be named bare.
#[test]
fn reference_003_kinds_need_data() {
    for name in [
        "READ_TIMEOUT",
        "WRITE_TIMEOUT",
        "UNAVAILABLE",
        "REQUEST_ABORTED",
        "ERROR_RESPONSE",
    ] {
        let err = name.parse::<RetryReason>().unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
}

/// Every kind's canonical name round-trips and names are unique.
#[test]
fn names_are_unique_and_round_trip() {
    let mut seen = std::collections::HashSet::new();
    for kind in ReasonKind::ALL {
        assert!(seen.insert(kind.name()), "duplicate {}", kind.name());
        for alias in kind.aliases() {
            assert!(seen.insert(alias), "duplicate alias {alias}");
        }
        if *kind != ReasonKind::Other {
            assert_eq!(ReasonKind::from_name(kind.name()), Some(*kind));
        }
    }
}

/// The doc comment of each case of the WIT's `retry-reason` (`wit/policy.wit`): what a policy
/// author in any language reads must agree with the reason table the host applies — whether
/// the host asks a policy at all (always-retry reasons are retried by the orchestrator with the
/// controlled backoff, reference 001 "Retry Orchestration") and whether a non-idempotent
/// request may be retried for it (reference 001 "RetryReason").
#[test]
fn every_wit_reason_case_documents_the_table_s_flags() {
    let wit = include_str!("../../wit/policy.wit");
    let start = wit.find("variant retry-reason {").expect("the variant");
    let body = &wit[start..start + wit[start..].find("\n    }").unwrap()];
    let mut comment = String::new();
    let mut cases = 0;
    for line in body.lines().skip(1).map(str::trim) {
        if let Some(text) = line.strip_prefix("///") {
            comment.push_str(text);
            continue;
        }
        let case = line.trim_end_matches(',');
        let case = case.split('(').next().unwrap();
        let name = case.to_uppercase().replace('-', "_");
        let kind = ReasonKind::from_name(&name)
            .or((name == "OTHER").then_some(ReasonKind::Other))
            .unwrap_or_else(|| panic!("{case}: no reason of the table"));
        let asked = if kind.always_retry() {
            "Asked: no, the host retries it itself"
        } else {
            "Asked: yes"
        };
        let unsafe_retry = if kind.allows_non_idempotent_retry() {
            "Non-idempotent retry: allowed."
        } else {
            "Non-idempotent retry: refused"
        };
        assert!(comment.contains(asked), "{case}: {comment}");
        assert!(comment.contains(unsafe_retry), "{case}: {comment}");
        assert!(!kind.meaning().is_empty(), "{case}");
        comment.clear();
        cases += 1;
    }
    // Every kind of the table the newest version has a case for has it (Other stands for the
    // names a version lacks, which the host never retries for its policies).
    let newest = *rebound::wasm::WitVersion::ALL.last().unwrap();
    let with_case = (ReasonKind::ALL.iter())
        .filter(|kind| newest.has_case_for(**kind))
        .count();
    assert_eq!(cases, with_case);
}
