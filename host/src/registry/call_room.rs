//! [`CallRoom`]: what one policy version may take of the isolation's threads, and whether its
//! calls run on the deciding thread instead. A version's
//! calls share its room, and a version swapped in starts with a room of its own, so the room
//! lives as long as its version does (`PolicyVersion::call_room`).

use std::sync::Arc;

use super::time_share::TimeShare;
use super::trust::Trust;

/// What one version may take of the isolation's threads.
pub(super) struct CallRoom {
    /// Places for calls running at once.
    pub places: Arc<tokio::sync::Semaphore>,
    /// The threads' time its calls may take; `None`: no limit.
    pub share: Option<TimeShare>,
    /// Whether its calls may run on the deciding thread instead.
    pub trust: Trust,
}
