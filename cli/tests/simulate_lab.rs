//! `rebound simulate` as a metastability lab, end to end: the queue model against queueing
//! theory, the retry case of Huang et al. (OSDI '22) on the side of the boundary the paper
//! reports, sweeps that refuse bad keys and ranges, assertions that fail naming the cell, and
//! clients that each keep their own budget (docs/simulate.md "Sweeps", docs/metastability.md).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{rebound, success_stdout};

fn lab(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../examples/scenarios/metastability/{name}.toml"))
}

/// Runs `rebound simulate --json` on `path` with `extra` arguments, the chart or map written in
/// `dir`; the report.
fn simulate(path: &Path, dir: &Path, extra: &[&str]) -> Value {
    let output = success_stdout(
        rebound()
            .arg("simulate")
            .arg(path)
            .arg("--json")
            .arg("--chart")
            .arg(dir.join("out.svg"))
            .args(extra),
    );
    serde_json::from_slice(&output).unwrap()
}

/// The statistics of `policy` in cell `cell` of a sweep's `report`.
fn cell<'a>(report: &'a Value, cell: usize, policy: &str) -> &'a Value {
    (report["cells"][cell]["policies"].as_array().unwrap().iter())
        .find(|p| p["policy"] == policy)
        .unwrap_or_else(|| panic!("no {policy} in cell {cell} of {report}"))
}

fn number(value: &Value, field: &str) -> f64 {
    value[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} in {value}"))
}

/// docs/simulate.md "The queue model": a node with exponential service times and Poisson
/// arrivals is an M/M/1 queue, whose time in the system is exponential with rate μ − λ: at
/// λ = 5 and μ = 10 a median of ln 2 / 5 s (139 ms) and a 99th percentile of ln 100 / 5 s
/// (921 ms).
#[test]
fn a_node_of_the_queue_model_is_an_m_m_1_queue() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mm1.toml");
    let text = format!(
        "duration_s = 1200\nseed = 4\n[compare]\nconfig = {:?}\npolicies = [\"no-retries\"]\n\
         [workload]\nrate_per_s = 5\n[[workload.mix]]\ntype = \"get\"\nweight = 1\ntimeout_ms = 60000\n\
         [cluster]\nnodes = 1\nlatency_ms = 0.001\nservice_rate_per_s = 10\n",
        lab("rebound")
    );
    std::fs::write(&path, text).unwrap();
    let report = simulate(&path, dir.path(), &[]);
    let run = &report["policies"][0];
    let (p50, p99) = (number(run, "latency_p50_ms"), number(run, "latency_p99_ms"));
    let (want50, want99) = (2f64.ln() / 5.0 * 1e3, 100f64.ln() / 5.0 * 1e3);
    assert!(
        (p50 / want50 - 1.0).abs() < 0.1,
        "p50 {p50} ms, theory {want50:.0}"
    );
    assert!(
        (p99 / want99 - 1.0).abs() < 0.15,
        "p99 {p99} ms, theory {want99:.0}"
    );
}

/// docs/metastability.md "The retry case": three replicas cut by 80 % for 10 s stay stuck
/// more often than not, while a 78 % cut, a 9 s cut, or 30 % less load recovers more often
/// than not (50 seeds a cell; the page's figures use 200).
#[test]
fn the_retry_case_of_osdi_22_falls_on_the_papers_side_of_the_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let path = lab("osdi22-retry");
    let p = |sweep: &str| {
        let report = simulate(
            &path,
            dir.path(),
            &["--policy", "retries", "--seeds", "50", "--sweep", sweep],
        );
        [0, 1].map(|c| number(cell(&report, c, "retries"), "p_no_recovery"))
    };
    let [cut78, cut80] = p("fault[0].cut=0.78..0.80:2");
    let [nine_s, ten_s] = p("fault[0].until_s=29..30:2");
    let [less_load, load] = p("workload.rate_per_s=37.8..54:2");
    for (name, stuck) in [
        ("80 % for 10 s", cut80),
        ("10 s", ten_s),
        ("the load", load),
    ] {
        assert!(stuck > 0.5, "{name}: P(not recovered) {stuck}");
    }
    for (name, recovers) in [
        ("78 %", cut78),
        ("9 s", nine_s),
        ("30 % less load", less_load),
    ] {
        assert!(recovers < 0.5, "{name}: P(not recovered) {recovers}");
    }
}

