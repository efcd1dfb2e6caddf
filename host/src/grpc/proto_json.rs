//! Service configs are proto3 messages written as JSON, so their durations follow proto3's
//! JSON mapping of `google.protobuf.Duration`: decimal seconds with at most nine fractional
//! digits and an `s`, within the `Duration` message's range of ±315,576,000,000 seconds
//! (about 10,000 years). A value past that range is no duration at all: it is refused before
//! anything is timed from it.

use std::time::Duration;

use serde_json::Value;

/// The largest number of whole seconds a proto3 `Duration` holds
/// (`google/protobuf/duration.proto`: "+315,576,000,000 inclusive").
pub const MAX_DURATION_SECONDS: u64 = 315_576_000_000;

/// A duration that proto3's JSON mapping refuses: what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DurationError(pub(crate) String);

/// `value` as a proto3 JSON `Duration` (`"0.1s"`, `"1s"`, `"2.000000001s"`), greater than
/// zero unless `zero` allows it, at most [`MAX_DURATION_SECONDS`].
pub(crate) fn duration(value: &Value, zero: bool) -> Result<Duration, DurationError> {
    let least = if zero {
        "of at least 0"
    } else {
        "greater than 0"
    };
    let expected = || {
        DurationError(format!(
            "expected a duration {least} such as \"0.1s\" (proto3 JSON), found `{value}`"
        ))
    };
    let text = value.as_str().ok_or_else(expected)?;
    let seconds = text.strip_suffix('s').ok_or_else(expected)?;
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 9 {
        return Err(expected());
    }
    if seconds.contains('.') && fraction.is_empty() {
        return Err(expected());
    }
    let out_of_range = || {
        DurationError(format!(
            "`{text}` is outside the proto3 Duration range; expected at most {MAX_DURATION_SECONDS}s"
        ))
    };
    let whole: u64 = whole.parse().map_err(|_| out_of_range())?;
    let nanos: u32 = format!("{fraction:0<9}").parse().map_err(|_| expected())?;
    if whole > MAX_DURATION_SECONDS || whole == MAX_DURATION_SECONDS && nanos > 0 {
        return Err(out_of_range());
    }
    let duration = Duration::new(whole, nanos);
    if duration.is_zero() && !zero {
        return Err(expected());
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `google/protobuf/duration.proto`: seconds "Must be from -315,576,000,000 to
    /// +315,576,000,000 inclusive"; the largest is read, one second past it, or a number no
    /// integer type holds, is refused as out of range (never wrapped or saturated).
    #[test]
    fn durations_past_the_proto3_range_are_refused() {
        let max = format!("{MAX_DURATION_SECONDS}s");
        assert_eq!(
            duration(&json!(max), false),
            Ok(Duration::from_secs(MAX_DURATION_SECONDS))
        );
        for past in [
            "315576000001s",
            "315576000000.000000001s",
            "18446744073709551615s",
            "99999999999999999999999999s",
        ] {
            let error = duration(&json!(past), true).unwrap_err();
            assert!(
                error.0.contains("proto3 Duration range"),
                "{past}: {error:?}"
            );
        }
    }

    /// The JSON mapping's form: digits, at most nine fractional digits, an `s`; zero only
    /// where the field allows it.
    #[test]
    fn only_the_proto3_json_form_is_read() {
        assert_eq!(
            duration(&json!("2.000000001s"), false),
            Ok(Duration::new(2, 1))
        );
        assert_eq!(duration(&json!("0s"), true), Ok(Duration::ZERO));
        for bad in [
            json!("0s"),
            json!("-1s"),
            json!("1"),
            json!("1.s"),
            json!("0.1000000001s"),
            json!(0.1),
        ] {
            assert!(duration(&bad, false).is_err(), "{bad}");
        }
    }
}
