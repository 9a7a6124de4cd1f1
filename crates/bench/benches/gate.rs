//! The gate against its baselines, measured in the same run (`cargo bench -p toolgate-bench`).
//!
//! Baselines: `serde_json::from_slice::<Value>` alone, and that plus jsonschema's `is_valid` with
//! the gate's own compile options. Groups: the small mix, a ~64 KB and a ~8 MB response, each
//! stage alone, and the admission path against each rejection path. At the end it prints the
//! ratios BENCHMARKS.md reports.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput};
use serde_json::Value;
use toolgate_bench::{
    Kind, history, job_status, job_status_schema, now, request, run_history, small, small_mix,
};
use toolgate_gate::internals::stages;
use toolgate_gate::{AuditSink, JsonLinesSink};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct NoRemotes;

impl jsonschema::Retrieve for NoRemotes {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri} is not served in benchmarks").into())
    }
}

fn validator(schema: &Value) -> jsonschema::Validator {
    toolgate_gate::internals::compile_options(NoRemotes)
        .build(schema)
        .expect("the schema compiles")
}

fn bench_small_mix(criterion: &mut Criterion) {
    let contract = job_status();
    let request = request();
    let now = now();
    let schema = validator(&job_status_schema());
    let mix = small_mix(1000);
    let mut group = criterion.benchmark_group("small_mix");
    group.throughput(Throughput::Elements(mix.len() as u64));
    group.bench_function("parse_only", |bench| {
        bench.iter(|| {
            for (_, raw) in &mix {
                let _ = black_box(serde_json::from_slice::<Value>(black_box(raw)));
            }
        })
    });
    group.bench_function("parse_is_valid", |bench| {
        bench.iter(|| {
            for (_, raw) in &mix {
                if let Ok(value) = serde_json::from_slice::<Value>(black_box(raw)) {
                    black_box(schema.is_valid(&value));
                }
            }
        })
    });
    group.bench_function("admit", |bench| {
        bench.iter(|| {
            for (_, raw) in &mix {
                black_box(contract.admit(black_box(raw), &request, now));
            }
        })
    });
    // What an adapter that logs every decision pays on top: the audit event (with both SHA-256
    // digests) written as its JSON line through the gate's own sink (to a writer that discards).
    let sink = JsonLinesSink::new(std::io::sink());
    group.bench_function("admit_and_audit_line", |bench| {
        bench.iter(|| {
            for (_, raw) in &mix {
                let decision = contract.admit(black_box(raw), &request, now);
                black_box(sink.record_decision(&decision)).unwrap();
            }
        })
    });
    // What retention adds on a front's call path (`--retain`), where every decision is audited
    // anyway: the policy's choice and, for what it keeps, the call captured (the raw bytes and
    // the context copied) and handed over, here to a vector emptied each round, in place of the
    // retainer's queue. The retainer's own thread then names and serializes each record:
    // `retention/write_one_record` below, measured on its own, because on a machine of two
    // shared cores a busy second thread slows the first whatever it does.
    for (function, admitted_rate) in [
        ("admit_audit_and_retain_refusals", 0.0),
        ("admit_audit_and_retain_sampled", 0.01),
    ] {
        let policy = toolgate_gate::RetentionPolicy::new(admitted_rate);
        let mut queue: Vec<toolgate_gate::Captured> = Vec::with_capacity(mix.len());
        group.bench_function(function, |bench| {
            bench.iter(|| {
                for (_, raw) in &mix {
                    let response = toolgate_gate::Response::body(black_box(raw));
                    let decision = contract.admit_response(response, &request, now);
                    black_box(sink.record_decision(&decision)).unwrap();
                    if policy.keeps(&decision) {
                        queue.push(toolgate_gate::Captured::of(&decision, &response, &request));
                    }
                }
                black_box(queue.len());
                queue.clear();
            })
        });
    }
    group.finish();
}

