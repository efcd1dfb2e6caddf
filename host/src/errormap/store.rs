//! Per-node error maps (reference 004 "Control Flow" step 3, "Questions": the highest revision
//! a node has sent is the one used).

use std::collections::HashMap;
use std::sync::Arc;

use super::model::{ErrorMap, ErrorMapError};

/// The result of offering a map for a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// The map was installed for the node.
    Installed,
    /// The node already has a map of this or a higher revision, which stays.
    KeptCurrent {
        /// The revision that stays.
        revision: u32,
    },
}

/// The error maps of every node.
#[derive(Debug, Default, Clone)]
pub struct ErrorMapStore {
    maps: HashMap<String, Arc<ErrorMap>>,
}

impl ErrorMapStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers `map` for `node`: installed unless the node has one of the same or a higher
    /// revision.
    pub fn offer(&mut self, node: &str, map: ErrorMap) -> Offer {
        match self.maps.get(node) {
            Some(current) if current.revision() >= map.revision() => Offer::KeptCurrent {
                revision: current.revision(),
            },
            _ => {
                self.maps.insert(node.to_owned(), Arc::new(map));
                Offer::Installed
            }
        }
    }

    /// Parses `json` and offers it for `node`. A corrupt map is rejected with the parse error
    /// and the node keeps the map it had.
    pub fn offer_json(&mut self, node: &str, json: &str) -> Result<Offer, ErrorMapError> {
        let map = ErrorMap::parse(json)?;
        Ok(self.offer(node, map))
    }

    /// The map of `node`.
    pub fn get(&self, node: &str) -> Option<&Arc<ErrorMap>> {
        self.maps.get(node)
    }
}
