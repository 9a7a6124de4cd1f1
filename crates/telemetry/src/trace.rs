//! OpenTelemetry for the MCP proxy: a span per tool call (the host's request), a child span per
//! gate decision and one for the upstream call, the W3C trace context taken from the host and
//! passed to the upstream, and every audit event as a log record of the call's trace. Exported
//! over OTLP/HTTP (protobuf or JSON) by the SDK's batch processors, on threads of their own with
//! bounded queues: a call never waits on the exporter, and a full queue drops rather than
//! blocks. Off unless an endpoint is configured.
//!
//! Attribute names follow the OpenTelemetry semantic conventions for MCP and GenAI
//! (`mcp.method.name`, `gen_ai.tool.name`, `gen_ai.operation.name`, `jsonrpc.request.id`,
//! `mcp.session.id`, `mcp.protocol.version`, `network.transport`, `error.type`); what only
//! toolgate knows is under `toolgate.*` (layer, rule, code, outcome, contract version and
//! digest).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use opentelemetry::logs::{AnyValue, LogRecord, Logger, LoggerProvider, Severity};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Span, SpanContext, SpanKind, Status, TraceContextExt, Tracer, TracerProvider,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;

use crate::CallAttributes;
use opentelemetry_sdk::logs::{BatchLogProcessor, SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider};
use toolgate_gate::{Contract, Decision, MAX_RECORDED_TEXT, bounded_text};

/// The OTLP/HTTP encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpProtocol {
    /// `http/protobuf`, the default of the OTLP specification.
    #[default]
    Protobuf,
    /// `http/json`.
    Json,
}

impl OtlpProtocol {
    /// Reads `http/protobuf` or `http/json` (what `OTEL_EXPORTER_OTLP_PROTOCOL` holds).
    pub fn parse(text: &str) -> Result<OtlpProtocol, String> {
        match text {
            "http/protobuf" => Ok(OtlpProtocol::Protobuf),
            "http/json" => Ok(OtlpProtocol::Json),
            "grpc" => Err(
                "OTLP over gRPC is not built into toolgate: use http/protobuf (port 4318 on a collector)"
                    .to_owned(),
            ),
            other => Err(format!(
                "{other:?} is not an OTLP protocol toolgate speaks: http/protobuf or http/json"
            )),
        }
    }
}

/// Where and how traces and audit logs are exported.
#[derive(Debug, Clone)]
pub struct TracingConfig {
    /// The collector's base URL (`http://collector:4318`): traces go to `/v1/traces` under it,
    /// audit logs to `/v1/logs`.
    pub endpoint: String,
    /// The encoding.
    pub protocol: OtlpProtocol,
    /// The share of calls traced, 0 to 1: of those without a host's trace context, picked at
    /// random; of those a host sampled, picked by trace id (so replicas and retries agree). A
    /// host can lower it (a context it did not sample is not traced), never raise it.
    pub sample_ratio: f64,
    /// Whether every audit event is also exported as a log record.
    pub audit_logs: bool,
    /// `service.name` of the resource.
    pub service_name: String,
    /// How long one export may take.
    pub timeout: Duration,
}

/// The most bytes the span exporter holds: its queue, the batch being exported, and that
/// batch's encoding. Every span's size is bounded (its strings from outside are kept as
/// [`bounded_text`] keeps them, its attributes are a fixed list), so the queue's length in spans
/// follows from it: past it, new spans are dropped, never a call made to wait.
pub const EXPORT_QUEUE_BYTES: usize = 16 << 20;

/// The most bytes one span takes in the exporter: a fixed part (ids, times, status, the
/// structure) and at most 16 attributes of a short name and a [`MAX_RECORDED_TEXT`] value.
/// `the_largest_span_is_within_its_bound` holds the largest span a host can cause to it.
pub const MAX_SPAN_BYTES: usize = 1024 + 16 * (64 + MAX_RECORDED_TEXT);

