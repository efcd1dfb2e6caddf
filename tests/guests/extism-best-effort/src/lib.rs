//! Best effort (RFC 0049 "Best Effort") as an Extism plugin: the input is one flags byte
//! (bit 0: the request is idempotent), the retry attempts as a little-endian `u32` and the
//! reason's name; the output is the delay in milliseconds as a little-endian `i64`, or -1 for
//! no retry. The decision is the one `policies/best-effort` makes with its default parameters.

use std::str::FromStr;

use extism_pdk::{plugin_fn, FnResult};
use rebound::RetryReason;

#[plugin_fn]
pub fn decide(input: Vec<u8>) -> FnResult<Vec<u8>> {
    let answer = match input.as_slice() {
        [flags, a, b, c, d, name @ ..] => {
            let idempotent = flags & 1 == 1;
            let attempts = u32::from_le_bytes([*a, *b, *c, *d]);
            let allowed = std::str::from_utf8(name)
                .ok()
                .and_then(|name| RetryReason::from_str(name).ok())
                .is_some_and(|reason| reason.allows_non_idempotent_retry());
            if idempotent || allowed {
                rebound::backoff::lenient_exponential_ms(attempts, 1, 500, 2.0) as i64
            } else {
                -1
            }
        }
        _ => -1,
    };
    Ok(answer.to_le_bytes().to_vec())
}
