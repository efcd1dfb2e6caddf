//! What the end-to-end tests run against: a real memcached and a fault-injecting proxy.

pub(crate) mod proxy;
pub(crate) mod server;
