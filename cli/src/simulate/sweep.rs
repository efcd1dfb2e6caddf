//! The axes of a sweep as written on the command line, `KEY=FROM..TO:STEPS`, and the cells
//! they span: every combination of their values, the first axis varying fastest. A key is a
//! scenario field (`workload.rate_per_s`, `fault[0].cut`); whether it names one is the
//! scenario reader's answer, given for the first cell before anything runs.

/// One axis: a key and the values it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The scenario field.
    pub key: String,
    /// Its values, from `FROM` to `TO` in equal steps.
    pub values: Vec<f64>,
}

/// The most values an axis takes.
const MAX_STEPS: usize = 1000;

/// The expected form, for errors.
const FORM: &str = "expected KEY=FROM..TO:STEPS, for example `fault[0].cut=0.5..0.9:5`";

impl std::str::FromStr for Axis {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (key, range) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}`: {FORM}"))?;
        let (bounds, steps) = range
            .rsplit_once(':')
            .ok_or_else(|| format!("`{text}`: the range has no steps: {FORM}"))?;
        let (from, to) = bounds
            .split_once("..")
            .ok_or_else(|| format!("`{text}`: {FORM}"))?;
        let number = |what: &str, value: &str| {
            (value.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("`{text}`: {what} `{value}` is not a number; {FORM}"))
        };
        let (from, to) = (number("FROM", from)?, number("TO", to)?);
        let steps: usize = (steps.trim().parse().ok())
            .filter(|s| (1..=MAX_STEPS).contains(s))
            .ok_or_else(|| {
                format!("`{text}`: STEPS `{steps}` is not a count of values from 1 to {MAX_STEPS}")
            })?;
        if steps == 1 && from != to {
            return Err(format!(
                "`{text}`: one step cannot go from {from} to {to}: give at least 2 steps, or FROM = TO"
            ));
        }
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("`{text}`: the key is empty; {FORM}"));
        }
        let values = (0..steps)
            .map(|i| match steps {
                1 => from,
                _ => from + (to - from) * i as f64 / (steps - 1) as f64,
            })
            .collect();
        Ok(Axis {
            key: key.to_owned(),
            values,
        })
    }
}

/// Values a tuning tries when its range gives no steps.
const TUNING_STEPS: usize = 11;

/// A tuning's range, `KEY=FROM..TO[:STEPS]`: as an axis, STEPS defaulting to 11.
pub fn tuning(text: &str) -> Result<Axis, String> {
    let (_, range) = text.split_once('=').unwrap_or((text, ""));
    if range.contains(':') {
        text.parse()
    } else {
        format!("{text}:{TUNING_STEPS}").parse()
    }
}

/// Every cell of `axes`: each a value per axis, the first axis varying fastest; one empty cell
/// without axes.
pub fn cells(axes: &[Axis]) -> Vec<Vec<f64>> {
    axes.iter().fold(vec![Vec::new()], |cells, axis| {
        (axis.values.iter())
            .flat_map(|v| {
                cells.iter().map(move |cell| {
                    let mut cell = cell.clone();
                    cell.push(*v);
                    cell
                })
            })
            .collect::<Vec<_>>()
    })
}

/// A cell's values named by their keys, as the reports write it: `fault[0].cut=0.8`.
pub fn describe(axes: &[Axis], cell: &[f64]) -> String {
    (axes.iter().zip(cell))
        .map(|(axis, value)| format!("{}={}", axis.key, round(*value)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `value` to six significant digits, without the noise of floating-point arithmetic
/// (`0.30000000000000004` is 0.3); zero and infinities stay.
pub fn round(value: f64) -> f64 {
    if !value.is_finite() || value == 0.0 {
        return value;
    }
    let scale = 10f64.powi(5 - value.abs().log10().floor() as i32);
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/simulate.md "Sweeps": `KEY=FROM..TO:STEPS` takes STEPS values from FROM to TO.
    #[test]
    fn an_axis_takes_its_steps_from_from_to_to() {
        let axis: Axis = "fault[0].cut=0.5..0.9:5".parse().unwrap();
        assert_eq!(axis.key, "fault[0].cut");
        let values: Vec<f64> = axis.values.iter().map(|v| round(*v)).collect();
        assert_eq!(values, [0.5, 0.6, 0.7, 0.8, 0.9]);
        let down: Axis = "workload.rate_per_s=10..4:3".parse().unwrap();
        assert_eq!(down.values, [10.0, 7.0, 4.0]);
        let one: Axis = "seed=3..3:1".parse().unwrap();
        assert_eq!(one.values, [3.0]);
        // A tuning's steps default to 11.
        assert_eq!(tuning("b.p=100..0").unwrap().values.len(), 11);
        assert_eq!(tuning("b.p=100..0:3").unwrap().values, [100.0, 50.0, 0.0]);
    }

    /// docs/simulate.md "Sweeps": a range with no steps, or anything else malformed, is refused
    /// with the form expected.
    #[test]
    fn malformed_axes_are_refused_with_the_form_expected() {
        for (text, expected) in [
            ("cut", "expected KEY=FROM..TO:STEPS"),
            ("cut=0.5..0.9", "the range has no steps"),
            ("cut=0.5..0.9:0", "not a count of values"),
            ("cut=0.5..0.9:x", "not a count of values"),
            ("cut=a..0.9:3", "FROM `a` is not a number"),
            ("cut=0.5..inf:3", "TO `inf` is not a number"),
            ("cut=0.5-0.9:3", "expected KEY=FROM..TO:STEPS"),
            ("=1..2:2", "the key is empty"),
            ("cut=1..2:1", "one step cannot go from 1 to 2"),
        ] {
            let error = text.parse::<Axis>().unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    /// docs/simulate.md "Sweeps": the cells are every combination, the first axis fastest.
    #[test]
    fn the_cells_are_every_combination_first_axis_fastest() {
        let axes = ["a=1..2:2".parse().unwrap(), "b=10..30:3".parse().unwrap()];
        let cells = cells(&axes);
        assert_eq!(cells.len(), 6);
        assert_eq!(cells[0], [1.0, 10.0]);
        assert_eq!(cells[1], [2.0, 10.0]);
        assert_eq!(cells[5], [2.0, 30.0]);
        assert_eq!(describe(&axes, &cells[1]), "a=2, b=10");
        assert_eq!(round(0.16217091688838173), 0.162171);
        assert_eq!(round(0.000_012_345_678), 0.000_012_345_7);
        assert_eq!(round(f64::INFINITY), f64::INFINITY);
        assert_eq!(super::cells(&[]), [Vec::<f64>::new()]);
    }
}
