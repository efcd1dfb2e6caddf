//! hyper answers a request whose head it cannot parse by itself (400, 414 or 431, without a
//! body) before any route sees it. The connection's socket replaces that answer, on its way out,
//! with the API's JSON error object under the same status, so that every error a client gets
//! has the body docs/serve.md promises.

use crate::wire::output::input_error;

/// The status of the final response head that `bytes` begin (`HTTP/1.1 NNN …`, not an
/// informational 1xx such as `100 Continue`), if they begin one.
pub fn final_head_status(bytes: &[u8]) -> Option<u16> {
    let code = bytes.strip_prefix(b"HTTP/1.1 ")?.get(..3)?;
    let code: u16 = std::str::from_utf8(code).ok()?.parse().ok()?;
    (code >= 200).then_some(code)
}

/// The answer that replaces hyper's own answer with `status` (the connection is closed after
/// it, as hyper closes it).
pub fn json_answer(status: u16) -> Vec<u8> {
    let (status, reason, message) = match status {
        431 => (
            431,
            "Request Header Fields Too Large",
            "the request's head is too large (over about 400 KiB, or over 100 headers)",
        ),
        414 => (414, "URI Too Long", "the request target is too long"),
        _ => (
            400,
            "Bad Request",
            "the request is not HTTP/1.1 this server can read (its method, target, version or a header)",
        ),
    };
    let body = input_error("", &format!("{message}; see docs/serve.md"), None).to_string();
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_heads_are_told_from_informational_ones_and_bodies() {
        assert_eq!(
            final_head_status(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            Some(431)
        );
        assert_eq!(final_head_status(b"HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(final_head_status(b"HTTP/1.1 100 Continue\r\n\r\n"), None);
        assert_eq!(final_head_status(br#"{"error": {}}"#), None);
        assert_eq!(final_head_status(b"HTTP/1.1 "), None);
    }

    #[test]
    fn the_replacement_is_the_api_error_object_under_the_same_status() {
        for status in [400, 414, 431] {
            let answer = String::from_utf8(json_answer(status)).unwrap();
            let (head, body) = answer.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
            assert!(
                head.contains(&format!("content-length: {}", body.len())),
                "{head}"
            );
            let error: serde_json::Value = serde_json::from_str(body).unwrap();
            assert!(error["error"]["message"]
                .as_str()
                .unwrap()
                .ends_with("docs/serve.md"));
        }
    }
}
