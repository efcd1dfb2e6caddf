//! Values the commands read from their arguments and files alike: numbers in decimal or
//! hexadecimal, and error-map files.

use std::path::Path;

use anyhow::Context;
use rebound::errormap::ErrorMap;

/// A decimal or 0x-hexadecimal number.
pub fn parse_number<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    let value = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    }
    .map_err(|_| format!("`{text}` is not a number (decimal, or hexadecimal with 0x)"))?;
    T::try_from(value).map_err(|_| format!("{text} is out of range"))
}

/// Reads and parses the error map at `path`; errors name the file and the field.
pub fn load_error_map(path: &Path) -> anyhow::Result<ErrorMap> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read error map {}", path.display()))?;
    ErrorMap::parse(&text).with_context(|| format!("{} is not a valid error map", path.display()))
}