/// docs/simulate.md "Assertions": an assertion that fails names the cell and the policy and
/// makes the command exit with status 1; one that holds everywhere passes.
#[test]
fn a_failing_assertion_names_its_cell_and_policy_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let run = |policy: &str| {
        rebound()
            .arg("simulate")
            .arg(lab("osdi22-retry"))
            .args([
                "--policy",
                policy,
                "--seeds",
                "3",
                "--sweep",
                "fault[0].cut=0.5..0.9:2",
            ])
            .args(["--assert", "p_no_recovery <= 0.5", "--chart"])
            .arg(dir.path().join("map.svg"))
            .assert()
    };
    let failed = run("retries").code(1).get_output().stderr.clone();
    let failed = String::from_utf8(failed).unwrap();
    assert!(
        failed.contains("assertion `p_no_recovery <= 0.5` fails at cell fault[0].cut=0.9, policy `retries`: 1 against 0.5"),
        "{failed}"
    );
    run("budgeted").success();
    let map = std::fs::read_to_string(dir.path().join("map.svg")).unwrap();
    assert!(map.starts_with("<svg") && map.contains("budgeted"));
}

/// docs/simulate.md "Sweeps": every cell is in the JSON, and the same seeds give the same map
/// however the runs are spread over the cores.
#[test]
fn the_json_carries_every_cell_and_the_same_seeds_give_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--seeds",
        "4",
        "--sweep",
        "workload.rate_per_s=4..9:3",
        "--sweep",
        "fault[0].cut=0.5..0.8:2",
    ];
    let strip = |mut report: Value| {
        report["took_s"] = Value::Null;
        report
    };
    let first = strip(simulate(&lab("metafor"), dir.path(), &args));
    let second = strip(simulate(&lab("metafor"), dir.path(), &args));
    assert_eq!(first, second);
    let cells = first["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6);
    assert_eq!(cells[1]["values"]["workload.rate_per_s"], 6.5);
    assert_eq!(cells[3]["values"]["fault[0].cut"], 0.8);
    assert_eq!(cells[0]["policies"].as_array().unwrap().len(), 4);
    assert_eq!(first["runs"], 6 * 4 * 4);
}

/// docs/simulate.md "Clients": each client has registries of its own, so five clients get
/// five retry budgets' floors where one client gets one.
#[test]
fn each_client_keeps_its_own_budget() {
    let dir = tempfile::tempdir().unwrap();
    let report = simulate(
        &lab("osdi22-retry"),
        dir.path(),
        &[
            "--policy",
            "budgeted",
            "--sweep",
            "clients=1..5:2",
            "--sweep",
            "fault[0].cut=0.9..0.9:1",
        ],
    );
    let one = number(cell(&report, 0, "budgeted"), "load_amplification");
    let five = number(cell(&report, 1, "budgeted"), "load_amplification");
    assert!(five > one, "five clients {five}, one client {one}");
}

