//! `rebound simulate` end to end: the same seed gives the same run
//! (table, timeline and chart), every example scenario runs and shows the rule its fault
//! exercises, and bad scenarios are refused naming the file, line and field.

use std::path::{Path, PathBuf};

use crate::support;

use serde_json::Value;
use support::{rebound, success_stdout};

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/scenarios/{name}.toml"))
}

/// Runs `rebound simulate --json` on `path` with `extra` arguments, the chart written to
/// `chart`; the report.
fn simulate(path: &Path, chart: &Path, extra: &[&str]) -> Value {
    let output = success_stdout(
        rebound()
            .arg("simulate")
            .arg(path)
            .arg("--json")
            .arg("--chart")
            .arg(chart)
            .args(extra),
    );
    serde_json::from_slice(&output).unwrap()
}

/// The run of `policy` in `report`.
fn policy<'a>(report: &'a Value, policy: &str) -> &'a Value {
    report["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["policy"] == policy)
        .unwrap_or_else(|| panic!("no {policy} in {report}"))
}

fn count(run: &Value, field: &str) -> u64 {
    run[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {run}"))
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.svg"),
        dir.path().join("b.svg"),
        dir.path().join("c.svg"),
    );
    let first = simulate(&scenario("socket-close"), &a, &[]);
    let second = simulate(&scenario("socket-close"), &b, &[]);
    let without_chart = |mut report: Value| {
        report["chart"] = Value::Null;
        report
    };
    assert_eq!(without_chart(first.clone()), without_chart(second));
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "the same chart"
    );
    let svg = std::fs::read_to_string(&a).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("socket_close") && svg.contains("standard"));
    let other = simulate(&scenario("socket-close"), &c, &["--seed", "4"]);
    assert_eq!(other["seed"], 4);
    assert_ne!(
        without_chart(first)["policies"],
        without_chart(other)["policies"]
    );
}

/// Every request ends exactly once, and the timeline adds up to the totals.
fn assert_accounted(report: &Value) {
    let requests = count(report, "requests");
    for run in report["policies"].as_array().unwrap() {
        let ended = [
            "succeeded",
            "cancelled",
            "ambiguous_timeouts",
            "unambiguous_timeouts",
        ];
        let total: u64 = ended.iter().map(|f| count(run, f)).sum();
        assert_eq!(total, requests, "{}", run["policy"]);
        for field in ended
            .iter()
            .chain(&["attempts", "cluster_attempts", "abandoned_attempts"])
        {
            let over_time: u64 = run["timeline"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| count(b, field))
                .sum();
            assert_eq!(over_time, count(run, field), "{} {field}", run["policy"]);
        }
    }
}

