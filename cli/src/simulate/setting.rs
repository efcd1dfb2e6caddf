//! A value set in a TOML document by a key as a user writes it on the command line: a sweep
//! or a tuning names `workload.rate_per_s`, `fault[0].cut` or
//! `throttles.kv-failures.token_ratio`, and the document (a scenario, a registry
//! configuration) is then read as if it had been written with that value. Whether the key
//! names a field is the document's reader's answer: it refuses an unknown one, naming it.

use toml::{Table, Value};

/// One step of a key: a table's field, or an entry of an array of tables.
#[derive(Debug, PartialEq)]
enum Step<'k> {
    Field(&'k str),
    Entry(&'k str, usize),
}

/// The steps of `key`, or what is wrong with it.
fn steps(key: &str) -> Result<Vec<Step<'_>>, String> {
    let bad = || {
        format!("`{key}` is not a key: expected fields joined by dots, an array's entry as `name[index]` (for example `fault[0].cut`)")
    };
    if key.is_empty() {
        return Err(bad());
    }
    key.split('.')
        .map(|part| match part.split_once('[') {
            None if !part.is_empty() && !part.contains(']') => Ok(Step::Field(part)),
            Some((name, rest)) if !name.is_empty() => {
                let index = rest.strip_suffix(']').and_then(|i| i.parse().ok());
                index.map(|i| Step::Entry(name, i)).ok_or_else(bad)
            }
            _ => Err(bad()),
        })
        .collect()
}

/// `value` as TOML writes it: an integer when it is whole (so that integer fields take it).
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::Integer(value as i64)
    } else {
        Value::Float(value)
    }
}

/// Sets `key` to `value` in `table`, creating the tables on its way; an array's entry must
/// exist.
pub fn set(table: &mut Table, key: &str, value: f64) -> Result<(), String> {
    let steps = steps(key)?;
    let (last, path) = steps
        .split_last()
        .ok_or_else(|| format!("`{key}` is empty"))?;
    let mut at = table;
    for step in path {
        at = match *step {
            Step::Field(name) => {
                let entry = (at.entry(name)).or_insert_with(|| Value::Table(Table::new()));
                entry
                    .as_table_mut()
                    .ok_or_else(|| format!("`{name}` is not a table"))?
            }
            Step::Entry(name, index) => entry(at, name, index)?,
        };
    }
    match *last {
        Step::Field(name) => {
            at.insert(name.to_owned(), number(value));
        }
        Step::Entry(name, _) => {
            return Err(format!(
                "`{name}[..]` is a table; name one of its fields (`{name}[0].…`)"
            ))
        }
    }
    Ok(())
}

/// Entry `index` of the array of tables `name` in `table`.
fn entry<'t>(table: &'t mut Table, name: &str, index: usize) -> Result<&'t mut Table, String> {
    let array = (table.get_mut(name).and_then(Value::as_array_mut))
        .ok_or_else(|| format!("`{name}` is not an array of tables here"))?;
    let len = array.len();
    let missing = || match len {
        0 => format!("`{name}` has no entries"),
        n => format!("`{name}` has entries 0 to {}, not {index}", n - 1),
    };
    (array.get_mut(index).ok_or_else(missing)?)
        .as_table_mut()
        .ok_or_else(|| format!("`{name}[{index}]` is not a table"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Table {
        toml::from_str(
            "seed = 1\n[[fault]]\nkind = \"capacity\"\ncut = 0.5\nfrom_s = 1\nuntil_s = 2\n",
        )
        .unwrap()
    }

    /// docs/simulate.md "Sweeps": a key names fields joined by dots, an array entry by index.
    #[test]
    fn a_key_sets_a_field_an_entry_and_a_new_table() {
        let mut table = doc();
        set(&mut table, "fault[0].cut", 0.8).unwrap();
        set(&mut table, "cluster.queue", 100.0).unwrap();
        set(&mut table, "seed", 7.0).unwrap();
        assert_eq!(table["fault"][0]["cut"].as_float(), Some(0.8));
        assert_eq!(table["cluster"]["queue"].as_integer(), Some(100));
        assert_eq!(table["seed"].as_integer(), Some(7));
    }

    /// docs/simulate.md "Sweeps": a key that cannot name a field is refused with what was
    /// expected.
    #[test]
    fn bad_keys_are_refused_saying_what_was_expected() {
        let mut table = doc();
        for (key, expected) in [
            ("", "is not a key"),
            ("fault[x].cut", "is not a key"),
            ("a..b", "is not a key"),
            ("fault[3].cut", "has entries 0 to 0, not 3"),
            ("fault[0]", "is a table"),
            ("seed.x", "is not a table"),
            ("cluster[0].x", "is not an array of tables"),
        ] {
            let error = set(&mut table, key, 1.0).unwrap_err();
            assert!(error.contains(expected), "{key}: {error}");
        }
    }
}
