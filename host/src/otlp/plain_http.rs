//! The OTLP/HTTP exporter's client: plain HTTP/1.1 (`http://` collectors only), blocking on the
//! SDK's export thread, with the export's timeout. A client of its own, not the SDK's choice,
//! so that whatever TLS configuration the application's other crates have, exporting never
//! needs one.

use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// The largest response body read from a collector (an OTLP response is a few bytes).
const MAX_RESPONSE_BYTES: u64 = 4 << 20;

/// A plain-HTTP client for the exporter.
#[derive(Debug)]
pub(super) struct PlainHttp(ureq::Agent);

impl PlainHttp {
    /// A client whose exchanges last at most `timeout`.
    pub(super) fn new(timeout: Duration) -> Self {
        PlainHttp(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(timeout))
                .build()
                .into(),
        )
    }
}

#[async_trait::async_trait]
impl HttpClient for PlainHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut response = self.0.run(Request::from_parts(parts, body.to_vec()))?;
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()?;
        let (parts, _) = response.into_parts();
        Ok(Response::from_parts(parts, Bytes::from(body)))
    }
}