#[test]
fn every_example_scenario_runs_and_shows_its_fault() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let report = simulate(
            &scenario(name),
            &dir.path().join(format!("{name}.svg")),
            &[],
        );
        assert_accounted(&report);
        assert!(dir.path().join(format!("{name}.svg")).is_file());
        report
    };

    // Reference 001: NOT_MY_VBUCKET is an always-retry reason, retried with the controlled
    // backoff without asking the strategy — every policy runs the same.
    let report = run("rebalance");
    let standard = policy(&report, "standard");
    for other in ["strict", "budgeted"] {
        let other = policy(&report, other);
        for field in ["succeeded", "cancelled", "attempts"] {
            assert_eq!(standard[field], other[field], "{field}");
        }
    }
    assert!(count(standard, "attempts") > count(&report, "requests"));

    // Reference 002: a request never dispatched (authentication fails before) times out
    // unambiguously; fail-fast cancels at once.
    let report = run("auth-failure");
    let standard = policy(&report, "standard");
    assert!(count(standard, "unambiguous_timeouts") > 0);
    assert_eq!(count(standard, "ambiguous_timeouts"), 0);
    assert_eq!(count(standard, "cluster_attempts"), {
        // Only attempts outside the fault window reach the cluster: one per request there.
        count(standard, "succeeded")
    });
    assert!(count(policy(&report, "strict"), "cancelled") > 0);

    // Reference 001: a socket closed while a non-idempotent write was in flight is never
    // retried (it may have been applied); the reads are.
    let report = run("socket-close");
    let standard = policy(&report, "standard");
    assert!(count(standard, "cancelled") > 0);
    assert_eq!(count(standard, "ambiguous_timeouts"), 0);
    assert_eq!(standard["errors"]["RequestCanceled"], standard["cancelled"]);
    assert!(count(standard, "succeeded") > count(policy(&report, "strict"), "succeeded"));

    // A node down: best effort retries the same node until the deadline (never dispatched:
    // unambiguous); fail-fast makes one attempt per request.
    let report = run("node-down");
    assert!(count(policy(&report, "standard"), "unambiguous_timeouts") > 0);
    assert_eq!(policy(&report, "strict")["attempts_per_request"], 1.0);

    // TMPFAIL may be retried even for writes: best effort saves requests fail-fast loses,
    // at the price of more load; the budget caps the load.
    let report = run("tmpfail");
    let (standard, strict, budgeted) = (
        policy(&report, "standard"),
        policy(&report, "strict"),
        policy(&report, "budgeted"),
    );
    assert!(count(standard, "succeeded") > count(strict, "succeeded"));
    let load = |run: &Value| run["peak_load_amplification"].as_f64().unwrap();
    assert!(load(standard) > load(budgeted) && load(budgeted) >= load(strict));

    // Locked documents: a locked write retried until its deadline after being dispatched
    // times out ambiguously (reference 002).
    let report = run("locked");
    assert!(count(policy(&report, "standard"), "ambiguous_timeouts") > 0);
    assert_eq!(count(policy(&report, "strict"), "ambiguous_timeouts"), 0);

    // gRFC A6: UNAVAILABLE retried by the retry policy saves calls fail-fast loses, at the
    // price of load; retry throttling (tokenRatio 0.1) stops retrying under a 60% storm, so
    // its load stays that of fail-fast while the policy without it amplifies.
    let report = run("grpc-unavailable");
    let (retrying, throttled, none) = (
        policy(&report, "inventory"),
        policy(&report, "inventory-throttled"),
        policy(&report, "no-retry"),
    );
    assert!(count(retrying, "succeeded") > count(none, "succeeded"));
    assert!(load(retrying) > load(throttled) && load(throttled) >= load(none));
    assert!(
        count(throttled, "attempts") > count(none, "attempts"),
        "retries before it throttles"
    );

    // gRFC A6 "Transparent Retries": a refused stream never reached the server's application,
    // so every policy sends it again once, calls not declared idempotent included; a second
    // refusal is the policy's, which may not send such a call again. The server serves each
    // call that succeeds exactly once and never a refused one.
    let report = run("refused-streams");
    let requests = count(&report, "requests");
    for name in ["inventory", "no-retry"] {
        let run = policy(&report, name);
        let (succeeded, cancelled) = (count(run, "succeeded"), count(run, "cancelled"));
        assert_eq!(succeeded + cancelled, requests, "{name}");
        assert!(
            cancelled > 0 && succeeded * 100 > requests * 95,
            "{name}: {run}"
        );
        assert_eq!(count(run, "cluster_attempts"), succeeded, "{name}");
        assert!(count(run, "attempts") > requests + cancelled, "{name}");
    }
}

