//! [`CallRoom`]: what one policy version may take of the isolation's threads, and whether its
//! calls run on the deciding thread instead; [`CallRooms`]: the isolation's rooms, one per
//! version it has called. A version's calls share its room, and a version swapped in starts
//! with a room of its own; a room is dropped once its version is.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::time_share::TimeShare;
use super::trust::Trust;
use crate::mutex::lock;

/// What one version may take of the isolation's threads.
pub(super) struct CallRoom {
    /// Places for calls running at once.
    pub places: Arc<tokio::sync::Semaphore>,
    /// The threads' time its calls may take; `None`: no limit.
    pub share: Option<TimeShare>,
    /// Whether its calls may run on the deciding thread instead.
    pub trust: Trust,
}

/// The rooms of the versions the isolation has called, keyed by the version's allocation.
///
/// An entry holds its version weakly: the version's life is the registry's to decide, and
/// while the weak reference lasts the allocation (not the version) is kept, so no other
/// version can take its address. Rooms of dropped versions go when a version makes its first
/// call, so the map holds at most the versions alive then, plus those dropped since.
#[derive(Default)]
pub(super) struct CallRooms {
    rooms: Mutex<HashMap<usize, Held>>,
}

/// A room and the version it is for (held only to keep its allocation).
type Held = (Weak<dyn Send + Sync>, Arc<CallRoom>);

impl CallRooms {
    /// The room of `version`, made with `make` by its first call.
    pub(super) fn of<V: Send + Sync + 'static>(
        &self,
        version: &Arc<V>,
        make: impl FnOnce() -> CallRoom,
    ) -> Arc<CallRoom> {
        let key = Arc::as_ptr(version) as *const () as usize;
        let mut rooms = lock(&self.rooms);
        if let Some((_, room)) = rooms.get(&key) {
            // The key's allocation is alive (the caller holds it) and held by the entry's weak
            // reference since the entry was made: it is this version's room.
            return Arc::clone(room);
        }
        rooms.retain(|_, (owner, _)| owner.strong_count() > 0);
        let room = Arc::new(make());
        let weak: Weak<V> = Arc::downgrade(version);
        let owner: Weak<dyn Send + Sync> = weak;
        rooms.insert(key, (owner, Arc::clone(&room)));
        room
    }

    /// How many rooms are held (those of dropped versions included until the next sweep).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        lock(&self.rooms).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version: any allocation the registry keeps alive while the version serves.
    fn version() -> Arc<String> {
        Arc::new("p".to_owned())
    }

    fn new_room() -> CallRoom {
        CallRoom {
            places: Arc::new(tokio::sync::Semaphore::new(1)),
            share: None,
            trust: Trust::new(),
        }
    }

    /// docs/serve.md "Policy isolation": a version's calls share one room, and a version
    /// swapped in starts with a room of its own.
    #[test]
    fn a_version_s_calls_share_its_room_and_another_version_has_its_own() {
        let rooms = CallRooms::default();
        let (first, second) = (version(), version());
        let room = rooms.of(&first, new_room);
        assert!(Arc::ptr_eq(&room, &rooms.of(&first, || unreachable!())));
        assert!(!Arc::ptr_eq(&room, &rooms.of(&second, new_room)));
    }

    /// A room is freed once its version is dropped (swapped out and out of rollback): the next
    /// version's first call sweeps it, so rooms do not grow with the swaps.
    #[test]
    fn the_room_of_a_dropped_version_is_freed() {
        let rooms = CallRooms::default();
        for _ in 0..100 {
            let version = version();
            let room = rooms.of(&version, new_room);
            assert_eq!(Arc::strong_count(&room), 2, "the map's and this one");
        }
        assert_eq!(rooms.held(), 1, "only the last version's room is left");
        let kept = version();
        let kept_room = rooms.of(&kept, new_room);
        rooms.of(&version(), new_room);
        assert_eq!(rooms.held(), 2, "a live version's room stays");
        assert!(Arc::ptr_eq(&kept_room, &rooms.of(&kept, || unreachable!())));
    }
}
