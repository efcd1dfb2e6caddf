//! A request's client context as a value an application can attach where it makes the call (a
//! reqwest request's or a tonic call's extensions), and a mapping from HTTP headers or gRPC
//! metadata into it, so that a policy rule on `client-context("idempotency-key")` decides the
//! same in-process as in `serve`, whose callers send the context with each question (reference
//! 001 "Accessible Context"; docs/adapters.md "Client context").

use std::collections::BTreeMap;

use crate::request::Request;

/// Entries of a request's client context, set by the application: in an adapter's request
/// extensions (`with_extension(ClientContext::new().with("idempotency-key", key))`), they are
/// handed to the policy beside those the adapter maps from headers, and win over them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientContext(BTreeMap<String, String>);

impl ClientContext {
    /// An empty context.
    pub fn new() -> Self {
        ClientContext::default()
    }

    /// The context with `key` set to `value`.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.insert(key.into(), value.into());
        self
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The entries, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `request` with every entry added to its client context.
    pub fn apply_to(&self, request: Request) -> Request {
        self.0.iter().fold(request, |request, (key, value)| {
            request.with_client_context(key, value)
        })
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ClientContext {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        ClientContext(
            entries
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// A header name an adapter was asked to read (into the client context, or as a callee's
/// attempt count) that cannot be one.
#[cfg(feature = "http")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("header `{header}`: {why}")]
pub struct InvalidHeaderName {
    /// The name as given.
    pub header: String,
    /// Why it cannot be read.
    pub why: &'static str,
}

/// Which request headers (or gRPC metadata keys, which are HTTP/2 headers) become which
/// client-context keys. A header the request lacks, or whose value is not visible ASCII, adds
/// nothing; a header sent more than once gives its first value.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Default)]
pub struct ContextHeaders(Vec<(http::HeaderName, String)>);

#[cfg(feature = "http")]
impl ContextHeaders {
    /// No header mapped.
    pub fn new() -> Self {
        ContextHeaders::default()
    }

    /// The mapping with the header `header` read into the context key `key`. A name that is
    /// not a valid header name (RFC 9110 §5.1: a token), or a gRPC binary metadata key
    /// (`-bin`, whose values are not text), is refused, naming it.
    pub fn with(mut self, header: &str, key: impl Into<String>) -> Result<Self, InvalidHeaderName> {
        let invalid = |why| InvalidHeaderName {
            header: header.to_owned(),
            why,
        };
        let name = http::HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| invalid("not a valid header name (RFC 9110 §5.1: a token)"))?;
        if name.as_str().ends_with("-bin") {
            return Err(invalid(
                "a binary gRPC metadata key (-bin): its values are bytes, not text",
            ));
        }
        self.0.push((name, key.into()));
        Ok(self)
    }

    /// `request` with the mapped headers of `headers` added to its client context.
    pub fn apply_to(&self, headers: &http::HeaderMap, request: Request) -> Request {
        self.0.iter().fold(request, |request, (name, key)| {
            match headers.get(name).and_then(|value| value.to_str().ok()) {
                Some(value) => request.with_client_context(key.as_str(), value),
                None => request,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::request::RequestType;

    fn request() -> Request {
        Request::new(1, RequestType::Http, Duration::from_secs(1)).unwrap()
    }

    /// Reference 001 "Accessible Context": what the application sets reaches the request.
    #[test]
    fn an_application_s_context_is_added_to_the_request() {
        let context = ClientContext::new().with("idempotency-key", "k-17");
        let request = context.apply_to(request().with_client_context("tenant", "a"));
        assert_eq!(request.client_context()["idempotency-key"], "k-17");
        assert_eq!(request.client_context()["tenant"], "a");
    }

    /// docs/adapters.md "Client context": mapped headers become context keys; a missing header
    /// or one whose value is not text adds nothing; bad names are refused, naming them.
    #[cfg(feature = "http")]
    #[test]
    fn mapped_headers_become_context_keys_and_bad_names_are_refused() {
        let mapping = (ContextHeaders::new().with("Idempotency-Key", "idempotency-key"))
            .and_then(|m| m.with("x-tenant", "tenant"))
            .and_then(|m| m.with("x-robot", "isRobotRequest"))
            .unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert("idempotency-key", "k-17".parse().unwrap());
        headers.insert(
            "x-tenant",
            http::HeaderValue::from_bytes(b"caf\xe9").unwrap(),
        );
        let request = mapping.apply_to(&headers, request());
        assert_eq!(
            request.client_context(),
            &BTreeMap::from([("idempotency-key".into(), "k-17".into())])
        );
        let error = ContextHeaders::new().with("bad header", "k").unwrap_err();
        assert_eq!(error.header, "bad header");
        assert!(
            error.to_string().contains("not a valid header name"),
            "{error}"
        );
        let error = ContextHeaders::new().with("trace-bin", "k").unwrap_err();
        assert!(
            error.to_string().contains("binary gRPC metadata"),
            "{error}"
        );
    }
}
