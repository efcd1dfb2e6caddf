//! One decision request as JSON (`rebound eval` lines, `POST /v1/decide` bodies): which policy,
//! the request, and why it failed (a reason, or a raw response to classify). Missing request
//! fields take the defaults documented in `docs/decision-json.md`; every error names the field.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use rebound::cassandra::{AbortKind, ConsistencyLevel, ServerErrorKind};
use rebound::classify::{KvOpcode, Response};
use rebound::errormap::RetrySpec;
use rebound::grpc::{split_full_method, GrpcCode};
use rebound::registry::{Builtin, BuiltinPolicy};
use rebound::HttpMethod;
use rebound::Pushback;
use rebound::{ReadTimeout, Unavailable, WriteTimeout};
use rebound::{ReasonKind, Request, RequestType, RetryReason, Service};
use serde::Deserialize;
use serde_json::Value;

/// A decision request that could not be read: the field (dotted path; empty for the whole
/// line) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
pub struct InputError {
    /// The field, e.g. `request.retry_attempts`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl InputError {
    /// An error about `field`; a Rust type serde names in `message` is said as the JSON it
    /// expects ([`without_type_names`]).
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            field: field.into(),
            message: without_type_names(&message.into()),
        }
    }
}

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
                let field = if e.param.is_empty() {
                    "policy.params".to_owned()
                } else {
                    format!("policy.params.{}", e.param)
                };
                InputError::new(field, e.message)
            })
    }
}

/// A number as JSON number or as text (decimal or 0x-hexadecimal).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    expecting = "a number, or a string with a decimal or 0x-hex number"
)]
enum Code {
    Number(u64),
    Text(String),
}

impl Code {
    fn value<T: TryFrom<u64>>(&self, field: &str) -> Result<T, InputError> {
        let value = match self {
            Code::Number(n) => *n,
            Code::Text(text) => match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            }
            .map_err(|_| InputError::new(field, format!("`{text}` is not a number")))?,
        };
        T::try_from(value).map_err(|_| InputError::new(field, format!("{value} is out of range")))
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
    /// The authenticated client, never read from the JSON.
    #[serde(skip)]
    caller: Option<String>,
}

impl RequestSpec {
    /// Sets the client-context entry `key` to `value`, replacing what the request said.
    pub fn set_context(&mut self, key: &str, value: &str) {
        self.client_context.insert(key.to_owned(), value.to_owned());
    }

    /// Names the authenticated client the request is decided for
    /// ([`Request::caller`](rebound::Request::caller)).
    pub fn set_caller(&mut self, name: &str) {
        self.caller = Some(name.to_owned());
    }
}

