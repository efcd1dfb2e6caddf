//! The xDS source's state as Prometheus metrics, read at each scrape (docs/xds.md "Status"):
//! whether the stream is open, the versions ACKed and NACKed (the last of each as an info
//! metric with its resource type, version, nonce and, for a NACK, the error), the streams lost,
//! and how much of the version serving was not read.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use rebound::xds::ads::XdsSource;

/// The collector of one xDS source.
#[derive(Debug)]
pub struct XdsCollector(pub XdsSource);

impl Collector for XdsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let status = self.0.status();
        let server = [("server", status.server.as_str())];
        let gauges = [
            (
                "xds_connected",
                "1 while the xDS stream is open",
                i64::from(status.connected),
            ),
            (
                "xds_ignored",
                "Items of the version serving that Rebound does not read",
                status.ignored.len() as i64,
            ),
        ];
        for (name, help, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(value).encode(family.encode_family(&server)?)?;
        }
        let counters = [
            (
                "xds_acks",
                "xDS versions ACKed (validated and swapped in)",
                status.acks,
            ),
            (
                "xds_nacks",
                "xDS versions NACKed (the version serving stayed)",
                status.nacks,
            ),
            (
                "xds_reconnects",
                "xDS streams opened again after one failed",
                status.reconnects,
            ),
        ];
        for (name, help, value) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(value).encode(family.encode_family(&server)?)?;
        }
        if let Some(ack) = &status.last_ack {
            let mut family = encoder.encode_descriptor(
                "xds_last_ack",
                "The last xDS version ACKed: 1, with its resource type, version and nonce",
                None,
                MetricType::Gauge,
            )?;
            let labels = [
                ("server", status.server.as_str()),
                ("resource", &ack.resource),
                ("version", &ack.version),
                ("nonce", &ack.nonce),
            ];
            ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
        }
        if let Some((nack, error)) = &status.last_nack {
            let mut family = encoder.encode_descriptor(
                "xds_last_nack",
                "The last xDS version NACKed: 1, with its resource type, version, nonce and error",
                None,
                MetricType::Gauge,
            )?;
            let labels = [
                ("server", status.server.as_str()),
                ("resource", &nack.resource),
                ("version", &nack.version),
                ("nonce", &nack.nonce),
                ("error", error.as_str()),
            ];
            ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}
