//! What a request is, before anything happens to it: the service it goes to, its HTTP method,
//! and its type (reference 001's operations, plain HTTP requests, gRPC calls), with the
//! idempotency each implies (reference 001 "Idempotent Operation List", RFC 9110 §9.2.2). Kept
//! apart from the request's life (attempts, timing, state), which changes with every decision.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::reason::{ReasonKind, RetryReason};

/// The service a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// Key/Value (memcached binary protocol).
    Kv,
    /// SQL++ query.
    Query,
    /// Analytics.
    Analytics,
    /// Full-text search.
    Search,
    /// Views.
    Views,
    /// Cluster manager (ns-server) and management APIs.
    Management,
    /// Cassandra CQL.
    Cql,
    /// A plain HTTP service (RFC 9110).
    Http,
    /// A gRPC service.
    Grpc,
}

impl Service {
    /// The lowercase name used in error contexts.
    pub const fn name(self) -> &'static str {
        match self {
            Service::Kv => "kv",
            Service::Query => "query",
            Service::Analytics => "analytics",
            Service::Search => "search",
            Service::Views => "views",
            Service::Management => "management",
            Service::Cql => "cql",
            Service::Http => "http",
            Service::Grpc => "grpc",
        }
    }

    /// The host's guard: whether a request to this service may be sent again after a failure
    /// for `reason`, as far as its effects go. An idempotent request always; any other only
    /// for a reason that allows it (reference 001's table) and, for plain HTTP requests and
    /// gRPC calls, only if no attempt was ever written (`dispatched`; RFC 9110 §9.2.2: a
    /// client should not retry a non-idempotent request that may have been processed) or if
    /// the answer itself says the request was refused unprocessed (`AWS_THROTTLING`: the
    /// service throttled it).
    pub fn may_send_again(self, idempotent: bool, dispatched: bool, reason: &RetryReason) -> bool {
        idempotent
            || (reason.allows_non_idempotent_retry()
                && (!matches!(self, Service::Http | Service::Grpc)
                    || !dispatched
                    || reason.kind() == ReasonKind::AwsThrottling))
    }
}

/// An HTTP method (RFC 9110 §9.3), for plain HTTP, cluster-manager and management requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// GET: safe, idempotent.
    Get,
    /// POST: not idempotent.
    Post,
    /// PUT: idempotent.
    Put,
    /// DELETE: idempotent.
    Delete,
    /// HEAD: safe, idempotent.
    Head,
    /// OPTIONS: safe, idempotent.
    Options,
    /// TRACE: safe, idempotent.
    Trace,
    /// PATCH (RFC 5789): not idempotent.
    Patch,
    /// CONNECT: not idempotent.
    Connect,
}

impl HttpMethod {
    /// The method's token as RFC 9110 writes it (`GET`, `POST`, …).
    pub const fn name(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Head => "HEAD",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Trace => "TRACE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Connect => "CONNECT",
        }
    }

    /// RFC 9110 §9.2.2: the idempotent methods are the safe ones (GET, HEAD, OPTIONS, TRACE)
    /// and PUT and DELETE.
    pub const fn is_idempotent(self) -> bool {
        matches!(
            self,
            HttpMethod::Get
                | HttpMethod::Head
                | HttpMethod::Options
                | HttpMethod::Trace
                | HttpMethod::Put
                | HttpMethod::Delete
        )
    }
}