#[test]
fn bad_scenarios_are_refused_naming_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/rebound.toml");
    let valid = format!(
        "duration_s = 5\n[compare]\nconfig = {config:?}\npolicies = [\"standard\"]\n[workload]\nrate_per_s = 10\n[[workload.mix]]\ntype = \"get\"\nweight = 1\n"
    );
    let refused = |text: &str| {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let stderr = rebound()
            .arg("simulate")
            .arg(&path)
            .arg("--chart")
            .arg(dir.path().join("bad.svg"))
            .assert()
            .failure()
            .get_output()
            .stderr
            .clone();
        String::from_utf8(stderr).unwrap()
    };
    // The valid base runs.
    std::fs::write(dir.path().join("ok.toml"), &valid).unwrap();
    rebound()
        .arg("simulate")
        .arg(dir.path().join("ok.toml"))
        .arg("--chart")
        .arg(dir.path().join("ok.svg"))
        .assert()
        .success();
    for (text, expected) in [
        (
            format!("{valid}speed = 3\n"),
            vec!["bad.toml:10:1", "unknown field `speed`"],
        ),
        (
            format!("{valid}[[fault]]\nkind = \"meteor\"\nfrom_s = 1\nuntil_s = 2\n"),
            vec!["fault[0]", "unknown variant `meteor`"],
        ),
        (
            format!("{valid}[[fault]]\nkind = \"tmpfail\"\nrate = 1.5\nfrom_s = 1\nuntil_s = 2\n"),
            vec!["fault[0].rate", "expected 0 to 1, got 1.5"],
        ),
        (
            format!("{valid}[[fault]]\nkind = \"node_down\"\nnode = 3\nfrom_s = 1\nuntil_s = 2\n"),
            vec!["fault[0].node", "nodes 0 to 2, not 3"],
        ),
        (
            format!("{valid}[[fault]]\nkind = \"locked\"\nshare = 0.1\nfrom_s = 3\nuntil_s = 2\n"),
            vec!["fault[0].until_s", "from_s < until_s"],
        ),
        (
            valid.replace("type = \"get\"", "type = \"fetch\""),
            vec!["workload.mix[0].type", "unknown variant `fetch`"],
        ),
        (
            valid.replace("[\"standard\"]", "[\"standard\", \"nonesuch\"]"),
            vec![
                "compare.policies[1]",
                "`nonesuch` is not a policy",
                "standard",
            ],
        ),
        (
            valid.replace("duration_s = 5", "duration_s = -1"),
            vec!["duration_s", "expected a positive number"],
        ),
        (
            format!("{valid}[cluster]\ncapacity_per_s = 0\n"),
            vec!["cluster.capacity_per_s", "expected a positive number"],
        ),
    ] {
        let stderr = refused(&text);
        for part in expected {
            assert!(stderr.contains(part), "{part:?} not in {stderr}");
        }
    }
}

/// The retry-storm example — a node failing every request sent to it for
/// 20 s — side by side: best effort retries each request until its deadline, the fixed-rate
/// budget (the WebAssembly `budgeted` policy) and a budget of 20 % of the traffic bound the
/// attempts; the proportional budget never grants more than `20 % × requests + 10/s × the
/// run`, and its refusals end requests as RequestCanceled. The same seed gives the same run.
#[test]
fn a_retry_storm_is_bounded_by_the_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let report = simulate(&scenario("retry-storm"), &dir.path().join("a.svg"), &[]);
    assert_accounted(&report);
    let requests = count(&report, "requests");
    let attempts = |name: &str| count(policy(&report, name), "attempts");
    let proportional = policy(&report, "proportional");
    assert!(
        attempts("standard") > 2 * requests,
        "best effort storms: {report}"
    );
    let duration_s = 40 + 3; // the run, with the last requests' deadlines
    let bound = requests + requests / 5 + 10 * duration_s;
    assert!(
        attempts("proportional") <= bound,
        "{} attempts > {bound}",
        attempts("proportional")
    );
    assert!(attempts("budgeted") < attempts("standard") / 2);
    assert!(
        proportional["errors"]["RequestCanceled"].as_u64().unwrap() > 0,
        "{proportional}"
    );
    let again = simulate(&scenario("retry-storm"), &dir.path().join("b.svg"), &[]);
    assert_eq!(report["policies"], again["policies"], "the same run");
}

