//! The client: each operation is a Rebound request run by the executor. A refused connection
//! is a pre-dispatch failure (`SOCKET_NOT_AVAILABLE`), a connection lost after the request was
//! written is `SOCKET_CLOSED_WHILE_IN_FLIGHT`, and a response status goes through Rebound's KV
//! classifier, so whether an operation is sent again is decided by the reference rules: a
//! non-idempotent increment that may have reached the server is never re-sent.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::classify::{KvOpcode, Response};
use rebound::executor::{Attempt, ExecuteError, Executor, Failure};
use rebound::Decider;
use rebound::{reasons, Orchestrator, Request, RequestType};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::protocol::{opcode, status, Frame, FrameError};

/// Why one attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    /// The connection could not be made: nothing was sent.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The server.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The connection failed after the request was written.
    #[error("connection to {addr} lost in flight: {source}")]
    InFlight {
        /// The server.
        addr: SocketAddr,
        /// What went wrong.
        source: FrameError,
    },
    /// The server answered with a status other than success.
    #[error("server status {status:#06x}")]
    Status {
        /// The status.
        status: u16,
    },
    /// The server answered something this client cannot read.
    #[error("unexpected response: {0}")]
    Protocol(String),
}

/// How an operation ended without a value.
pub type Error = ExecuteError<AttemptError>;

/// A memcached client for one server, its operations retried by a Rebound executor.
#[derive(Debug)]
pub struct Client<D = Arc<Orchestrator>> {
    addr: SocketAddr,
    executor: Executor<D>,
    timeout: Duration,
    /// An idle connection, taken by one attempt at a time.
    idle: Mutex<Option<TcpStream>>,
    next_id: AtomicU64,
}

impl Client {
    /// A client for `addr` deciding with the default orchestrator (best effort).
    pub fn new(addr: SocketAddr, timeout: Duration) -> Self {
        Client::with_executor(
            addr,
            timeout,
            Executor::new(Arc::new(Orchestrator::default())),
        )
    }
}

impl<D: Decider> Client<D> {
    /// A client for `addr` whose operations time out after `timeout` and are retried by
    /// `executor`.
    pub fn with_executor(addr: SocketAddr, timeout: Duration, executor: Executor<D>) -> Self {
        Client {
            addr,
            executor,
            timeout,
            idle: Mutex::new(None),
            next_id: AtomicU64::new(1),
        }
    }

    /// The value of `key`, `None` if there is none.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        let frame = |opaque| Frame::request(opcode::GET, opaque, vec![], key.as_bytes(), b"");
        match self.run(RequestType::Get, frame, |r| Ok(r.value)).await {
            Ok(value) => Ok(Some(value)),
            Err(ExecuteError::NotRetried {
                error: AttemptError::Status { status },
                ..
            }) if status == status::KEY_NOT_FOUND => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Stores `value` under `key` (an upsert: not idempotent by Rebound's rules).
    pub async fn set(&self, key: &str, value: &[u8]) -> Result<(), Error> {
        let extras = [0u8; 8].to_vec(); // flags, expiry
        let frame =
            |opaque| Frame::request(opcode::SET, opaque, extras.clone(), key.as_bytes(), value);
        self.run(RequestType::Upsert, frame, |_| Ok(())).await
    }

    /// Adds `delta` to the counter `key` (created at `initial` if absent) and returns the new
    /// value. Not idempotent: applied twice, it counts twice.
    pub async fn incr(&self, key: &str, delta: u64, initial: u64) -> Result<u64, Error> {
        let mut extras = Vec::with_capacity(20);
        extras.extend_from_slice(&delta.to_be_bytes());
        extras.extend_from_slice(&initial.to_be_bytes());
        extras.extend_from_slice(&0u32.to_be_bytes()); // expiry
        let frame = |opaque| {
            Frame::request(
                opcode::INCREMENT,
                opaque,
                extras.clone(),
                key.as_bytes(),
                b"",
            )
        };
        let counter = |response: Frame| match <[u8; 8]>::try_from(response.value.as_slice()) {
            Ok(bytes) => Ok(u64::from_be_bytes(bytes)),
            Err(_) => Err(AttemptError::Protocol(format!(
                "a counter of {} bytes",
                response.value.len()
            ))),
        };
        self.run(RequestType::Increment, frame, counter).await
    }

    /// Runs one operation: `frame(opaque)` is the request of each attempt, `parse` reads a
    /// successful response.
    async fn run<T>(
        &self,
        request_type: RequestType,
        frame: impl Fn(u32) -> Frame,
        parse: impl Fn(Frame) -> Result<T, AttemptError>,
    ) -> Result<T, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request::new(id, request_type, self.timeout).expect("non-zero timeout");
        let opcode = KvOpcode::of(request_type).expect("a KV request type");
        self.executor
            .run(request, |attempt| {
                let frame = frame(id as u32);
                let parse = &parse;
                async move {
                    let response = self.attempt(&attempt, opcode, frame).await?;
                    parse(response).map_err(Failure::final_error)
                }
            })
            .await
    }

    async fn attempt(
        &self,
        attempt: &Attempt,
        opcode: KvOpcode,
        request: Frame,
    ) -> Result<Frame, Failure<AttemptError>> {
        let addr = self.addr;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut stream = match idle {
            Some(stream) => stream,
            None => TcpStream::connect(addr).await.map_err(|source| {
                Failure::reason(
                    AttemptError::Connect { addr, source },
                    reasons::SOCKET_NOT_AVAILABLE,
                )
            })?,
        };
        let in_flight = |source: FrameError| {
            Failure::reason(
                AttemptError::InFlight { addr, source },
                reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
            )
        };
        // From the first byte written, the server may have the request.
        attempt.dispatched(addr.to_string());
        stream
            .write_all(&request.encode())
            .await
            .map_err(|e| in_flight(e.into()))?;
        let response = Frame::read(&mut stream).await.map_err(in_flight)?;
        if response.opaque != request.opaque || response.opcode != request.opcode {
            // Not the answer to this request: the connection cannot be trusted any more.
            return Err(Failure::final_error(AttemptError::Protocol(format!(
                "response opcode {:#04x} opaque {} to request opcode {:#04x} opaque {}",
                response.opcode, response.opaque, request.opcode, request.opaque
            ))));
        }
        // The connection is in a clean state again: keep it for the next operation.
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = Some(stream);
        if response.status == status::SUCCESS {
            return Ok(response);
        }
        let status = response.status;
        Err(Failure::response(
            AttemptError::Status { status },
            Response::Kv { opcode, status },
            None,
        ))
    }
}
