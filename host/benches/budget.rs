//! What a retry budget adds to a decision, and what an outcome report costs,
//! single-threaded and with two threads contending on one budget, measured in one run
//! beside the decision without a budget and printed as a table with ratios.
//! Run: `env -u RUST_BACKTRACE cargo bench -p rebound-core --bench budget`.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use futures::FutureExt;
use rebound::{
    reasons, BudgetConfig, Decision, DecisionContext, Orchestrator, Outcome, Request, RequestType,
    TrafficBudget,
};

#[path = "support/measure.rs"]
mod measure;
use measure::{contended, measure_interleaved};

/// A budget that always has room for a first failure's retry: at 100 % a request's deposit
/// pays for exactly one retry, so the balance never runs down.
fn budget() -> Arc<TrafficBudget> {
    let config = BudgetConfig::new(100.0, 10, 10_000);
    Arc::new(TrafficBudget::new(config).unwrap())
}

/// One decision of a first failure (KV_LOCKED, retried by best effort) at the request's start.
fn decide(orchestrator: &Orchestrator, template: &Request, budget: Option<&TrafficBudget>) {
    decide_at(orchestrator, template, budget, true);
}

/// One decision of a first failure, at the request's start or (`fixed` false) at the clock's
/// now, read by the orchestrator as a caller that fixes no moment has it.
fn decide_at(
    orchestrator: &Orchestrator,
    template: &Request,
    budget: Option<&TrafficBudget>,
    fixed: bool,
) {
    let mut request = template.clone();
    let context = DecisionContext::new(&reasons::KV_LOCKED).with_budget(budget);
    let context = if fixed {
        context.at(template.start())
    } else {
        context
    };
    let decision = orchestrator
        .decide(&mut request, &context)
        .now_or_never()
        .expect("synchronous strategy");
    black_box(matches!(decision, Decision::Retry(_)));
}

/// Mean time per call of `f` run `iters` times on one thread while `meanwhile` runs in a loop
/// on another until it ends. Both are new threads that first use a budget one after the
/// other, so they write to different stripes of it.
fn beside(iters: u32, f: impl Fn() + Sync, meanwhile: impl Fn() + Sync) -> Duration {
    let done = AtomicBool::new(false);
    let start = Barrier::new(2);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            start.wait();
            while !done.load(Ordering::Relaxed) {
                meanwhile();
            }
        });
        scope
            .spawn(|| {
                start.wait();
                let began = Instant::now();
                for _ in 0..iters {
                    f();
                }
                let took = began.elapsed() / iters;
                done.store(true, Ordering::Relaxed);
                took
            })
            .join()
            .unwrap()
    })
}

fn main() {
    let orchestrator = Orchestrator::default();
    let template = Request::new(1, RequestType::Get, Duration::from_secs(10)).unwrap();
    let with_budget = budget();
    // The rows that read the clock have a budget of their own: their moments and the fixed
    // ones fall into different slots.
    let with_budget_now = budget();
    let reports = budget();
    // Withdrawals alone, from a floor too large to run out during the run.
    let floor = Arc::new(TrafficBudget::new(BudgetConfig::new(100.0, 10_000_000, 10_000)).unwrap());
    let now = Instant::now();
    let (rounds, iters) = (31, 200_000);
    let times = measure_interleaved(
        rounds,
        iters,
        &mut [
            &mut || decide(&orchestrator, &template, None),
            &mut || decide(&orchestrator, &template, Some(&with_budget)),
            &mut || Outcome::Succeeded { attempts: 1 }.record_in(black_box(&reports), now),
            &mut || {
                Outcome::Succeeded { attempts: 1 }.record_in(black_box(&reports), Instant::now())
            },
            &mut || {
                black_box(floor.try_withdraw_at(now));
            },
            &mut || decide_at(&orchestrator, &template, None, false),
            &mut || decide_at(&orchestrator, &template, Some(&with_budget_now), false),
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    let [bare, budgeted, report, report_clock] = [times[0], times[1], times[2], times[3]];
    // Two threads at once, the two rows taking turns round by round; the medians.
    let (mut contended_bare, mut contended_budgeted) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        contended_bare.push(contended(2, 400_000, || {
            decide(&orchestrator, &template, None)
        }));
        contended_budgeted.push(contended(2, 400_000, || {
            decide(&orchestrator, &template, Some(&with_budget))
        }));
    }
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (contended_bare, contended_budgeted) = (median(contended_bare), median(contended_budgeted));
    let contended_report = contended(2, 2_000_000, || {
        Outcome::Succeeded { attempts: 1 }.record_in(black_box(&reports), now)
    });
    // The worst case: every retry paid by requests made on another thread, in the period
    // they were made (a window of 11 days: the period never ends), so each withdrawal takes
    // from the other thread's stripe while that thread deposits into it.
    let paid_elsewhere =
        Arc::new(TrafficBudget::new(BudgetConfig::new(100.0, 0, 1_000_000_000)).unwrap());
    let taken_elsewhere = beside(
        2_000_000,
        || {
            black_box(paid_elsewhere.try_withdraw_at(now));
        },
        || paid_elsewhere.deposit_at(now),
    );
    println!("| what | ns per call | added by the budget (ns) |");
    println!("| --- | ---: | ---: |");
    println!("| decision, no budget (1 thread) | {:.1} | |", ns(bare));
    println!(
        "| decision with a budget: deposit + withdraw (1 thread) | {:.1} | {:.1} |",
        ns(budgeted),
        ns(budgeted) - ns(bare)
    );
    println!(
        "| outcome report, time given (1 thread) | {:.1} | {:.1} |",
        ns(report),
        ns(report)
    );
    println!(
        "| outcome report, clock read (1 thread) | {:.1} | {:.1} |",
        ns(report_clock),
        ns(report_clock)
    );
    println!(
        "| a withdrawal alone, time given (1 thread) | {:.1} | {:.1} |",
        ns(times[4]),
        ns(times[4])
    );
    println!(
        "| decision, no budget, the clock read (1 thread) | {:.1} | |",
        ns(times[5])
    );
    println!(
        "| decision with a budget, the clock read (1 thread) | {:.1} | {:.1} |",
        ns(times[6]),
        ns(times[6]) - ns(times[5])
    );
    println!(
        "| decision, no budget (2 threads) | {:.1} | |",
        ns(contended_bare)
    );
    println!(
        "| decision with one budget (2 threads) | {:.1} | {:.1} |",
        ns(contended_budgeted),
        ns(contended_budgeted) - ns(contended_bare)
    );
    println!(
        "| outcome report on one budget (2 threads) | {:.1} | {:.1} |",
        ns(contended_report),
        ns(contended_report)
    );
    println!(
        "| a withdrawal paid by another thread's requests, made meanwhile (2 threads) | {:.1} | {:.1} |",
        ns(taken_elsewhere),
        ns(taken_elsewhere)
    );
    println!(
        "budget stats: decisions {:?}; decisions, clock read {:?}; reports {:?}; paid by another thread {:?}",
        with_budget.stats_at(Instant::now()),
        with_budget_now.stats_at(Instant::now()),
        reports.stats_at(Instant::now()),
        paid_elsewhere.stats_at(now),
    );
}
