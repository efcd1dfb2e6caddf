//! docs/registry.md "Ranges of the numeric settings", read from the page itself: for every row,
//! the largest value is accepted, and one past either end is refused with the file, the line
//! where the setting is written (or its table's), and the field. The page and the code cannot
//! disagree, and a setting added without a range has no row for a reader to find.

use rebound::config::RegistryConfig;

/// The rows of the table: the setting's dotted path, its least value (`None`: above 0) and its
/// largest.
fn rows() -> Vec<(String, Option<f64>, f64)> {
    let page = include_str!("../../docs/registry.md");
    let table = page
        .split("### Ranges of the numeric settings")
        .nth(1)
        .expect("the section is in docs/registry.md");
    table
        .lines()
        .skip_while(|line| !line.starts_with("| `"))
        .take_while(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let setting = cells[1].trim_matches('`').to_owned();
            let (least, most) = cells[2].split_once(" to ").expect("`LEAST to MOST`");
            let least = match least {
                "above 0" => None,
                number => Some(number.parse().expect("a number")),
            };
            (setting, least, most.parse().expect("a number"))
        })
        .collect()
}

/// TOML that sets `setting` (a row's path, `NAME` for a table's name) to `value` in an
/// otherwise valid configuration, the line the value is written on, and the field an error
/// about it names.
fn config_setting(setting: &str, value: &str) -> (String, usize, String) {
    let parts: Vec<&str> = setting.split('.').collect();
    let (key, path) = parts.split_last().unwrap();
    // Tables in order, each with its lines: the root's first.
    let mut tables: Vec<(String, Vec<String>)> = vec![
        (
            String::new(),
            vec!["default_policy = \"p\"".into(), "cache_dir = false".into()],
        ),
        ("[watch]".into(), vec!["enabled = false".into()]),
        (
            "[policies.p]".into(),
            vec!["builtin = \"best-effort\"".into()],
        ),
    ];
    let named = |section: &str| match section {
        "policies" => "p",
        "throttles" => "t",
        _ => "n",
    };
    let path: Vec<String> = path
        .iter()
        .enumerate()
        .map(|(i, part)| match *part {
            "NAME" => named(path[i - 1]).to_owned(),
            part => part.to_owned(),
        })
        .collect();
    let field = path
        .iter()
        .chain([&key.to_string()])
        .cloned()
        .collect::<Vec<_>>()
        .join(".");
    let header = if path.is_empty() {
        String::new()
    } else {
        format!("[{}]", path.join("."))
    };
    let mut others: Vec<String> = Vec::new();
    match path
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["policies", _, "speculative_execution"] => others.extend(
            match *key {
                "delay_ms" => vec!["max_executions = 2"],
                // A quantile delay: the floor at most the ceiling, which is the most allowed.
                "min_delay_ms" => vec![
                    "percentile = 95",
                    "max_delay_ms = 86400000",
                    "max_executions = 2",
                ],
                "max_delay_ms" => vec!["percentile = 95", "max_executions = 2"],
                _ => vec!["delay_ms = 10"],
            }
            .into_iter()
            .map(String::from),
        ),
        ["throttles", _] if ["k", "window_ms", "seed"].contains(key) => {
            others.push("kind = \"adaptive\"".into())
        }
        ["throttles", _] => {
            others.push("kind = \"tokens\"".into());
            others.extend(
                ["max_tokens = 10", "token_ratio = 1"]
                    .into_iter()
                    .filter(|other| !other.starts_with(key))
                    .map(String::from),
            );
        }
        ["throttles", _, "costs"] => tables.push((
            "[throttles.t]".into(),
            vec![
                "kind = \"tokens\"".into(),
                "max_tokens = 10".into(),
                "token_ratio = 1".into(),
            ],
        )),
        ["budgets", _] if *key == "max_clients" => {
            others.push("per = \"client_context.tenant\"".into())
        }
        _ => {}
    }
    let at = match tables.iter().position(|(h, _)| *h == header) {
        Some(at) => at,
        None => {
            tables.push((header, Vec::new()));
            tables.len() - 1
        }
    };
    tables[at].1.extend(others);
    tables[at].1.push(format!("{key} = {value}"));
    let mut text = String::new();
    let mut line = 0;
    for (i, (header, lines)) in tables.iter().enumerate() {
        if !header.is_empty() {
            text.push_str(header);
            text.push('\n');
        }
        for (j, written) in lines.iter().enumerate() {
            text.push_str(written);
            text.push('\n');
            if i == at && j == lines.len() - 1 {
                line = text.lines().count();
            }
        }
    }
    (text, line, field)
}

/// The row's value as TOML: an integer unless the range has a fraction in it.
fn toml_number(value: f64, float: bool) -> String {
    if float {
        format!("{value:?}")
    } else {
        format!("{}", value as i128)
    }
}

/// Settings read only with a feature of the library.
fn readable(setting: &str) -> bool {
    !setting.starts_with("telemetry.") || cfg!(feature = "otlp")
}

/// Whether `named` is line `line` of `text` or the header of a table holding `field`
/// (`[throttles.t]` for `throttles.t.costs.timeout`): where the setting is written.
fn names_its_place(text: &str, line: usize, named: usize, field: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let holds = |header: &str| {
        let table = header.trim_start_matches('[').trim_end_matches(']');
        field.starts_with(&format!("{table}."))
    };
    named == line || (1..line).contains(&named) && holds(lines[named - 1])
}

#[test]
fn every_numeric_setting_is_refused_past_its_documented_range_with_its_line() {
    let rows = rows();
    assert!(rows.len() > 30, "{} rows read", rows.len());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rebound.toml");
    for (setting, least, most) in rows.into_iter().filter(|(s, ..)| readable(s)) {
        let float = least.is_none()
            || ["percent", "sample"].iter().any(|f| setting.ends_with(f))
            || setting.contains(".costs.");
        let (text, _, _) = config_setting(&setting, &toml_number(most, float));
        std::fs::write(&file, &text).unwrap();
        if let Err(e) = RegistryConfig::load(&file) {
            panic!("{setting} = {most} is in range:\n{text}\n{e}");
        }
        let below = match least {
            Some(least) if least > 0.0 => Some(least - 1.0),
            Some(_) => Some(-1.0),
            None => Some(0.0),
        };
        // Past what a TOML integer holds, the parser refuses the number itself.
        let above = (most < 9.2e18).then_some(most + 1.0);
        for value in [above, below].into_iter().flatten() {
            let (text, line, field) = config_setting(&setting, &toml_number(value, float));
            std::fs::write(&file, &text).unwrap();
            let error = RegistryConfig::load(&file)
                .expect_err(&format!("{setting} = {value} refused:\n{text}"));
            assert_eq!(error.field, field, "{setting} = {value}: {error}\n{text}");
            assert_eq!(error.file, file, "{error}");
            assert!(
                names_its_place(&text, line, error.line, &field),
                "{setting} = {value}: line {} named, the value is on {line}: {error}\n{text}",
                error.line
            );
        }
    }
}
