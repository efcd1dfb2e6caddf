//! The decision log: a JSON line per sampled decision — the decision request as `rebound eval`
//! reads it, the answer, the policy and version, a shadow candidate's answer, the time and the
//! decision's ID — written by a thread of its own to standard output or to a file rotated by
//! size. Deciding never waits for it: a line goes into a bounded buffer, and when the buffer
//! is full the line is dropped and counted. `rebound eval --replay` re-decides the logged
//! inputs with another policy (docs/observability.md).

mod config;
mod entry;
mod rotating_file;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use config::{DecisionLogConfig, MAX_KEEP, MAX_MAX_BYTES, MIN_MAX_BYTES, REQUEST_FIELDS};
pub(crate) use entry::{DecidedBy, Entry, LoggedVersion, ShadowAnswers};
use rotating_file::RotatingFile;

use crate::telemetry;

/// A running decision log. Dropping it writes the lines still buffered and stops its writer;
/// [`close_within`](Self::close_within) bounds that wait.
#[derive(Debug)]
pub struct DecisionLog {
    config: DecisionLogConfig,
    lines: Option<SyncSender<Message>>,
    counts: Arc<Counts>,
    writer: Option<JoinHandle<()>>,
    /// Set when a close ran out of time: the writer drops, and counts, what is left.
    abandoned: Arc<AtomicBool>,
    /// Set by the writer when it has stopped.
    stopped: Arc<AtomicBool>,
}

/// What the writer is handed.
// Every message but the last is a line: boxing it would allocate once per logged decision.
#[allow(clippy::large_enum_variant)]
enum Message {
    /// A decision to write.
    Line(Entry),
    /// Write what came before, then stop.
    Close,
}

/// What happened to the lines of a decision log so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DecisionLogStats {
    /// Lines written to the sink.
    pub written: u64,
    /// Lines dropped: the buffer was full, or a line was longer than a file may be.
    pub dropped: u64,
    /// Lines the sink refused (an I/O error, logged).
    pub failed: u64,
}

#[derive(Debug, Default)]
struct Counts {
    /// Lines handed to the writer.
    handed: AtomicU64,
    /// Lines the writer is done with: written, dropped or failed.
    settled: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

/// Where lines go.
enum Sink {
    /// A file rotated by size.
    File(RotatingFile),
    /// Standard output or a writer of the application's.
    Writer(io::BufWriter<Box<dyn Write + Send>>),
}

impl Sink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<bool> {
        match self {
            Sink::File(file) if !file.fits(line.len()) => Ok(false),
            Sink::File(file) => file.write_line(line).map(|()| true),
            Sink::Writer(out) => out.write_all(line).map(|()| true),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(file) => file.flush(),
            Sink::Writer(out) => out.flush(),
        }
    }
}

impl DecisionLog {
    /// Opens the log `config` describes: its file (created if missing, appended to), or
    /// standard output.
    pub fn open(config: &DecisionLogConfig) -> io::Result<Self> {
        let sink = match &config.file {
            Some(path) => Sink::File(RotatingFile::open(path, config.max_bytes, config.keep)?),
            None => Sink::Writer(io::BufWriter::new(Box::new(io::stdout()))),
        };
        Ok(Self::start(config, sink))
    }

    /// A log writing its lines to `out` (sampling, masking and the buffer as `config` says;
    /// its `file` and rotation are not used).
    pub fn to_writer(config: &DecisionLogConfig, out: impl Write + Send + 'static) -> Self {
        Self::start(config, Sink::Writer(io::BufWriter::new(Box::new(out))))
    }

