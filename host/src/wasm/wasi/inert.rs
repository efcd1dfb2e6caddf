//! The inert WASI 0.2 interfaces a policy's language runtime may import (io, clocks, random,
//! cli), implemented without any capability: no environment, no arguments, an empty stdin,
//! stdout and stderr into the host's log, clocks and randomness as configured, and an `exit`
//! that ends the call as a policy failure. Nothing here blocks the host thread: waiting on a
//! timer that has not fired ends the call instead.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::{Rng, SeedableRng};
use wasmtime::component::Resource;

use super::WasiState;
use crate::wasm::settings::WasiClocks;
use crate::wasm::host_trap::HostTrap;

wasmtime::component::bindgen!({
    path: "wit-wasi",
    world: "rebound:inert-wasi/inert",
    imports: { default: trappable },
    with: {
        "wasi:io/poll.pollable": Pollable,
        "wasi:io/streams.input-stream": InputStream,
        "wasi:io/streams.output-stream": OutputStream,
        "wasi:io/error.error": IoError,
        "wasi:cli/terminal-input.terminal-input": Terminal,
        "wasi:cli/terminal-output.terminal-output": Terminal,
    },
});

use wasi::cli::{environment, exit, stderr, stdin, stdout};
use wasi::cli::{
    terminal_input, terminal_output, terminal_stderr, terminal_stdin, terminal_stdout,
};
use wasi::clocks::{monotonic_clock, wall_clock};
use wasi::io::streams::StreamError;
use wasi::io::{error, poll, streams};
use wasi::random::{insecure, insecure_seed, random};

/// Something a policy can wait on.
#[derive(Debug)]
#[allow(unreachable_pub)] // `bindgen!`'s `with` re-exports it
pub enum Pollable {
    /// Always ready (the streams: writes never wait, stdin is at its end).
    Ready,
    /// Ready once the policy's monotonic clock reaches `at` nanoseconds; `short` when it was
    /// set at most [`SHORT_PAUSE`] ahead.
    Timer { at: u64, short: bool },
}

/// The longest pause a policy may take without ending its call: a runtime's own pause on its
/// way to report a failure (Go's panic path sleeps 1 ms up to five times before it prints the
/// panic). Such a wait returns at once, no time passing; a longer one ends the call.
pub(crate) const SHORT_PAUSE: u64 = 1_000_000;
/// Short pauses granted per call; past them a wait ends the call.
const SHORT_PAUSES_PER_CALL: u32 = 8;

/// The policy's stdin: always at its end.
#[derive(Debug)]
#[allow(unreachable_pub)] // `bindgen!`'s `with` re-exports it
pub struct InputStream;

/// The policy's stdout or stderr: stdout's writes and stderr's lines go to the host's log.
#[derive(Debug)]
#[allow(unreachable_pub)] // `bindgen!`'s `with` re-exports it
pub struct OutputStream {
    stderr: bool,
}

/// An I/O error; none is ever created, since no operation here fails with one.
#[derive(Debug)]
#[allow(unreachable_pub)] // `bindgen!`'s `with` re-exports it
pub enum IoError {}

/// A terminal; none is ever handed out.
#[derive(Debug)]
#[allow(unreachable_pub)] // `bindgen!`'s `with` re-exports it
pub enum Terminal {}

/// How much of one write is copied into the log.
const LOGGED_BYTES: usize = 4096;
/// How much a policy may write at once.
const WRITE_PERMIT: u64 = 64 << 10;

/// Where the frozen monotonic clock stands: not 0, which Go's runtime refuses at start
/// ("fatal error: nanotime returning zero").
const FROZEN_MONOTONIC_NS: u64 = 1;

impl WasiState {
    fn monotonic_ns(&self) -> u64 {
        match self.config.clocks {
            WasiClocks::Frozen => FROZEN_MONOTONIC_NS,
            WasiClocks::Real => {
                u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
            }
        }
    }

    fn pollable(&mut self, pollable: Pollable) -> wasmtime::Result<Resource<Pollable>> {
        Ok(self.table.push(pollable)?)
    }

    fn is_ready(&self, pollable: &Resource<Pollable>) -> wasmtime::Result<bool> {
        Ok(match self.table.get(pollable)? {
            Pollable::Ready => true,
            Pollable::Timer { at, .. } => self.monotonic_ns() >= *at,
        })
    }

    /// Whether waiting on `pollables`, none ready, is a short pause the call may take: every
    /// one a short timer, within the call's allowance (which it then uses).
    fn short_pause(&mut self, pollables: &[Resource<Pollable>]) -> wasmtime::Result<bool> {
        for pollable in pollables {
            if !matches!(
                self.table.get(pollable)?,
                Pollable::Timer { short: true, .. }
            ) {
                return Ok(false);
            }
        }
        if self.pauses >= SHORT_PAUSES_PER_CALL {
            return Ok(false);
        }
        self.pauses += 1;
        Ok(true)
    }

