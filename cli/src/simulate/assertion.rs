//! `--assert 'EXPR'`: a comparison over a sweep's results (`p_no_recovery < 0.01`,
//! `goodput_after_faults >= 0.95 * rate`), checked for every cell and policy so that a team can
//! gate a policy change on its storm behaviour. Arithmetic (`+ - * /`, parentheses) over
//! numbers and the metrics of [`METRICS`]; one comparison per assertion.

use super::summary::CellStats;

/// The metrics an assertion may name, with what each is.
pub const METRICS: [(&str, &str); 12] = [
    (
        "p_no_recovery",
        "share of seeds that did not recover within the stated time",
    ),
    ("p_no_recovery_low", "lower end of its 95 % Wilson interval"),
    (
        "p_no_recovery_high",
        "upper end of its 95 % Wilson interval",
    ),
    ("not_recovered", "seeds that did not recover"),
    ("seeds", "seeds run"),
    (
        "median_recovery_s",
        "median seconds to recover (infinite when half or more did not)",
    ),
    (
        "goodput_after_faults",
        "mean successes per second after the last fault",
    ),
    (
        "goodput_during_faults",
        "mean successes per second while the faults last",
    ),
    ("rate", "the workload's arrivals per second (the cell's)"),
    ("cancelled", "mean requests cancelled per run"),
    (
        "load_amplification",
        "mean attempts that reached a node per request",
    ),
    (
        "abandoned",
        "mean attempts abandoned while their node served them, per run",
    ),
];

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Number(f64),
    Metric(&'static str),
    Negate(Box<Expr>),
    Binary(Box<Expr>, char, Box<Expr>),
}

/// A parsed assertion: two expressions compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    text: String,
    left: Expr,
    comparison: &'static str,
    right: Expr,
}

/// The tokens of an assertion: numbers, names, operators.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Name(String),
    Op(&'static str),
}

const OPS: [&str; 12] = [
    "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "(", ")",
];

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while let Some(c) = rest.chars().next() {
        if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            out.push(Token::Op(op));
            rest = &rest[op.len()..];
        } else if c.is_ascii_digit() || c == '.' {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
                .unwrap_or(rest.len());
            let number = (rest[..end].parse().ok())
                .ok_or_else(|| format!("`{}` is not a number", &rest[..end]))?;
            out.push(Token::Number(number));
            rest = &rest[end..];
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push(Token::Name(rest[..end].to_owned()));
            rest = &rest[end..];
        } else {
            return Err(format!("unexpected `{c}`"));
        }
        rest = rest.trim_start();
    }
    Ok(out)
}

/// A recursive-descent parser over the tokens.
struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_op(&self, ops: &[&'static str]) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Op(op)) if ops.contains(op) => Some(op),
            _ => None,
        }
    }

    fn binary(
        &mut self,
        ops: &[&'static str],
        next: fn(&mut Self) -> Result<Expr, String>,
    ) -> Result<Expr, String> {
        let mut left = next(self)?;
        while let Some(op) = self.peek_op(ops) {
            self.at += 1;
            let right = next(self)?;
            left = Expr::Binary(
                Box::new(left),
                op.chars().next().unwrap_or('+'),
                Box::new(right),
            );
        }
        Ok(left)
    }

    fn sum(&mut self) -> Result<Expr, String> {
        self.binary(&["+", "-"], Self::product)
    }

    fn product(&mut self) -> Result<Expr, String> {
        self.binary(&["*", "/"], Self::unary)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Op("-")) => Ok(Expr::Negate(Box::new(self.unary()?))),
            Some(Token::Op("(")) => {
                let inner = self.sum()?;
                self.peek_op(&[")"]).ok_or("expected `)`")?;
                self.at += 1;
                Ok(inner)
            }
            Some(Token::Number(n)) => Ok(Expr::Number(n)),
            Some(Token::Name(name)) => METRICS
                .iter()
                .find(|(m, _)| *m == name)
                .map(|(m, _)| Expr::Metric(m))
                .ok_or_else(|| {
                    let known: Vec<&str> = METRICS.iter().map(|(m, _)| *m).collect();
                    format!(
                        "`{name}` is not a metric; the metrics: {}",
                        known.join(", ")
                    )
                }),
            Some(Token::Op(op)) => Err(format!("expected a number or a metric, got `{op}`")),
            None => Err("expected a number or a metric at the end".into()),
        }
    }
}

