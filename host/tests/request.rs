//! Spec: the request model and idempotency (reference 001 "Idempotent Operation List",
//! reference 002 "Idempotent vs. Non-Idempotent Requests").

use std::time::Duration;

use rebound::{HttpMethod, RequestError};
use rebound::{Request, RequestType};

fn req(ty: RequestType) -> Request {
    Request::new(7, ty, Duration::from_secs(1)).unwrap()
}

/// KV: only the listed operations are idempotent; get-and-lock and get-and-touch are not.
#[test]
fn kv_idempotent_list() {
    use RequestType::*;
    let idempotent = [
        Get,
        GetReplica,
        Exists,
        LookupIn,
        GetCollectionId,
        GetCollectionManifest,
        Noop,
        ObserveCas,
        ObserveSeqno,
        CarrierConfig,
        GlobalConfig,
    ];
    let not = [
        GetAndLock,
        GetAndTouch,
        Insert,
        Upsert,
        Replace,
        Remove,
        Append,
        Prepend,
        Increment,
        Decrement,
        Touch,
        Unlock,
        MutateIn,
    ];
    for ty in idempotent {
        assert!(req(ty).is_idempotent(), "{ty}");
    }
    for ty in not {
        assert!(!req(ty).is_idempotent(), "{ty}");
    }
}

/// Query and analytics: idempotent only if `readonly`; search and views always.
#[test]
fn http_services_idempotency() {
    assert!(!req(RequestType::Query).is_idempotent());
    assert!(req(RequestType::Query).with_readonly(true).is_idempotent());
    assert!(!req(RequestType::Analytics).is_idempotent());
    assert!(req(RequestType::Analytics)
        .with_readonly(true)
        .is_idempotent());
    assert!(req(RequestType::Search).is_idempotent());
    assert!(req(RequestType::View).is_idempotent());
    assert!(
        !req(RequestType::Upsert).with_readonly(true).is_idempotent(),
        "readonly does not apply to KV"
    );
}

/// Cluster manager and management APIs: every GET is idempotent, nothing else.
#[test]
fn management_get_is_idempotent() {
    for ty in [RequestType::ClusterManager, RequestType::Management] {
        assert!(req(ty).with_method(HttpMethod::Get).is_idempotent());
        for m in [HttpMethod::Post, HttpMethod::Put, HttpMethod::Delete] {
            assert!(!req(ty).with_method(m).is_idempotent(), "{ty} {m:?}");
        }
        assert!(!req(ty).is_idempotent(), "no method: not known to be a GET");
    }
}

/// CQL statements are non-idempotent unless declared (reference 003: the policy "only kicks
/// in if the query is idempotent").
#[test]
fn cql_idempotence_is_declared() {
    assert!(!req(RequestType::Cql).is_idempotent());
    assert!(req(RequestType::Cql).with_idempotent(true).is_idempotent());
}

/// A zero timeout is rejected with a typed error.
#[test]
fn zero_timeout_is_rejected() {
    assert_eq!(
        Request::new(1, RequestType::Get, Duration::ZERO).unwrap_err(),
        RequestError::ZeroTimeout
    );
}

/// Request types parse from their snake_case names.
#[test]
fn request_type_names_round_trip() {
    for ty in RequestType::ALL {
        assert_eq!(RequestType::from_name(ty.name()), Some(*ty));
    }
    assert_eq!(RequestType::from_name("get_request"), None);
}

/// An absurdly large timeout is representable and never panics.
#[test]
fn huge_timeout_does_not_panic() {
    let req = Request::new(1, RequestType::Get, Duration::MAX).unwrap();
    assert_eq!(req.deadline(), None);
    assert!(req.remaining_at(std::time::Instant::now()) > Duration::from_secs(1 << 40));
}

/// Reference 001 "Accessible Context": a request's client context is its own. New requests
/// start empty; an entry added to one, or to a copy of one, is seen by that request only.
#[test]
fn a_client_context_belongs_to_its_request() {
    let plain = req(RequestType::Get);
    let tenant = req(RequestType::Get).with_client_context("tenant", "blue");
    let copy = tenant.clone().with_client_context("tenant", "green");
    let later = req(RequestType::Get);
    assert!(plain.client_context().is_empty());
    assert!(later.client_context().is_empty());
    assert_eq!(tenant.client_context()["tenant"], "blue");
    assert_eq!(copy.client_context()["tenant"], "green");
}
