//! Classification of KV (memcached binary protocol) responses (reference 001 "Response Code
//! Retry List", KV), falling back to the node's error map for unknown statuses.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::errormap::{ErrorMap, ErrorMapVerdict};
use crate::reason::reasons;
use crate::request::RequestType;

use super::{Classification, FailureKind};

/// A KV request opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KvOpcode(pub u8);

impl KvOpcode {
    /// GET
    pub const GET: KvOpcode = KvOpcode(0x00);
    /// UNLOCK_KEY
    pub const UNLOCK: KvOpcode = KvOpcode(0x95);
    /// GET_COLLECTION_ID
    pub const GET_COLLECTION_ID: KvOpcode = KvOpcode(0xbb);

    /// Whether this is a DCP command (0x50–0x65), excluded from the retry list.
    pub const fn is_dcp(self) -> bool {
        matches!(self.0, 0x50..=0x65)
    }

    /// The opcode a KV request type is sent with.
    pub const fn of(request_type: RequestType) -> Option<KvOpcode> {
        use RequestType as T;
        let op = match request_type {
            T::Get => 0x00,
            T::Upsert => 0x01,
            T::Insert => 0x02,
            T::Replace => 0x03,
            T::Remove => 0x04,
            T::Increment => 0x05,
            T::Decrement => 0x06,
            T::Noop => 0x0a,
            T::Append => 0x0e,
            T::Prepend => 0x0f,
            T::Touch => 0x1c,
            T::GetAndTouch => 0x1d,
            T::GetReplica => 0x83,
            T::ObserveSeqno => 0x91,
            T::ObserveCas => 0x92,
            T::GetAndLock => 0x94,
            T::Unlock => 0x95,
            T::Exists => 0xa0,
            T::CarrierConfig | T::GlobalConfig => 0xb5,
            T::GetCollectionManifest => 0xba,
            T::GetCollectionId => 0xbb,
            T::LookupIn => 0xd0,
            T::MutateIn => 0xd1,
            T::Query
            | T::Analytics
            | T::Search
            | T::View
            | T::ClusterManager
            | T::Management
            | T::Cql
            | T::Http
            | T::Grpc => return None,
        };
        Some(KvOpcode(op))
    }
}

/// The statuses this host knows (names as in the server's error map). Any other status is
/// unknown and goes to the error map (see docs/decisions.md for why EBUSY and ENOMEM are not
/// in this list).
const KNOWN_STATUSES: &[(u16, &str)] = &[
    (0x00, "SUCCESS"),
    (0x01, "KEY_ENOENT"),
    (0x02, "KEY_EEXISTS"),
    (0x03, "E2BIG"),
    (0x04, "EINVAL"),
    (0x05, "NOT_STORED"),
    (0x06, "DELTA_BADVAL"),
    (0x07, "NOT_MY_VBUCKET"),
    (0x08, "NO_BUCKET"),
    (0x09, "LOCKED"),
    (0x1f, "AUTH_STALE"),
    (0x20, "AUTH_ERROR"),
    (0x21, "AUTH_CONTINUE"),
    (0x22, "ERANGE"),
    (0x24, "EACCESS"),
    (0x81, "UNKNOWN_COMMAND"),
    (0x83, "NOT_SUPPORTED"),
    (0x84, "EINTERNAL"),
    (0x86, "ETMPFAIL"),
    (0x87, "XATTR_EINVAL"),
    (0x88, "UNKNOWN_COLLECTION"),
    (0x8c, "UNKNOWN_SCOPE"),
    (0xa0, "DURABILITY_INVALID_LEVEL"),
    (0xa1, "DURABILITY_IMPOSSIBLE"),
    (0xa2, "SYNC_WRITE_IN_PROGRESS"),
    (0xa3, "SYNC_WRITE_AMBIGUOUS"),
    (0xa4, "SYNC_WRITE_RE_COMMIT_IN_PROGRESS"),
    (0xc0, "SUBDOC_PATH_ENOENT"),
    (0xc1, "SUBDOC_PATH_MISMATCH"),
    (0xc2, "SUBDOC_PATH_EINVAL"),
    (0xc3, "SUBDOC_PATH_E2BIG"),
    (0xc4, "SUBDOC_DOC_E2DEEP"),
    (0xc5, "SUBDOC_VALUE_CANTINSERT"),
    (0xc6, "SUBDOC_DOC_NOT_JSON"),
    (0xc7, "SUBDOC_NUM_ERANGE"),
    (0xc8, "SUBDOC_DELTA_EINVAL"),
    (0xc9, "SUBDOC_PATH_EEXISTS"),
    (0xca, "SUBDOC_VALUE_ETOODEEP"),
    (0xcb, "SUBDOC_INVALID_COMBO"),
    (0xcc, "SUBDOC_MULTI_PATH_FAILURE"),
    (0xcd, "SUBDOC_SUCCESS_DELETED"),
];