impl std::str::FromStr for Assertion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let fail = |e: String| format!("assertion `{text}`: {e}");
        let mut parser = Parser {
            tokens: tokens(text).map_err(fail)?,
            at: 0,
        };
        let left = parser.sum().map_err(fail)?;
        let comparison = parser
            .peek_op(&["<=", ">=", "==", "!=", "<", ">"])
            .ok_or_else(|| {
                fail("expected a comparison (<, <=, >, >=, ==, !=) after the left side".into())
            })?;
        parser.at += 1;
        let right = parser.sum().map_err(fail)?;
        if parser.at < parser.tokens.len() {
            return Err(fail(format!(
                "unexpected {:?} after the right side",
                parser.tokens[parser.at]
            )));
        }
        Ok(Assertion {
            text: text.trim().to_owned(),
            left,
            comparison,
            right,
        })
    }
}

/// The value of metric `name` for `stats`, in a cell whose arrival rate is `rate`.
fn metric(name: &str, stats: &CellStats, rate: f64) -> f64 {
    match name {
        "p_no_recovery" => stats.p_no_recovery,
        "p_no_recovery_low" => stats.p_no_recovery_low,
        "p_no_recovery_high" => stats.p_no_recovery_high,
        "not_recovered" => stats.not_recovered as f64,
        "seeds" => stats.seeds as f64,
        "median_recovery_s" => stats.median_recovery_s.unwrap_or(f64::INFINITY),
        "goodput_after_faults" => stats.goodput_after_faults,
        "goodput_during_faults" => stats.goodput_during_faults,
        "rate" => rate,
        "cancelled" => stats.cancelled,
        "load_amplification" => stats.load_amplification,
        _ => stats.abandoned,
    }
}

fn eval(expr: &Expr, stats: &CellStats, rate: f64) -> f64 {
    match expr {
        Expr::Number(n) => *n,
        Expr::Metric(name) => metric(name, stats, rate),
        Expr::Negate(inner) => -eval(inner, stats, rate),
        Expr::Binary(l, op, r) => {
            let (l, r) = (eval(l, stats, rate), eval(r, stats, rate));
            match op {
                '+' => l + r,
                '-' => l - r,
                '*' => l * r,
                _ => l / r,
            }
        }
    }
}

impl Assertion {
    /// As written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it holds for `stats`, in a cell whose arrival rate is `rate`; with the two
    /// sides' values.
    pub fn check(&self, stats: &CellStats, rate: f64) -> (bool, f64, f64) {
        let (l, r) = (
            eval(&self.left, stats, rate),
            eval(&self.right, stats, rate),
        );
        let holds = match self.comparison {
            "<" => l < r,
            "<=" => l <= r,
            ">" => l > r,
            ">=" => l >= r,
            "==" => l == r,
            _ => l != r,
        };
        (holds, l, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::summary::Sample;

    fn stats(not_recovered: usize, of: usize) -> CellStats {
        let samples: Vec<Sample> = (0..of)
            .map(|i| Sample {
                recovered_after_s: (i >= not_recovered).then_some(2.0),
                goodput_after_faults: 90.0,
                ..Sample::default()
            })
            .collect();
        CellStats::of("p", &samples)
    }

    /// docs/simulate.md "Assertions": comparisons over metrics with arithmetic.
    #[test]
    fn assertions_compare_metrics_with_arithmetic() {
        let check = |text: &str, stats: &CellStats| {
            text.parse::<Assertion>().unwrap().check(stats, 100.0).0
        };
        assert!(check("p_no_recovery < 0.01", &stats(0, 10)));
        assert!(!check("p_no_recovery < 0.01", &stats(1, 10)));
        assert!(check("goodput_after_faults >= 0.9 * rate", &stats(0, 4)));
        assert!(!check("goodput_after_faults >= 0.95 * rate", &stats(0, 4)));
        assert!(check("-(1 - 2) * 3 == 3", &stats(0, 1)));
        assert!(check("median_recovery_s <= 2", &stats(1, 4)));
        assert!(!check("median_recovery_s < 1000", &stats(3, 4)));
        assert!(check("rate / 4 + 1 != 25", &stats(0, 1)));
    }

    /// docs/simulate.md "Assertions": an assertion that does not parse or names an unknown
    /// metric is refused with what was expected.
    #[test]
    fn malformed_assertions_are_refused_with_what_was_expected() {
        for (text, expected) in [
            ("p_no_recovery", "expected a comparison"),
            (
                "p_recovery < 0.1",
                "`p_recovery` is not a metric; the metrics: p_no_recovery",
            ),
            (
                "p_no_recovery < ",
                "expected a number or a metric at the end",
            ),
            ("p_no_recovery < (0.1", "expected `)`"),
            ("p_no_recovery < 0.1 0.2", "unexpected"),
            ("p_no_recovery < 1.2.3", "`1.2.3` is not a number"),
            ("p_no_recovery ~ 1", "unexpected `~`"),
            ("< 1", "expected a number or a metric, got `<`"),
        ] {
            let error = text.parse::<Assertion>().unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
