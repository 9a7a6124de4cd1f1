//! The gate's throughput on the small mix, over inputs written to a folder so another
//! implementation (compare/seeds_stack.py) can run the very same bytes.
//!
//! Usage: `throughput <FOLDER> [--seconds S]`
//! Writes FOLDER/inputs/NNNN.json, FOLDER/request.json and FOLDER/decisions.txt (one
//! `admitted`/`rejected` per input), the medium input FOLDER/medium.json with its contract in
//! FOLDER/run_history/, then prints one JSON line with the measured throughput.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_bench::{
    NOW, PROJECT, REQUEST_ID, RUN_HISTORY_CONTRACT, history, history_schema, job_status, now,
    request, runs, small_mix,
};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let folder = PathBuf::from(
        args.next()
            .expect("usage: throughput <FOLDER> [--seconds S]"),
    );
    let seconds: f64 = match (args.next().as_deref(), args.next()) {
        (Some("--seconds"), Some(value)) => value.parse().expect("--seconds takes a number"),
        _ => 5.0,
    };
    let mix = small_mix(1000);
    let contract = job_status();
    let (request, now) = (request(), now());

    std::fs::create_dir_all(folder.join("inputs"))?;
    let mut decisions = String::new();
    for (index, (_, raw)) in mix.iter().enumerate() {
        std::fs::write(folder.join("inputs").join(format!("{index:04}.json")), raw)?;
        let decision = contract.admit(raw, &request, now);
        decisions.push_str(if decision.is_admitted() {
            "admitted\n"
        } else {
            "rejected\n"
        });
    }
    std::fs::write(folder.join("decisions.txt"), decisions)?;
    let context = json!({"request_id": REQUEST_ID, "now": NOW, "context": {"project_id": PROJECT, "runs": runs()}});
    std::fs::write(
        folder.join("request.json"),
        serde_json::to_vec_pretty(&context)?,
    )?;

    // The medium input (~64 KB) and its contract, for benchmarks in other languages.
    let medium = folder.join("run_history");
    std::fs::create_dir_all(&medium)?;
    std::fs::write(medium.join("contract.yaml"), RUN_HISTORY_CONTRACT)?;
    std::fs::write(
        medium.join("history.schema.json"),
        serde_json::to_vec_pretty(&history_schema())?,
    )?;
    std::fs::write(medium.join("agent.schema.json"), "{\"type\": \"object\"}")?;
    std::fs::write(folder.join("medium.json"), history(64 * 1024))?;

    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut admissions = 0u64;
    while start.elapsed() < budget {
        for (_, raw) in &mix {
            black_box(contract.admit(black_box(raw), &request, now));
        }
        admissions += mix.len() as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"implementation": "toolgate gate (Rust)", "admissions": admissions, "seconds": elapsed, "per_second": admissions as f64 / elapsed})
    );
    Ok(())
}
