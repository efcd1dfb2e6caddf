//! Retry budgets proportional to traffic (Finagle's `RetryBudget`, tower's `TpsBudget`, gRFC
//! A6's throttling): each request deposits, each retry withdraws, and a floor per second lets
//! a quiet client retry at all. What was deposited and withdrawn is forgotten after `ttl`, over
//! a window of [`TrafficBudget::SLOTS`] slots, so the budget follows the traffic of the last `ttl`.
//!
//! Over the `ttl` window counted at the moment of any retry, the retries granted never exceed
//! `percent / 100 × requests + min_per_second × ttl` (tested by a property test). Deposits and
//! withdrawals are lock-free: each slot is one atomic word holding its period and its balance.
//! The slots are striped: each thread writes to its stripe's (one stripe per core, up to
//! `MOST_STRIPES`), so threads deciding and reporting at once do not contend for one cache
//! line.
//!
//! A withdrawal need not read the other stripes either. When a slot period begins, it is
//! announced; then what the window held before it (the floor and the earlier slots of every
//! stripe) is counted once and shared out among the stripes, and a withdrawal of an earlier
//! period that sees the announcement after taking gives back what it took; within the period a stripe grants retries from its share and
//! its own deposits of the period, and only when those run short does a withdrawal take the rest
//! from the other stripes. Every stripe keeps its share and deposits at or above what it
//! granted, so together they never grant more than the window holds. A period whose window is
//! overdrawn (deposits forgotten before the retries they paid for) has nothing to share: its
//! withdrawals read every stripe. Time is an argument (`*_at(now)`), so simulations and replays
//! stay deterministic.
//!
//! Where a thread writes one word and then reads another that a second thread writes before
//! reading the first (a period's count against a late withdrawal, two overdrawn withdrawals),
//! the reading side reads with a read-modify-write that changes nothing: it reads the word's
//! latest value, and if it comes before the other's write, that write acquires what the reader
//! wrote before. So the protocol needs acquire and release only, which the `loom` models in
//! `loom_models` check over every interleaving (`RUSTFLAGS="--cfg loom"`, docs/decisions.md
//! "Retry budget across cores").

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::field_error::FieldError;
use crate::log_rate_limit::LogRateLimit;
use crate::striped::Striped;
use crate::thread_counts::ThreadCounts;

mod config;
mod stripe;

pub use config::BudgetConfig;
use stripe::{latest, pack, unpack, Stripe};

/// How many slots the `ttl` window is divided into.
const SLOTS: usize = TrafficBudget::SLOTS;

/// Units a request deposits, so that a percent's withdrawal is a whole number of units.
const DEPOSIT: i32 = 100;

/// The most stripes a budget has, however many cores: a period's first withdrawal reads
/// `stripes × SLOTS` words.
const MOST_STRIPES: usize = 8;

/// The most units one withdrawal may take; a smaller percent counts as 0 (no share of the
/// traffic, the floor only), which is never more generous than asked.
const MOST_UNITS: i64 = i32::MAX as i64 / 4;

/// A retry budget proportional to traffic.
///
/// ```
/// use std::time::{Duration, Instant};
/// use rebound::{BudgetConfig, TrafficBudget};
///
/// let start = Instant::now();
/// let config = BudgetConfig::new(20.0, 0, 10_000);
/// let budget = TrafficBudget::new(config).unwrap();
/// for _ in 0..10 {
///     budget.deposit_at(start);
/// }
/// // 20 % of 10 requests: two retries.
/// assert!(budget.try_withdraw_at(start));
/// assert!(budget.try_withdraw_at(start));
/// assert!(!budget.try_withdraw_at(start));
/// // Ten seconds later the requests are forgotten.
/// budget.deposit_at(start + Duration::from_secs(11));
/// assert!(!budget.try_withdraw_at(start + Duration::from_secs(11)));
/// ```
pub struct TrafficBudget {
    config: BudgetConfig,
    /// Where slot periods are counted from: the first moment the budget is used, so that the
    /// same sequence of moments always falls into the same slots (simulations, replays).
    base: OnceLock<Instant>,
    /// `2^64 / slot length in ns`, rounded up: a slot's period is `(ns × this) >> 64`.
    slot_reciprocal: u64,
    /// Units one request deposits (0 when the percent is too small to count).
    deposit: i32,
    /// Units one retry withdraws.
    withdrawal: i32,
    /// The floor: `min_per_second × ttl` retries' worth of units, always in the balance.
    reserve: i64,
    /// The slots, one stripe per core.
    stripes: Striped<Stripe>,
    /// `log2` of the number of stripes.
    stripes_log2: u32,
    /// The latest period a withdrawal was asked in: announced before its window is counted,
    /// so that a withdrawal of an earlier period that the count may have missed sees it.
    announced: AtomicU32,
    /// A period whose window was counted (high 32 bits) and what the window held before it
    /// began, the reserve left out (low 32 bits): counted once per period, then shared out.
    before_period: AtomicU64,
    /// Deposits, withdrawals and refusals, counted per thread.
    counts: ThreadCounts<3>,
    /// Its name in logs.
    name: String,
    /// Whether its last answer was a refusal: the change either way is logged, once.
    exhausted: AtomicBool,
    /// At most one change logged a second: a budget kept at its edge (by a client that
    /// alternates successes and storms) would otherwise log two lines per flip.
    change_lines: LogRateLimit,
}