/// The most bytes one audit log record takes: the audit line (the gate bounds it: every string
/// from outside at most [`MAX_RECORDED_TEXT`] bytes, escaped) and its few attributes.
pub const MAX_LOG_RECORD_BYTES: usize = 16 * 1024;

/// Spans in one export request.
const EXPORT_BATCH: usize = 256;

/// The most spans queued for export: the byte budget, less the batch in flight and its
/// encoding, over the largest span.
pub const EXPORT_QUEUE: usize = EXPORT_QUEUE_BYTES / MAX_SPAN_BYTES - 2 * EXPORT_BATCH;

/// Audit log records in one export request, and the most queued (as for spans).
const LOG_EXPORT_BATCH: usize = 64;
const LOG_EXPORT_QUEUE: usize = EXPORT_QUEUE_BYTES / MAX_LOG_RECORD_BYTES - 2 * LOG_EXPORT_BATCH;

// The queues, with a batch in flight and its encoding, fit the byte budget.
const _: () = assert!(
    EXPORT_QUEUE * MAX_SPAN_BYTES + 2 * EXPORT_BATCH * MAX_SPAN_BYTES <= EXPORT_QUEUE_BYTES
);
const _: () = assert!(
    LOG_EXPORT_QUEUE * MAX_LOG_RECORD_BYTES + 2 * LOG_EXPORT_BATCH * MAX_LOG_RECORD_BYTES
        <= EXPORT_QUEUE_BYTES
);

/// The tracer and logger a front exports with, until [`Tracing::shutdown`].
pub struct Tracing {
    sample_ratio: f64,
    tracer_provider: SdkTracerProvider,
    tracer: SdkTracer,
    logger_provider: Option<SdkLoggerProvider>,
    logger: Option<SdkLogger>,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracing").finish_non_exhaustive()
    }
}

/// The collector's base URL, checked: `http://` or `https://`, with a host; the path the
/// signal's own is added to.
fn signal_url(base: &str, signal: &str) -> Result<String, String> {
    let lower = base.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!(
            "--otlp-endpoint {base:?}: write the collector's base URL, http://HOST:4318 or https://…"
        ));
    }
    Ok(format!("{}/v1/{signal}", base.trim_end_matches('/')))
}

/// An HTTP client for the exporters: TLS by ring (as every HTTPS client of toolgate), no
/// redirects (a collector does not move), bounded by `timeout`.
fn http_client(timeout: Duration) -> Result<reqwest::blocking::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| format!("cannot set up the OTLP exporter's HTTP client: {error}"))
}

