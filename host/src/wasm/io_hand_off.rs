//! A call that runs long on a worker of a multi-threaded tokio runtime must not stop the
//! runtime's I/O. The worker that was polling the runtime's I/O driver when the call's task
//! woke keeps the driver's turn while it runs the call, and tokio's idle workers sleep without
//! taking it over: a policy spinning to a deadline of seconds would hold every socket and
//! signal of the application for that long. A call still running a few epoch ticks after it
//! started therefore wakes an idle worker, which, finding no other work, parks on the driver.
//! An honest call ends long before and never comes here.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Epoch ticks into a call (setup or decision) after which it hands the I/O off.
pub(super) const HAND_OFF_TICKS: u64 = 2;

/// On the call's thread, inside a multi-threaded tokio runtime: wakes one of its idle workers.
/// A task spawned from this worker would wait in its own queue, so the empty task is spawned
/// from one of the runtime's blocking threads (inside the runtime too), whose spawns wake an
/// idle worker.
pub(super) fn hand_off_io() {
    let Ok(handle) = Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() == RuntimeFlavor::MultiThread {
        drop(handle.spawn_blocking(|| drop(tokio::spawn(async {}))));
    }
}
