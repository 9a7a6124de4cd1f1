//! Admits a workload's inputs in a loop, for `perf record` and valgrind's tools. Build it with
//! `cargo build --profile profiling -p toolgate-bench --bin profile_admit` for a profile that names
//! source lines (the release profile keeps symbol names only).
//!
//! Usage: `profile_admit [WORKLOAD][-parse-only|-audit] [ITERATIONS]`, where WORKLOAD is
//! `small_mix` (also `mix`), `payment_intent`, `pull_request` or `large` (see `Workload`), or one kind of
//! small input alone (`success`, `extra_property`, `wrong_type`, `bad_pattern`, `bad_date`,
//! `duplicate_key`, `failure`). `-parse-only` parses with `serde_json` instead (the baseline);
//! `-audit` also records each decision's audit line through a `JsonLinesSink` to a writer that
//! discards it, as an adapter that logs does.

use std::hint::black_box;

use toolgate_gate::{AuditSink, JsonLinesSink};

use toolgate_bench::{Kind, Workload, job_status, now, request, small};

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "success".to_owned());
    let iterations: usize = args
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1_000_000);
    let (name, variant) = match mode.split_once('-') {
        Some((name, variant)) => (name, variant),
        None => (mode.as_str(), ""),
    };
    let name = if name == "mix" { "small_mix" } else { name };
    let workload = Workload::named(name, 1000).unwrap_or_else(|| {
        let kind = match name {
            "extra_property" => Kind::ExtraProperty,
            "wrong_type" => Kind::WrongType,
            "bad_pattern" => Kind::BadPattern,
            "bad_date" => Kind::BadDate,
            "duplicate_key" => Kind::DuplicateKey,
            "failure" => Kind::Failure,
            _ => Kind::Success,
        };
        Workload {
            name: kind.name(),
            contract: job_status(),
            request: request(),
            now: now(),
            inputs: vec![small(kind, 7)],
        }
    });
    let sink = JsonLinesSink::new(std::io::sink());
    let inputs = &workload.inputs;
    for round in 0..iterations {
        let raw = &inputs[round % inputs.len()];
        match variant {
            "parse-only" => {
                let _ = black_box(serde_json::from_slice::<serde_json::Value>(black_box(raw)));
            }
            "audit" => {
                let decision =
                    workload
                        .contract
                        .admit(black_box(raw), &workload.request, workload.now);
                black_box(sink.record_decision(&decision)).expect("io::sink never fails");
            }
            _ => {
                black_box(
                    workload
                        .contract
                        .admit(black_box(raw), &workload.request, workload.now),
                );
            }
        }
    }
}
