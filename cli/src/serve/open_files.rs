//! The connection cap against the process's open-file limit (`ulimit -n`): each connection
//! holds two file descriptors (measured: 100 connections open 200 more), and the server needs
//! some of its own (the listener, the event loop, the log, watched and policy files). At start
//! the soft limit is raised towards the hard one if the cap needs it, and where even that is too
//! low the cap is lowered to what fits, with the arithmetic in the log, so that the cap means
//! what it says instead of accepts failing past it.

/// File descriptors one connection holds.
pub const PER_CONNECTION: u64 = 2;

/// Descriptors kept free beside the connections and those already open at start (files a
/// reload opens, the artifact cache, the decision log's rotations).
pub const RESERVE: u64 = 64;

/// The connection cap that fits the open-file limit, `wanted` when it does.
pub fn fit(wanted: u32) -> anyhow::Result<u32> {
    let open_now = std::fs::read_dir("/proc/self/fd").map_or(16, |dir| dir.count() as u64);
    let needed = open_now + RESERVE + PER_CONNECTION * u64::from(wanted);
    let (soft, hard) = rlimit::Resource::NOFILE.get()?;
    if needed <= soft {
        return Ok(wanted);
    }
    let raised = needed.min(hard);
    let soft = match rlimit::Resource::NOFILE.set(raised, hard) {
        Ok(()) => {
            tracing::info!(
                from = soft,
                to = raised,
                "raised the open-file limit for the connection cap"
            );
            raised
        }
        Err(error) => {
            tracing::warn!(%error, soft, "cannot raise the open-file limit");
            soft
        }
    };
    if needed <= soft {
        return Ok(wanted);
    }
    let fits = soft.saturating_sub(open_now + RESERVE) / PER_CONNECTION;
    let fits = u32::try_from(fits).unwrap_or(u32::MAX);
    anyhow::ensure!(
        fits >= 1,
        "the open-file limit ({soft}, `ulimit -n`) leaves no room for a connection: {open_now} descriptors are open and {RESERVE} kept in reserve"
    );
    tracing::warn!(
        max_connections = fits,
        asked = wanted,
        "the connection cap is lowered to fit the open-file limit: ({soft} (`ulimit -n`) - {open_now} open - {RESERVE} reserve) / {PER_CONNECTION} per connection = {fits}"
    );
    Ok(fits)
}
