//! The parameters a policy receives from the host configuration.

use std::str::FromStr;

/// Key/value parameters from the host configuration.
#[derive(Debug, Clone, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Wraps the pairs the host passed.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Params(pairs)
    }

    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Parses `key`, or returns `default` when it is absent; an unparsable value is an error
    /// naming the key, the value and the expected type.
    pub fn parse_or<T: FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        match self.get(key) {
            None => Ok(default),
            Some(raw) => raw.parse().map_err(|_| {
                format!(
                    "parameter `{key}`: expected {}, got {raw:?}",
                    std::any::type_name::<T>()
                )
            }),
        }
    }
}
