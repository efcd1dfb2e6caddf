//! Retry budgets proportional to traffic (Finagle's `RetryBudget`, tower's `TpsBudget`, gRFC
//! A6's throttling): each request deposits, each retry withdraws, and a floor per second lets
//! a quiet client retry at all. What was deposited and withdrawn is forgotten after `ttl`, over
//! a window of [`TrafficBudget::SLOTS`] slots, so the budget follows the traffic of the last `ttl`.
//!
//! Over the `ttl` window counted at the moment of any retry, the retries granted never exceed
//! `percent / 100 × requests + min_per_second × ttl` (tested by a property test).
//!
//! Deposits are lock-free and striped: each slot is one atomic word holding its period and its
//! balance, and each thread adds to its stripe's (one stripe per core, up to `MOST_STRIPES`), so
//! threads reporting at once do not contend for one cache line. Withdrawals are serialised by
//! one lock per budget, as tower's `TpsBudget` serialises its own: under it a withdrawal sums
//! the window's slots of every stripe and, if they hold a retry, subtracts it from its own
//! stripe. Deposits only add, so a sum read while others deposit can only undercount: together
//! the withdrawals never grant more than the window holds. Time is an argument (`*_at(now)`),
//! so simulations and replays stay deterministic.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use serde::Deserialize;

use crate::striped::Striped;
use crate::thread_counts::ThreadCounts;

/// How many slots the `ttl` window is divided into.
const SLOTS: usize = TrafficBudget::SLOTS;

/// Units a request deposits, so that a percent's withdrawal is a whole number of units.
const DEPOSIT: i32 = 100;

/// The most stripes a budget has, however many cores: a withdrawal reads `stripes × SLOTS`
/// words.
const MOST_STRIPES: usize = 8;

/// The most units one withdrawal may take; a smaller percent counts as 0 (no share of the
/// traffic, the floor only), which is never more generous than asked.
const MOST_UNITS: i64 = i32::MAX as i64 / 4;

/// A budget's parameters, as in `[budgets.NAME]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetConfig {
    /// Retries allowed as a percentage of requests (0 to 100).
    pub percent: f64,
    /// Retries allowed per second whatever the traffic (the floor).
    pub min_per_second: u32,
    /// How long a deposit or withdrawal counts, in milliseconds (at least [`TrafficBudget::SLOTS`]).
    pub ttl_ms: u64,
}

impl Default for BudgetConfig {
    /// Finagle's default: 20 % of requests and 10 retries a second over 10 seconds.
    fn default() -> Self {
        BudgetConfig {
            percent: 20.0,
            min_per_second: 10,
            ttl_ms: 10_000,
        }
    }
}

/// A budget configuration that was refused: the field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BudgetConfigError {
    /// `percent`, `min_per_second` or `ttl_ms`.
    pub field: &'static str,
    /// What was expected.
    pub message: String,
}

impl BudgetConfig {
    /// Checks the ranges: `percent` within 0–100, `ttl_ms` at least [`TrafficBudget::SLOTS`] ms.
    pub fn validate(&self) -> Result<(), BudgetConfigError> {
        if !(0.0..=100.0).contains(&self.percent) {
            return Err(BudgetConfigError {
                field: "percent",
                message: format!("{} is out of range; expected 0 to 100", self.percent),
            });
        }
        if self.ttl_ms < SLOTS as u64 {
            return Err(BudgetConfigError {
                field: "ttl_ms",
                message: format!("{} is too short; expected at least {SLOTS}", self.ttl_ms),
            });
        }
        Ok(())
    }
}

/// A retry budget proportional to traffic.
///
/// ```
/// use std::time::{Duration, Instant};
/// use rebound::{BudgetConfig, TrafficBudget};
///
/// let start = Instant::now();
/// let config = BudgetConfig { percent: 20.0, min_per_second: 0, ttl_ms: 10_000 };
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
    /// Serialises withdrawals; holds the latest period a retry was asked in, so that a moment
    /// of an earlier one (read before that period began, used after) is refused.
    withdrawals: Mutex<u32>,
    /// Deposits, withdrawals and refusals, counted per thread.
    counts: ThreadCounts<3>,
    /// Its name in logs.
    name: String,
    /// Whether its last answer was a refusal: the change either way is logged, once.
    exhausted: AtomicBool,
}

