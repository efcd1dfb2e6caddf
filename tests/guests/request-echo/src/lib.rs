//! Describes the failure it is asked about in one line — the request's service, type, HTTP
//! method, authority, route and retries since the server's pushback (`rebound:policy@0.4.0`),
//! the reason's status, and, when there is one to say, how far the attempt got and the attempt
//! timeout that cut it (0.6.0) — and answers a retry after 1 ms when that line is the client-context
//! entry `expect`, rethrow otherwise (logging the line at warn), so a test sees whether the host
//! handed over exactly what it expects.

use rebound_guest::{
    export_policy, host, HttpMethod, NodeChoice, Params, Policy, Progress, Request, Retry,
    RetryAction, RetryReason,
};

struct RequestEcho;

fn method_name(method: HttpMethod) -> &'static str {
    match method {
        HttpMethod::Get => "GET",
        HttpMethod::Head => "HEAD",
        HttpMethod::Post => "POST",
        HttpMethod::Put => "PUT",
        HttpMethod::Delete => "DELETE",
        HttpMethod::Connect => "CONNECT",
        HttpMethod::Options => "OPTIONS",
        HttpMethod::Trace => "TRACE",
        HttpMethod::Patch => "PATCH",
    }
}

/// An enum case's name: its `Debug` form (`Service::Http`) without the type.
fn case_name(case: impl std::fmt::Debug) -> String {
    let debug = format!("{case:?}");
    match debug.rsplit_once("::") {
        Some((_, name)) => name.to_owned(),
        None => debug,
    }
}

/// The failure in one line, e.g.
/// `service=Http type=Http method=POST authority=shop:80 route=/orders since=1 status=http 503`,
/// then ` progress=Refused` unless the attempt was processed and ` attempt_timeout=250` when an
/// attempt timeout cut it.
fn describe(request: &Request, reason: &RetryReason) -> String {
    let status = match reason {
        RetryReason::HttpStatus(status) => format!("http {status}"),
        RetryReason::GrpcStatus(code) => format!("grpc {code}"),
        _ => "none".to_owned(),
    };
    let mut line = format!(
        "service={} type={} method={} authority={} route={} since={} status={status}",
        case_name(request.service()),
        case_name(request.request_type()),
        request.method().map_or("none", method_name),
        request.authority().as_deref().unwrap_or("none"),
        request.route().as_deref().unwrap_or("none"),
        request.retries_since_pushback(),
    );
    if host::progress() != Progress::Processed {
        line.push_str(&format!(" progress={}", case_name(host::progress())));
    }
    if let Some(timeout) = host::attempt_timeout_ms() {
        line.push_str(&format!(" attempt_timeout={timeout}"));
    }
    line
}

impl Policy for RequestEcho {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(RequestEcho)
    }

    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        let line = describe(request, reason);
        if host::client_context("expect").as_deref() == Some(line.as_str()) {
            RetryAction::Retry(Retry {
                delay_ms: 1,
                node: NodeChoice::Same,
                consistency: None,
                attempt_timeout_ms: None,
            })
        } else {
            host::log(host::LogLevel::Warn, &line);
            RetryAction::Rethrow
        }
    }
}

export_policy!(RequestEcho);
