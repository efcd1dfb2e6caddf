//! The span of one attempt and the decision on its failure, with OpenTelemetry's semantic
//! attribute names where they exist (`http.request.resend_count`, `http.request.method`,
//! `rpc.system`, `rpc.method`, `error.type`) and Rebound's own under `rebound.` (the decision's
//! id, the policy, its version, the decision). The executor opens one per attempt and
//! `rebound serve` one per decision request; the registry fills in the decision's fields in
//! whatever span is current when it decides. Its fields cost nothing unless a subscriber
//! enables the span (they are at `DEBUG`).

use tracing::field::{display, Empty};
use tracing::Span;

use crate::reason::RetryReason;
use crate::request::{Request, Service};

/// The span of attempt `attempt` (0 the first) of `request`, or of the decision on its
/// failure. `http.request.resend_count` is set for attempts after the first only, as
/// OpenTelemetry's HTTP conventions say.
pub fn attempt_span(request: &Request, attempt: u32) -> Span {
    let span = tracing::debug_span!(
        "rebound.attempt",
        attempt = i64::from(attempt),
        http.request.resend_count = Empty,
        http.request.method = Empty,
        rpc.system = Empty,
        rpc.method = Empty,
        error.type = Empty,
        rebound.request_type = %request.request_type(),
        rebound.decision_id = Empty,
        rebound.policy = Empty,
        rebound.policy.version = Empty,
        rebound.decision = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if attempt > 0 {
        // As i64: OpenTelemetry has no unsigned attributes (a u64 would be exported as text).
        span.record("http.request.resend_count", i64::from(attempt));
    }
    match request.service() {
        Service::Grpc => {
            span.record("rpc.system", "grpc");
            if let Some(method) = request.route() {
                span.record("rpc.method", method);
            }
        }
        Service::Http => {
            if let Some(method) = request.method() {
                span.record("http.request.method", method.name());
            }
        }
        _ => {}
    }
    span
}

/// Records in `span` why its attempt failed (`error.type`): an HTTP response's status code
/// (`503`) and a gRPC call's status (`UNAVAILABLE`), as OpenTelemetry's HTTP and RPC
/// conventions write them; another retry reason's name (`KV_LOCKED`); `_OTHER` for a failure
/// no reason names.
pub fn record_failure(span: &Span, reason: Option<&RetryReason>) {
    if span.is_disabled() {
        return;
    }
    match reason {
        Some(RetryReason::HttpStatus(code)) => span.record("error.type", display(code)),
        Some(RetryReason::GrpcStatus(code)) => span.record("error.type", code.name()),
        Some(reason) => span.record("error.type", reason.name()),
        None => span.record("error.type", "_OTHER"),
    };
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tracing_subscriber::fmt::format::FmtSpan;

    use super::*;
    use crate::grpc::GrpcCode;
    use crate::request::{HttpMethod, RequestType};

    /// The closed spans' lines of what `f` does.
    fn closed_spans(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_span_events(FmtSpan::CLOSE)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        text
    }

    /// OpenTelemetry's conventions: `http.request.resend_count` on resent attempts only, the
    /// HTTP method, `rpc.system` and `rpc.method` for gRPC, and `error.type` as the HTTP
    /// status code, the gRPC status name or the reason's name.
    #[test]
    fn an_attempt_span_carries_the_semantic_attributes_of_its_protocol() {
        let http = Request::new(1, RequestType::Http, Duration::from_secs(1))
            .unwrap()
            .with_method(HttpMethod::Put);
        let grpc = Request::new(2, RequestType::Grpc, Duration::from_secs(1))
            .unwrap()
            .with_route("/shop.Inventory/Get");
        let kv = Request::new(3, RequestType::Get, Duration::from_secs(1)).unwrap();
        let text = closed_spans(|| {
            let span = attempt_span(&http, 0);
            record_failure(&span, Some(&RetryReason::HttpStatus(503)));
            drop(span);
            let span = attempt_span(&grpc, 2);
            record_failure(&span, Some(&RetryReason::GrpcStatus(GrpcCode::Unavailable)));
            drop(span);
            let span = attempt_span(&kv, 1);
            record_failure(&span, Some(&crate::reasons::KV_LOCKED));
            drop(span);
            record_failure(&attempt_span(&kv, 3), None);
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].contains("http.request.method=\"PUT\""),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains("error.type=503"), "{}", lines[0]);
        assert!(!lines[0].contains("resend_count"), "{}", lines[0]);
        assert!(
            lines[1].contains("http.request.resend_count=2"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("rpc.system=\"grpc\""), "{}", lines[1]);
        assert!(
            lines[1].contains("rpc.method=\"/shop.Inventory/Get\""),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains("error.type=\"UNAVAILABLE\""),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].contains("error.type=\"KV_LOCKED\""),
            "{}",
            lines[2]
        );
        assert!(lines[3].contains("error.type=\"_OTHER\""), "{}", lines[3]);
    }
}