/// What a budget has counted since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// One stripe of a budget: the slots the threads mapped to it write.
#[derive(Default)]
struct Stripe {
    /// Per slot: the period it holds (high 32 bits) and its balance in units (low 32 bits).
    slots: [AtomicU64; SLOTS],
}

/// The counters' places in [`TrafficBudget::counts`].
const DEPOSITS: usize = 0;
const WITHDRAWALS: usize = 1;
const REFUSALS: usize = 2;

impl Stripe {
    /// Adds `units` (negative for a withdrawal) to the slot of `period`, starting it afresh if
    /// it held an older period; dropped if the slot already holds a newer one (a moment read
    /// `ttl` before it landed). True if added.
    fn add(&self, period: u32, units: i32) -> bool {
        let slot = &self.slots[period as usize % SLOTS];
        // Relaxed: a deposit read by a withdrawal or not is equally safe (an undercount), and
        // the withdrawals' lock orders each withdrawal's write before the next one's reads.
        slot.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |word| {
            let (held, balance) = unpack(word);
            match held.wrapping_sub(period) as i32 {
                0 => Some(pack(period, balance.saturating_add(units))),
                newer if newer > 0 => None,
                _ => Some(pack(period, units)),
            }
        })
        .is_ok()
    }
}

fn pack(period: u32, balance: i32) -> u64 {
    (u64::from(period) << 32) | u64::from(balance as u32)
}

fn unpack(word: u64) -> (u32, i32) {
    ((word >> 32) as u32, word as u32 as i32)
}

impl TrafficBudget {
    /// How many slots the `ttl` window is divided into: a deposit or withdrawal is forgotten
    /// between `ttl × (SLOTS − 1) / SLOTS` and `ttl` after it was made.
    pub const SLOTS: usize = 10;

    /// A budget; its slots are counted from the first moment it is used.
    pub fn new(config: BudgetConfig) -> Result<Self, BudgetConfigError> {
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
            stripes: Striped::new(MOST_STRIPES),
            withdrawals: Mutex::new(0),
            counts: ThreadCounts::default(),
            name: String::new(),
            exhausted: AtomicBool::new(false),
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

    /// What the window that ends in `period` holds, the reserve left out: every stripe's slots
    /// from `period` and the `SLOTS - 1` periods before it.
    fn held_in_window(&self, period: u32) -> i64 {
        (self.stripes.iter())
            .flat_map(|stripe| &stripe.slots)
            .map(|slot| unpack(slot.load(Ordering::Relaxed)))
            .filter(|(held, _)| (period.wrapping_sub(*held) as usize) < SLOTS)
            .map(|(_, balance)| i64::from(balance))
            .sum()
    }

    /// A request was made at `now`.
    pub fn deposit_at(&self, now: Instant) {
        let stripe = self.stripes.mine();
        if self.deposit > 0 {
            let _ = stripe.add(self.period(now), self.deposit);
        }
        self.counts.add_one(DEPOSITS);
    }

    /// Asks for one retry at `now`: true (and withdrawn) if the budget holds it.
    ///
    /// Threads withdrawing at once never overdraw the budget together: withdrawals take turns.
    /// A moment that falls in a slot period before one a retry was already asked in (read
    /// before that period began, used after) is refused.
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
        let mine = self.stripes.mine();
        let granted = {
            let mut latest = self
                .withdrawals
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Periods compare as the slots' do, in 32 bits that wrap around.
            let late = (period.wrapping_sub(*latest) as i32) < 0;
            if !late {
                *latest = period;
            }
            let window = self.reserve + self.held_in_window(period) + i64::from(deposit);
            if !late && window >= i64::from(self.withdrawal) {
                // Not added (so not granted) if its slot holds a later period.
                mine.add(period, deposit - self.withdrawal)
            } else {
                // Refused, never more generous; the deposit still counts.
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
                tracing::info!(budget = %self.name, "retry budget has room again");
            }
            return true;
        }
        // One line when it runs dry, not one per refused retry (a storm would flood the log).
        if !self.exhausted.load(Ordering::Relaxed) && !self.exhausted.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(budget = %self.name, percent = self.config.percent,
                min_per_second = self.config.min_per_second, ttl_ms = self.config.ttl_ms,
                "retry budget exhausted: retries are refused (RETRY_BUDGET_EXHAUSTED) until requests refill it");
        }
        false
    }

    /// The counters, and the retries it would grant at `now`.
    pub fn stats_at(&self, now: Instant) -> BudgetStats {
        let balance = (self.reserve + self.held_in_window(self.period(now))).max(0);
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
