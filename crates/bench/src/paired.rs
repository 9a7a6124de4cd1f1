//! Paired ratios: the candidate and its baseline timed back to back, round after round, and the
//! median of their ratios. On a shared machine these are steadier than ratios of separately
//! measured means, and they are what BENCHMARKS.md reports.

use std::hint::black_box;
use std::time::Instant;

use serde_json::Value;
use toolgate_gate::{AuditSink, JsonLinesSink};

use crate::{Kind, Workload, history, job_status, now, request, run_history, small};

/// The medians, over interleaved rounds, of the candidate's time over the baseline's and of each
/// one's own time (for comparing builds of the same program, which one process cannot pair).
pub struct Paired {
    /// The median ratio, candidate / baseline.
    pub ratio: f64,
    /// The baseline's median time per round, in seconds.
    pub baseline: f64,
    /// The candidate's median time per round, in seconds.
    pub candidate: f64,
    /// The fastest round's ratio: the candidate's least time over the baseline's least time.
    pub fastest: f64,
}

/// Times `baseline` and `candidate` back to back `rounds` times, alternating which goes first.
pub fn paired(rounds: usize, baseline: impl Fn(), candidate: impl Fn()) -> Paired {
    let time = |work: &dyn Fn()| {
        let start = Instant::now();
        work();
        start.elapsed().as_secs_f64()
    };
    let (mut ratios, mut bases, mut candidates) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (base, cand) = if round % 2 == 0 {
            let base = time(&baseline);
            (base, time(&candidate))
        } else {
            let cand = time(&candidate);
            (time(&baseline), cand)
        };
        ratios.push(cand / base);
        bases.push(base);
        candidates.push(cand);
    }
    let least = |times: &[f64]| times.iter().copied().fold(f64::INFINITY, f64::min);
    Paired {
        ratio: median(ratios),
        fastest: least(&candidates) / least(&bases),
        baseline: median(bases),
        candidate: median(candidates),
    }
}

/// The global allocator the benchmarks were built with (`--features mimalloc`, or the system's).
pub fn allocator() -> &'static str {
    if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "the system allocator"
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Prints every paired ratio BENCHMARKS.md reports: per workload, `admit` and `admit` + audit
/// line over parse-only (with the medians per input, in ns); the medium and large inputs; each
/// rejection path over the admission path.
pub fn print_paired_ratios() {
    let allocator = allocator();
    println!(
        "\n== paired ratios with {allocator}: median of interleaved rounds (the figures BENCHMARKS.md reports) =="
    );
    let sink = JsonLinesSink::new(std::io::sink());
    for name in Workload::NAMES {
        // About the same time per round for each workload: the pull requests are 26 KB each.
        let count = if name == "pull_request" { 50 } else { 1000 };
        let workload = Workload::named(name, count).expect("a known workload");
        let per_input = |seconds: f64| seconds * 1e9 / count as f64;
        let admit = paired(301, || workload.parse_all(), || workload.admit_all());
        let audit = paired(
            101,
            || workload.parse_all(),
            || admit_and_audit(&workload, &sink),
        );
        println!(
            "{name:15} admit / parse-only = {:.2}x, fastest round {:.2}x   (median per input: admit {:.0} ns, parse-only {:.0} ns)",
            admit.ratio,
            admit.fastest,
            per_input(admit.candidate),
            per_input(admit.baseline),
        );
        println!(
            "{name:15} admit + audit line / parse-only = {:.2}x, fastest round {:.2}x   (admit + audit line {:.0} ns)",
            audit.ratio,
            audit.fastest,
            per_input(audit.candidate),
        );
        // The floor under the audit line: the two SHA-256 digests it must hold (the raw bytes
        // and the agent bytes), computed alone on the same inputs.
        let agent: Vec<Vec<u8>> = workload
            .inputs
            .iter()
            .map(|raw| {
                let decision = workload
                    .contract
                    .admit(raw, &workload.request, workload.now);
                decision.agent_bytes().to_vec()
            })
            .collect();
        let digests = paired(
            101,
            || workload.parse_all(),
            || {
                for (raw, agent) in workload.inputs.iter().zip(&agent) {
                    black_box(toolgate_gate::Sha256Digest::of(black_box(raw)));
                    black_box(toolgate_gate::Sha256Digest::of(black_box(agent)));
                }
            },
        );
        println!(
            "{name:15} the two digests alone / parse-only = {:.2}x, fastest round {:.2}x   ({:.0} ns)",
            digests.ratio,
            digests.fastest,
            per_input(digests.candidate),
        );
    }
    print_retention_ratios(&sink);
    print_shadow_ratio(&sink);
    let history_contract = run_history();
    let request = request();
    let now = now();
    for (label, bytes, rounds) in [
        ("medium:", 64 * 1024, 301),
        ("large: ", 8 * 1024 * 1024, 21),
    ] {
        let raw = history(bytes);
        let result = paired(
            rounds,
            || drop(black_box(serde_json::from_slice::<Value>(black_box(&raw)))),
            || {
                drop(black_box(history_contract.admit(
                    black_box(&raw),
                    &request,
                    now,
                )))
            },
        );
        println!(
            "{label}         admit / parse-only = {:.2}x, fastest round {:.2}x",
            result.ratio, result.fastest
        );
    }
    let contract = job_status();
    let success = small(Kind::Success, 7);
    for kind in &Kind::PATHS[1..] {
        let rejected = small(*kind, 7);
        let result = paired(
            2001,
            || {
                black_box(contract.admit(black_box(&success), &request, now));
            },
            || {
                black_box(contract.admit(black_box(&rejected), &request, now));
            },
        );
        println!(
            "rejection path {:16} / admission path = {:.2}x",
            kind.name(),
            result.ratio
        );
    }
}

