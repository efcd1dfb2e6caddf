//! WASI 0.2 for policies whose language runtime imports it (Python's componentize-py imports
//! io, clocks, random, cli, filesystem and sockets), and WASI 0.3's imports as denials, granting
//! no capability: no files, no network, no environment, no real sockets, nothing that blocks.
//! Clocks and randomness are as configured ([`WasiConfig`]); by default both are deterministic. What each import does
//! is listed in `docs/wasi.md`.

mod denied;
mod inert;
mod p3;

use std::time::Instant;

use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};

use super::policy_label::PolicyLabel;
use super::settings::{WasiConfig, WasiRandom};

/// The WASI state of one policy instance.
pub(crate) struct WasiState {
    config: WasiConfig,
    table: ResourceTable,
    rng: rand::rngs::StdRng,
    started: Instant,
    label: PolicyLabel,
    memory_cap: usize,
    /// What the policy wrote to stderr in the call in progress, as lines.
    stderr: StderrLines,
    /// Short pauses granted in the call in progress (`inert::SHORT_PAUSE`).
    pauses: u32,
}

impl WasiState {
    /// Forgets what the previous call wrote to stderr (logging a line it left unfinished).
    pub(crate) fn begin_call(&mut self) {
        if let Some(line) = self.stderr.finish_line() {
            self.log_stderr_line(&line);
        }
        self.stderr.lines.clear();
        self.pauses = 0;
    }

    /// What the policy said went wrong, from what it wrote to stderr in this call: a Python
    /// traceback's last line (`ValueError: …`) with the frame it was raised in, a Go panic's
    /// message with its first frame, else the last line that is not a runtime's note.
    pub(crate) fn stderr_summary(&mut self) -> Option<String> {
        if let Some(line) = self.stderr.finish_line() {
            self.log_stderr_line(&line);
        }
        self.stderr.summary()
    }

    fn log_stderr_line(&self, line: &str) {
        let (policy, version) = (&*self.label.name, &*self.label.version);
        if let Some(left_out) = self.label.stderr_lines.allow() {
            tracing::warn!(policy, version, stream = "stderr", left_out, "{line}");
        }
    }

    pub(crate) fn new(config: WasiConfig, label: PolicyLabel, memory_cap: usize) -> Self {
        let seed = match config.random {
            WasiRandom::Seeded => Some(config.seed),
            WasiRandom::Os => None,
        };
        WasiState {
            config,
            table: ResourceTable::new(),
            rng: Self::generator(seed),
            started: Instant::now(),
            label,
            memory_cap,
            stderr: StderrLines::default(),
            pauses: 0,
        }
    }
}

/// Stderr cut into lines: the line being written and the last [`KEPT_LINES`] of the call.
#[derive(Debug, Default)]
struct StderrLines {
    partial: String,
    lines: std::collections::VecDeque<String>,
}

/// Lines of stderr a call keeps for its failure's summary.
const KEPT_LINES: usize = 32;
/// The longest line kept (the rest is cut).
const LINE_BYTES: usize = 1024;

impl StderrLines {
    /// Adds `text`; returns the lines it completed.
    fn push(&mut self, text: &str) -> Vec<String> {
        let mut done = Vec::new();
        let mut pieces = text.split('\n').peekable();
        while let Some(piece) = pieces.next() {
            if self.partial.len() < LINE_BYTES {
                let room = LINE_BYTES - self.partial.len();
                let cut = (0..=room.min(piece.len()))
                    .rev()
                    .find(|&i| piece.is_char_boundary(i))
                    .unwrap_or(0);
                self.partial.push_str(&piece[..cut]);
            }
            if pieces.peek().is_some() {
                done.extend(self.finish_line());
            }
        }
        done
    }

    /// Ends the line being written; returns it unless it is blank.
    fn finish_line(&mut self) -> Option<String> {
        let line = std::mem::take(&mut self.partial);
        let line = line.trim_end();
        if line.trim().is_empty() {
            return None;
        }
        if self.lines.len() == KEPT_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line.to_owned());
        Some(line.to_owned())
    }

    fn summary(&self) -> Option<String> {
        let is_note = |l: &str| l.starts_with("note: run with `RUST_BACKTRACE");
        let is_panic_header = |l: &str| l.starts_with("thread '") && l.contains("panicked at");
        // A Python traceback: its last line is the exception, before any runtime's panic.
        if let Some(start) = self
            .lines
            .iter()
            .rposition(|l| l.starts_with("Traceback (most recent call last)"))
        {
            let exception = self
                .lines
                .iter()
                .skip(start + 1)
                .take_while(|l| !is_panic_header(l))
                .last();
            if let Some(line) = exception {
                // The innermost frame: where in the policy's own code it was raised.
                let frame = self
                    .lines
                    .iter()
                    .skip(start + 1)
                    .rev()
                    .find_map(|l| python_frame(l));
                return Some(match frame {
                    Some(frame) => format!("{} ({frame})", line.trim()),
                    None => line.trim().to_owned(),
                });
            }
        }
        // A Go panic: its message, and the first frame of the goroutine's trace.
        if let Some(start) = self.lines.iter().rposition(|l| l.starts_with("panic: ")) {
            let message = self.lines[start].trim();
            let frame = self.lines.iter().skip(start + 1).find_map(|l| go_frame(l));
            return Some(match frame {
                Some(frame) => format!("{message} ({frame})"),
                None => message.to_owned(),
            });
        }
        self.lines
            .iter()
            .rev()
            .find(|l| !is_note(l) && !is_panic_header(l))
            .map(|l| l.trim().to_owned())
    }
}

