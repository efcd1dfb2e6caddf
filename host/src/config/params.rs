//! Reading a built-in's parameters: a table read as the built-in's own type (a refused value
//! names its parameter), and the backoff most built-ins take, checked against its ranges. Shared
//! by every built-in, apart from the built-ins themselves.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::backoff::ExponentialBackoff;
use crate::field_error::FieldError;

/// The largest backoff factor (`factor`, `multiplier`) a built-in takes: past it the second
/// delay is the maximum already.
const MAX_FACTOR: f64 = 1000.0;

/// Reads `params` as `T`; a refused value names its parameter.
pub(super) fn read<T: for<'de> Deserialize<'de>>(
    params: &Map<String, Value>,
) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(Value::Object(params.clone())).map_err(|e| {
        let param = e.path().to_string();
        let param = if param == "." { String::new() } else { param };
        FieldError::new(param, e.into_inner().to_string())
    })
}

/// The backoff from these parameters; a refused value names its parameter in `names` (the
/// minimum, maximum, factor and jitter, as this built-in calls them).
pub(super) fn backoff(
    (min_ms, max_ms, factor, jitter): (u64, u64, f64, f64),
    names: [&str; 4],
) -> Result<ExponentialBackoff, FieldError> {
    use crate::backoff::BackoffConfigError as E;
    let [min_name, max_name, factor_name, jitter_name] = names;
    if factor > MAX_FACTOR {
        return Err(FieldError::new(
            factor_name,
            format!("{factor} is out of range; expected a number from 1 to {MAX_FACTOR}"),
        ));
    }
    ExponentialBackoff::new(
        Duration::from_millis(min_ms),
        Duration::from_millis(max_ms),
        factor,
    )
    .and_then(|b| b.with_jitter(jitter))
    .map_err(|error| {
        let (param, expected) = match &error {
            E::ZeroMin => (min_name, "at least 1 (ms)".to_owned()),
            E::MaxBelowMin { .. } => (max_name, format!("at least {min_name} ({min_ms})")),
            E::BadFactor(_) => (factor_name, format!("a number from 1 to {MAX_FACTOR}")),
            E::BadJitter(_) => (jitter_name, "a fraction from 0 to 1".to_owned()),
        };
        FieldError::new(param, format!("{error}; expected {expected}"))
    })
}
