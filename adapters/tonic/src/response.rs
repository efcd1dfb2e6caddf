//! What a call's answer and its headers say: the status of a Trailers-Only answer (an error
//! before any message, where gRPC servers put retryable failures), the server's pushback
//! (`grpc-retry-pushback-ms`), and deadlines written as `grpc-timeout`.

use std::time::Duration;

use http::header::HeaderName;
use http::HeaderMap;
use rebound::grpc::GrpcCode;
use rebound::Pushback;

/// `grpc-status`, parsed once.
pub(crate) const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
/// `grpc-retry-pushback-ms` (gRFC A6 "Pushback").
pub(crate) const GRPC_RETRY_PUSHBACK_MS: HeaderName =
    HeaderName::from_static("grpc-retry-pushback-ms");
/// `grpc-timeout`: a call's deadline.
pub(crate) const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
/// `grpc-previous-rpc-attempts` (gRFC A6 "Exposed Retry Metadata").
pub(crate) const GRPC_PREVIOUS_RPC_ATTEMPTS: HeaderName =
    HeaderName::from_static("grpc-previous-rpc-attempts");

/// The status in `headers` if they are a Trailers-Only answer's (they carry `grpc-status`);
/// `None` for the headers of an answer whose messages and trailers follow (the call is then
/// committed: gRFC A6 "When Retries are Valid"). An unreadable status is UNKNOWN.
pub(crate) fn trailers_only_status(headers: &HeaderMap) -> Option<GrpcCode> {
    let value = headers.get(GRPC_STATUS)?;
    let code = value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    Some(
        code.and_then(GrpcCode::from_number)
            .unwrap_or(GrpcCode::Unknown),
    )
}

/// gRFC A6 "Pushback": `grpc-retry-pushback-ms`, every value it was sent with, read by
/// [`Pushback::from_grpc_header`] (a value that is not ASCII is unreadable).
pub(crate) fn pushback(headers: &HeaderMap) -> Option<Pushback> {
    let values = headers.get_all(GRPC_RETRY_PUSHBACK_MS).iter();
    Pushback::from_grpc_header(values.map(|value| value.to_str().unwrap_or("")))
}

/// A `grpc-timeout` value (gRPC over HTTP/2: at most 8 digits and a unit, H M S m u n).
pub(crate) fn parse_timeout(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// `left` as a `grpc-timeout` value: whole milliseconds (at least 1), or seconds when the
/// milliseconds need more than 8 digits.
pub(crate) fn format_timeout(left: Duration) -> String {
    let millis = left.as_millis().max(1);
    if millis < 100_000_000 {
        format!("{millis}m")
    } else {
        format!("{}S", left.as_secs().min(99_999_999))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gRPC over HTTP/2 "Requests": `grpc-timeout` is 1 to 8 digits and a unit.
    #[test]
    fn timeouts_are_read_and_written_as_grpc_writes_them() {
        assert_eq!(parse_timeout("100m"), Some(Duration::from_millis(100)));
        assert_eq!(parse_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_timeout("123456789m"), None);
        assert_eq!(parse_timeout("m"), None);
        assert_eq!(parse_timeout("5x"), None);
        assert_eq!(format_timeout(Duration::from_micros(300)), "1m");
        assert_eq!(format_timeout(Duration::from_millis(1500)), "1500m");
        assert_eq!(format_timeout(Duration::from_secs(200_000)), "200000S");
    }

    /// gRFC A6 "Pushback": a non-negative count is a delay; a negative or unreadable one
    /// stops retries, as does a header sent twice (grpc-go).
    #[test]
    fn pushback_is_read_as_a6_says() {
        let mut headers = HeaderMap::new();
        assert_eq!(pushback(&headers), None);
        headers.insert("grpc-retry-pushback-ms", "200".parse().unwrap());
        assert_eq!(
            pushback(&headers),
            Some(Pushback::After(Duration::from_millis(200)))
        );
        headers.insert("grpc-retry-pushback-ms", "-1".parse().unwrap());
        assert_eq!(pushback(&headers), Some(Pushback::Stop));
        headers.insert("grpc-retry-pushback-ms", "soon".parse().unwrap());
        assert_eq!(pushback(&headers), Some(Pushback::Stop));
        headers.insert("grpc-retry-pushback-ms", "200".parse().unwrap());
        headers.append("grpc-retry-pushback-ms", "300".parse().unwrap());
        assert_eq!(pushback(&headers), Some(Pushback::Stop));
    }
}
