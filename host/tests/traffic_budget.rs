//! Retry budgets proportional to traffic (Finagle's `RetryBudget`,
//! tower's `TpsBudget`): each request deposits, each retry withdraws, a floor per second, a
//! window of `ttl`; over any window, retries never exceed `percent × requests + min_per_second
//! × window`.

use crate::common;

use std::time::{Duration, Instant};

use proptest::prelude::*;
use rebound::{BudgetConfig, TrafficBudget};

fn budget(percent: f64, min_per_second: u32, ttl_ms: u64) -> TrafficBudget {
    TrafficBudget::new(BudgetConfig::new(percent, min_per_second, ttl_ms)).expect("a valid budget")
}

/// Without traffic only the floor is granted: `min_per_second × ttl` retries, then refusals,
/// and the floor comes back once the window has passed.
#[test]
fn a_storm_without_traffic_gets_the_floor_only() {
    let start = Instant::now();
    let b = budget(20.0, 10, 10_000);
    let granted = (0..1000).filter(|_| b.try_withdraw_at(start)).count();
    assert_eq!(granted, 100);
    let stats = b.stats_at(start);
    assert_eq!((stats.withdrawals, stats.refusals), (100, 900));
    let later = start + Duration::from_secs(10);
    assert_eq!((0..1000).filter(|_| b.try_withdraw_at(later)).count(), 100);
}

/// The proportional share: 20 % of the requests of the window (no floor).
#[test]
fn twenty_percent_of_requests_are_granted() {
    let start = Instant::now();
    let b = budget(20.0, 0, 10_000);
    for _ in 0..1000 {
        b.deposit_at(start);
    }
    assert_eq!((0..1000).filter(|_| b.try_withdraw_at(start)).count(), 200);
    assert_eq!(b.stats_at(start).deposits, 1000);
    // A percent that does not divide evenly is rounded against the retries: 30 % of 1000.
    let b = budget(30.0, 0, 10_000);
    for _ in 0..1000 {
        b.deposit_at(start);
    }
    let granted = (0..1000).filter(|_| b.try_withdraw_at(start)).count();
    assert!((299..=300).contains(&granted), "{granted}");
}

/// Bad parameters are refused naming the field.
#[test]
fn out_of_range_parameters_are_refused() {
    let BudgetConfig {
        percent,
        min_per_second,
        ttl_ms,
        ..
    } = BudgetConfig::default();
    for (config, field) in [
        (BudgetConfig::new(101.0, min_per_second, ttl_ms), "percent"),
        (BudgetConfig::new(-1.0, min_per_second, ttl_ms), "percent"),
        (BudgetConfig::new(percent, min_per_second, 5), "ttl_ms"),
    ] {
        assert_eq!(TrafficBudget::new(config).unwrap_err().field, field);
    }
}