/// The name of a status this host knows.
pub fn known_status_name(status: u16) -> Option<&'static str> {
    KNOWN_STATUSES
        .binary_search_by_key(&status, |(code, _)| *code)
        .ok()
        .map(|i| KNOWN_STATUSES[i].1)
}

/// Classifies a KV response to a request sent with `opcode`:
///
/// - 0x07 NOT_MY_VBUCKET → KV_NOT_MY_VBUCKET;
/// - 0x88 → KV_COLLECTION_OUTDATED, except on GetCollectionID (collection not found);
/// - 0x09 → KV_LOCKED, except on Unlock (a CAS mismatch, never retried);
/// - 0x86 → KV_TEMPORARY_FAILURE; 0xa2 → KV_SYNC_WRITE_IN_PROGRESS;
///   0xa4 → KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS;
/// - DCP commands are excluded from the list;
/// - other known statuses are not retried;
/// - unknown statuses: the error map decides between KV_ERROR_MAP_RETRY_INDICATED and cancel.
pub fn classify_kv(opcode: KvOpcode, status: u16, error_map: Option<&ErrorMap>) -> Classification {
    let name = known_status_name(status);
    let Some(name) = name else {
        return classify_unknown(status, error_map);
    };
    if status == 0x00 {
        return Classification::Success;
    }
    let fail = |kind| Classification::fail(status.into(), Some(Cow::Borrowed(name)), kind);
    if opcode.is_dcp() {
        return fail(FailureKind::DcpExcluded);
    }
    match status {
        0x07 => Classification::retry(reasons::KV_NOT_MY_VBUCKET),
        0x88 if opcode == KvOpcode::GET_COLLECTION_ID => fail(FailureKind::CollectionNotFound),
        0x88 => Classification::retry(reasons::KV_COLLECTION_OUTDATED),
        0x09 if opcode == KvOpcode::UNLOCK => fail(FailureKind::CasMismatch),
        0x09 => Classification::retry(reasons::KV_LOCKED),
        0x86 => Classification::retry(reasons::KV_TEMPORARY_FAILURE),
        0xa2 => Classification::retry(reasons::KV_SYNC_WRITE_IN_PROGRESS),
        0xa4 => Classification::retry(reasons::KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS),
        _ => fail(FailureKind::NotRetryable),
    }
}

fn classify_unknown(status: u16, error_map: Option<&ErrorMap>) -> Classification {
    let verdict = error_map.map_or(ErrorMapVerdict::NotInMap, |map| map.verdict(status));
    match verdict {
        ErrorMapVerdict::Retry(entry) => Classification::Retry {
            reason: reasons::KV_ERROR_MAP_RETRY_INDICATED,
            retry_spec: entry.retry,
        },
        ErrorMapVerdict::NoRetry(entry) => Classification::fail(
            status.into(),
            Some(Cow::Owned(entry.name.clone())),
            FailureKind::ErrorMapNoRetry,
        ),
        ErrorMapVerdict::NotInMap => {
            Classification::fail(status.into(), None, FailureKind::UnknownStatus)
        }
    }
}
