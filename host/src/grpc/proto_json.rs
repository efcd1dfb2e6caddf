//! Service configs are proto3 messages written as JSON, so their values follow proto3's JSON
//! mapping, as protobuf's conformance suite checks it. A duration
//! (`google.protobuf.Duration`) is decimal seconds with at most nine fractional digits and an
//! `s`, within the `Duration` message's range of ±315,576,000,000 seconds and 999,999,999
//! nanoseconds (about 10,000 years): a value past it is no duration at all, refused before
//! anything is timed from it. An integer is a JSON number with a whole value, or a string
//! holding one in JSON's number syntax (`3`, `3.0`, `1e5`, `"3"`, `"1e5"`), within its type's
//! range; a float is a JSON number or a string holding one.

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
    if whole > MAX_DURATION_SECONDS {
        return Err(out_of_range());
    }
    let duration = Duration::new(whole, nanos);
    if duration.is_zero() && !zero {
        return Err(expected());
    }
    Ok(duration)
}

/// A number proto3's JSON mapping refuses for a field of its type: what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NumberError(pub(crate) String);

/// `value` as proto3 JSON gives a number: a JSON number, or a string holding one in JSON's own
/// number syntax (no sign `+`, no leading zero, no space around it).
fn number(value: &Value) -> Result<serde_json::Number, NumberError> {
    let expected = || {
        NumberError(format!(
            "expected a number, or a string holding one (proto3 JSON), found `{value}`"
        ))
    };
    match value {
        Value::Number(n) => Ok(n.clone()),
        Value::String(text) if !text.is_empty() && text.trim() == text => {
            serde_json::from_str(text).map_err(|_| expected())
        }
        _ => Err(expected()),
    }
}

/// `value` as a proto3 JSON `uint32`: a whole number from 0 to 4,294,967,295, as a JSON number
/// (`3`, `3.0`, `1e5`) or a string holding one (`"3"`, `"1e5"`). A boolean, a fraction, a
/// number past the range and a string that is not a number are refused.
pub(crate) fn uint32(value: &Value) -> Result<u32, NumberError> {
    let n = number(value)?;
    let whole = match n.as_u64() {
        Some(whole) => Some(whole as f64),
        None => n.as_f64().filter(|f| f.fract() == 0.0),
    };
    match whole {
        None => Err(NumberError(format!(
            "expected a whole number (proto3 JSON uint32), found `{value}`"
        ))),
        Some(whole) if (0.0..=f64::from(u32::MAX)).contains(&whole) => Ok(whole as u32),
        Some(_) => Err(NumberError(format!(
            "`{value}` is outside uint32's range, 0 to {}",
            u32::MAX
        ))),
    }
}

/// `value` as a proto3 JSON `float` or `double`: a JSON number or a string holding one.
pub(crate) fn float(value: &Value) -> Result<f64, NumberError> {
    let n = number(value)?;
    n.as_f64()
        .ok_or_else(|| NumberError(format!("`{value}` is not a number")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `google/protobuf/duration.proto`: seconds "Must be from -315,576,000,000 to
    /// +315,576,000,000 inclusive", nanos up to 999,999,999; the largest (conformance
    /// `DurationMaxValue`, `"315576000000.999999999s"`) is read, one second past it
    /// (`DurationJsonInputTooLarge`), or a number no integer type holds, is refused as out of
    /// range (never wrapped or saturated).
    #[test]
    fn durations_past_the_proto3_range_are_refused() {
        let max = format!("{MAX_DURATION_SECONDS}s");
        assert_eq!(
            duration(&json!(max), false),
            Ok(Duration::from_secs(MAX_DURATION_SECONDS))
        );
        assert_eq!(
            duration(&json!("315576000000.999999999s"), false),
            Ok(Duration::new(MAX_DURATION_SECONDS, 999_999_999))
        );
        for past in [
            "315576000001s",
            "315576000001.000000000s",
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

    /// The JSON mapping's form: digits, at most nine fractional digits, an `s` (conformance
    /// `DurationMissingS`, `DurationHas3FractionalDigits`, ...); zero only where the field
    /// allows it.
    #[test]
    fn only_the_proto3_json_form_is_read() {
        assert_eq!(
            duration(&json!("2.000000001s"), false),
            Ok(Duration::new(2, 1))
        );
        for (text, nanos) in [
            ("1.000000000s", 0),
            ("1.010000000s", 10_000_000),
            ("1.000010000s", 10_000),
            ("1.000000010s", 10),
        ] {
            assert_eq!(duration(&json!(text), false), Ok(Duration::new(1, nanos)));
        }
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

    /// Protobuf's conformance suite, "Integer fields": a whole number as a JSON number
    /// (`Int32FieldFloatTrailingZero`, `Int32FieldExponentialFormat`,
    /// `Uint32FieldMaxFloatValue`) or as a string (`Int32FieldStringValue`,
    /// `Int32FieldQuotedExponentialValue`) is read; out of range (`Uint32FieldTooLarge`), not
    /// whole (`Uint32FieldNotInteger`), a boolean (`Int32FieldTrueValue`), an empty string
    /// (`Uint32FieldEmptyString`), a string with spaces (`Int32FieldLeadingSpace`,
    /// `Int32FieldTrailingSpace`) or other characters (`Uint32FieldNotNumber`,
    /// `Int32FieldStringValuePartiallyNumeric`) is refused.
    #[test]
    fn integers_are_read_as_the_conformance_suite_reads_them() {
        for (value, read) in [
            (json!(4294967295u64), 4294967295),
            (json!(100000.000), 100000),
            (json!(1e5), 100000),
            (json!(4.294967295e9), 4294967295),
            (json!("2147483647"), 2147483647),
            (json!("1e5"), 100000),
            (json!("0"), 0),
            (json!("15.0"), 15),
        ] {
            assert_eq!(uint32(&value), Ok(read), "{value}");
        }
        for refused in [
            json!(4294967296u64),
            json!(-1),
            json!(0.5),
            json!("0.5"),
            json!(true),
            json!(""),
            json!(" 1"),
            json!("1 "),
            json!("3x3"),
            json!("12abc"),
            json!("+1"),
            json!("01"),
            json!("1e536870000"),
            json!(null),
            json!([1]),
        ] {
            assert!(uint32(&refused).is_err(), "{refused}");
        }
    }

    /// A float is a JSON number or a string holding one; anything else is refused.
    #[test]
    fn floats_are_numbers_or_strings_holding_one() {
        assert_eq!(float(&json!(0.25)), Ok(0.25));
        assert_eq!(float(&json!("1.5")), Ok(1.5));
        assert_eq!(float(&json!(2)), Ok(2.0));
        for refused in [json!(true), json!(""), json!(" 1.5"), json!("fast")] {
            assert!(float(&refused).is_err(), "{refused}");
        }
    }
}