/// How many of 1000 asks on each of 4 threads at once `ask` grants.
fn granted_on_four_threads(ask: impl Fn() -> bool + Sync) -> usize {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| (0..1000).filter(|_| ask()).count()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

/// Threads withdrawing at once never overdraw: with a floor of 50 retries, 4 threads asking
/// 1000 times each are granted exactly 50 together.
#[test]
fn concurrent_withdrawals_never_overdraw() {
    let start = Instant::now();
    let b = budget(0.0, 5, 10_000);
    assert_eq!(granted_on_four_threads(|| b.try_withdraw_at(start)), 50);
}

/// Threads on different stripes depositing and withdrawing at once never overdraw: at 20 %
/// without a floor, 4 threads making 1000 first failures each (a deposit and a retry in one
/// step) are granted at most 20 % of the 4000 requests, and every deposit is counted.
#[test]
fn concurrent_first_failures_never_overdraw() {
    let start = Instant::now();
    let b = budget(20.0, 0, 10_000);
    let granted = granted_on_four_threads(|| b.deposit_and_try_withdraw_at(start));
    assert!(
        granted <= 800,
        "{granted} retries granted for 4000 requests at 20 %"
    );
    let stats = b.stats_at(start);
    assert_eq!((stats.deposits, stats.withdrawals), (4000, granted as u64));
}

/// A first failure's deposit and retry in one step decide as a deposit followed by a
/// withdrawal do: at 20 % the fifth first failure is the first granted.
#[test]
fn a_first_failure_deposits_before_it_withdraws() {
    let start = Instant::now();
    let (one_step, two_steps) = (budget(20.0, 0, 10_000), budget(20.0, 0, 10_000));
    for _ in 0..12 {
        two_steps.deposit_at(start);
        assert_eq!(
            one_step.deposit_and_try_withdraw_at(start),
            two_steps.try_withdraw_at(start)
        );
    }
    assert_eq!(one_step.stats_at(start), two_steps.stats_at(start));
    assert_eq!(one_step.stats_at(start).withdrawals, 2);
}

/// A thread that deposited nothing is granted what other threads deposited: at 20 %, ten
/// requests made on one thread pay for two retries asked on another. And two halves make a
/// whole: at 50 %, one request on each of two threads pays for one retry on a third, although
/// neither thread's stripe holds a whole retry.
#[test]
fn retries_are_paid_by_requests_made_on_other_threads() {
    let start = Instant::now();
    // How many of `asks` retries a new thread is granted.
    let granted_on_a_new_thread = |b: &TrafficBudget, asks: usize| {
        std::thread::scope(|scope| {
            scope
                .spawn(|| (0..asks).filter(|_| b.try_withdraw_at(start)).count())
                .join()
                .unwrap()
        })
    };
    let b = budget(20.0, 0, 10_000);
    std::thread::scope(|scope| {
        scope.spawn(|| (0..10).for_each(|_| b.deposit_at(start)));
    });
    assert_eq!(granted_on_a_new_thread(&b, 5), 2);

    let b = budget(50.0, 0, 10_000);
    std::thread::scope(|scope| {
        scope.spawn(|| b.deposit_at(start));
        scope.spawn(|| b.deposit_at(start));
    });
    assert_eq!(b.stats_at(start).balance, 1);
    assert_eq!(granted_on_a_new_thread(&b, 3), 1);
}

/// A window overdrawn when its period begins (the requests that paid for earlier retries are
/// forgotten before those retries are): new retries are granted only once the period's own
/// requests have paid the debt back. At 100 % over 10 s: one request at 0 s pays for a retry
/// at 5 s; at 10.5 s the request is forgotten and the retry is not, so a first failure then
/// (its request paying the debt) is refused, and so is a retry right after; one more request
/// pays for one retry.
#[test]
fn an_overdrawn_window_grants_nothing_until_it_is_paid_back() {
    let start = Instant::now();
    let at = |ms| start + Duration::from_millis(ms);
    let b = budget(100.0, 0, 10_000);
    b.deposit_at(at(0));
    assert!(b.try_withdraw_at(at(5_000)));
    assert!(!b.deposit_and_try_withdraw_at(at(10_500)));
    assert!(!b.try_withdraw_at(at(10_550)));
    b.deposit_at(at(10_600));
    assert!(b.try_withdraw_at(at(10_700)));
    assert!(!b.try_withdraw_at(at(10_700)));
}

/// A moment from a period that has already been shared out (read before it ended, used after a
/// retry of the next period) is refused, never granted twice; its request still counts, from
/// the next period on (a period's window is counted once, when it begins).
#[test]
fn a_late_moment_is_refused_and_its_request_still_counts() {
    let start = Instant::now();
    let at = |ms| start + Duration::from_millis(ms);
    let b = budget(100.0, 0, 10_000);
    b.deposit_at(at(0));
    b.deposit_at(at(1_500));
    assert!(b.try_withdraw_at(at(1_500)));
    assert!(!b.deposit_and_try_withdraw_at(at(900)));
    let stats = b.stats_at(at(1_500));
    assert_eq!(
        (stats.deposits, stats.withdrawals, stats.refusals),
        (3, 1, 1)
    );
    assert_eq!(stats.balance, 1);
    assert_eq!(b.stats_at(at(2_500)).balance, 2);
}

/// Four threads deciding at once over fifty slot periods, each
/// at its own pace (so moments of a period already shared out arrive late), never overdraw a
/// window. For every period, the retries granted in the window that ends with it are at most
/// 20 % of that window's requests plus the floor (here one retry: 10 a second over 100 ms).
#[test]
fn threads_at_their_own_pace_never_overdraw_a_window() {
    const SLOT_MS: u64 = 10;
    let start = Instant::now();
    let b = budget(20.0, 10, SLOT_MS * TrafficBudget::SLOTS as u64);
    // Per thread: (moment in ms, whether a request was made, whether a retry was granted).
    let events: Vec<(u64, bool, bool)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    (0..2_000u64)
                        .map(|i| {
                            let ms = i / 4;
                            let now = start + Duration::from_millis(ms);
                            match i % 3 {
                                0 => {
                                    b.deposit_at(now);
                                    (ms, true, false)
                                }
                                1 => (ms, true, b.deposit_and_try_withdraw_at(now)),
                                _ => (ms, false, b.try_withdraw_at(now)),
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    let granted = events.iter().filter(|e| e.2).count();
    assert!(granted > 0, "the budget granted nothing");
    let last_period = events.iter().map(|e| e.0 / SLOT_MS).max().unwrap();
    for period in 0..=last_period {
        let window = period.saturating_sub(TrafficBudget::SLOTS as u64 - 1)..=period;
        let in_window = |e: &&(u64, bool, bool)| window.contains(&(e.0 / SLOT_MS));
        let requests = events.iter().filter(in_window).filter(|e| e.1).count();
        let retries = events.iter().filter(in_window).filter(|e| e.2).count();
        assert!(
            retries as f64 <= 0.2 * requests as f64 + 1.0,
            "{retries} retries in the window ending with period {period}, {requests} requests"
        );
    }
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Request,
    Retry,
    FirstFailure,
}

proptest! {
    /// Over any window, the retries granted never exceed `percent ×
    /// requests + min_per_second × ttl`. The window checked ends at each granted retry and
    /// spans `ttl` less one slot (what the budget is sure to still count); its requests are
    /// counted over the full `ttl` before it (what the budget may still count). Requests,
    /// retries and first failures (a deposit and a retry in one step) come mixed.
    #[test]
    fn retries_never_exceed_the_share_of_requests_and_the_floor(
        percent in 0.0f64..=100.0,
        min_per_second in 0u32..20,
        ttl_ms in 10u64..5_000,
        events in prop::collection::vec((0u64..400, 0u8..5), 1..600),
    ) {
        let start = Instant::now();
        let b = budget(percent, min_per_second, ttl_ms);
        let slot_ms = ttl_ms as f64 / TrafficBudget::SLOTS as f64;
        let mut now_ms = 0u64;
        let mut requests: Vec<u64> = Vec::new();
        let mut granted: Vec<u64> = Vec::new();
        for (advance, kind) in events {
            now_ms += advance;
            let now = start + Duration::from_millis(now_ms);
            let event = match kind {
                0..=2 => Event::Request,
                3 => Event::Retry,
                _ => Event::FirstFailure,
            };
            match event {
                Event::Request => {
                    b.deposit_at(now);
                    requests.push(now_ms);
                }
                Event::Retry | Event::FirstFailure => {
                    let granted_now = if let Event::FirstFailure = event {
                        requests.push(now_ms);
                        b.deposit_and_try_withdraw_at(now)
                    } else {
                        b.try_withdraw_at(now)
                    };
                    if !granted_now {
                        continue;
                    }
                    granted.push(now_ms);
                    let t = now_ms as f64;
                    let retries = granted.iter().filter(|&&g| g as f64 > t - (ttl_ms as f64 - slot_ms)).count();
                    let seen = requests.iter().filter(|&&r| r as f64 > t - ttl_ms as f64).count();
                    let bound = percent / 100.0 * seen as f64
                        + f64::from(min_per_second) * ttl_ms as f64 / 1000.0;
                    prop_assert!(
                        retries as f64 <= bound + 1e-9,
                        "{retries} retries at {now_ms} ms > {bound} ({seen} requests)"
                    );
                }
            }
        }
    }
}

mod registry {
    //! Budgets in the registry's configuration: `[budgets.NAME]`, `[policies.X] budget`.

    use std::path::Path;
    use std::time::{Duration, Instant};

    use rebound::config::RegistryConfig;
    use rebound::registry::PolicyRegistry;
    use rebound::{
        reasons, CancelReason, Decision, DecisionContext, Outcome, Request, RequestType, RetryError,
    };

    const CONFIG: &str = r#"
default_policy = "kv"
[watch]
enabled = false
[budgets.storm]
percent = 20
min_per_second = 1
ttl_ms = 10_000
[policies.kv]
builtin = "best-effort"
budget = "storm"
[policies.query]
builtin = "exponential"
params = { max_attempts = 10, initial_ms = 1, max_ms = 1, multiplier = 1 }
budget = "storm"
[policies.free]
builtin = "best-effort"
"#;

    fn registry(text: &str) -> PolicyRegistry {
        let config = RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new("."))
            .unwrap_or_else(|e| panic!("{e}"));
        PolicyRegistry::new(config).unwrap()
    }

    /// What happens to a request of policy `policy` after `retries` retries.
    fn decide(registry: &PolicyRegistry, policy: &str, retries: u32) -> Decision {
        let mut request = Request::new(1, RequestType::Get, Duration::from_secs(10))
            .unwrap()
            .with_retry_attempts(retries)
            .with_policy(policy);
        let context = DecisionContext::new(&reasons::KV_TEMPORARY_FAILURE);
        futures::executor::block_on(registry.decide(&mut request, &context))
            .unwrap()
            .decision
    }

    /// A retry refused by an empty budget ends the request as
    /// RequestCanceled with RETRY_BUDGET_EXHAUSTED; two policies share one budget; a policy
    /// without a budget is not limited; the status counts deposits, withdrawals, refusals.
    #[test]
    fn policies_sharing_a_budget_are_refused_once_it_is_spent() {
        let registry = registry(CONFIG);
        // Ten first failures deposit: 20 % of 10 = 2 retries, plus the floor of 1/s × 10 s:
        // 12 retries in the window, the first ten taken by these failures themselves.
        let first: Vec<bool> = (0..10)
            .map(|_| matches!(decide(&registry, "kv", 0), Decision::Retry(_)))
            .collect();
        assert!(first.iter().all(|retried| *retried), "{first:?}");
        // Later retries (not first failures: no deposit) of the other policy draw from the
        // same budget: two are granted, then each is refused.
        let later: Vec<bool> = (0..20)
            .map(|_| match decide(&registry, "query", 3) {
                Decision::Retry(_) => true,
                Decision::Fail(RetryError::RequestCanceled {
                    reason: CancelReason::RetryBudgetExhausted(_),
                    ..
                }) => false,
                other => panic!("a retry or RETRY_BUDGET_EXHAUSTED, got {other:?}"),
            })
            .collect();
        assert_eq!(later.iter().filter(|granted| **granted).count(), 2);
        assert!(later[2..].iter().all(|granted| !granted), "{later:?}");
        assert!(matches!(decide(&registry, "free", 5), Decision::Retry(_)));
        let status = registry.status();
        let storm = &status.budgets[0];
        assert_eq!(storm.name, "storm");
        assert_eq!(storm.policies, ["kv", "query"]);
        assert_eq!(
            (storm.deposits, storm.withdrawals, storm.refusals),
            (10, 12, 18)
        );
        assert_eq!(storm.balance, 0);
        assert_eq!(status.policies[1].name, "kv");
        assert_eq!(status.policies[1].budget.as_deref(), Some("storm"));
        assert_eq!(registry.policy_status("free").unwrap().budget, None);
    }

    /// A configuration reload that keeps a budget's parameters keeps its balance; unknown
    /// budgets and out-of-range values are refused naming the field.
    #[test]
    fn budgets_are_kept_across_reloads_and_bad_ones_refused() {
        let registry = registry(CONFIG);
        for _ in 0..10 {
            let _ = decide(&registry, "kv", 0);
        }
        let config =
            RegistryConfig::parse(CONFIG, Path::new("rebound.toml"), Path::new(".")).unwrap();
        registry.apply(config).unwrap();
        assert_eq!(registry.status().budgets[0].withdrawals, 10);
        assert_eq!(registry.status().budgets[0].balance, 2);

        let parse = |text: &str| {
            RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new(".")).unwrap_err()
        };
        let e = parse(
            "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\nbudget = \"nope\"\n",
        );
        assert_eq!((e.line, e.field.as_str()), (4, "policies.p.budget"), "{e}");
        let e = parse("default_policy = \"p\"\n[budgets.b]\npercent = 150\n[policies.p]\nbuiltin = \"best-effort\"\nbudget = \"b\"\n");
        assert_eq!(e.field, "budgets.b.percent", "{e}");
        assert!(e.message.contains("0 to 100"), "{e}");
        let e = parse("default_policy = \"p\"\n[budgets.b]\npercnt = 15\n[policies.p]\nbuiltin = \"best-effort\"\n");
        assert!(e.message.contains("percnt"), "{e}");
    }

    /// docs/registry.md "Retry budgets" (`per`): a budget kept per client gives each value of
    /// the client-context entry a budget of its own, so one client's storm of retries refuses
    /// only its own; requests naming no client share the common one; the status counts every
    /// client's.
    #[test]
    fn a_budget_kept_per_client_refuses_only_the_client_that_spent_it() {
        let registry = registry(
            "default_policy = \"kv\"\n\
             [budgets.storm]\npercent = 10\nmin_per_second = 0\nper = \"client_context.client\"\n\
             [policies.kv]\nbuiltin = \"best-effort\"\nbudget = \"storm\"\n",
        );
        let decide_as = |client: Option<&str>, retries: u32| {
            let mut request = Request::new(1, RequestType::Get, Duration::from_secs(10))
                .unwrap()
                .with_retry_attempts(retries);
            if let Some(client) = client {
                request = request.with_client_context("client", client);
            }
            let context = DecisionContext::new(&reasons::KV_TEMPORARY_FAILURE);
            let decision = futures::executor::block_on(registry.decide(&mut request, &context))
                .unwrap()
                .decision;
            matches!(decision, Decision::Retry(_))
        };
        let succeeded = |client: &str| {
            let request = Request::new(1, RequestType::Get, Duration::from_secs(10))
                .unwrap()
                .with_client_context("client", client);
            (registry.controls(&request)).report(
                &request,
                Outcome::Succeeded { attempts: 1 },
                Instant::now(),
            );
        };
        // Each client's 20 requests that succeeded pay for two retries (10 %).
        for _ in 0..20 {
            succeeded("noisy");
            succeeded("quiet");
        }
        let noisy = (0..1000).filter(|_| decide_as(Some("noisy"), 2)).count();
        assert_eq!(noisy, 2, "noisy's storm is refused past what it paid for");
        let quiet = (0..5).filter(|_| decide_as(Some("quiet"), 2)).count();
        assert_eq!(quiet, 2, "quiet is refused nothing of what it paid for");
        // Requests naming no client draw from the common budget, which nobody paid into.
        assert!(!decide_as(None, 2));
        let storm = &registry.status().budgets[0];
        assert_eq!(storm.per.as_deref(), Some("client_context.client"));
        assert_eq!(storm.clients, 2);
        assert_eq!(
            (storm.deposits, storm.withdrawals, storm.refusals),
            (40, 4, 998 + 3 + 1)
        );
    }

    /// `per` and `max_clients` are checked when the configuration loads, naming the field.
    #[test]
    fn a_bad_per_client_budget_is_refused_naming_the_field() {
        let parse = |budget: &str| {
            RegistryConfig::parse(
                &format!("default_policy = \"p\"\n[budgets.b]\n{budget}\n[policies.p]\nbuiltin = \"best-effort\"\nbudget = \"b\"\n"),
                Path::new("rebound.toml"),
                Path::new("."),
            )
            .unwrap_err()
        };
        let e = parse("per = \"tenant\"");
        assert_eq!(e.field, "budgets.b.per", "{e}");
        assert!(e.message.contains("client_context.KEY"), "{e}");
        let e = parse("per = \"client_context.tenant\"\nmax_clients = 0");
        assert_eq!(e.field, "budgets.b.max_clients", "{e}");
        let e = parse("max_clients = 10");
        assert_eq!(e.field, "budgets.b.max_clients", "{e}");
        assert!(e.message.contains("per client"), "{e}");
    }

    /// The example of docs/registry.md "Retry budgets" is a valid configuration.
    #[test]
    fn the_documented_example_parses() {
        let block = super::common::toml_block_after(
            include_str!("../../docs/registry.md"),
            "### Retry budgets",
        );
        let config = RegistryConfig::parse(
            &format!("default_policy = \"kv\"\n{block}"),
            Path::new("registry.md"),
            Path::new("."),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            config.policy_controls["kv"].budget.as_deref(),
            Some("storm")
        );
        assert_eq!(config.budgets["storm"], rebound::BudgetConfig::default());
    }
}

mod guard {
    //! The safety guard beside a budget: a first failure that schedules a retry deposits in
    //! the same step as it withdraws, one that is refused deposits alone.

    use super::budget;
    use super::common::always_retry;
    use std::sync::Arc;
    use std::time::Duration;

    use futures::FutureExt;
    use rebound::{
        reasons, CancelReason, Decision, DecisionContext, Request, RequestType, RetryError,
    };

    /// Reference 001 "Retry Orchestration" (a non-idempotent request is retried only for a
    /// reason that allows it), with a budget: the upsert's retry after a socket closed in
    /// flight is refused as unsafe, its first failure is deposited and nothing is withdrawn;
    /// the same retry of a get is granted and withdrawn.
    #[test]
    fn an_unsafe_retry_is_refused_and_its_first_failure_still_deposits() {
        let b = Arc::new(budget(100.0, 10, 10_000));
        let orchestrator = always_retry(1).with_budget(Arc::clone(&b));
        let reason = &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;

        let mut upsert = Request::new(1, RequestType::Upsert, Duration::from_secs(10)).unwrap();
        let decision = orchestrator
            .decide(&mut upsert, &DecisionContext::new(reason))
            .now_or_never();
        assert!(
            matches!(
                decision,
                Some(Decision::Fail(RetryError::RequestCanceled {
                    reason: CancelReason::UnsafeRetryRefused(_),
                    ..
                }))
            ),
            "{decision:?}"
        );
        let stats = b.stats_at(upsert.start());
        assert_eq!((stats.deposits, stats.withdrawals), (1, 0));

        let mut get = Request::new(2, RequestType::Get, Duration::from_secs(10)).unwrap();
        let decision = orchestrator
            .decide(&mut get, &DecisionContext::new(reason))
            .now_or_never();
        assert!(matches!(decision, Some(Decision::Retry(_))), "{decision:?}");
        let stats = b.stats_at(get.start());
        assert_eq!((stats.deposits, stats.withdrawals), (2, 1));
    }
}
