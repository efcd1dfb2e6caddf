//! Compiling components in a child process (`rebound compile-component`, hidden), bounded in
//! time and memory: the server's [`ComponentCompiler`]. A component whose compilation would
//! take gigabytes or minutes is refused naming the limit, the running version keeps serving,
//! and whatever compiling allocated is the child's, returned to the system when it exits.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rebound::wasm::{ComponentCompiler, EngineError, EngineSettings, Optimization};

/// How often the child's memory and time are looked at.
const WATCH_EVERY: Duration = Duration::from_millis(5);

/// Compiles in a child process, killed past `max_memory_bytes` resident or past `timeout`.
#[derive(Debug)]
pub struct ChildCompiler {
    pub max_memory_bytes: u64,
    pub timeout: Duration,
}

// SAFETY: the child is this same executable, whose `compile-component` returns what
// `EngineSettings::precompile` made for the settings it is given, and nothing else on stdout.
unsafe impl ComponentCompiler for ChildCompiler {
    fn compile(&self, settings: &EngineSettings, bytes: &[u8]) -> Result<Vec<u8>, EngineError> {
        self.compile_in_child(settings, bytes)
            .map_err(EngineError::new)
    }
}

impl ChildCompiler {
    /// The artifact the child process made of component `bytes`, or why there is none (a
    /// limit it passed, the compiler's own error).
    fn compile_in_child(&self, settings: &EngineSettings, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the rebound executable to compile in: {e}"))?;
        let optimization = match settings.optimization {
            Optimization::None => "none",
            Optimization::Speed => "speed",
        };
        let mut child = Command::new(exe)
            .arg("compile-component")
            .args(["--max-memory-bytes", &settings.max_memory_bytes.to_string()])
            .args(["--optimization", optimization])
            .args(["--instances", &settings.instances.to_string()])
            .args(settings.concurrency.then_some("--concurrency"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the compiler process: {e}"))?;
        let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the compiler process has no pipes".into());
        };
        let input = bytes.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let reader = std::thread::spawn(move || {
            let mut artifact = Vec::new();
            let _ = stdout.read_to_end(&mut artifact);
            artifact
        });
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let started = Instant::now();
        let (refusal, peak) = self.watch(&mut child, started);
        if refusal.is_some() {
            let _ = child.kill();
        }
        let _ = child.wait();
        let _ = writer.join();
        let artifact = reader.join().unwrap_or_default();
        let errors = errors.join().unwrap_or_default();
        match refusal {
            None => {
                tracing::debug!(
                    compile_ms = started.elapsed().as_millis() as u64,
                    peak_resident_bytes = peak,
                    "compiled a component in a child process"
                );
                Ok(artifact)
            }
            Some(Some(limit)) => Err(limit),
            Some(None) => Err(errors
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .map_or_else(
                    || "the compiler process failed".to_owned(),
                    |line| line.trim_start_matches("error: ").to_owned(),
                )),
        }
    }
}

impl ChildCompiler {
    /// Watches the compiler process `child`, started at `started`, until it exits or passes a
    /// limit: `None` when it succeeded, `Some(None)` when it failed, `Some(Some(limit))` when a
    /// limit refused it; with its peak resident memory.
    fn watch(&self, child: &mut Child, started: Instant) -> (Option<Option<String>>, u64) {
        let pid = child.id();
        let mut peak = 0;
        let refusal = loop {
            match child.try_wait() {
                Ok(Some(status)) => break (!status.success()).then_some(None),
                Ok(None) => {}
                Err(e) => break Some(Some(format!("cannot watch the compiler process: {e}"))),
            }
            peak = peak.max(resident_bytes(pid).unwrap_or(0));
            if peak > self.max_memory_bytes {
                break Some(Some(format!(
                    "compiling it needed more than the limit of {} MiB of memory (serve --compile-memory-mb)",
                    self.max_memory_bytes >> 20
                )));
            }
            if started.elapsed() > self.timeout {
                break Some(Some(format!(
                    "compiling it took longer than the limit of {} ms (serve --compile-timeout-ms)",
                    self.timeout.as_millis()
                )));
            }
            std::thread::sleep(WATCH_EVERY);
        };
        (refusal, peak)
    }
}

/// The resident memory of process `pid` (`VmRSS`), in bytes.
fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Options of `rebound compile-component`: the settings of the engine to compile for.
#[derive(clap::Args)]
pub struct CompileArgs {
    #[arg(long)]
    max_memory_bytes: u64,
    #[arg(long, value_parser = ["none", "speed"])]
    optimization: String,
    #[arg(long)]
    instances: u32,
    /// The engine supports the component model's concurrency (a component importing WASI 0.3).
    #[arg(long)]
    concurrency: bool,
}

/// Reads a component from stdin and writes its artifact for the given engine to stdout.
pub fn run(args: &CompileArgs) -> anyhow::Result<()> {
    let optimization = match args.optimization.as_str() {
        "speed" => Optimization::Speed,
        _ => Optimization::None,
    };
    let settings = EngineSettings::new(args.max_memory_bytes, optimization, args.instances);
    let settings = match args.concurrency {
        true => settings.with_concurrency(),
        false => settings,
    };
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let artifact = settings.precompile(&bytes).map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&artifact)?;
    out.flush()?;
    Ok(())
}
