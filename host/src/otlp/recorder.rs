//! A `metrics` recorder that records the facade's counters, gauges and histograms into
//! OpenTelemetry instruments of one meter, under their OpenTelemetry names ([`names`]). Each
//! series (a name and its labels) is made once and kept; recording is the SDK's in-memory
//! aggregation, and the meter provider's reader exports it on its own thread.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockWriteGuard};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use opentelemetry::metrics::Meter;
use opentelemetry::KeyValue;

use super::names;

/// One series: its instrument and attributes.
struct Series<I> {
    instrument: I,
    attributes: Vec<KeyValue>,
    /// A counter's last absolute value, or a gauge's value (as `f64` bits).
    last: AtomicU64,
}

impl CounterFn for Series<opentelemetry::metrics::Counter<u64>> {
    fn increment(&self, value: u64) {
        self.instrument.add(value, &self.attributes);
    }

    fn absolute(&self, value: u64) {
        let before = self.last.fetch_max(value, Ordering::Relaxed);
        if value > before {
            self.instrument.add(value - before, &self.attributes);
        }
    }
}

impl GaugeFn for Series<opentelemetry::metrics::Gauge<f64>> {
    fn increment(&self, value: f64) {
        self.change(|now| now + value);
    }

    fn decrement(&self, value: f64) {
        self.change(|now| now - value);
    }

    fn set(&self, value: f64) {
        self.last.store(value.to_bits(), Ordering::Relaxed);
        self.instrument.record(value, &self.attributes);
    }
}

impl Series<opentelemetry::metrics::Gauge<f64>> {
    fn change(&self, by: impl Fn(f64) -> f64) {
        let mut now = self.last.load(Ordering::Relaxed);
        loop {
            let next = by(f64::from_bits(now));
            match self.last.compare_exchange_weak(
                now,
                next.to_bits(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return self.instrument.record(next, &self.attributes),
                Err(seen) => now = seen,
            }
        }
    }
}

impl HistogramFn for Series<opentelemetry::metrics::Histogram<f64>> {
    fn record(&self, value: f64) {
        self.instrument.record(value, &self.attributes);
    }
}

/// The series made so far, by key.
#[derive(Default)]
struct Made {
    counters: HashMap<Key, Arc<Series<opentelemetry::metrics::Counter<u64>>>>,
    gauges: HashMap<Key, Arc<Series<opentelemetry::metrics::Gauge<f64>>>>,
    histograms: HashMap<Key, Arc<Series<opentelemetry::metrics::Histogram<f64>>>>,
    /// Help texts the facade described, by facade name.
    descriptions: HashMap<String, String>,
    /// Units the facade described, by facade name.
    units: HashMap<String, &'static str>,
}

/// Records the `metrics` facade into OpenTelemetry instruments (install it with
/// `metrics::set_global_recorder`, or beside another recorder with a fanout).
#[derive(Clone)]
pub struct OtlpRecorder {
    meter: Meter,
    made: Arc<RwLock<Made>>,
}

impl std::fmt::Debug for OtlpRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpRecorder").finish_non_exhaustive()
    }
}

/// A facade unit as UCUM, for a metric outside the table.
fn ucum(unit: Unit) -> &'static str {
    match unit {
        Unit::Count => "1",
        Unit::Percent => "%",
        Unit::Seconds => "s",
        Unit::Milliseconds => "ms",
        Unit::Microseconds => "us",
        Unit::Nanoseconds => "ns",
        Unit::Bytes => "By",
        _ => "",
    }
}

impl OtlpRecorder {
    pub(super) fn new(meter: Meter) -> Self {
        OtlpRecorder {
            meter,
            made: Arc::default(),
        }
    }

    fn made(&self) -> RwLockWriteGuard<'_, Made> {
        self.made.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The series of `key`, made with `make` the first time: a series made already is found
    /// under the read lock, so recording callers share it.
    fn series<I>(
        &self,
        key: &Key,
        peek: impl Fn(&Made) -> &HashMap<Key, Arc<Series<I>>>,
        pick: impl Fn(&mut Made) -> &mut HashMap<Key, Arc<Series<I>>>,
        make: impl FnOnce(&Meter, Instrument) -> I,
    ) -> Arc<Series<I>> {
        {
            let made = self.made.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(series) = peek(&made).get(key) {
                return Arc::clone(series);
            }
        }
        let mut made = self.made();
        if let Some(series) = pick(&mut made).get(key) {
            return Arc::clone(series);
        }
        let facade = key.name();
        let known = names::otel_name(facade);
        let description = made.descriptions.get(facade).cloned().unwrap_or_default();
        let instrument = match known {
            Some(otel) => Instrument {
                name: otel.name.into(),
                unit: otel.unit.into(),
                boundaries: otel.boundaries,
                description,
            },
            None => Instrument {
                name: facade.to_owned().into(),
                unit: made.units.get(facade).copied().unwrap_or_default().into(),
                boundaries: None,
                description,
            },
        };
        let attributes = key
            .labels()
            .map(|label| {
                let attribute = match known {
                    Some(_) => names::attribute(label.key()),
                    None => label.key().to_owned(),
                };
                KeyValue::new(attribute, label.value().to_owned())
            })
            .collect();
        let series = Arc::new(Series {
            instrument: make(&self.meter, instrument),
            attributes,
            last: AtomicU64::new(0),
        });
        pick(&mut made).insert(key.clone(), Arc::clone(&series));
        series
    }

    fn describe(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        let mut made = self.made();
        if let Some(unit) = unit {
            made.units.insert(key.as_str().to_owned(), ucum(unit));
        }
        made.descriptions
            .insert(key.as_str().to_owned(), description.into_owned());
    }
}

/// What an instrument is made with.
struct Instrument {
    name: Cow<'static, str>,
    unit: Cow<'static, str>,
    boundaries: Option<&'static [f64]>,
    description: String,
}

impl Recorder for OtlpRecorder {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe(key, unit, description);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.series(
            key,
            |made| &made.counters,
            |made| &mut made.counters,
            |meter, made| {
                meter
                    .u64_counter(made.name)
                    .with_unit(made.unit)
                    .with_description(made.description)
                    .build()
            },
        ))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.series(
            key,
            |made| &made.gauges,
            |made| &mut made.gauges,
            |meter, made| {
                meter
                    .f64_gauge(made.name)
                    .with_unit(made.unit)
                    .with_description(made.description)
                    .build()
            },
        ))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.series(
            key,
            |made| &made.histograms,
            |made| &mut made.histograms,
            |meter, made| {
                let builder = meter
                    .f64_histogram(made.name)
                    .with_unit(made.unit)
                    .with_description(made.description);
                match made.boundaries {
                    Some(boundaries) => builder.with_boundaries(boundaries.to_vec()).build(),
                    None => builder.build(),
                }
            },
        ))
    }
}