/// Every input of `workload` admitted and its audit line written to `sink`: the baseline the
/// production features are measured against.
fn admit_and_audit(workload: &Workload, sink: &JsonLinesSink<std::io::Sink>) {
    for raw in &workload.inputs {
        let decision = workload
            .contract
            .admit(black_box(raw), &workload.request, workload.now);
        black_box(sink.record_decision(&decision)).expect("io::sink never fails");
    }
}

/// What retention adds to a front's call path on the small mix, where every decision is audited
/// anyway: the policy's choice and, for each record kept, building it (the raw bytes and the
/// context copied) and handing it over (here to a vector emptied each round, in place of the
/// retainer's queue, whose thread names and writes it off the call path).
fn print_retention_ratios(sink: &JsonLinesSink<std::io::Sink>) {
    let workload = Workload::named("small_mix", 1000).expect("a known workload");
    let audited = || admit_and_audit(&workload, sink);
    for (label, rate) in [
        ("refusals kept", 0.0),
        ("refusals + 1 % of admissions", 0.01),
    ] {
        let policy = toolgate_gate::RetentionPolicy::new(rate);
        let queue = std::cell::RefCell::new(Vec::with_capacity(workload.inputs.len()));
        let kept = std::cell::Cell::new(0usize);
        let retained = || {
            let mut queue = queue.borrow_mut();
            for raw in &workload.inputs {
                let response = toolgate_gate::Response::body(black_box(raw));
                let decision =
                    workload
                        .contract
                        .admit_response(response, &workload.request, workload.now);
                black_box(sink.record_decision(&decision)).expect("io::sink never fails");
                if policy.keeps(&decision) {
                    queue.push(toolgate_gate::Captured::of(
                        &decision,
                        &response,
                        &workload.request,
                    ));
                }
            }
            kept.set(queue.len());
            queue.clear();
        };
        let result = paired(301, audited, retained);
        println!(
            "small_mix       admit + audit line + retention ({label}, {} of 1000 kept) / admit + audit line = {:.3}x, fastest round {:.3}x",
            kept.get(),
            result.ratio,
            result.fastest
        );
    }
}

/// What `--shadow` adds to a front's call on the small mix, every decision audited: the
/// candidate's own decision of the same response (here a second compile of the same contract,
/// so it costs what the enforced one does) and the audit line naming it.
fn print_shadow_ratio(sink: &JsonLinesSink<std::io::Sink>) {
    let workload = Workload::named("small_mix", 1000).expect("a known workload");
    let candidate = job_status();
    let audited = || admit_and_audit(&workload, sink);
    let shadowed = || {
        for raw in &workload.inputs {
            let decision = workload
                .contract
                .admit(black_box(raw), &workload.request, workload.now);
            let shadow = candidate.admit(black_box(raw), &workload.request, workload.now);
            let decision = decision.with_shadow(&shadow);
            black_box(sink.record_decision(&decision)).expect("io::sink never fails");
        }
    };
    let result = paired(301, audited, shadowed);
    println!(
        "small_mix       admit + audit line + a shadow version's decision / admit + audit line = {:.3}x, fastest round {:.3}x",
        result.ratio, result.fastest
    );
}
