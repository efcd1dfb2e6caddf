//! One stripe of a budget's slots: each slot one atomic word holding its period and its balance,
//! added to, taken from and given back to without a lock. Apart from the budget, which decides
//! what to take from which stripe, so that the word protocol the `loom` models check reads on
//! its own.

use std::sync::atomic::Ordering;

#[cfg(loom)]
use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64;

use super::SLOTS;

/// One stripe of a budget: the slots the threads mapped to it write.
#[derive(Default)]
pub(super) struct Stripe {
    /// Per slot: the period it holds (high 32 bits) and its balance in units (low 32 bits).
    pub(super) slots: [AtomicU64; SLOTS],
}

impl Stripe {
    /// Adds `units` to the slot of `period`, starting it afresh if it held an older period;
    /// dropped if the slot already holds a newer one (a moment read `ttl` before it landed).
    /// True if added.
    pub(super) fn add(&self, period: u32, units: i32) -> bool {
        let slot = &self.slots[period as usize % SLOTS];
        slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let (held, balance) = unpack(word);
            match held.wrapping_sub(period) as i32 {
                0 => Some(pack(period, balance.saturating_add(units))),
                newer if newer > 0 => None,
                _ => Some(pack(period, units)),
            }
        })
        .is_ok()
    }

    /// Takes up to `most` units in `period`, `deposit` added first in the same step, from
    /// what this stripe may grant: its `share` of the window before the period and its
    /// balance in the period. Returns the units taken; nothing is taken (nor deposited) if the
    /// slot already holds a newer period.
    pub(super) fn take(&self, period: u32, share: i64, deposit: i32, most: i32) -> i32 {
        let slot = &self.slots[period as usize % SLOTS];
        let mut taken = 0;
        // Acquire: a period's count that read this slot before the take is read by the take,
        // which so sees the period that count announced (`TrafficBudget::still_in`).
        let _ = slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let (held, balance) = unpack(word);
            let balance = match held.wrapping_sub(period) as i32 {
                0 => balance,
                newer if newer > 0 => {
                    taken = 0;
                    return None;
                }
                _ => 0,
            };
            let room = share + i64::from(balance) + i64::from(deposit);
            taken = room.clamp(0, i64::from(most)) as i32;
            (taken > 0 || deposit != 0).then(|| {
                pack(
                    period,
                    balance.saturating_add(deposit).saturating_sub(taken),
                )
            })
        });
        taken
    }

    /// Its balance in `period` (0 if its slot holds another period), read as the slot's latest
    /// write left it ([`latest`]).
    pub(super) fn balance_in(&self, period: u32) -> i64 {
        let (held, balance) = unpack(latest(&self.slots[period as usize % SLOTS]));
        if held == period {
            i64::from(balance)
        } else {
            0
        }
    }

    /// Gives back `units` taken in `period`, unless the slot moved on (the withdrawal is
    /// forgotten then anyway).
    pub(super) fn give_back(&self, period: u32, units: i32) {
        let slot = &self.slots[period as usize % SLOTS];
        let _ = slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let (held, balance) = unpack(word);
            (held == period).then(|| pack(period, balance.saturating_add(units)))
        });
    }
}

/// `slot`'s latest value in its modification order, by a read-modify-write that changes
/// nothing: a plain load may return an older one. A write to `slot` that comes after this read
/// acquires what the reading thread wrote before it.
pub(super) fn latest(slot: &AtomicU64) -> u64 {
    slot.fetch_add(0, Ordering::AcqRel)
}

pub(super) fn pack(period: u32, balance: i32) -> u64 {
    (u64::from(period) << 32) | u64::from(balance as u32)
}

pub(super) fn unpack(word: u64) -> (u32, i32) {
    ((word >> 32) as u32, word as u32 as i32)
}
