//! The wasmtime engine shared by every policy, its sandbox limits, and the epoch ticker that
//! turns wall-clock deadlines into interrupts (and rings the alarms of callers waiting for an
//! isolated call's answer).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wasmtime::component::Component;
use wasmtime::Engine;

use super::alarm::{Alarm, Alarms};
use super::engine_error::EngineError;
use super::compiler::{ComponentCompiler, EngineSettings};
use super::settings::{Optimization, PoolConfig, TickerPriority};
use super::pool::IdleBudget;

/// How many times a call's fuel budget creating and configuring an instance may use.
pub(super) const SETUP_FUEL_FACTOR: u64 = 100;

/// `base` plus `nanos` nanoseconds.
fn nanos_after(base: Instant, nanos: u128) -> Instant {
    base + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// How often the epoch advances: the granularity of call deadlines.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The engine and its epoch ticker. Cheap to clone; the ticker stops when the last clone drops.
/// The ticker's thread is scheduled as the process's other threads
/// ([`TickerPriority::default`]); [`set_ticker_priority`](Self::set_ticker_priority) asks for
/// a prompter one (deadlines pass only when it runs, and it runs microseconds per
/// millisecond), getting the best the process is permitted.
#[derive(Clone)]
pub struct WasmRuntime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    /// The engine that supports the component model's concurrency, made when the first
    /// component that needs it (one importing WASI 0.3) is compiled; its epoch ticks with
    /// `engine`'s.
    concurrent: Arc<OnceLock<Engine>>,
    /// When the ticker started, and the epoch (ticks since then) at its last tick: a clock
    /// read without a system call on the deciding path.
    base: Instant,
    epoch: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    alarms: Arc<Alarms>,
    ticker: Option<JoinHandle<()>>,
    settings: EngineSettings,
    /// Compiles components instead of the calling thread, if installed.
    compiler: std::sync::RwLock<Option<Arc<dyn ComponentCompiler>>>,
    pool: PoolConfig,
    idle: Arc<IdleBudget>,
    /// The ticker's thread, as the kernel names it, and how it is scheduled.
    ticker_thread: TickerThread,
    ticker_priority: std::sync::Mutex<TickerPriority>,
}

/// A thread as the kernel's scheduling calls name it.
#[cfg(target_os = "linux")]
type TickerThread = libc::pid_t;
#[cfg(not(target_os = "linux"))]
type TickerThread = ();

/// The calling thread, as [`TickerThread`].
#[cfg(target_os = "linux")]
fn this_thread() -> TickerThread {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

#[cfg(not(target_os = "linux"))]
fn this_thread() -> TickerThread {}

impl std::fmt::Debug for WasmRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmRuntime").finish_non_exhaustive()
    }
}

impl WasmRuntime {
    /// An engine whose instances may hold up to `max_memory_bytes` of linear memory each
    /// (the largest memory cap any policy will be given), compiling without optimisation.
    pub fn new(max_memory_bytes: u64) -> Result<Self, EngineError> {
        Self::with_optimization(max_memory_bytes, Optimization::default())
    }

    /// As [`new`](Self::new), compiling with `optimization`.
    pub fn with_optimization(
        max_memory_bytes: u64,
        optimization: Optimization,
    ) -> Result<Self, EngineError> {
        Self::with_pool(max_memory_bytes, optimization, PoolConfig::default())
    }

