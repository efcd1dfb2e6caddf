//! The library's metrics (`rebound::telemetry`, recorded through the `metrics` facade) on the
//! server's Prometheus endpoint: a `metrics` recorder whose counters are families of the
//! server's `prometheus_client` registry, so `/metrics` shows the names and labels an
//! embedding application sees with its own recorder. The library records counters only;
//! gauges and histograms recorded through the facade are ignored.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::Counter as PromCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::MetricType;

/// A counter's labels, in the order the library gives them.
type Labels = Vec<(String, String)>;

/// One metric name's help text and its series.
#[derive(Debug, Default)]
struct CounterFamily {
    help: String,
    series: Family<Labels, PromCounter>,
}

/// The counters recorded so far, by full name (`rebound_decisions_total`).
type Counters = Arc<Mutex<BTreeMap<String, CounterFamily>>>;

/// The recorder to install (`metrics::set_global_recorder`), and the collector that shows
/// what it recorded to register with the Prometheus registry.
pub fn bridge() -> (FacadeRecorder, FacadeCollector) {
    let counters = Counters::default();
    (
        FacadeRecorder(Arc::clone(&counters)),
        FacadeCollector(counters),
    )
}

/// Records the facade's counters into Prometheus families.
#[derive(Debug)]
pub struct FacadeRecorder(Counters);

/// A Prometheus counter as a `metrics` counter.
struct Increments(PromCounter);

impl metrics::CounterFn for Increments {
    fn increment(&self, value: u64) {
        self.0.inc_by(value);
    }

    fn absolute(&self, value: u64) {
        let now = self.0.get();
        if value > now {
            self.0.inc_by(value - now);
        }
    }
}

impl FacadeRecorder {
    fn counters(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, CounterFamily>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Recorder for FacadeRecorder {
    fn describe_counter(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.counters()
            .entry(key.as_str().to_owned())
            .or_default()
            .help = description.into_owned();
    }

    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels: Labels = key
            .labels()
            .map(|label| (label.key().to_owned(), label.value().to_owned()))
            .collect();
        let series = self
            .counters()
            .entry(key.name().to_owned())
            .or_default()
            .series
            .get_or_create(&labels)
            .clone();
        Counter::from_arc(Arc::new(Increments(series)))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Shows the facade's counters at each scrape.
#[derive(Debug)]
pub struct FacadeCollector(Counters);

impl Collector for FacadeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counters = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, family) in counters.iter() {
            // The registry adds its `rebound_` prefix, and OpenMetrics the `_total` suffix.
            let short = name.strip_prefix("rebound_").unwrap_or(name);
            let short = short.strip_suffix("_total").unwrap_or(short);
            let descriptor =
                encoder.encode_descriptor(short, &family.help, None, MetricType::Counter)?;
            family.series.encode(descriptor)?;
        }
        Ok(())
    }
}