/// The retainer's own work per record, off the call path: the record made from what the call
/// captured, its name and its bytes (the facts' line and the raw bytes), for one refused ~250 B
/// response.
fn bench_retention_write(criterion: &mut Criterion) {
    let contract = job_status();
    let request = request();
    let raw = small(Kind::ExtraProperty, 7);
    let response = toolgate_gate::Response::body(&raw);
    let decision = contract.admit_response(response, &request, now());
    let captured = toolgate_gate::Captured::of(&decision, &response, &request);
    let mut group = criterion.benchmark_group("retention");
    group.bench_function("write_one_record", |bench| {
        bench.iter(|| {
            let record = black_box(&captured)
                .clone()
                .into_retained(&toolgate_gate::SecretContext::none());
            black_box(record.name());
            black_box(record.to_bytes());
        })
    });
    group.finish();
}

fn bench_sized(criterion: &mut Criterion, name: &str, bytes: usize) {
    let contract = run_history();
    let request = request();
    let now = now();
    let raw = history(bytes);
    let document: Value = serde_json::from_slice(&raw).unwrap();
    let schema = validator(&toolgate_bench::history_schema());
    assert!(
        schema.is_valid(&document) && contract.admit(&raw, &request, now).is_admitted(),
        "the {name} input is admitted"
    );
    let mut group = criterion.benchmark_group(name);
    group.throughput(Throughput::Bytes(raw.len() as u64));
    if bytes > 1 << 20 {
        group.sample_size(20);
    }
    group.bench_function("parse_only", |bench| {
        bench.iter(|| black_box(serde_json::from_slice::<Value>(black_box(&raw)).unwrap()))
    });
    group.bench_function("parse_is_valid", |bench| {
        bench.iter(|| {
            let value = serde_json::from_slice::<Value>(black_box(&raw)).unwrap();
            black_box(schema.is_valid(&value))
        })
    });
    group.bench_function("admit", |bench| {
        bench.iter(|| black_box(contract.admit(black_box(&raw), &request, now)))
    });
    group.finish();
}

fn bench_stages(criterion: &mut Criterion) {
    let contract = job_status();
    let request = request();
    let now = now();
    let raw = small(Kind::Success, 7);
    let document = stages::parse(&contract, &raw).expect("parses");
    assert!(
        stages::schema(&contract, &document)
            && stages::semantic(&contract, &document, &request, now)
    );
    let mut group = criterion.benchmark_group("stages");
    group.bench_function("limits", |bench| {
        bench.iter(|| black_box(stages::limits(&contract, black_box(&raw))))
    });
    group.bench_function("parse", |bench| {
        bench.iter(|| black_box(stages::parse(&contract, black_box(&raw))))
    });
    group.bench_function("schema", |bench| {
        bench.iter(|| black_box(stages::schema(&contract, black_box(&document))))
    });
    group.bench_function("semantic", |bench| {
        bench.iter(|| {
            black_box(stages::semantic(
                &contract,
                black_box(&document),
                &request,
                now,
            ))
        })
    });
    group.bench_function("projection", |bench| {
        bench.iter(|| {
            black_box(stages::projection(
                &contract,
                black_box(&document),
                &request,
            ))
        })
    });
    group.bench_function("admit", |bench| {
        bench.iter(|| black_box(contract.admit(black_box(&raw), &request, now)))
    });
    group.bench_function("serde_json_parse", |bench| {
        bench.iter(|| black_box(serde_json::from_slice::<Value>(black_box(&raw))))
    });
    group.finish();
}

fn bench_paths(criterion: &mut Criterion) {
    let contract = job_status();
    let request = request();
    let now = now();
    let mut group = criterion.benchmark_group("paths");
    for kind in Kind::PATHS {
        let raw = small(kind, 7);
        assert_eq!(
            contract.admit(&raw, &request, now).is_admitted(),
            kind.admitted(),
            "{kind:?}"
        );
        group.bench_function(kind.name(), |bench| {
            bench.iter(|| black_box(contract.admit(black_box(&raw), &request, now)))
        });
    }
    group.finish();
}

