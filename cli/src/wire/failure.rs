//! Why a request failed, as a decision request says it: a reason by name (with the data some
//! kinds carry), or a raw response read by the request's service for the host's classifier.

use rebound::aws_error::{AwsError, AwsErrorKind};
use rebound::cassandra::{AbortKind, ServerErrorKind};
use rebound::classify::{KvOpcode, Response};
use rebound::grpc::GrpcCode;
use rebound::{ReadTimeout, Unavailable, WriteTimeout};
use rebound::{ReasonKind, RequestType, RetryReason, Service};
use serde::Deserialize;
use serde_json::Value;

use super::input_error::InputError;

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

/// A raw response, read according to the request's service.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResponseSpec {
    status: Option<Code>,
    opcode: Option<Code>,
    code: Option<Code>,
    message: String,
    body: String,
    pub(super) retry_after: Option<String>,
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
                    .map_err(|e| InputError::new(&field, e.message)),
                Some(kind @ (ReasonKind::AwsThrottling | ReasonKind::AwsTransient)) => {
                    aws_error(data, &field, kind)
                }
                _ => Err(InputError::new(
                    "reason",
                    format!("`{key}` carries no data: give it as a string; objects are for read_timeout, write_timeout, unavailable, request_aborted, error_response, http_status, grpc_status, aws_throttling and aws_transient"),
                )),
            }
        }
        _ => Err(InputError::new(
            "reason",
            "expected a reason name (\"KV_LOCKED\") or an object with one key ({\"read_timeout\": {...}})",
        )),
    }
}

/// An AWS reason's data: `code` and `status`, each optional, and for `aws_transient` the SDK's
/// `kind` (`transient`, the default, `server` or `client`); `aws_throttling`'s kind is
/// throttling.
fn aws_error(data: &Value, field: &str, kind: ReasonKind) -> Result<RetryReason, InputError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Data {
        kind: Option<AwsErrorKind>,
        code: Option<String>,
        status: Option<u16>,
    }
    let data = Data::deserialize(data).map_err(|e| InputError::new(field, e.to_string()))?;
    let throttling = kind == ReasonKind::AwsThrottling;
    let error_kind = match (data.kind, throttling) {
        (None | Some(AwsErrorKind::Throttling), true) => AwsErrorKind::Throttling,
        (None, false) => AwsErrorKind::Transient,
        (Some(AwsErrorKind::Throttling), false) | (Some(_), true) => {
            return Err(InputError::new(
                format!("{field}.kind"),
                "aws_throttling's kind is throttling, aws_transient's one of transient, server or client",
            ))
        }
        (Some(other), false) => other,
    };
    let mut error = AwsError::new(error_kind);
    error.code = data.code.map(Into::into);
    error.status = data.status;
    Ok(RetryReason::Aws(error))
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
        GrpcCode::from_json(&value).map_err(|e| InputError::new(field, e.message))
    }

    /// The response of a request of `service`.
    pub(super) fn read(&self, request_type: RequestType) -> Result<Response<'_>, InputError> {
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
                retry_after: self.retry_after.is_some(),
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