/// The counters' places in [`TrafficBudget::counts`].
const DEPOSITS: usize = 0;
const WITHDRAWALS: usize = 1;
const REFUSALS: usize = 2;

/// What a budget has counted since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BudgetStats {
    /// Requests deposited.
    pub deposits: u64,
    /// Retries granted.
    pub withdrawals: u64,
    /// Retries refused.
    pub refusals: u64,
    /// Retries the budget would grant now.
    pub balance: u64,
}

impl TrafficBudget {
    /// How many slots the `ttl` window is divided into: a deposit or withdrawal is forgotten
    /// between `ttl × (SLOTS − 1) / SLOTS` and `ttl` after it was made.
    pub const SLOTS: usize = 10;

    /// A budget; its slots are counted from the first moment it is used.
    pub fn new(config: BudgetConfig) -> Result<Self, FieldError> {
        config.validate()?;
        // Units a retry withdraws: DEPOSIT × 100 / percent, rounded up (never generous).
        let share = (f64::from(DEPOSIT) * 100.0 / config.percent).ceil();
        let (deposit, withdrawal) = if share.is_finite() && share <= MOST_UNITS as f64 {
            (DEPOSIT, share as i32)
        } else {
            (0, DEPOSIT)
        };
        // Whole retries of the floor over the window, rounded down (never generous).
        let floor_retries = u64::from(config.min_per_second) * config.ttl_ms / 1000;
        let stripes = Striped::new(MOST_STRIPES);
        let stripes_log2 = stripes.len().trailing_zeros();
        Ok(TrafficBudget {
            config,
            base: OnceLock::new(),
            slot_reciprocal: {
                let slot_nanos = (config.ttl_ms.saturating_mul(1_000_000) / SLOTS as u64).max(2);
                u64::try_from((1u128 << 64).div_ceil(u128::from(slot_nanos))).unwrap_or(u64::MAX)
            },
            deposit,
            withdrawal,
            reserve: i64::try_from(floor_retries)
                .unwrap_or(i64::MAX / 2)
                .saturating_mul(i64::from(withdrawal)),
            stripes,
            stripes_log2,
            // Periods count from the first use: nothing is held before period 0.
            announced: AtomicU32::new(0),
            before_period: AtomicU64::new(pack(0, 0)),
            counts: ThreadCounts::default(),
            name: String::new(),
            exhausted: AtomicBool::new(false),
            change_lines: LogRateLimit::new(1),
        })
    }

    /// Names it in logs (`[budgets.NAME]`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Its name (empty unless [`named`](Self::named)).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its parameters.
    pub fn config(&self) -> BudgetConfig {
        self.config
    }

    /// The slot period `now` falls in (moments before the first use count as the first).
    fn period(&self, now: Instant) -> u32 {
        let base = *self.base.get_or_init(|| now);
        let nanos =
            u64::try_from(now.saturating_duration_since(base).as_nanos()).unwrap_or(u64::MAX);
        // nanos / slot_nanos by a multiplication with the reciprocal (a division costs several
        // times more on the deciding path); it may move a slot boundary by a nanosecond,
        // always the same way for the same moment.
        ((u128::from(nanos) * u128::from(self.slot_reciprocal)) >> 64) as u32
    }