impl Tracing {
    /// Starts the exporters. Their HTTP client is built here (it must not be built on an async
    /// runtime's thread); nothing is sent until the first batch.
    pub fn start(config: &TracingConfig) -> Result<Tracing, String> {
        if !(0.0..=1.0).contains(&config.sample_ratio) {
            return Err(format!(
                "--trace-sample {}: a share between 0 and 1",
                config.sample_ratio
            ));
        }
        let protocol = match config.protocol {
            OtlpProtocol::Protobuf => Protocol::HttpBinary,
            OtlpProtocol::Json => Protocol::HttpJson,
        };
        let resource = Resource::builder()
            .with_service_name(config.service_name.clone())
            .with_attribute(KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION").to_owned(),
            ))
            .build();
        let client = http_client(config.timeout)?;
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_protocol(protocol)
            .with_endpoint(signal_url(&config.endpoint, "traces")?)
            .with_timeout(config.timeout)
            .build()
            .map_err(|error| format!("cannot set up the OTLP trace exporter: {error}"))?;
        let batch = opentelemetry_sdk::trace::BatchConfigBuilder::default()
            .with_max_queue_size(EXPORT_QUEUE)
            .with_max_export_batch_size(EXPORT_BATCH)
            .with_scheduled_delay(Duration::from_secs(1))
            .build();
        let tracer_provider = SdkTracerProvider::builder()
            .with_span_processor(
                BatchSpanProcessor::builder(spans)
                    .with_batch_config(batch)
                    .build(),
            )
            // Sampling is decided before a span is asked for (`Tracing::call`): the SDK records
            // what it is given.
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)))
            .with_resource(resource.clone())
            .build();
        let tracer = tracer_provider.tracer("toolgate");
        let (logger_provider, logger) = if config.audit_logs {
            let logs = opentelemetry_otlp::LogExporter::builder()
                .with_http()
                .with_http_client(client)
                .with_protocol(protocol)
                .with_endpoint(signal_url(&config.endpoint, "logs")?)
                .with_timeout(config.timeout)
                .build()
                .map_err(|error| format!("cannot set up the OTLP log exporter: {error}"))?;
            let batch = opentelemetry_sdk::logs::BatchConfigBuilder::default()
                .with_max_queue_size(LOG_EXPORT_QUEUE)
                .with_max_export_batch_size(LOG_EXPORT_BATCH)
                .with_scheduled_delay(Duration::from_secs(1))
                .build();
            let provider = SdkLoggerProvider::builder()
                .with_log_processor(
                    BatchLogProcessor::builder(logs)
                        .with_batch_config(batch)
                        .build(),
                )
                .with_resource(resource)
                .build();
            let logger = provider.logger("toolgate.audit");
            (Some(provider), Some(logger))
        } else {
            (None, None)
        };
        Ok(Tracing {
            sample_ratio: config.sample_ratio,
            tracer_provider,
            tracer,
            logger_provider,
            logger,
        })
    }

    /// The span of one tool call a host asked for, under the trace context the host sent
    /// (`traceparent`, from `params._meta` or the HTTP header), else a new trace, sampled at
    /// the configured ratio.
    ///
    /// Sampling is decided here, before the SDK is asked for anything, and the operator's ratio
    /// bounds it whatever hosts send: a host's context it sampled is traced if its trace id
    /// falls in the ratio (as OpenTelemetry's trace-id ratio sampler decides); one it did not
    /// sample, or one out of the ratio, is passed on to the upstream as it came, and no span is
    /// made; a call without one is traced at the ratio, at random. The SDK's own sampler then
    /// follows the parent or samples always, so a call sampled out costs neither a span nor an
    /// identifier.
    pub fn call(&self, call: &CallAttributes<'_>) -> CallSpan {
        let host = call.traceparent.and_then(|traceparent| {
            let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
            let parent = TraceContextPropagator::new().extract(&carrier);
            parent.span().span_context().is_valid().then_some(parent)
        });
        let parent = match host {
            Some(parent)
                if parent.span().span_context().is_sampled()
                    && self.within_ratio(parent.span().span_context().trace_id()) =>
            {
                parent
            }
            Some(parent) => {
                return CallSpan {
                    recorded: None,
                    passed: Some(parent.span().span_context().clone()),
                };
            }
            None if self.sample_ratio >= 1.0
                || (self.sample_ratio > 0.0 && rand::random::<f64>() < self.sample_ratio) =>
            {
                Context::new()
            }
            None => {
                return CallSpan {
                    recorded: None,
                    passed: None,
                };
            }
        };
        let (name, attributes) = server_span(call);
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        CallSpan {
            recorded: Some(Recorded {
                context: parent.with_span(span),
                upstream: Mutex::new(None),
                refused: Mutex::new(None),
                tracer: self.tracer.clone(),
            }),
            passed: None,
        }
    }

    /// Whether a trace a host sampled is traced here: its id's last 8 bytes read as a number,
    /// below the ratio's share of their range (OpenTelemetry's `TraceIdRatioBased`).
    fn within_ratio(&self, trace: opentelemetry::trace::TraceId) -> bool {
        if self.sample_ratio >= 1.0 {
            return true;
        }
        let bytes = trace.to_bytes();
        let low = u64::from_be_bytes(bytes[8..16].try_into().unwrap_or([0; 8])) >> 1;
        let bound = (self.sample_ratio * (1u64 << 63) as f64) as u64;
        low < bound
    }

    /// Exports what is queued and stops, waiting at most `within`.
    pub fn shutdown(&self, within: Duration) {
        let _ = self.tracer_provider.shutdown_with_timeout(within);
        if let Some(provider) = &self.logger_provider {
            let _ = provider.shutdown_with_timeout(within);
        }
    }

    /// A decision's audit line as a log record, in `call`'s trace where there is one.
    pub fn audit(&self, decision: &Decision, call: Option<&CallSpan>) {
        let Some(logger) = &self.logger else {
            return;
        };
        let mut line = Vec::with_capacity(512);
        decision.write_audit_line(&mut line);
        let mut record = logger.create_log_record();
        record.set_event_name("toolgate.decision");
        let now = SystemTime::now();
        record.set_timestamp(decision.time());
        record.set_observed_timestamp(now);
        let (severity, text) = if decision.is_admitted() {
            (Severity::Info, "INFO")
        } else {
            (Severity::Warn, "WARN")
        };
        record.set_severity_number(severity);
        record.set_severity_text(text);
        let line = line.strip_suffix(b"\n").unwrap_or(&line);
        record.set_body(AnyValue::String(
            String::from_utf8_lossy(line).into_owned().into(),
        ));
        record.add_attribute("toolgate.outcome", decision.outcome().as_str());
        let traced = call.and_then(|call| match (&call.recorded, &call.passed) {
            (Some(recorded), _) => Some(recorded.context.span().span_context().clone()),
            (None, passed) => passed.clone(),
        });
        if let Some(context) = traced {
            record.set_trace_context(
                context.trace_id(),
                context.span_id(),
                Some(context.trace_flags()),
            );
        }
        logger.emit(record);
    }
}