    fn timer(&mut self, at: u64) -> wasmtime::Result<Resource<Pollable>> {
        let short = at.saturating_sub(self.monotonic_ns()) <= SHORT_PAUSE;
        self.pollable(Pollable::Timer { at, short })
    }

    fn log_write(&mut self, stream: &Resource<OutputStream>, bytes: &[u8]) -> wasmtime::Result<()> {
        let stderr = self.table.get(stream)?.stderr;
        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(LOGGED_BYTES)]);
        if stderr {
            // Line by line: runtimes write a line in pieces (Python: the exception's name, `: `,
            // its message).
            for line in self.stderr.push(&shown) {
                self.log_stderr_line(&line);
            }
            return Ok(());
        }
        let text = shown.trim_end();
        if text.is_empty() {
            return Ok(());
        }
        let (policy, version) = (&*self.label.name, &*self.label.version);
        tracing::debug!(policy, version, stream = "stdout", "{text}");
        Ok(())
    }
}

/// Ends the call: waiting would block the deciding thread, which the deadline cannot stop
/// (but for a short pause, which returns at once).
fn would_block() -> wasmtime::Error {
    HostTrap::Denied(
        "the policy waited on a timer that has not fired: policies may not sleep".into(),
    )
    .into()
}

impl error::Host for WasiState {}
impl error::HostError for WasiState {
    fn to_debug_string(&mut self, error: Resource<IoError>) -> wasmtime::Result<String> {
        match *self.table.get(&error)? {}
    }
    fn drop(&mut self, error: Resource<IoError>) -> wasmtime::Result<()> {
        self.table.delete(error)?;
        Ok(())
    }
}

impl poll::Host for WasiState {
    fn poll(&mut self, pollables: Vec<Resource<Pollable>>) -> wasmtime::Result<Vec<u32>> {
        let mut ready = Vec::new();
        for (index, pollable) in pollables.iter().enumerate() {
            if self.is_ready(pollable)? {
                ready.push(u32::try_from(index)?);
            }
        }
        if ready.is_empty() {
            if self.short_pause(&pollables)? {
                return Ok((0..u32::try_from(pollables.len())?).collect());
            }
            return Err(would_block());
        }
        Ok(ready)
    }
}
impl poll::HostPollable for WasiState {
    fn ready(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<bool> {
        self.is_ready(&pollable)
    }
    fn block(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<()> {
        if self.is_ready(&pollable)? || self.short_pause(std::slice::from_ref(&pollable))? {
            Ok(())
        } else {
            Err(would_block())
        }
    }
    fn drop(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<()> {
        self.table.delete(pollable)?;
        Ok(())
    }
}

type StreamResult<T> = wasmtime::Result<Result<T, StreamError>>;

impl streams::Host for WasiState {}
impl streams::HostInputStream for WasiState {
    fn read(&mut self, _: Resource<InputStream>, _: u64) -> StreamResult<Vec<u8>> {
        Ok(Err(StreamError::Closed))
    }
    fn blocking_read(&mut self, _: Resource<InputStream>, _: u64) -> StreamResult<Vec<u8>> {
        Ok(Err(StreamError::Closed))
    }
    fn skip(&mut self, _: Resource<InputStream>, _: u64) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn blocking_skip(&mut self, _: Resource<InputStream>, _: u64) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn subscribe(&mut self, _: Resource<InputStream>) -> wasmtime::Result<Resource<Pollable>> {
        self.pollable(Pollable::Ready)
    }
    fn drop(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<()> {
        self.table.delete(stream)?;
        Ok(())
    }
}
impl streams::HostOutputStream for WasiState {
    fn check_write(&mut self, _: Resource<OutputStream>) -> StreamResult<u64> {
        Ok(Ok(WRITE_PERMIT))
    }
    fn write(&mut self, stream: Resource<OutputStream>, contents: Vec<u8>) -> StreamResult<()> {
        self.log_write(&stream, &contents)?;
        Ok(Ok(()))
    }
    fn blocking_write_and_flush(
        &mut self,
        stream: Resource<OutputStream>,
        contents: Vec<u8>,
    ) -> StreamResult<()> {
        self.log_write(&stream, &contents)?;
        Ok(Ok(()))
    }
    fn flush(&mut self, _: Resource<OutputStream>) -> StreamResult<()> {
        Ok(Ok(()))
    }
    fn blocking_flush(&mut self, _: Resource<OutputStream>) -> StreamResult<()> {
        Ok(Ok(()))
    }
    fn subscribe(&mut self, _: Resource<OutputStream>) -> wasmtime::Result<Resource<Pollable>> {
        self.pollable(Pollable::Ready)
    }
    fn write_zeroes(&mut self, _: Resource<OutputStream>, _: u64) -> StreamResult<()> {
        Ok(Ok(()))
    }
    fn blocking_write_zeroes_and_flush(
        &mut self,
        _: Resource<OutputStream>,
        _: u64,
    ) -> StreamResult<()> {
        Ok(Ok(()))
    }
    fn splice(
        &mut self,
        _: Resource<OutputStream>,
        _: Resource<InputStream>,
        _: u64,
    ) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn blocking_splice(
        &mut self,
        _: Resource<OutputStream>,
        _: Resource<InputStream>,
        _: u64,
    ) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn drop(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<()> {
        self.table.delete(stream)?;
        Ok(())
    }
}

impl monotonic_clock::Host for WasiState {
    fn now(&mut self) -> wasmtime::Result<u64> {
        Ok(self.monotonic_ns())
    }
    fn resolution(&mut self) -> wasmtime::Result<u64> {
        Ok(1)
    }
    fn subscribe_instant(&mut self, when: u64) -> wasmtime::Result<Resource<Pollable>> {
        self.timer(when)
    }
    fn subscribe_duration(&mut self, after: u64) -> wasmtime::Result<Resource<Pollable>> {
        let at = self.monotonic_ns().saturating_add(after);
        self.timer(at)
    }
}

impl wall_clock::Host for WasiState {
    fn now(&mut self) -> wasmtime::Result<wall_clock::Datetime> {
        let since_epoch = match self.config.clocks {
            WasiClocks::Frozen => Duration::ZERO,
            WasiClocks::Real => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        };
        Ok(wall_clock::Datetime {
            seconds: since_epoch.as_secs(),
            nanoseconds: since_epoch.subsec_nanos(),
        })
    }
    fn resolution(&mut self) -> wasmtime::Result<wall_clock::Datetime> {
        Ok(wall_clock::Datetime {
            seconds: 0,
            nanoseconds: 1,
        })
    }
}

impl random::Host for WasiState {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        let mut bytes = vec![0; self.random_len(len)?];
        self.rng.fill_bytes(&mut bytes);
        Ok(bytes)
    }
    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        Ok(self.rng.next_u64())
    }
}
impl insecure::Host for WasiState {
    fn get_insecure_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        random::Host::get_random_bytes(self, len)
    }
    fn get_insecure_random_u64(&mut self) -> wasmtime::Result<u64> {
        Ok(self.rng.next_u64())
    }
}
impl insecure_seed::Host for WasiState {
    fn insecure_seed(&mut self) -> wasmtime::Result<(u64, u64)> {
        Ok((self.rng.next_u64(), self.rng.next_u64()))
    }
}

impl WasiState {
    /// A random-bytes request, within the instance's memory cap.
    fn random_len(&self, len: u64) -> wasmtime::Result<usize> {
        match usize::try_from(len) {
            Ok(len) if len <= self.memory_cap => Ok(len),
            _ => Err(HostTrap::Denied(format!("{len} random bytes asked for")).into()),
        }
    }

    /// The generator for a new instance, as configured.
    pub(super) fn generator(seed: Option<u64>) -> rand::rngs::StdRng {
        match seed {
            Some(seed) => rand::rngs::StdRng::seed_from_u64(seed),
            None => rand::make_rng(),
        }
    }
}

impl environment::Host for WasiState {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(Vec::new())
    }
    fn initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(None)
    }
}