    /// What the window that ends in `period` held before the period began, the reserve left
    /// out: every stripe's slots from the `SLOTS - 1` periods before it, each read as its
    /// latest write left it ([`latest`]).
    fn held_before(&self, period: u32) -> i64 {
        (self.stripes.iter())
            .flat_map(|stripe| &stripe.slots)
            .map(|slot| unpack(latest(slot)))
            .filter(|(held, _)| (1..SLOTS as u32).contains(&period.wrapping_sub(*held)))
            .map(|(_, balance)| i64::from(balance))
            .sum()
    }

    /// What the window held when `period` began, the reserve included, counted once per
    /// period and the same for every withdrawal in it; `None` if a withdrawal of a later
    /// period was already made (a moment read before the period ended but used after).
    /// Periods compare as the slots' do, in 32 bits that wrap around.
    fn window_before(&self, period: u32) -> Option<i64> {
        let mut word = self.before_period.load(Ordering::Acquire);
        loop {
            let (counted, held) = unpack(word);
            match period.wrapping_sub(counted) as i32 {
                0 => return Some(self.reserve + i64::from(held)),
                late if late < 0 => return None,
                _ => {}
            }
            // Announced first, counted after: a withdrawal of an earlier period whose take the
            // count does not read comes after the count in its slot's order, acquires the
            // announcement, sees the new period and is given back (`still_in`).
            let announce = self
                .announced
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
                    (period.wrapping_sub(a) as i32 >= 0).then_some(period)
                });
            if announce.is_err() {
                return None;
            }
            // Counts above what 32 bits hold are cut down, never up.
            let held = self.held_before(period);
            let held = held.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
            match self.before_period.compare_exchange(
                word,
                pack(period, held),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(self.reserve + i64::from(held)),
                Err(current) => word = current,
            }
        }
    }

    /// Every stripe's balance in `period` (its deposits less its withdrawals).
    fn in_period(&self, period: u32) -> i64 {
        self.stripes.iter().map(|s| s.balance_in(period)).sum()
    }

    /// Whether `period` is still the latest one a withdrawal was asked in.
    fn still_in(&self, period: u32) -> bool {
        self.announced.load(Ordering::Acquire) == period
    }

    /// Stripe `index`'s share of `window`: an equal part, the remainder to stripe 0.
    fn share(&self, window: i64, index: usize) -> i64 {
        let each = window >> self.stripes_log2;
        if index == 0 {
            window - (each << self.stripes_log2) + each
        } else {
            each
        }
    }

    /// A request was made at `now`.
    pub fn deposit_at(&self, now: Instant) {
        let (_, stripe) = self.stripes.mine();
        if self.deposit > 0 {
            let _ = stripe.add(self.period(now), self.deposit);
        }
        self.counts.add_one(DEPOSITS);
    }

    /// Asks for one retry at `now`: true (and withdrawn) if the budget holds it.
    ///
    /// Threads withdrawing at once never overdraw the budget together: each stripe grants at
    /// most what it holds, in one atomic step. A moment that falls in a slot period before
    /// one a retry was already asked in (read before that period began, used after) is
    /// refused.
    pub fn try_withdraw_at(&self, now: Instant) -> bool {
        self.withdraw(self.period(now), None)
    }

    /// A request's first failure at `now`: its deposit, then one retry asked for — what
    /// [`deposit_at`](Self::deposit_at) then [`try_withdraw_at`](Self::try_withdraw_at) do, in
    /// one step. True if the retry was granted; the deposit stays either way.
    pub fn deposit_and_try_withdraw_at(&self, now: Instant) -> bool {
        self.withdraw(self.period(now), Some(self.deposit))
    }

    /// Withdraws one retry in `period`, with a request's `deposit` units deposited in the
    /// same step if it is its first failure, and counts and logs the answer.
    fn withdraw(&self, period: u32, first_failure: Option<i32>) -> bool {
        let deposit = first_failure.unwrap_or(0);
        let (index, mine) = self.stripes.mine();
        let granted = match self.window_before(period) {
            Some(window) if window >= 0 => {
                self.withdraw_from_shares(index, period, window, deposit)
            }
            Some(window) => self.withdraw_overdrawn(mine, period, window, deposit),
            None => {
                // Late: the window it belongs to has been shared out already. Refused, never
                // more generous; the deposit still counts.
                if deposit > 0 {
                    let _ = mine.add(period, deposit);
                }
                false
            }
        };
        let answer = if granted { WITHDRAWALS } else { REFUSALS };
        match first_failure {
            Some(_) => self.counts.add_one_to_each(&[DEPOSITS, answer]),
            None => self.counts.add_one(answer),
        }
        if granted {
            if self.exhausted.load(Ordering::Relaxed)
                && self.exhausted.swap(false, Ordering::Relaxed)
            {
                if let Some(left_out) = self.change_lines.allow() {
                    tracing::info!(budget = %self.name, left_out, "retry budget has room again");
                }
            }
            return true;
        }
        // One line when it runs dry, not one per refused retry (a storm would flood the log).
        if !self.exhausted.load(Ordering::Relaxed) && !self.exhausted.swap(true, Ordering::Relaxed)
        {
            if let Some(left_out) = self.change_lines.allow() {
                tracing::warn!(budget = %self.name, percent = self.config.percent,
                    min_per_second = self.config.min_per_second, ttl_ms = self.config.ttl_ms, left_out,
                    "retry budget exhausted: retries are refused (RETRY_BUDGET_EXHAUSTED) until requests refill it");
            }
        }
        false
    }

    /// A withdrawal in a period whose window held `window` units before it: from the calling
    /// thread's stripe first (stripe `index`), the rest from the others in turn; everything
    /// taken is given back if together they hold less than one withdrawal.
    fn withdraw_from_shares(&self, index: usize, period: u32, window: i64, deposit: i32) -> bool {
        let count = self.stripes.len();
        let mut taken = [0i32; MOST_STRIPES];
        let mut total = 0;
        for step in 0..count {
            let at = (index + step) & (count - 1);
            let stripe = self.stripes.get(at);
            let deposit = if step == 0 { deposit } else { 0 };
            taken[at] = stripe.take(
                period,
                self.share(window, at),
                deposit,
                self.withdrawal - total,
            );
            total += taken[at];
            if total == self.withdrawal {
                break;
            }
        }
        if total == self.withdrawal && self.still_in(period) {
            return true;
        }
        for (at, units) in taken.iter().enumerate().take(count) {
            if *units > 0 {
                self.stripes.get(at).give_back(period, *units);
            }
        }
        false
    }

    /// A withdrawal in a period whose window was overdrawn before it (`window` below zero):
    /// made first, then checked against every stripe's balance of the period, and undone if
    /// they leave the window below zero. Of two made at once on two stripes, the second to read
    /// the other's slot reads its withdrawal ([`latest`]).
    fn withdraw_overdrawn(&self, mine: &Stripe, period: u32, window: i64, deposit: i32) -> bool {
        if !mine.add(period, deposit - self.withdrawal) {
            // Its slot holds a later period: nothing was withdrawn, so nothing is granted.
            return false;
        }
        let in_period = self.in_period(period);
        if window + in_period >= 0 && self.still_in(period) {
            return true;
        }
        mine.give_back(period, self.withdrawal);
        false
    }

    /// The counters, and the retries it would grant at `now`.
    pub fn stats_at(&self, now: Instant) -> BudgetStats {
        let period = self.period(now);
        let window = match unpack(self.before_period.load(Ordering::Acquire)) {
            (announced, held) if announced == period => self.reserve + i64::from(held),
            _ => self.reserve + self.held_before(period),
        };
        let in_period = self.in_period(period);
        let balance = (window + in_period).max(0);
        BudgetStats {
            deposits: self.counts.total(DEPOSITS),
            withdrawals: self.counts.total(WITHDRAWALS),
            refusals: self.counts.total(REFUSALS),
            balance: u64::try_from(balance / i64::from(self.withdrawal)).unwrap_or(0),
        }
    }
}

impl fmt::Debug for TrafficBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrafficBudget")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("stats", &self.stats_at(Instant::now()))
            .finish()
    }
}

/// Two budgets are equal when they are the same budget.
impl PartialEq for TrafficBudget {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

#[cfg(all(test, loom))]
mod loom_models;