/// A tool call's server span: its name and attributes. Every value a host chose is kept
/// bounded: its digest and length past [`MAX_RECORDED_TEXT`] bytes.
fn server_span(call: &CallAttributes<'_>) -> (String, Vec<KeyValue>) {
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", bounded(call.tool)),
        KeyValue::new("jsonrpc.request.id", bounded(&call.request_id.to_string())),
        KeyValue::new("network.transport", call.transport),
        KeyValue::new("toolgate.door", call.door),
    ];
    if let Some(session) = call.session {
        attributes.push(KeyValue::new("mcp.session.id", bounded(session)));
    }
    if let Some(version) = call.protocol_version {
        attributes.push(KeyValue::new("mcp.protocol.version", bounded(version)));
    }
    if let Some(caller) = call.caller {
        // Who asked (the token's issuer and subject), as OpenTelemetry names an end user.
        attributes.push(KeyValue::new("enduser.id", bounded(caller)));
    }
    (
        format!("tools/call {}", bounded_text(call.tool)),
        attributes,
    )
}

/// A string from outside as a span attribute: bounded ([`bounded_text`]).
fn bounded(text: &str) -> String {
    bounded_text(text).into_owned()
}

/// One tool call's trace: for a call that is traced, its server span and the upstream call's
/// client span while it is out; for one that is not, the host's context it passes on, if any.
/// Dropped, it ends its spans, whichever way the call ended.
pub struct CallSpan {
    recorded: Option<Recorded>,
    /// A host's context that it did not sample: the upstream hears it as it came.
    passed: Option<SpanContext>,
}

/// A traced call's spans.
struct Recorded {
    context: Context,
    /// The upstream call's client span, while it is out.
    upstream: Mutex<Option<Context>>,
    /// The code the agent was given when the gate refused, for `error.type`.
    refused: Mutex<Option<&'static str>>,
    tracer: SdkTracer,
}

