//! One decision request as JSON (`rebound eval` lines, `POST /v1/decide` bodies): which policy,
//! the request, and why it failed (a reason, or a raw response to classify). Missing request
//! fields take the defaults documented in `docs/decision-json.md`; every error names the field.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use rebound::cassandra::ConsistencyLevel;
use rebound::classify::Response;
use rebound::config::{Builtin, BuiltinPolicy};
use rebound::errormap::RetrySpec;
use rebound::grpc::split_full_method;
use rebound::HttpMethod;
use rebound::{Progress, Pushback};
use rebound::{Request, RequestType, RetryReason, Service};
use serde::Deserialize;
use serde_json::Value;

pub use super::failure::{parse_reason, ResponseSpec};
use super::input_error::describe;
pub use super::input_error::{without_type_names, InputError};

/// The policy a line asks for.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    expecting = "a policy name, a path to a .wasm component, or {\"name\": NAME | PATH, \"params\": {...}}"
)]
pub enum PolicyRef {
    /// A name or a path.
    Plain(String),
    /// A component path with parameters for its `configure`, or a built-in's name with its
    /// parameters.
    WithParams {
        name: String,
        #[serde(default)]
        params: serde_json::Map<String, Value>,
    },
}

/// Where a policy comes from, as the resolver sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicyChoice {
    /// The registry's routing (default policy, routes, profiles).
    Routed,
    /// A policy of the registry by name.
    Named(String),
    /// A built-in with parameters.
    Builtin(BuiltinPolicy),
    /// A component file with parameters.
    Component {
        path: PathBuf,
        params: BTreeMap<String, String>,
    },
}

impl PolicyRef {
    /// Whether it gives parameters of its own.
    pub fn has_params(&self) -> bool {
        matches!(self, PolicyRef::WithParams { params, .. } if !params.is_empty())
    }

    /// A name ending in `.wasm` or containing a path separator is a component file; a
    /// built-in's name with parameters is that built-in so tuned; any other name is a policy
    /// of the registry.
    pub fn choice(self) -> Result<PolicyChoice, InputError> {
        let (name, params) = match self {
            PolicyRef::Plain(name) => (name, serde_json::Map::new()),
            PolicyRef::WithParams { name, params } => (name, params),
        };
        if name.ends_with(".wasm") || name.contains('/') {
            let mut texts = BTreeMap::new();
            for (key, value) in params {
                let text = match value {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => {
                        return Err(InputError::new(
                            format!("policy.params.{key}"),
                            "expected a string, a number or a boolean (a component's parameters are handed to its `configure` as text)",
                        ))
                    }
                };
                texts.insert(key, text);
            }
            return Ok(PolicyChoice::Component {
                path: PathBuf::from(name),
                params: texts,
            });
        }
        if params.is_empty() {
            return Ok(PolicyChoice::Named(name));
        }
        let builtin = Builtin::from_name(&name).ok_or_else(|| {
            InputError::new(
                "policy.params",
                format!("parameters are for component files (PATH.wasm) and built-ins ({}); `{name}` is a named policy, configured in the registry", Builtin::ALL.map(Builtin::name).join(", ")),
            )
        })?;
        BuiltinPolicy::new(builtin, &params)
            .map(PolicyChoice::Builtin)
            .map_err(|e| {
                let field = if e.field.is_empty() {
                    "policy.params".to_owned()
                } else {
                    format!("policy.params.{}", e.field)
                };
                InputError::new(field, e.message)
            })
    }
}

/// The request as given.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestSpec {
    id: Option<u64>,
    #[serde(rename = "type")]
    request_type: Option<RequestType>,
    service: Option<Service>,
    idempotent: Option<bool>,
    readonly: bool,
    method: Option<HttpMethod>,
    retry_attempts: u32,
    elapsed_ms: u64,
    timeout_ms: Option<u64>,
    dispatched: bool,
    last_dispatched_to: Option<String>,
    completed: bool,
    client_context: BTreeMap<String, String>,
    consistency: Option<ConsistencyLevel>,
    profile: Option<String>,
    authority: Option<String>,
    route: Option<String>,
    retries_since_pushback: Option<u32>,
    transparent_retries: u32,
    refused_retried: bool,
    /// The authenticated client, never read from the JSON.
    #[serde(skip)]
    caller: Option<String>,
}

impl RequestSpec {
    /// Sets the client-context entry `key` to `value`, replacing what the request said.
    pub fn set_context(&mut self, key: &str, value: &str) {
        self.client_context.insert(key.to_owned(), value.to_owned());
    }

    /// `request` with what happened to it before this failure: the retries since the last
    /// pushback, the transparent retries, where it was written and whether it completed.
    fn with_history(&self, mut request: Request) -> Result<Request, InputError> {
        if let Some(since) = self.retries_since_pushback {
            if since > self.retry_attempts {
                return Err(InputError::new(
                    "request.retries_since_pushback",
                    format!(
                        "{since} is more than the retries made ({})",
                        self.retry_attempts
                    ),
                ));
            }
            request = request.with_retries_since_pushback(since);
        }
        if self.transparent_retries > 0 || self.refused_retried {
            if self.refused_retried && self.transparent_retries == 0 {
                return Err(InputError::new(
                    "request.refused_retried",
                    "a refused attempt retried is a transparent retry: `transparent_retries` is at least 1",
                ));
            }
            request =
                request.with_transparent_retries(self.transparent_retries, self.refused_retried);
        }
        if self.dispatched || self.last_dispatched_to.is_some() {
            request.mark_dispatched(self.last_dispatched_to.clone().unwrap_or_default());
        }
        if self.completed {
            request.complete();
        }
        Ok(request)
    }