/// docs/simulate.md "Metastable failures": with nodes near capacity, a 5 s TMPFAIL trigger
/// starts a retry storm that best effort sustains after the trigger ends (its retries keep the
/// nodes past capacity, where goodput collapses), while the proportional budget and the retry
/// throttle end it (their goodput after the fault is the arrival rate's); per-node breakers
/// keep the load that reaches the nodes near the workload's, though best effort keeps retrying
/// the attempts they refuse. The chart the guides show (docs/charts/metastable.svg) is the
/// one this run renders.
#[test]
fn a_retry_storm_outlives_its_trigger_under_best_effort_alone() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("metastable.svg");
    let report = simulate(&scenario("metastable"), &chart, &[]);
    let documented =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/charts/metastable.svg");
    assert!(
        std::fs::read(&chart).unwrap() == std::fs::read(&documented).unwrap(),
        "docs/charts/metastable.svg is stale: run `rebound simulate examples/scenarios/metastable.toml --chart docs/charts/metastable.svg`"
    );
    assert_accounted(&report);
    let after = |name: &str| {
        policy(&report, name)["goodput_after_faults_per_s"]
            .as_f64()
            .unwrap()
    };
    let rate = 1200.0;
    assert!(after("standard") < rate * 0.3, "{}", after("standard"));
    for ended in ["proportional", "throttled"] {
        assert!(after(ended) > rate * 0.95, "{ended}: {}", after(ended));
    }
    let load = |name: &str| {
        policy(&report, name)["load_amplification"]
            .as_f64()
            .unwrap()
    };
    assert!(load("guarded") < load("standard") / 4.0, "{report}");
    assert!(after("guarded") > after("standard"));
    let timeline = policy(&report, "standard")["timeline"].as_array().unwrap();
    assert!(
        timeline[30]["latency_p99_ms"].as_f64().unwrap() > 1000.0,
        "the storm's p99, 15 s after the trigger"
    );
}

/// docs/simulate.md "Attempt timeouts": a node ten times slower for 5 s, among three near
/// capacity. Without an attempt timeout nothing is abandoned and the trigger passes. Cutting
/// attempts after 20 ms sends each slow one again while its node still serves it (abandoned
/// attempts, wasted work): the load keeps the nodes past capacity after the trigger ends and
/// goodput stays collapsed. Drawing those retries from a budget ends the storm.
#[test]
fn a_storm_driven_by_attempt_timeouts_outlives_its_trigger_unless_budgeted() {
    let dir = tempfile::tempdir().unwrap();
    let report = simulate(
        &scenario("attempt-timeouts"),
        &dir.path().join("chart.svg"),
        &[],
    );
    assert_accounted(&report);
    let after = |name: &str| {
        policy(&report, name)["goodput_after_faults_per_s"]
            .as_f64()
            .unwrap()
    };
    let rate = 600.0;
    assert!(after("standard") > rate * 0.95, "{}", after("standard"));
    assert!(after("impatient") < rate * 0.3, "{}", after("impatient"));
    assert!(
        after("impatient-budgeted") > rate * 0.7,
        "{}",
        after("impatient-budgeted")
    );
    let abandoned = |name: &str| count(policy(&report, name), "abandoned_attempts");
    assert_eq!(abandoned("standard"), 0);
    assert!(
        abandoned("impatient") > count(&report, "requests"),
        "{report}"
    );
    assert!(abandoned("impatient-budgeted") < abandoned("impatient") / 4);
}

