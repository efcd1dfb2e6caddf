//! Calls into a component whose instance imports a concurrent function (the host's WASI 0.3
//! denials of async functions): wasmtime requires such a store to be driven as futures, the
//! calls running on a fiber. A decision never waits: every host import answers at once and the
//! call's deadline is a trap, so the future is polled once; one still pending has waited on a
//! WASI 0.3 function, which is a denial.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use super::host_trap::HostTrap;

/// The result of `future`, which must be ready at its first poll.
pub(super) fn drive<T>(future: impl Future<Output = wasmtime::Result<T>>) -> wasmtime::Result<T> {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(HostTrap::Denied(
            "the policy waited on a WASI 0.3 function: policies may not wait".into(),
        )
        .into()),
    }
}