    /// Names the authenticated client the request is decided for
    /// ([`Request::caller`](rebound::Request::caller)).
    pub fn set_caller(&mut self, name: &str) {
        self.caller = Some(name.to_owned());
    }
}

/// One decision request, as read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecideInput {
    #[serde(default)]
    pub policy: Option<PolicyRef>,
    #[serde(default)]
    pub request: RequestSpec,
    #[serde(default)]
    pub reason: Option<Value>,
    #[serde(default)]
    pub response: Option<ResponseSpec>,
    #[serde(default)]
    pub error_map: Option<PathBuf>,
    /// gRPC-style pushback: retry no sooner than this many ms; negative: do not retry.
    #[serde(default)]
    pub pushback_ms: Option<i64>,
    /// gRPC's `grpc-retry-pushback-ms` as received, read as gRFC A6 says.
    #[serde(default)]
    pub pushback: Option<PushbackText>,
    /// The error-map retry spec of a failure given as a `reason` (as the decision log
    /// writes a classified failure).
    #[serde(default)]
    pub error_map_spec: Option<RetrySpec>,
    /// The moment an HTTP-date `Retry-After` is read at (RFC 3339); the clock's when absent.
    #[serde(default)]
    pub now: Option<String>,
    /// How far the failed attempt got (gRFC A6): `processed` when absent.
    #[serde(default)]
    pub progress: Option<Progress>,
    /// The attempt timeout that cut the failed attempt (an `ATTEMPT_TIMEOUT` failure), in ms;
    /// when absent, the one the request's controls give.
    #[serde(default)]
    pub attempt_timeout_ms: Option<u64>,
    /// How many attempts the callee says it made for the failed one (its own retries, or a
    /// proxy's): the throttle counts the failure that many times.
    #[serde(default)]
    pub upstream_attempts: Option<u32>,
}

/// gRPC's `grpc-retry-pushback-ms` header as a server sent it: its text, or every text when it
/// was sent more than once.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "the grpc-retry-pushback-ms header's text (\"200\"), or the list of its texts when it came more than once"
)]
pub enum PushbackText {
    /// The header, sent once.
    One(String),
    /// Every value of the header, as received.
    Many(Vec<String>),
}

impl PushbackText {
    /// The pushback it says, as gRFC A6 and gRPC's clients read it
    /// ([`Pushback::from_grpc_header`]); none for an empty list.
    pub fn read(&self) -> Option<Pushback> {
        match self {
            PushbackText::One(text) => Pushback::from_grpc_header([text.as_str()]),
            PushbackText::Many(texts) => {
                Pushback::from_grpc_header(texts.iter().map(String::as_str))
            }
        }
    }
}

/// Why the request failed.
#[derive(Debug)]
pub enum Failure<'a> {
    /// A reason given by name or with its data.
    Reason(RetryReason),
    /// A raw response for the classifier.
    Response(Response<'a>),
}

/// The default timeout of a request of `service`, in milliseconds: the Couchbase SDKs' 2.5 s
/// for KV and 75 s for the HTTP services; the Cassandra driver's 2 s request timeout for CQL.
pub fn default_timeout_ms(service: Service) -> u64 {
    match service {
        Service::Kv => 2_500,
        Service::Cql => 2_000,
        _ => 75_000,
    }
}

/// The request type a `service` alone stands for.
fn service_type(service: Service) -> RequestType {
    match service {
        Service::Kv => RequestType::Get,
        Service::Query => RequestType::Query,
        Service::Analytics => RequestType::Analytics,
        Service::Search => RequestType::Search,
        Service::Views => RequestType::View,
        Service::Management => RequestType::Management,
        Service::Cql => RequestType::Cql,
        Service::Http => RequestType::Http,
        Service::Grpc => RequestType::Grpc,
    }
}