    fn start(config: &DecisionLogConfig, sink: Sink) -> Self {
        let (lines, queue) = sync_channel(config.buffer.max(1));
        let counts = Arc::new(Counts::default());
        let abandoned = Arc::new(AtomicBool::new(false));
        let stopped = Arc::new(AtomicBool::new(false));
        let writer = {
            let counts = Arc::clone(&counts);
            let abandoned = Arc::clone(&abandoned);
            let stopped = Arc::clone(&stopped);
            let mask = config.mask.clone();
            std::thread::Builder::new()
                .name("rebound-decision-log".into())
                .spawn(move || {
                    write_lines(&queue, sink, &mask, &counts, &abandoned);
                    stopped.store(true, Ordering::Release);
                })
                .expect("a thread for the decision log")
        };
        DecisionLog {
            config: config.clone(),
            lines: Some(lines),
            counts,
            writer: Some(writer),
            abandoned,
            stopped,
        }
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &DecisionLogConfig {
        &self.config
    }

    /// Its lines so far.
    pub fn stats(&self) -> DecisionLogStats {
        DecisionLogStats {
            written: self.counts.written.load(Ordering::Relaxed),
            dropped: self.counts.dropped.load(Ordering::Relaxed),
            failed: self.counts.failed.load(Ordering::Relaxed),
        }
    }

    /// Asks the writer to write the lines it holds and stop, waiting at most `limit`; returns
    /// how many lines it was handed and had not settled (written, dropped or failed on) when
    /// the limit passed, 0 when it stopped in time. Past `limit` the writer is left to drop, and count, the rest: a sink that
    /// does not take lines (a full pipe, a stalled disk) cannot hold the caller longer.
    pub fn close_within(&self, limit: Duration) -> u64 {
        // A limit past what the clock holds waits as long as the writer takes.
        let deadline = Instant::now().checked_add(limit);
        let before_deadline = || deadline.is_none_or(|deadline| Instant::now() < deadline);
        if let Some(lines) = &self.lines {
            // The queue may be full: its close waits for room, within the limit.
            let mut close = Message::Close;
            loop {
                match lines.try_send(close) {
                    Ok(()) | Err(TrySendError::Disconnected(_)) => break,
                    Err(TrySendError::Full(back)) if before_deadline() => {
                        close = back;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(TrySendError::Full(_)) => break,
                }
            }
        }
        while !self.stopped.load(Ordering::Acquire) && before_deadline() {
            std::thread::sleep(Duration::from_millis(1));
        }
        if self.stopped.load(Ordering::Acquire) {
            return 0;
        }
        self.abandoned.store(true, Ordering::Relaxed);
        let counts = &self.counts;
        (counts.handed.load(Ordering::Relaxed))
            .saturating_sub(counts.settled.load(Ordering::Relaxed))
    }

    /// Whether this decision is logged (the configured sample).
    pub(crate) fn sampled(&self) -> bool {
        crate::sampling::sampled(self.config.sample)
    }

    /// Hands `entry` to the writer, or drops and counts it if the buffer is full. Never waits.
    pub(crate) fn record(&self, entry: Entry) {
        let Some(lines) = &self.lines else { return };
        match lines.try_send(Message::Line(entry)) {
            Ok(()) => {
                self.counts.handed.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counts.dropped(1);
            }
        }
    }
}

impl Counts {
    /// Counts `n` dropped lines; warns at the first and at every power of two after it, so
    /// a log that cannot keep up says so without flooding.
    fn dropped(&self, n: u64) {
        let before = self.dropped.fetch_add(n, Ordering::Relaxed);
        telemetry::record_log_dropped(n);
        let now = before + n;
        if (before + 1..=now).any(u64::is_power_of_two) {
            tracing::warn!(
                dropped = now,
                "decision log lines dropped: the writer cannot keep up (or a line is longer than max_bytes)"
            );
        }
    }
}

impl Drop for DecisionLog {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish the buffered lines and stop; a writer a
        // close gave up on may be stuck in its sink, and is not waited for.
        self.lines = None;
        if let Some(writer) = self.writer.take() {
            if !self.abandoned.load(Ordering::Relaxed) || self.stopped.load(Ordering::Acquire) {
                let _ = writer.join();
            }
        }
    }
}

/// The writer thread: a line per entry, flushed whenever the buffer runs empty, until the
/// channel closes or a close is asked; once `abandoned`, what is left is dropped and counted.
fn write_lines(
    queue: &Receiver<Message>,
    mut sink: Sink,
    mask: &[String],
    counts: &Counts,
    abandoned: &AtomicBool,
) {
    let failed = |error: io::Error| {
        if counts.failed.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::error!(%error, "the decision log cannot be written");
        }
    };
    // Whether to go on.
    let handle = |message: Message, sink: &mut Sink| match message {
        Message::Close => false,
        Message::Line(_) if abandoned.load(Ordering::Relaxed) => {
            counts.dropped(1);
            counts.settled.fetch_add(1, Ordering::Relaxed);
            true
        }
        Message::Line(entry) => {
            match sink.write_line(&entry.line(mask)) {
                Ok(true) => {
                    counts.written.fetch_add(1, Ordering::Relaxed);
                }
                Ok(false) => counts.dropped(1),
                Err(error) => failed(error),
            }
            counts.settled.fetch_add(1, Ordering::Relaxed);
            true
        }
    };
    while let Ok(message) = queue.recv() {
        let mut going = handle(message, &mut sink);
        while going {
            match queue.try_recv() {
                Ok(message) => going = handle(message, &mut sink),
                Err(_) => break,
            }
        }
        if !abandoned.load(Ordering::Relaxed) {
            if let Err(error) = sink.flush() {
                failed(error);
            }
        }
        if !going {
            return;
        }
    }
}
