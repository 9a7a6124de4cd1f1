//! Admits one kind of small input in a loop, for `perf record` / `valgrind --tool=callgrind`.
//! Usage: `profile_admit [mix|mix-parse-only|mix-audit|success|extra_property|...] [iterations]`
//! (`mix-audit`: admit, then record the decision's audit event through a `JsonLinesSink` to a
//! writer that discards it, as an adapter that logs does).

use std::hint::black_box;

use toolgate_gate::{AuditSink, JsonLinesSink};

use toolgate_bench::{Kind, job_status, now, request, small, small_mix};

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = match args.next().as_deref().unwrap_or("success") {
        "extra_property" => Kind::ExtraProperty,
        "wrong_type" => Kind::WrongType,
        "bad_pattern" => Kind::BadPattern,
        "bad_date" => Kind::BadDate,
        "duplicate_key" => Kind::DuplicateKey,
        "failure" => Kind::Failure,
        _ => Kind::Success,
    };
    let iterations: usize = args
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1_000_000);
    let contract = job_status();
    let request = request();
    let now = now();
    let sink = JsonLinesSink::new(std::io::sink());
    let mode = std::env::args().nth(1).unwrap_or_default();
    let inputs: Vec<Vec<u8>> = if mode.starts_with("mix") {
        small_mix(1000).into_iter().map(|(_, raw)| raw).collect()
    } else {
        vec![small(kind, 7)]
    };
    for round in 0..iterations {
        let raw = &inputs[round % inputs.len()];
        if mode == "mix-parse-only" {
            let _ = black_box(serde_json::from_slice::<serde_json::Value>(black_box(raw)));
        } else if mode == "mix-audit" {
            let decision = contract.admit(black_box(raw), &request, now);
            black_box(sink.record(decision.audit_event())).expect("io::sink never fails");
        } else {
            black_box(contract.admit(black_box(raw), &request, now));
        }
    }
}