fn mean_ns(output: &Path, group: &str, function: &str) -> Option<f64> {
    let path = output.join(group).join(function).join("new/estimates.json");
    let estimates: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    estimates["mean"]["point_estimate"].as_f64()
}

fn print_ratios(output: &Path) {
    let allocator = toolgate_bench::paired::allocator();
    println!(
        "\n== toolgate gate with {allocator}: ratios, lower is better (from the last run of each benchmark) =="
    );
    let ratio = |group: &str, over: &str, under: &str| -> Option<f64> {
        Some(mean_ns(output, group, over)? / mean_ns(output, group, under)?)
    };
    for (group, label) in [
        ("small_mix", "small mix (1000 x ~250 B)"),
        ("medium_64k", "medium (~64 KB)"),
        ("large_8m", "large (~8 MB)"),
    ] {
        let Some(parse) = mean_ns(output, group, "parse_only") else {
            continue;
        };
        println!("{label}: parse-only {:.3} ms on this machine", parse / 1e6);
        for (function, words) in [
            ("parse_is_valid", "parse + is_valid"),
            ("admit", "admit"),
            ("admit_and_audit_line", "admit + audit line"),
        ] {
            if let Some(value) = ratio(group, function, "parse_only") {
                println!("    {words:20} / parse-only = {value:.2}x");
            }
        }
        for (function, words) in [
            ("admit_audit_and_retain_refusals", "refusals kept"),
            ("admit_audit_and_retain_sampled", "refusals + 1 % kept"),
        ] {
            if let Some(value) = ratio(group, function, "admit_and_audit_line") {
                println!("    admit + audit line + {words:20} / admit + audit line = {value:.3}x");
            }
        }
        if group == "small_mix"
            && let Some(write) = mean_ns(output, "retention", "write_one_record")
        {
            println!("    the retainer's thread, per record kept: {write:.0} ns (name and bytes)");
        }
    }
    if let Some(success) = mean_ns(output, "paths", "success") {
        println!("admission path (a valid success): {success:.0} ns on this machine");
        let mut worst = ("", 0.0f64);
        for kind in &Kind::PATHS[1..] {
            if let Some(time) = mean_ns(output, "paths", kind.name()) {
                let ratio = time / success;
                println!(
                    "    rejection path {:16} / admission path = {ratio:.2}x",
                    kind.name()
                );
                if ratio > worst.1 {
                    worst = (kind.name(), ratio);
                }
            }
        }
        println!(
            "    worst rejection path ({}) / admission path = {:.2}x",
            worst.0, worst.1
        );
    }
    if let Some(parse) = mean_ns(output, "stages", "serde_json_parse") {
        println!(
            "stages on one valid ~250 B success (serde_json parse: {parse:.0} ns on this machine):"
        );
        for stage in [
            "limits",
            "parse",
            "schema",
            "semantic",
            "projection",
            "admit",
        ] {
            if let Some(time) = mean_ns(output, "stages", stage) {
                println!(
                    "    {stage:10} {time:7.0} ns = {:.2}x serde_json parse",
                    time / parse
                );
            }
        }
    }
}

fn main() {
    let output = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("criterion");
    let mut criterion = Criterion::default()
        .output_directory(&output)
        .configure_from_args();
    bench_small_mix(&mut criterion);
    bench_retention_write(&mut criterion);
    bench_sized(&mut criterion, "medium_64k", 64 * 1024);
    bench_sized(&mut criterion, "large_8m", 8 * 1024 * 1024);
    bench_stages(&mut criterion);
    bench_paths(&mut criterion);
    criterion.final_summary();
    print_ratios(&output);
    toolgate_bench::paired::print_paired_ratios();
}