/// docs/simulate.md "Hedged requests": a node 50 times slower for 20 s; hedging a get after
/// 10 ms on the next node cuts the p99 by more than ten times, for at most half again the load
/// in the worst second. The chart the guide shows (docs/charts/slow-node.svg) is this run's.
#[test]
fn hedging_cuts_a_slow_node_s_p99_for_some_load() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("slow-node.svg");
    let report = simulate(&scenario("slow-node"), &chart, &[]);
    assert_accounted(&report);
    let documented = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/charts/slow-node.svg");
    assert!(
        std::fs::read(&chart).unwrap() == std::fs::read(&documented).unwrap(),
        "docs/charts/slow-node.svg is stale: run `rebound simulate examples/scenarios/slow-node.toml --chart docs/charts/slow-node.svg`"
    );
    let (standard, hedged) = (policy(&report, "standard"), policy(&report, "hedged"));
    let p99 = |run: &Value| run["latency_p99_ms"].as_f64().unwrap();
    assert!(
        p99(hedged) * 10.0 < p99(standard),
        "{} vs {}",
        p99(hedged),
        p99(standard)
    );
    assert_eq!(standard["attempts_per_request"], 1.0);
    let peak = hedged["peak_load_amplification"].as_f64().unwrap();
    assert!(peak > 1.0 && peak < 1.5, "{peak}");
    assert_eq!(count(hedged, "succeeded"), count(standard, "succeeded"));
}

/// docs/simulate.md "The comparison": each compared policy decides every request of its own
/// run, whatever the configuration routes (`[[routes]]`, budgets, throttles and breakers
/// attached to the other policies); a configuration with routes simulates as one without.
#[test]
fn a_configuration_with_routes_simulates_each_policy_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "standard"
cache_dir = false
[watch]
enabled = false
[budgets.b]
percent = 10
[policies.standard]
builtin = "best-effort"
budget = "b"
[policies.http]
builtin = "http"
[[routes]]
protocol = "http"
policy = "http"
"#,
    )
    .unwrap();
    let path = dir.path().join("routes.toml");
    std::fs::write(
        &path,
        r#"
description = "a configuration with routes"
seed = 5
duration_s = 5
[compare]
config = "rebound.toml"
policies = ["standard", "http"]
[workload]
rate_per_s = 50
[[workload.mix]]
type = "get"
weight = 1
[[fault]]
kind = "tmpfail"
rate = 0.4
from_s = 1
until_s = 3
"#,
    )
    .unwrap();
    let report = simulate(&path, &dir.path().join("routes.svg"), &[]);
    assert!(
        count(policy(&report, "standard"), "succeeded") > 0,
        "{report}"
    );
    assert!(count(policy(&report, "http"), "succeeded") > 0, "{report}");
}

/// docs/hedging.md "Delays from observed latency" in the simulator: a node's answers are
/// recorded as they come, so a policy hedging at the 95th percentile sends copies of the
/// slowest gets, while the same ceiling as a constant delay (60 s, past every deadline) never
/// sends one.
#[test]
fn a_percentile_hedge_learns_from_the_simulated_answers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rebound.toml"),
        r#"
default_policy = "percentile"
cache_dir = false
[watch]
enabled = false
[policies.percentile]
builtin = "best-effort"
speculative_execution = { percentile = 95, max_delay_ms = 60000, max_executions = 2 }
[policies.ceiling]
builtin = "best-effort"
speculative_execution = { delay_ms = 60000, max_executions = 2 }
"#,
    )
    .unwrap();
    let path = dir.path().join("percentile.toml");
    std::fs::write(
        &path,
        r#"
description = "hedging at the observed 95th percentile"
seed = 7
duration_s = 10
[compare]
config = "rebound.toml"
policies = ["percentile", "ceiling"]
[workload]
rate_per_s = 200
[[workload.mix]]
type = "get"
weight = 1
[[fault]]
kind = "slow_node"
node = 1
factor = 5
from_s = 2
until_s = 8
"#,
    )
    .unwrap();
    let report = simulate(&path, &dir.path().join("percentile.svg"), &[]);
    let per_request = |name: &str| {
        policy(&report, name)["attempts_per_request"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(per_request("ceiling"), 1.0, "{report}");
    assert!(per_request("percentile") > 1.02, "{report}");
}