impl DecideInput {
    /// Reads one JSON object; errors name the field.
    pub fn parse(text: &str) -> Result<Self, InputError> {
        // serde reads a struct from an array too; an input is an object.
        if text.trim_start().starts_with('[') {
            return Err(InputError::new(
                "",
                "not a JSON object: an array (an input is `{\"reason\": …}`)",
            ));
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let input: DecideInput =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
                let field = e.path().to_string();
                let field = if field == "." { String::new() } else { field };
                let inner = e.into_inner();
                InputError::new(field, describe(&inner))
            })?;
        deserializer
            .end()
            .map_err(|e| InputError::new("", describe(&e)))?;
        Ok(input)
    }

    /// The request, started `elapsed_ms` before `now`, with request id `default_id` unless the
    /// input gives one.
    pub fn request(&self, now: Instant, default_id: u64) -> Result<Request, InputError> {
        let spec = &self.request;
        let request_type = match (spec.request_type, spec.service) {
            (Some(ty), Some(service)) if ty.service() != service => {
                return Err(InputError::new(
                    "request.service",
                    format!(
                        "request type `{ty}` belongs to service `{}`, not `{}`",
                        ty.service().name(),
                        service.name()
                    ),
                ))
            }
            (Some(ty), _) => ty,
            (None, Some(service)) => service_type(service),
            (None, None) => RequestType::Get,
        };
        let timeout_ms = spec
            .timeout_ms
            .unwrap_or_else(|| default_timeout_ms(request_type.service()));
        let timeout = Duration::from_millis(timeout_ms);
        let elapsed = Duration::from_millis(spec.elapsed_ms);
        let start = now.checked_sub(elapsed).ok_or_else(|| {
            InputError::new("request.elapsed_ms", "too large for this machine's clock")
        })?;
        let mut request =
            Request::new_at(spec.id.unwrap_or(default_id), request_type, timeout, start)
                .map_err(|e| InputError::new("request.timeout_ms", e.to_string()))?
                .with_readonly(spec.readonly)
                .with_retry_attempts(spec.retry_attempts);
        if let Some(method) = spec.method {
            request = request.with_method(method);
        }
        if let Some(idempotent) = spec.idempotent {
            request = request.with_idempotent(idempotent);
        }
        for (key, value) in &spec.client_context {
            request = request.with_client_context(key.clone(), value.clone());
        }
        if let Some(level) = spec.consistency {
            request = request.with_consistency(level);
        }
        if let Some(profile) = &spec.profile {
            request = request.with_profile(profile.as_str());
        }
        if let Some(authority) = &spec.authority {
            request = request.with_authority(authority.as_str());
        }
        if let Some(caller) = &spec.caller {
            request = request.with_caller(caller.as_str());
        }
        if let Some(route) = &spec.route {
            if request_type == RequestType::Grpc && split_full_method(route).is_none() {
                return Err(InputError::new(
                    "request.route",
                    format!("`{route}` is not a gRPC method: expected /package.Service/Method"),
                ));
            }
            request = request.with_route(route.as_str());
        }
        spec.with_history(request)
    }

    /// The moment the line is decided at, for an HTTP-date `Retry-After`: its `now` (RFC 3339,
    /// e.g. `2026-11-28T12:00:00Z`), else the clock's.
    fn now(&self) -> Result<SystemTime, InputError> {
        match &self.now {
            None => Ok(SystemTime::now()),
            Some(text) => humantime::parse_rfc3339_weak(text).map_err(|e| {
                InputError::new(
                    "now",
                    format!("`{text}` is not an RFC 3339 time (2026-11-28T12:00:00Z): {e}"),
                )
            }),
        }
    }

    /// The server's pushback: `pushback_ms`, `pushback` (gRPC's header as received), or the
    /// response's `retry_after` (an HTTP `Retry-After` value: seconds, or an HTTP-date read at
    /// the line's `now`); unreadable means do not retry.
    pub fn pushback(&self) -> Result<Option<Pushback>, InputError> {
        let now = self.now()?;
        let retry_after = self
            .response
            .as_ref()
            .and_then(|r| r.retry_after.as_deref());
        match (self.pushback_ms, &self.pushback, retry_after) {
            (Some(millis), None, None) => Ok(Some(Pushback::from_millis(millis))),
            (None, Some(text), None) => Ok(text.read()),
            (None, None, Some(value)) => Ok(Some(Pushback::from_retry_after(value, now))),
            (None, None, None) => Ok(None),
            (Some(_), _, _) | (_, Some(_), _) => Err(InputError::new(
                if self.pushback_ms.is_some() { "pushback_ms" } else { "pushback" },
                "give the server's pushback once: `pushback_ms`, `pushback` or `response.retry_after`",
            )),
        }
    }

    /// The attempt timeout that cut the failed attempt, if given: a positive number of ms.
    pub fn attempt_timeout(&self) -> Result<Option<std::time::Duration>, InputError> {
        match self.attempt_timeout_ms {
            Some(0) => Err(InputError::new(
                "attempt_timeout_ms",
                "expected a positive number of milliseconds: an attempt timeout of 0 cuts nothing",
            )),
            millis => Ok(millis.map(std::time::Duration::from_millis)),
        }
    }

    /// Why a request of `request_type` failed: exactly one of `reason` and `response` (a KV
    /// response's opcode defaults to the request type's).
    pub fn failure(&self, request_type: RequestType) -> Result<Failure<'_>, InputError> {
        match (&self.reason, &self.response) {
            (Some(reason), None) => parse_reason(reason).map(Failure::Reason),
            (None, Some(response)) => response.read(request_type).map(Failure::Response),
            (Some(_), Some(_)) => Err(InputError::new(
                "",
                "give either `reason` or `response`, not both",
            )),
            (None, None) => Err(InputError::new(
                "",
                "missing `reason` (e.g. \"KV_LOCKED\") or `response` (e.g. {\"status\": 134})",
            )),
        }
    }
}
