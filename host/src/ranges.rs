//! A number in a configuration file sizes a pool, a queue or a thread count, or times a wait,
//! so each has a documented range (docs/registry.md "Ranges of the numeric settings") and is
//! checked as it is read: a value past it is refused with the file, line and field, the same
//! at start and at a reload, before anything is made from it. Fields name their range with
//! `#[serde(deserialize_with = "within::<_, _, MIN, MAX>")]`.

use std::fmt;

use serde::de::{Error, Visitor};
use serde::Deserializer;

/// An integer of any width, refused as "an integer" when it is something else.
struct Integer;

impl Visitor<'_> for Integer {
    type Value = i128;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: Error>(self, value: i64) -> Result<i128, E> {
        Ok(value.into())
    }
    fn visit_u64<E: Error>(self, value: u64) -> Result<i128, E> {
        Ok(value.into())
    }
    fn visit_i128<E: Error>(self, value: i128) -> Result<i128, E> {
        Ok(value)
    }
    fn visit_u128<E: Error>(self, value: u128) -> Result<i128, E> {
        Ok(i128::try_from(value).unwrap_or(i128::MAX))
    }
}

/// An integer, read as wide as any setting needs.
fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<i128, D::Error> {
    d.deserialize_any(Integer)
}

/// An integer setting from `MIN` to `MAX`, inclusive.
pub(crate) fn within<'de, D, T, const MIN: i64, const MAX: i64>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i128>,
{
    checked::<T, D::Error>(integer(d)?, MIN, MAX)
}

/// As [`within`], for a setting that may be left out.
#[cfg(any(feature = "registry", feature = "otlp"))]
pub(crate) fn within_if_set<'de, D, T, const MIN: i64, const MAX: i64>(
    d: D,
) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i128>,
{
    use serde::Deserialize;

    /// `integer` as a `Deserialize` type, for `Option`.
    struct Set(i128);
    impl<'de> Deserialize<'de> for Set {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            integer(d).map(Set)
        }
    }
    match Option::<Set>::deserialize(d)? {
        None => Ok(None),
        Some(Set(value)) => checked::<T, D::Error>(value, MIN, MAX).map(Some),
    }
}

fn checked<T: TryFrom<i128>, E: Error>(value: i128, min: i64, max: i64) -> Result<T, E> {
    if !(i128::from(min)..=i128::from(max)).contains(&value) {
        return Err(E::custom(format!(
            "{value} is out of range; expected {min} to {max}"
        )));
    }
    T::try_from(value).map_err(|_| E::custom(format!("{value} is out of range")))
}

#[cfg(all(test, any(feature = "registry", feature = "otlp")))]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Settings {
        #[serde(deserialize_with = "super::within::<_, _, 1, 100>")]
        threads: usize,
        #[serde(default, deserialize_with = "super::within_if_set::<_, _, 0, 10>")]
        spare: Option<u32>,
    }

    /// docs/registry.md "Ranges of the numeric settings": a value inside its range is read, one
    /// past either end is refused naming the range.
    #[test]
    fn a_value_past_its_range_is_refused_naming_it() {
        let read = |text: &str| serde_json::from_str::<Settings>(text);
        let settings = read(r#"{"threads": 100, "spare": 0}"#).unwrap();
        assert_eq!((settings.threads, settings.spare), (100, Some(0)));
        assert_eq!(read(r#"{"threads": 1}"#).unwrap().spare, None);
        for bad in [
            r#"{"threads": 101}"#,
            r#"{"threads": 0}"#,
            r#"{"threads": -1}"#,
            r#"{"threads": 18446744073709551615}"#,
            r#"{"threads": 1, "spare": 11}"#,
        ] {
            let error = read(bad).unwrap_err().to_string();
            assert!(
                error.contains("is out of range; expected"),
                "{bad}: {error}"
            );
        }
    }
}
