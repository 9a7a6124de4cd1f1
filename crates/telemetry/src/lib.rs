//! What toolgate's production fronts report of themselves, for the operator of a fleet: Prometheus
//! metrics ([`Metrics`]: decisions by tool, version, outcome, layer and code; decision and
//! upstream latency; upstream failures; shadow agreement; callers refused; calls in flight),
//! served at `/metrics` ([`scrape_response`], [`MetricsEndpoint`]) or read as data by a host
//! process ([`Metrics::samples`]); and, with the `otlp` feature, OpenTelemetry traces and audit
//! log records exported over OTLP ([`Tracing`]).
//!
//! Nothing here decides anything: a front records what the gate decided, after it decided.
//! Every label is bounded by configuration (module `metrics`), and nothing a tool returned is
//! ever a label or an attribute.

mod attributes;
mod endpoint;
mod metrics;
mod snapshot;
#[cfg(feature = "otlp")]
mod trace;

pub use attributes::CallAttributes;
pub use endpoint::{HEAD_TIMEOUT, MAX_CONNECTIONS, METRICS_PATH, MetricsEndpoint, scrape_response};
pub use metrics::{
    CallerRefusal, ContractMetrics, InFlight, Metrics, OPENMETRICS_TEXT, PROMETHEUS_TEXT,
    UpstreamFailure,
};
pub use snapshot::{Sample, parse_exposition};
#[cfg(feature = "otlp")]
pub use trace::{
    CallSpan, EXPORT_QUEUE, EXPORT_QUEUE_BYTES, MAX_LOG_RECORD_BYTES, MAX_SPAN_BYTES, OtlpProtocol,
    Tracing, TracingConfig,
};
