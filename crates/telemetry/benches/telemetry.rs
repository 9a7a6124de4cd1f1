//! What metrics and tracing add to one proxied call, beside the gate's own decision on the
//! same call: the metrics a call records (its decision counted and timed, its upstream latency,
//! its in-flight gauge), a call's trace when it is sampled out (the default for a call whose
//! host sent no sampled context under `--trace-sample 0`), and when it is sampled (its three
//! spans built and queued for the exporter), with and without its audit event as a log record.
//! `cargo bench -p toolgate-telemetry --bench telemetry`; BENCHMARKS.md, "Metrics and traces",
//! reports it.
//!
//! The exporter sends to a loopback port nobody listens on: exports fail on the SDK's own
//! thread, off the measured path, as a collector that is down would make them.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use toolgate_gate::{Contract, ContractSource, Request, Response};
use toolgate_telemetry::{CallAttributes, Metrics, OtlpProtocol, Tracing, TracingConfig};

const RESULT: &[u8] = br#"{"city":"Lisbon","temperature_c":21.5,"conditions":"clear"}"#;

fn weather() -> Contract {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/contracts/weather/v1");
    Contract::compile(&ContractSource::read_dir(folder).expect("the weather contract"))
        .expect("it compiles")
}

fn tracing(sample_ratio: f64, audit_logs: bool) -> Tracing {
    Tracing::start(&TracingConfig {
        endpoint: "http://127.0.0.1:9".to_owned(),
        protocol: OtlpProtocol::Protobuf,
        sample_ratio,
        audit_logs,
        service_name: "bench".to_owned(),
        timeout: Duration::from_millis(100),
    })
    .expect("the exporter starts")
}

fn attributes() -> CallAttributes<'static> {
    CallAttributes {
        tool: "weather",
        request_id: &"7",
        transport: "pipe",
        door: "mcp-proxy",
        session: None,
        protocol_version: None,
        traceparent: None,
        caller: None,
    }
}

fn bench(criterion: &mut Criterion) {
    let contract = weather();
    let request = Request::new("7").with_context("city", serde_json::json!("Lisbon"));
    let decide = || contract.admit_response(Response::body(RESULT), &request, SystemTime::now());
    assert!(decide().is_admitted(), "the benchmark's call is admitted");
    let mut group = criterion.benchmark_group("telemetry");
    group.bench_function("the gate's decision (for scale)", |b| {
        b.iter(|| black_box(decide()))
    });
    let metrics = Metrics::new();
    let decision = decide();
    // As the proxy records a call: its contract's metrics resolved when the call begins.
    group.bench_function("metrics of one call", |b| {
        b.iter(|| {
            let resolved = metrics.contract(&contract);
            let in_flight = resolved.call_started();
            resolved.upstream_answered(Duration::from_micros(40));
            resolved.decided(black_box(&decision), Duration::from_micros(2));
            drop(in_flight);
        })
    });
    for (name, ratio, logs) in [
        ("trace of one call, sampled out", 0.0, false),
        (
            "trace of one call, sampled out, audit log record",
            0.0,
            true,
        ),
        ("trace of one call, sampled", 1.0, false),
        ("trace of one call, sampled, audit log record", 1.0, true),
    ] {
        let tracing = tracing(ratio, logs);
        group.bench_function(name, |b| {
            b.iter(|| {
                let call = tracing.call(&attributes());
                let traceparent = call.upstream_started("weather", "pipe");
                let now = SystemTime::now();
                call.upstream_ended(None, now);
                call.decided(&contract, &decision, now);
                tracing.audit(&decision, Some(&call));
                black_box(traceparent);
            })
        });
        tracing.shutdown(Duration::from_millis(100));
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
