//! The small-response workload the gate was not tuned for (issue 63): 100,000 `job_status`
//! responses of about 240 bytes, 70 % valid, a working set larger than the caches, where wall
//! time and instruction counts part. Prints the paired ratios `admit` / parse-only and `admit` +
//! audit line / parse-only (parse-only: serde_json into a `Value`), median over interleaved
//! rounds, and the medians per input.
//!
//! It uses only what every release of the bench crate has (`Workload`, `paired`), so
//! `crates/bench/compare_release.sh REV` builds this same file at another revision and runs the
//! two builds in turn: a regression shows as one build's ratio against the other's, on the same
//! machine, in the same minutes.

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use toolgate_bench::Workload;
use toolgate_bench::paired::paired;
use toolgate_gate::{AuditSink, JsonLinesSink};

fn main() {
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let count = setting("TOOLGATE_SMALL_COUNT", 100_000);
    let rounds = setting("TOOLGATE_SMALL_ROUNDS", 15);
    let workload = Workload::named("small_mix", count).expect("the small mix");
    let sink = JsonLinesSink::new(std::io::sink());
    let per_input = |seconds: f64| seconds * 1e9 / count as f64;
    let admit = paired(rounds, || workload.parse_all(), || workload.admit_all());
    let audit = paired(
        rounds,
        || workload.parse_all(),
        || {
            for raw in &workload.inputs {
                let decision =
                    workload
                        .contract
                        .admit(black_box(raw), &workload.request, workload.now);
                let _ = sink.record_decision(black_box(&decision));
            }
        },
    );
    println!(
        "small responses ({count}): admit / parse-only {:.3}x, admit + audit line / parse-only {:.3}x (median per input: parse-only {:.0} ns, admit {:.0} ns, admit + audit line {:.0} ns)",
        admit.ratio,
        audit.ratio,
        per_input(admit.baseline),
        per_input(admit.candidate),
        per_input(audit.candidate),
    );
}