/// A raw response, read according to the request's service.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResponseSpec {
    status: Option<Code>,
    opcode: Option<Code>,
    code: Option<Code>,
    message: String,
    body: String,
    retry_after: Option<String>,
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
    /// The error-map retry spec of a failure given as a `reason` (as the decision log
    /// writes a classified failure).
    #[serde(default)]
    pub error_map_spec: Option<RetrySpec>,
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
                .readonly(spec.readonly)
                .with_retry_attempts(spec.retry_attempts);
        if let Some(method) = spec.method {
            request = request.method(method);
        }
        if let Some(idempotent) = spec.idempotent {
            request = request.idempotent(idempotent);
        }
        for (key, value) in &spec.client_context {
            request = request.context(key.clone(), value.clone());
        }
        if let Some(level) = spec.consistency {
            request = request.consistency(level);
        }
        if let Some(profile) = &spec.profile {
            request = request.profile(profile.as_str());
        }
        if let Some(authority) = &spec.authority {
            request = request.authority(authority.as_str());
        }
        if let Some(caller) = &spec.caller {
            request = request.caller(caller.as_str());
        }
        if let Some(route) = &spec.route {
            if request_type == RequestType::Grpc && split_full_method(route).is_none() {
                return Err(InputError::new(
                    "request.route",
                    format!("`{route}` is not a gRPC method: expected /package.Service/Method"),
                ));
            }
            request = request.route(route.as_str());
        }
        if let Some(since) = spec.retries_since_pushback {
            if since > spec.retry_attempts {
                return Err(InputError::new(
                    "request.retries_since_pushback",
                    format!(
                        "{since} is more than the retries made ({})",
                        spec.retry_attempts
                    ),
                ));
            }
            request = request.with_retries_since_pushback(since);
        }
        if spec.dispatched || spec.last_dispatched_to.is_some() {
            request.mark_dispatched(spec.last_dispatched_to.clone().unwrap_or_default());
        }
        if spec.completed {
            request.complete();
        }
        Ok(request)
    }

    /// Why a request of `request_type` failed: exactly one of `reason` and `response` (a KV
    /// response's opcode defaults to the request type's).
    /// The server's pushback at `now`: `pushback_ms`, or the response's `retry_after` (an
    /// HTTP `Retry-After` value: seconds or an HTTP-date; unreadable means do not retry).
    pub fn pushback(&self, now: SystemTime) -> Result<Option<Pushback>, InputError> {
        let retry_after = self
            .response
            .as_ref()
            .and_then(|r| r.retry_after.as_deref());
        match (self.pushback_ms, retry_after) {
            (Some(_), Some(_)) => Err(InputError::new(
                "pushback_ms",
                "give the server's pushback once: `pushback_ms` or `response.retry_after`",
            )),
            (Some(millis), None) => Ok(Some(Pushback::from_millis(millis))),
            (None, Some(value)) => Ok(Some(Pushback::from_retry_after(value, now))),
            (None, None) => Ok(None),
        }
    }

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

/// serde_json's message without its position when the field path says where; syntax errors
/// keep their column.
fn describe(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match error.classify() {
        Category::Syntax | Category::Eof => {
            format!("not a JSON object: {error}")
        }
        _ => {
            let message = error.to_string();
            match message.rfind(" at line ") {
                Some(at) => message[..at].to_owned(),
                None => message,
            }
        }
    }
}

/// `message` with the Rust types serde names ("expected struct DecideInput") said as the JSON
/// they expect: a client knows the API's JSON, not this program's types.
pub fn without_type_names(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("expected ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "expected ".len()..];
        let (kind, tail) = [
            ("tuple struct ", "a JSON array"),
            ("unit struct ", "null"),
            ("struct ", "a JSON object"),
            ("enum ", "one of the documented values"),
        ]
        .into_iter()
        .find_map(|(prefix, json)| after.strip_prefix(prefix).map(|tail| (json, tail)))
        .unwrap_or(("", after));
        if kind.is_empty() {
            out.push_str("expected ");
            rest = after;
            continue;
        }
        // The type's name runs to the first character that cannot be in one.
        let name_len = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push_str("expected ");
        out.push_str(kind);
        rest = &tail[name_len..];
    }
    out.push_str(rest);
    out
}