impl exit::Host for WasiState {
    fn exit(&mut self, status: Result<(), ()>) -> wasmtime::Result<()> {
        let code = if status.is_ok() { 0 } else { 1 };
        Err(HostTrap::Denied(format!("the policy called exit({code})")).into())
    }
    fn exit_with_code(&mut self, code: u8) -> wasmtime::Result<()> {
        Err(HostTrap::Denied(format!("the policy called exit({code})")).into())
    }
}

impl stdin::Host for WasiState {
    fn get_stdin(&mut self) -> wasmtime::Result<Resource<InputStream>> {
        Ok(self.table.push(InputStream)?)
    }
}
impl stdout::Host for WasiState {
    fn get_stdout(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        Ok(self.table.push(OutputStream { stderr: false })?)
    }
}
impl stderr::Host for WasiState {
    fn get_stderr(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        Ok(self.table.push(OutputStream { stderr: true })?)
    }
}

impl terminal_input::Host for WasiState {}
impl terminal_input::HostTerminalInput for WasiState {
    fn drop(&mut self, terminal: Resource<Terminal>) -> wasmtime::Result<()> {
        self.table.delete(terminal)?;
        Ok(())
    }
}
impl terminal_output::Host for WasiState {}
impl terminal_output::HostTerminalOutput for WasiState {
    fn drop(&mut self, terminal: Resource<Terminal>) -> wasmtime::Result<()> {
        self.table.delete(terminal)?;
        Ok(())
    }
}
impl terminal_stdin::Host for WasiState {
    fn get_terminal_stdin(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        Ok(None)
    }
}
impl terminal_stdout::Host for WasiState {
    fn get_terminal_stdout(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        Ok(None)
    }
}
impl terminal_stderr::Host for WasiState {
    fn get_terminal_stderr(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        Ok(None)
    }
}