/// A Go trace's location line (`\t/build/policy.go:19 +0x7`) as `policy.go:19`.
fn go_frame(line: &str) -> Option<String> {
    let location = line.trim().split(" +0x").next()?;
    let (path, number) = location.rsplit_once(':')?;
    if !path.ends_with(".go") || number.parse::<u32>().is_err() {
        return None;
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    Some(format!("{file}:{number}"))
}

/// A Python traceback's frame line (`  File "/app/policy.py", line 12, in retry_after`) as
/// `policy.py:12, in retry_after`.
fn python_frame(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once("\", line ")?;
    let (number, function) = match rest.split_once(", in ") {
        Some((number, function)) => (number, Some(function)),
        None => (rest, None),
    };
    let file = path.rsplit('/').next().unwrap_or(path);
    Some(match function {
        Some(function) => format!("{file}:{number}, in {function}"),
        None => format!("{file}:{number}"),
    })
}

/// The WASI packages a policy may import (any 0.2 version, and any 0.3 version, whose
/// functions are all denials): the inert and the denied ones.
const GRANTED_PACKAGES: [&str; 6] = [
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:cli/",
    "wasi:filesystem/",
    "wasi:sockets/",
];

/// Whether `import` is a WASI 0.2 or 0.3 interface the host defines.
pub(crate) fn is_granted(import: &str) -> bool {
    GRANTED_PACKAGES.iter().any(|p| import.starts_with(p))
        && import
            .split_once('@')
            .is_some_and(|(_, v)| v.starts_with("0.2.") || p3::is_version(v))
}

/// Whether component `bytes` import WASI 0.3, and so must be compiled for the engine that
/// supports the component model's concurrency.
pub(crate) fn imports_wasi_0_3(bytes: &[u8]) -> bool {
    p3::imported_by(bytes)
}

/// Whether `component` must be called on a fiber: it imports WASI 0.3's async functions.
pub(crate) fn needs_fiber(component: &Component) -> bool {
    p3::imports_async(component)
}

/// What a store's data gives the WASI imports: its [`WasiState`] (as wasmtime-wasi's
/// `WasiView` does), so that this module needs nothing else of the store.
pub(crate) trait WasiView: Send + 'static {
    /// The instance's WASI state.
    fn wasi(&mut self) -> &mut WasiState;
}

/// Defines the WASI imports of `component` in `linker`.
pub(crate) fn add_to_linker<T: WasiView>(
    linker: &mut Linker<T>,
    component: &Component,
) -> wasmtime::Result<()> {
    inert::Inert::add_to_linker::<T, HasSelf<WasiState>>(linker, T::wasi)?;
    denied::add_to_linker(linker, component)?;
    p3::add_to_linker(linker, component)
}

#[cfg(test)]
mod tests {
    use super::StderrLines;

    /// Python writes a traceback's last line in pieces; the summary is that line and the
    /// frame it was raised in, not the runtime's panic after it.
    #[test]
    fn a_python_traceback_is_summarised_by_its_exception_line() {
        let mut stderr = StderrLines::default();
        let mut done = Vec::new();
        for piece in [
            "Traceback (most recent call last):\n",
            "  File \"/0/app.py\", line 3, in retry_after\n",
            "ValueError",
            ": ",
            "bad input",
            "\n",
            "\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1:1:\nPython function threw an unexpected exception\n",
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
        ] {
            done.extend(stderr.push(piece));
        }
        assert!(
            done.contains(&"ValueError: bad input".to_owned()),
            "{done:?}"
        );
        assert_eq!(
            stderr.summary().as_deref(),
            Some("ValueError: bad input (app.py:3, in retry_after)")
        );
    }

    /// A Go panic is summarised by its message and the first frame of its goroutine's trace.
    #[test]
    fn a_go_panic_is_summarised_by_its_message_and_frame() {
        let mut stderr = StderrLines::default();
        stderr.push(concat!(
            "panic: out of ideas\n\n",
            "goroutine 1 [running]:\n",
            "wit_component/export_rebound_policy_strategy.RetryAfter({0x8, {0x0, 0x0}})\n",
            "\t/tmp/rebound-build-x/policy.go:19 +0x7\n",
            "main.wasm_export_rebound_policy_strategy_retry_after(0x8)\n",
            "\t/tmp/rebound-build-x/gen/wit_exports.go:238 +0x7d\n",
        ));
        assert_eq!(
            stderr.summary().as_deref(),
            Some("panic: out of ideas (policy.go:19)")
        );
    }

    /// Without a traceback, the last line that is not a runtime's note; lines are cut to a
    /// bound and only the last ones kept.
    #[test]
    fn otherwise_the_last_line_that_is_not_a_note() {
        let mut stderr = StderrLines::default();
        let long = "x".repeat(5000);
        stderr.push(&format!("{long}\n"));
        assert_eq!(stderr.lines[0].len(), super::LINE_BYTES);
        for i in 0..100 {
            stderr.push(&format!("line {i}\n"));
        }
        stderr.push("panicked: no quota\nnote: run with `RUST_BACKTRACE=1` to see\n");
        assert_eq!(stderr.lines.len(), super::KEPT_LINES);
        assert_eq!(stderr.summary().as_deref(), Some("panicked: no quota"));
    }
}