/// docs/simulate.md "Sweeps": a key that names no field, a range with no steps, a value its
/// field refuses, an assertion that does not parse or names an unknown metric are refused with
/// what was expected, before anything runs.
#[test]
fn bad_sweeps_and_assertions_are_refused_with_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    for (args, expected) in [
        (
            vec!["--sweep", "cluster.speed=1..2:2"],
            "unknown field `speed`",
        ),
        (
            vec!["--sweep", "fault[3].cut=0.1..0.2:2"],
            "`fault` has entries 0 to 0, not 3",
        ),
        (
            vec!["--sweep", "fault[0].cut=0.5..0.9"],
            "the range has no steps",
        ),
        (
            vec!["--sweep", "fault[0].cut=0.5..1:2"],
            "fault[0].cut: expected a share of the capacity from 0 to below 1, got 1",
        ),
        (
            vec![
                "--sweep",
                "seed=1..2:2",
                "--sweep",
                "clients=1..2:2",
                "--sweep",
                "duration_s=1..2:2",
            ],
            "two axes at most",
        ),
        (
            vec!["--assert", "p_no_recover < 0.1"],
            "`p_no_recover` is not a metric",
        ),
        (
            vec!["--assert", "p_no_recovery 0.1"],
            "expected a comparison",
        ),
        (vec!["--policy", "nope"], "--policy nope"),
        (vec!["--seeds", "0"], "0 is not in 1..=1000000"),
    ] {
        let output = rebound()
            .arg("simulate")
            .arg(lab("metafor"))
            .arg("--chart")
            .arg(dir.path().join("bad.svg"))
            .args(&args)
            .assert()
            .failure()
            .get_output()
            .stderr
            .clone();
        let stderr = String::from_utf8(output).unwrap();
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("bad.svg").exists());
}

/// docs/simulate.md "Tuning": values are tried from the least restrictive on; every value
/// before the answer leaves a cell that did not recover, the answer leaves none, and its price
/// is reported. A range where no value holds fails, and a key the configuration does not have
/// is refused.
#[test]
fn the_tuning_finds_the_least_restrictive_budget_that_recovers_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let envelope = [
        "--policy",
        "budgeted",
        "--seeds",
        "5",
        "--sweep",
        "fault[0].cut=0.7..0.9:3",
        "--sweep",
        "workload.rate_per_s=40..60:3",
    ];
    let mut args = envelope.to_vec();
    args.extend(["--tune", "budgets.ten-percent.percent=100..0:6"]);
    let report = simulate(&lab("osdi22-retry"), dir.path(), &args);
    let tune = &report["tune"];
    let tried = tune["tried"].as_array().unwrap();
    let found = tune["found"].as_f64().unwrap();
    assert!(tried.len() >= 2, "{tune}");
    assert_eq!(tried[0]["value"], 100.0);
    let (last, before) = tried.split_last().unwrap();
    assert_eq!(last["value"].as_f64(), Some(found));
    assert_eq!(last["failing"], 0);
    assert!(
        before.iter().all(|t| t["failing"].as_u64() > Some(0)),
        "{tune}"
    );
    for cell in report["cells"].as_array().unwrap() {
        assert_eq!(cell["policies"][0]["not_recovered"], 0, "{cell}");
    }
    assert!(last["goodput_lost_during_faults"].as_f64().is_some());

    // With an assertion, the first value meeting it everywhere is the answer.
    let mut asserted = args.clone();
    asserted.extend(["--assert", "p_no_recovery <= 0.2"]);
    let report = simulate(&lab("osdi22-retry"), dir.path(), &asserted);
    let tune = &report["tune"];
    assert_eq!(
        tune["criterion"],
        "met `p_no_recovery <= 0.2` in every cell"
    );
    let found = tune["found"].as_f64().unwrap();
    for cell in report["cells"].as_array().unwrap() {
        assert!(
            cell["policies"][0]["p_no_recovery"].as_f64() <= Some(0.2),
            "{cell}"
        );
    }
    assert!(found >= 40.0, "{tune}");

    let tuned = |tune: &str| {
        let output = rebound()
            .arg("simulate")
            .arg(lab("osdi22-retry"))
            .args(envelope)
            .args(["--tune", tune, "--chart"])
            .arg(dir.path().join("tuned.svg"))
            .assert()
            .failure()
            .get_output()
            .stderr
            .clone();
        String::from_utf8(output).unwrap()
    };
    let none = tuned("budgets.ten-percent.percent=100..90:2");
    assert!(
        none.contains("--tune budgets.ten-percent.percent: no value from 100 to 90 recovered in every seed of every cell"),
        "{none}"
    );
    let unknown = tuned("budgets.ten-percent.percnt=1..2:2");
    assert!(unknown.contains("unknown field `percnt`"), "{unknown}");
}