macro_rules! request_types {
    ($( $(#[$doc:meta])* $ty:ident = $name:literal, $svc:ident, $idem:ident; )*) => {
        /// What a request does. Idempotency of KV types follows reference 001
        /// "Idempotent Operation List" and reference 002 ("Collection: get, lookupIn,
        /// getAnyReplica, getAllReplicas, exists").
        ///
        /// `#[non_exhaustive]`: a later minor version may describe requests of other protocols
        /// or operations; match with a wildcard arm, or ask [`RequestType::service`] and the
        /// request's idempotency rather than listing types.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        #[non_exhaustive]
        pub enum RequestType {
            $( $(#[$doc])* $ty, )*
        }

        impl RequestType {
            /// Every request type.
            pub const ALL: &'static [RequestType] = &[$(RequestType::$ty,)*];

            /// The snake_case name.
            pub const fn name(self) -> &'static str {
                match self { $(RequestType::$ty => $name,)* }
            }

            /// The service the type belongs to.
            pub const fn service(self) -> Service {
                match self { $(RequestType::$ty => Service::$svc,)* }
            }

            const fn idempotency_rule(self) -> IdempotencyRule {
                match self { $(RequestType::$ty => IdempotencyRule::$idem,)* }
            }
        }
    };
}

#[derive(Clone, Copy)]
enum IdempotencyRule {
    Always,
    Never,
    IfReadonly,
    IfGet,
    IfIdempotentMethod,
}

request_types! {
    /// KV get (not get-and-lock, not get-and-touch).
    Get = "get", Kv, Always;
    /// KV get and lock: mutates the lock state.
    GetAndLock = "get_and_lock", Kv, Never;
    /// KV get and touch: mutates the expiry.
    GetAndTouch = "get_and_touch", Kv, Never;
    /// KV replica get.
    GetReplica = "get_replica", Kv, Always;
    /// KV exists (reference 002).
    Exists = "exists", Kv, Always;
    /// KV sub-document lookup.
    LookupIn = "lookup_in", Kv, Always;
    /// KV get collection id.
    GetCollectionId = "get_collection_id", Kv, Always;
    /// KV get collection manifest.
    GetCollectionManifest = "get_collection_manifest", Kv, Always;
    /// KV noop.
    Noop = "noop", Kv, Always;
    /// KV observe via CAS.
    ObserveCas = "observe_cas", Kv, Always;
    /// KV observe via sequence number.
    ObserveSeqno = "observe_seqno", Kv, Always;
    /// KV carrier (bucket) config.
    CarrierConfig = "carrier_config", Kv, Always;
    /// KV global config.
    GlobalConfig = "global_config", Kv, Always;
    /// KV insert.
    Insert = "insert", Kv, Never;
    /// KV upsert.
    Upsert = "upsert", Kv, Never;
    /// KV replace.
    Replace = "replace", Kv, Never;
    /// KV remove.
    Remove = "remove", Kv, Never;
    /// KV append.
    Append = "append", Kv, Never;
    /// KV prepend.
    Prepend = "prepend", Kv, Never;
    /// KV increment.
    Increment = "increment", Kv, Never;
    /// KV decrement.
    Decrement = "decrement", Kv, Never;
    /// KV touch.
    Touch = "touch", Kv, Never;
    /// KV unlock.
    Unlock = "unlock", Kv, Never;
    /// KV sub-document mutation.
    MutateIn = "mutate_in", Kv, Never;
    /// SQL++ query: idempotent only when `readonly`.
    Query = "query", Query, IfReadonly;
    /// Analytics query: idempotent only when `readonly`.
    Analytics = "analytics", Analytics, IfReadonly;
    /// Search: read-only, always idempotent (even though it is a POST).
    Search = "search", Search, Always;
    /// View query: read-only, always idempotent.
    View = "view", Views, Always;
    /// Cluster manager request: idempotent when GET.
    ClusterManager = "cluster_manager", Management, IfGet;
    /// Management API request: idempotent when GET.
    Management = "management", Management, IfGet;
    /// A CQL statement: non-idempotent unless declared (the driver's default idempotence is false).
    Cql = "cql", Cql, Never;
    /// A plain HTTP request: idempotent when its method is (RFC 9110 §9.2.2), unless declared.
    Http = "http", Http, IfIdempotentMethod;
    /// A gRPC call: non-idempotent unless declared (gRPC does not know a method's idempotency).
    Grpc = "grpc", Grpc, Never;
}

impl RequestType {
    /// Looks a type up by its snake_case name.
    pub fn from_name(name: &str) -> Option<RequestType> {
        RequestType::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// Reference 001 "Idempotent Operation List" (RFC 9110 §9.2.2 for plain HTTP): is a
    /// request of this type idempotent, given its `readonly` flag (query, analytics) and HTTP
    /// method (cluster manager, management, plain HTTP, where no method is not idempotent)?
    pub const fn is_idempotent(self, readonly: bool, method: Option<HttpMethod>) -> bool {
        match self.idempotency_rule() {
            IdempotencyRule::Always => true,
            IdempotencyRule::Never => false,
            IdempotencyRule::IfReadonly => readonly,
            IdempotencyRule::IfGet => matches!(method, Some(HttpMethod::Get)),
            IdempotencyRule::IfIdempotentMethod => match method {
                Some(method) => method.is_idempotent(),
                None => false,
            },
        }
    }
}

impl fmt::Display for RequestType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