impl std::fmt::Debug for CallSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallSpan")
            .field("sampled", &self.sampled())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl CallSpan {
    /// The call's W3C trace id and the span that stands for it here (32 and 16 lowercase hex
    /// digits): the server span's, for a traced call; the host's own context, for a call the
    /// host sent an unsampled one with; `None` for a call nobody traces.
    pub fn ids(&self) -> Option<(String, String)> {
        let context = match (&self.recorded, &self.passed) {
            (Some(recorded), _) => recorded.context.span().span_context().clone(),
            (None, Some(passed)) => passed.clone(),
            (None, None) => return None,
        };
        Some((
            context.trace_id().to_string(),
            context.span_id().to_string(),
        ))
    }

    /// Whether this call is traced (sampled).
    pub fn sampled(&self) -> bool {
        self.recorded.is_some()
    }

    /// The call goes to the upstream now (`transport`: `pipe` or `tcp`): starts the client
    /// span, and returns the `traceparent` the upstream is handed: the client span's, or the
    /// host's unsampled context as it came (so the upstream follows the same decision), or
    /// none for a call nobody traces.
    pub fn upstream_started(&self, tool: &str, transport: &'static str) -> Option<String> {
        let Some(recorded) = &self.recorded else {
            return self.passed.as_ref().map(traceparent_of);
        };
        let tracer = &recorded.tracer;
        let span = tracer
            .span_builder(format!("tools/call {}", bounded_text(tool)))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", bounded(tool)),
                KeyValue::new("network.transport", transport),
            ])
            .start_with_context(tracer, &recorded.context);
        let context = recorded.context.with_span(span);
        let traceparent = traceparent_of(context.span().span_context());
        *lock(&recorded.upstream) = Some(context);
        Some(traceparent)
    }

    /// The upstream's part is over at `at`: it answered (`failure` `None`), or did not, or
    /// answered with an error (why, an `error.type`).
    pub fn upstream_ended(&self, failure: Option<&'static str>, at: SystemTime) {
        let Some(recorded) = &self.recorded else {
            return;
        };
        if let Some(context) = lock(&recorded.upstream).take() {
            let span = context.span();
            if let Some(failure) = failure {
                span.set_attribute(KeyValue::new("error.type", failure));
                span.set_status(Status::error(failure));
            }
            span.end_with_timestamp(at);
        }
    }

    /// A decision `contract` made for this call, begun at `started`: a `toolgate.decide` span
    /// under the call's, and the call marked with the code a refusal gave the agent.
    pub fn decided(&self, contract: &Contract, decision: &Decision, started: SystemTime) {
        let Some(recorded) = &self.recorded else {
            return;
        };
        let code = decision.outcome().code().map(|code| code.as_str());
        if decision.rejection().is_some() {
            *lock(&recorded.refused) = code;
        }
        let tracer = &recorded.tracer;
        let mut attributes = vec![
            KeyValue::new("toolgate.outcome", decision.outcome().as_str()),
            KeyValue::new("toolgate.contract.tool", contract.tool().to_owned()),
            KeyValue::new("toolgate.contract.version", contract.version().to_owned()),
            KeyValue::new("toolgate.contract.digest", contract.digest().to_hex()),
            KeyValue::new(
                "toolgate.direction",
                match contract.direction() {
                    toolgate_gate::Direction::Result => "result",
                    toolgate_gate::Direction::Action => "action",
                },
            ),
        ];
        if let Some(code) = code {
            attributes.push(KeyValue::new("toolgate.code", code));
        }
        if let Some(rejection) = decision.rejection() {
            attributes.push(KeyValue::new("toolgate.layer", rejection.layer().as_str()));
            attributes.push(KeyValue::new("error.type", rejection.code().as_str()));
            if let Some(rule) = decision.rule() {
                attributes.push(KeyValue::new("toolgate.rule", bounded(rule)));
            }
        }
        if let Some(shadow) = decision.shadow() {
            attributes.push(KeyValue::new(
                "toolgate.shadow.version",
                shadow.version.clone(),
            ));
            attributes.push(KeyValue::new("toolgate.shadow.outcome", shadow.outcome));
            attributes.push(KeyValue::new(
                "toolgate.shadow.disagrees",
                decision.shadow_disagrees(),
            ));
        }
        let mut span = tracer
            .span_builder("toolgate.decide")
            .with_kind(SpanKind::Internal)
            .with_start_time(started)
            .with_attributes(attributes)
            .start_with_context(tracer, &recorded.context);
        if decision.rejection().is_some() {
            span.set_status(Status::error("refused by the contract"));
        }
        span.end();
    }
}

