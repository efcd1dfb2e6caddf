//! Decision IDs: every decision the registry makes carries a unique, time-ordered ID, so an
//! answer, a log line and a metric exemplar name the same decision, and sorting IDs sorts
//! decisions. An ID is a UUIDv7 (RFC 9562): the Unix millisecond, then a process-wide sequence
//! (one atomic add, no lock) and a per-process random salt.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The sequence's bits: it starts at a random value below 2^61, so it never wraps.
const SEQUENCE_BITS: u32 = 62;
/// Random bits per process after the sequence, apart from the version and variant.
const SALT_BITS: u32 = 74 - SEQUENCE_BITS;

/// The next sequence number, and this process's salt, both random at first use.
static SEQUENCE: LazyLock<(AtomicU64, u128)> = LazyLock::new(|| {
    (
        AtomicU64::new(fastrand::u64(..1 << (SEQUENCE_BITS - 1))),
        u128::from(fastrand::u16(..)) & ((1 << SALT_BITS) - 1),
    )
});

/// A decision's unique, time-ordered ID (a UUIDv7, written `0193…-7…-…`). IDs made by one
/// process compare, as numbers and as strings, in the order they were made (within the
/// clock's millisecond, by sequence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DecisionId(u128);

impl DecisionId {
    /// A new ID, at the system clock's time.
    pub fn next() -> DecisionId {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        DecisionId::at_unix_ms(u64::try_from(millis).unwrap_or(u64::MAX))
    }

    /// A new ID for a decision made `unix_ms` milliseconds after the Unix epoch.
    pub fn at_unix_ms(unix_ms: u64) -> DecisionId {
        let (sequence, salt) = &*SEQUENCE;
        let n = u128::from(sequence.fetch_add(1, Ordering::Relaxed));
        // 48 bits of milliseconds, version 7, the sequence's top 12 bits (rand_a), variant
        // 0b10, the sequence's other 50 bits and the salt (rand_b).
        let millis = u128::from(unix_ms) & ((1 << 48) - 1);
        let rand_a = (n >> (SEQUENCE_BITS - 12)) & 0xfff;
        let rand_b = ((n & ((1 << (SEQUENCE_BITS - 12)) - 1)) << SALT_BITS) | salt;
        DecisionId((millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b)
    }

    /// The millisecond after the Unix epoch it was made at.
    pub fn unix_ms(self) -> u64 {
        (self.0 >> 80) as u64
    }

    /// Its 128 bits.
    pub fn as_u128(self) -> u128 {
        self.0
    }
}

impl fmt::Display for DecisionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&uuid::Uuid::from_u128(self.0).hyphenated(), f)
    }
}

impl serde::Serialize for DecisionId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