/// A reason name (`"KV_LOCKED"`), or an object with one key naming a kind that carries data
/// (`{"read_timeout": {...}}`, `{"request_aborted": "timeout"}`).
pub fn parse_reason(value: &Value) -> Result<RetryReason, InputError> {
    match value {
        Value::String(name) => match ReasonKind::from_name(name) {
            None => Err(InputError::new(
                "reason",
                format!("unknown reason `{name}`; `rebound reasons` lists them"),
            )),
            Some(_) => {
                RetryReason::parse_name(name).map_err(|e| InputError::new("reason", e.to_string()))
            }
        },
        Value::Object(fields) if fields.len() == 1 => {
            let (key, data) = fields.iter().next().expect("one field");
            let field = format!("reason.{key}");
            let kind = ReasonKind::from_name(&key.to_ascii_uppercase());
            let data_error = |e: serde_json::Error| InputError::new(&field, e.to_string());
            match kind {
                Some(ReasonKind::ReadTimeout) => ReadTimeout::deserialize(data)
                    .map(RetryReason::from)
                    .map_err(data_error),
                Some(ReasonKind::WriteTimeout) => WriteTimeout::deserialize(data)
                    .map(RetryReason::from)
                    .map_err(data_error),
                Some(ReasonKind::Unavailable) => Unavailable::deserialize(data)
                    .map(RetryReason::from)
                    .map_err(data_error),
                Some(ReasonKind::RequestAborted) => AbortKind::deserialize(data)
                    .map(RetryReason::RequestAborted)
                    .map_err(data_error),
                Some(ReasonKind::ErrorResponse) => ServerErrorKind::deserialize(data)
                    .map(RetryReason::ErrorResponse)
                    .map_err(data_error),
                Some(ReasonKind::HttpStatus) => http_status(data, &field),
                Some(ReasonKind::GrpcStatus) => GrpcCode::from_json(data)
                    .map(RetryReason::GrpcStatus)
                    .map_err(|e| InputError::new(&field, e)),
                _ => Err(InputError::new(
                    "reason",
                    format!("`{key}` carries no data: give it as a string; objects are for read_timeout, write_timeout, unavailable, request_aborted, error_response, http_status and grpc_status"),
                )),
            }
        }
        _ => Err(InputError::new(
            "reason",
            "expected a reason name (\"KV_LOCKED\") or an object with one key ({\"read_timeout\": {...}})",
        )),
    }
}

/// An HTTP error status (400 to 599) as a reason's data.
fn http_status(data: &Value, field: &str) -> Result<RetryReason, InputError> {
    data.as_u64()
        .filter(|s| (400..=599).contains(s))
        .map(|s| RetryReason::HttpStatus(s as u16))
        .ok_or_else(|| {
            InputError::new(
                field,
                format!("expected an error status from 400 to 599, found `{data}`"),
            )
        })
}

impl ResponseSpec {
    /// A gRPC response's `status`: the code's number or its name, in any case.
    fn grpc_code(&self) -> Result<GrpcCode, InputError> {
        let field = "response.status";
        let value = match &self.status {
            None => {
                return Err(InputError::new(
                    field,
                    "a grpc response needs its status code",
                ))
            }
            Some(Code::Number(n)) => Value::from(*n),
            Some(Code::Text(text)) => Value::from(text.as_str()),
        };
        GrpcCode::from_json(&value).map_err(|e| InputError::new(field, e))
    }

    /// The response of a request of `service`.
    fn read(&self, request_type: RequestType) -> Result<Response<'_>, InputError> {
        let service = request_type.service();
        let status = |what: &str| {
            self.status
                .as_ref()
                .ok_or_else(|| {
                    InputError::new(
                        "response.status",
                        format!("a {} response needs its {what}", service.name()),
                    )
                })?
                .value::<u16>("response.status")
        };
        let code = || {
            self.code
                .as_ref()
                .ok_or_else(|| {
                    InputError::new(
                        "response.code",
                        format!("a {} response needs its error code", service.name()),
                    )
                })?
                .value::<u32>("response.code")
        };
        Ok(match service {
            Service::Kv => Response::Kv {
                opcode: match &self.opcode {
                    Some(opcode) => KvOpcode(opcode.value("response.opcode")?),
                    None => KvOpcode::of(request_type).ok_or_else(|| {
                        InputError::new("response.opcode", "missing: the KV request's opcode")
                    })?,
                },
                status: status("status")?,
            },
            Service::Query => Response::Query {
                code: code()?,
                message: &self.message,
            },
            Service::Analytics => Response::Analytics { code: code()? },
            Service::Search => Response::Search {
                status: status("HTTP status")?,
            },
            Service::Views => Response::Views {
                status: status("HTTP status")?,
                body: &self.body,
            },
            Service::Http => Response::Http {
                status: status("HTTP status")?,
            },
            Service::Grpc => Response::Grpc {
                code: self.grpc_code()?,
            },
            Service::Management | Service::Cql => {
                return Err(InputError::new(
                    "response",
                    format!(
                        "{} responses are not classified by the host; give a `reason`",
                        service.name()
                    ),
                ))
            }
        })
    }
}
