//! Policies and routes a source other than the file adds to its configuration (an xDS control
//! plane's routes, docs/xds.md "Precedence"): what they are, and the file's configuration with
//! them in place. The source's policies, budgets and breakers are added to the file's (a table
//! of the file with the same name wins), and its routes go before the file's own.

use std::path::Path;

use serde::Serialize;
use toml::map::Entry;

use super::{ConfigError, RegistryConfig};

/// Policies and routes to add to a configuration file's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigOverlay {
    /// `[policies.NAME]` tables.
    pub policies: toml::Table,
    /// `[budgets.NAME]` tables the policies name.
    pub budgets: toml::Table,
    /// `[breakers.NAME]` tables the policies name.
    pub breakers: toml::Table,
    /// `[[routes]]` entries, in the order they match, before the file's own.
    pub routes: Vec<toml::Value>,
    /// What the source held and was not used, each with its field path and why.
    pub ignored: Vec<String>,
}

/// Which of an overlay's tables are in effect beside a file's, and where its routes went
/// (docs/xds.md "Precedence").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Precedence {
    /// The overlay's tables in effect, as `policies.NAME`, `budgets.NAME`, `breakers.NAME`.
    pub in_effect: Vec<String>,
    /// Its tables that a table of the file with the same name replaced, written the same way.
    pub overridden: Vec<String>,
    /// How many `[[routes]]` entries it put before the file's.
    pub routes_first: usize,
}

/// The configuration file at `file` with `overlay`'s tables added and its routes before the
/// file's own (docs/xds.md "Precedence"), and which of them took effect.
pub fn merged_config(
    file: &Path,
    overlay: &ConfigOverlay,
) -> Result<(RegistryConfig, Precedence), ConfigError> {
    let refused = |line: usize, message: String| ConfigError {
        file: file.to_owned(),
        line,
        column: 1,
        field: String::new(),
        message,
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| refused(0, format!("cannot read the configuration: {e}")))?;
    let base = file.parent().unwrap_or(Path::new("."));
    // The file alone first, so that its own errors keep their lines.
    RegistryConfig::parse(&text, file, base)?;
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| refused(1, e.to_string()))?;
    let mut precedence = Precedence::default();
    for (section, added) in [
        ("policies", &overlay.policies),
        ("budgets", &overlay.budgets),
        ("breakers", &overlay.breakers),
    ] {
        let tables = table
            .entry(section)
            .or_insert_with(|| toml::Table::new().into());
        let Some(tables) = tables.as_table_mut() else {
            continue;
        };
        for (name, value) in added {
            let written = format!("{section}.{name}");
            match tables.entry(name.clone()) {
                Entry::Occupied(_) => precedence.overridden.push(written),
                Entry::Vacant(slot) => {
                    slot.insert(value.clone());
                    precedence.in_effect.push(written);
                }
            }
        }
    }
    precedence.routes_first = overlay.routes.len();
    let own = match table.remove("routes") {
        Some(toml::Value::Array(routes)) => routes,
        _ => Vec::new(),
    };
    let mut routes = overlay.routes.clone();
    routes.extend(own);
    table.insert("routes".into(), toml::Value::Array(routes));
    let text = toml::to_string(&table).map_err(|e| refused(1, e.to_string()))?;
    let mut config = RegistryConfig::parse(&text, file, base)?;
    config.file = Some(std::path::absolute(file).unwrap_or_else(|_| file.to_owned()));
    Ok((config, precedence))
}