    /// As [`with_optimization`](Self::with_optimization), with `pool` instance slots.
    pub fn with_pool(
        max_memory_bytes: u64,
        optimization: Optimization,
        pool: PoolConfig,
    ) -> Result<Self, EngineError> {
        let settings = EngineSettings::new(max_memory_bytes, optimization, pool.instances);
        let instances = settings.instances;
        let engine = Engine::new(&settings.config()).map_err(|e| EngineError::of(&e))?;

        let stop = Arc::new(AtomicBool::new(false));
        let base = Instant::now();
        let epoch = Arc::new(AtomicU64::new(0));
        let alarms = Arc::new(Alarms::default());
        let (started, ticker_thread) = std::sync::mpsc::sync_channel(1);
        let concurrent = Arc::new(OnceLock::<Engine>::new());
        let ticker = {
            let engine = engine.clone();
            let concurrent = Arc::clone(&concurrent);
            let (stop, alarms) = (Arc::clone(&stop), Arc::clone(&alarms));
            let shared = Arc::clone(&epoch);
            std::thread::Builder::new()
                .name("rebound-epoch".into())
                .spawn(move || {
                    // The epoch counts whole ticks since `base`. The ticker wakes at each tick's
                    // start (not a tick after its last wake, which drifts by the timer's slack),
                    // and makes up at once for a wake that came late, so that epoch n begins
                    // n ticks after `base` give or take the wake-up's latency. It wakes sooner
                    // for an alarm due before the tick, and rings the alarms due.
                    alarms.rung_by(std::thread::current());
                    let _ = started.send(this_thread());
                    let tick = EPOCH_TICK.as_nanos();
                    let mut epoch = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let next = nanos_after(base, tick * u128::from(epoch + 1));
                        let wake = alarms.plan_wake(next);
                        std::thread::park_timeout(wake.saturating_duration_since(Instant::now()));
                        let now = Instant::now();
                        alarms.ring(now);
                        let due = u64::try_from((now - base).as_nanos() / tick).unwrap_or(u64::MAX);
                        while epoch < due {
                            engine.increment_epoch();
                            if let Some(concurrent) = concurrent.get() {
                                concurrent.increment_epoch();
                            }
                            epoch += 1;
                        }
                        // After the engine's: a deadline reckoned from this value is never early.
                        shared.store(epoch, Ordering::Release);
                    }
                })
                .map_err(|e| EngineError::new(format!("cannot start the epoch ticker's thread: {e}")))?
        };
        // Sent first thing by the thread: it is not lost unless the thread could not start.
        let ticker_thread = ticker_thread
            .recv()
            .map_err(|_| EngineError::new("the epoch ticker's thread did not start"))?;
        let runtime = WasmRuntime {
            inner: Arc::new(RuntimeInner {
                engine,
                concurrent,
                base,
                epoch,
                stop,
                alarms,
                ticker: Some(ticker),
                settings,
                compiler: std::sync::RwLock::new(None),
                pool,
                idle: Arc::new(IdleBudget::new(instances as usize / 2)),
                ticker_thread,
                ticker_priority: std::sync::Mutex::new(TickerPriority::default()),
            }),
        };
        Ok(runtime)
    }

    /// What its engine is made from.
    pub fn settings(&self) -> EngineSettings {
        self.inner.settings
    }

    /// Compiles the components loaded from now on with `compiler` instead of on the calling
    /// thread.
    pub fn set_compiler(&self, compiler: Arc<dyn ComponentCompiler>) {
        *self
            .inner
            .compiler
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(compiler);
    }

    /// Compiles component `bytes`, with the installed compiler if any, for the engine it needs:
    /// the one that supports the component model's concurrency if it is `concurrent` (it imports
    /// WASI 0.3: `wasi::imports_wasi_0_3`). The error is the compiler's or wasmtime's
    /// explanation.
    pub(crate) fn compile(&self, bytes: &[u8], concurrent: bool) -> Result<Component, EngineError> {
        let (engine, settings) = match concurrent {
            true => (self.concurrent_engine()?, self.inner.settings.with_concurrency()),
            false => (&self.inner.engine, self.inner.settings),
        };
        let compiler = self
            .inner
            .compiler
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(compiler) = compiler else {
            return Component::new(engine, bytes).map_err(|e| EngineError::of(&e));
        };
        let artifact = compiler.compile(&settings, bytes)?;
        // SAFETY: a `ComponentCompiler` returns only what `EngineSettings::precompile` made for
        // these settings (its contract); wasmtime checks the format and the engine's settings.
        unsafe { Component::deserialize(engine, &artifact) }
            .map_err(|e| EngineError::of(&e).doing("the compiler's artifact does not load"))
    }

    /// The engine that supports the component model's concurrency, made on first use.
    fn concurrent_engine(&self) -> Result<&Engine, EngineError> {
        if let Some(engine) = self.inner.concurrent.get() {
            return Ok(engine);
        }
        let config = self.inner.settings.with_concurrency().config();
        let engine = Engine::new(&config).map_err(|e| EngineError::of(&e))?;
        // Another thread may have made one first: either serves, and the ticker ticks the one kept.
        let _ = self.inner.concurrent.set(engine);
        Ok(self.inner.concurrent.get().expect("set above"))
    }

    /// Asks that the epoch ticker's thread be scheduled as `wanted`, or as the best below it
    /// the process is permitted; returns what it got. A new runtime's ticker has
    /// [`TickerPriority::default`], the usual scheduling.
    pub fn set_ticker_priority(&self, wanted: TickerPriority) -> TickerPriority {
        let mut priority = self
            .inner
            .ticker_priority
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *priority = wanted.apply(self.inner.ticker_thread);
        tracing::debug!(?wanted, got = ?*priority, "epoch ticker's scheduling");
        *priority
    }

    /// How the epoch ticker's thread is scheduled.
    pub fn ticker_priority(&self) -> TickerPriority {
        *self
            .inner
            .ticker_priority
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The time, to the last epoch tick (at most about a millisecond behind), read without a
    /// system call.
    pub fn coarse_now(&self) -> Instant {
        let epoch = self.inner.epoch.load(Ordering::Acquire);
        nanos_after(self.inner.base, EPOCH_TICK.as_nanos() * u128::from(epoch))
    }

    /// Epoch ticks from the current epoch to the first that begins at or after `at` (0 if it
    /// has begun): an epoch deadline that far ahead passes no sooner than `at`, and, the ticker
    /// waking at each tick's start, soon after it.
    pub(crate) fn ticks_until(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.inner.base).as_nanos();
        let target = u64::try_from(since.div_ceil(EPOCH_TICK.as_nanos())).unwrap_or(u64::MAX);
        target.saturating_sub(self.inner.epoch.load(Ordering::Acquire))
    }

    /// A future ready at `at`, woken by the epoch ticker's thread within the kernel's timer
    /// slack of that moment (tokio's timers round up to their wheel's next millisecond).
    #[cfg_attr(not(feature = "registry"), allow(dead_code))]
    pub(crate) fn alarm(&self, at: Instant) -> Alarm<'_> {
        self.inner.alarms.at(at)
    }

    #[cfg(test)]
    pub(super) fn alarms(&self) -> &Alarms {
        &self.inner.alarms
    }

    /// The per-instance memory the pool reserves.
    pub fn max_memory_bytes(&self) -> u64 {
        self.inner.settings.max_memory_bytes
    }

    /// Instances idle now, all policies together, and the most that may be.
    pub fn idle_instances(&self) -> (usize, usize) {
        (self.inner.idle.held(), self.inner.idle.limit())
    }

    pub(crate) fn idle_budget(&self) -> Arc<IdleBudget> {
        Arc::clone(&self.inner.idle)
    }

    pub(crate) fn idle_per_policy(&self) -> usize {
        self.inner.pool.idle_per_policy as usize
    }
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.alarms.rouse();
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}