impl Drop for CallSpan {
    fn drop(&mut self) {
        self.upstream_ended(Some("cancelled"), SystemTime::now());
        let Some(recorded) = &self.recorded else {
            return;
        };
        let span = recorded.context.span();
        if let Some(code) = *lock(&recorded.refused) {
            span.set_attribute(KeyValue::new("error.type", code));
            span.set_status(Status::error(
                "the gate refused the call's result or arguments",
            ));
        }
        span.end();
    }
}

/// The W3C `traceparent` of a span: version 00, its trace, its span, its flags (what the
/// propagator writes; written here byte by byte, since `format!` over a `u128` in hex costs
/// more than the rest of a call's trace).
fn traceparent_of(span: &SpanContext) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [b'-'; 55];
    let mut at = 0;
    let mut hex = |bytes: &[u8]| {
        for byte in bytes {
            text[at] = HEX[usize::from(byte >> 4)];
            text[at + 1] = HEX[usize::from(byte & 0xf)];
            at += 2;
        }
        // The dash after each field.
        at += 1;
    };
    hex(&[0]);
    hex(&span.trace_id().to_bytes());
    hex(&span.span_id().to_bytes());
    hex(&[span.trace_flags().to_u8()]);
    String::from_utf8_lossy(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracing(sample_ratio: f64) -> Tracing {
        Tracing::start(&TracingConfig {
            endpoint: "http://127.0.0.1:9".to_owned(),
            protocol: OtlpProtocol::Json,
            sample_ratio,
            audit_logs: false,
            service_name: "test".to_owned(),
            timeout: Duration::from_millis(50),
        })
        .unwrap()
    }

    fn attributes(traceparent: Option<&str>) -> CallAttributes<'_> {
        CallAttributes {
            tool: "weather",
            request_id: &"1",
            transport: "pipe",
            door: "mcp-proxy",
            session: None,
            protocol_version: None,
            traceparent,
            caller: None,
        }
    }

    /// What the upstream is handed is what the W3C propagator itself writes for the same
    /// context, sampled or not, and it continues the host's trace.
    #[test]
    fn the_upstreams_traceparent_is_the_propagators() {
        for (ratio, host) in [
            (
                1.0,
                Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            ),
            (
                0.0,
                Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"),
            ),
            (0.0, None),
            (1.0, None),
        ] {
            let tracing = tracing(ratio);
            let call = tracing.call(&attributes(host));
            let written = call.upstream_started("weather", "pipe");
            let mut carrier = HashMap::new();
            let context = match &call.recorded {
                Some(recorded) => lock(&recorded.upstream).clone(),
                None => call
                    .passed
                    .clone()
                    .map(|passed| Context::new().with_remote_span_context(passed)),
            };
            if let Some(context) = &context {
                TraceContextPropagator::new().inject_context(context, &mut carrier);
            }
            assert_eq!(
                written.as_ref(),
                carrier.get("traceparent"),
                "{ratio} {host:?}"
            );
            match (host, &written) {
                // The host's trace goes on; its sampling decision too.
                (Some(host), Some(written)) => {
                    assert_eq!(written[..35], host[..35]);
                    assert_eq!(written[53..], host[53..]);
                    // Not sampled by the host: passed on as it came.
                    assert_eq!(written == host, host.ends_with("-00"));
                }
                (None, written) => assert_eq!(written.is_some(), ratio == 1.0),
                (Some(_), None) => panic!("a host's context was not passed on"),
            }
            tracing.shutdown(Duration::from_millis(50));
        }
    }

    /// A host's malformed context begins a new trace rather than failing the call.
    #[test]
    fn a_malformed_traceparent_begins_a_new_trace() {
        let tracing = tracing(1.0);
        for bad in [
            "",
            "00-zz-yy-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n",
        ] {
            let call = tracing.call(&attributes(Some(bad)));
            assert!(call.sampled());
            let written = call.upstream_started("weather", "pipe").unwrap();
            assert!(!written.contains("0af7651916cd43dd"), "{bad:?}: {written}");
        }
        tracing.shutdown(Duration::from_millis(50));
    }

    /// The operator's ratio bounds what hosts can force: at 0 a host's sampled context is not
    /// traced (it is passed on as it came); at 1 it is; in between, the trace id decides, the
    /// same way each time.
    #[test]
    fn a_host_cannot_force_tracing_past_the_operators_ratio() {
        let sampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let off = tracing(0.0);
        let call = off.call(&attributes(Some(sampled)));
        assert!(!call.sampled());
        assert_eq!(
            call.upstream_started("weather", "pipe").as_deref(),
            Some(sampled)
        );
        off.shutdown(Duration::from_millis(50));
        let on = tracing(1.0);
        assert!(on.call(&attributes(Some(sampled))).sampled());
        on.shutdown(Duration::from_millis(50));
        // Trace ids whose last 8 bytes are low are in a half; high ones are not.
        let half = tracing(0.5);
        let low = "00-0af7651916cd43dd0000000000000001-b7ad6b7169203331-01";
        let high = "00-0af7651916cd43ddf000000000000001-b7ad6b7169203331-01";
        for _ in 0..20 {
            assert!(half.call(&attributes(Some(low))).sampled());
            assert!(!half.call(&attributes(Some(high))).sampled());
        }
        half.shutdown(Duration::from_millis(50));
    }

    /// A host's megabyte request id, session and protocol version, on the longest tool name a
    /// contract may have: the span stays within the size the export queue is counted in.
    #[test]
    fn the_largest_span_is_within_its_bound() {
        let huge = "\u{1}".repeat(1 << 20);
        let tool = "t".repeat(128);
        let call = CallAttributes {
            tool: &tool,
            request_id: &huge,
            transport: "tcp",
            door: "mcp-proxy",
            session: Some(&huge),
            protocol_version: Some(&huge),
            traceparent: None,
            caller: None,
        };
        let (name, attributes) = server_span(&call);
        let bytes = 1024
            + name.len()
            + attributes
                .iter()
                .map(|pair| pair.key.as_str().len() + pair.value.as_str().len())
                .sum::<usize>();
        assert!(bytes <= MAX_SPAN_BYTES, "{bytes} bytes");
        assert!(
            attributes
                .iter()
                .all(|pair| pair.value.as_str().len() <= MAX_RECORDED_TEXT)
        );
        let id = attributes
            .iter()
            .find(|pair| pair.key.as_str() == "jsonrpc.request.id")
            .unwrap();
        assert!(id.value.as_str().ends_with("(1048576 bytes)"), "{id:?}");
    }

    #[test]
    fn an_endpoint_must_be_a_base_url_and_the_ratio_a_share() {
        assert!(signal_url("collector:4318", "traces").is_err());
        assert_eq!(
            signal_url("http://collector:4318/", "traces").unwrap(),
            "http://collector:4318/v1/traces"
        );
        let config = TracingConfig {
            endpoint: "http://127.0.0.1:9".to_owned(),
            protocol: OtlpProtocol::Protobuf,
            sample_ratio: 1.5,
            audit_logs: false,
            service_name: "test".to_owned(),
            timeout: Duration::from_millis(50),
        };
        assert!(Tracing::start(&config).is_err());
        assert!(
            OtlpProtocol::parse("grpc")
                .unwrap_err()
                .contains("http/protobuf")
        );
    }
}
