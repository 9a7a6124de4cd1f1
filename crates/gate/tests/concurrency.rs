//! One compiled contract serves many threads with exactly the single-threaded decisions, and a
//! shared JSON-lines audit sink gets exactly one whole line per admission under load.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::*;
use toolgate_gate::{AuditSink, JsonLinesSink};

const THREADS: usize = 8;
const PER_THREAD: usize = 1000;

fn inputs() -> Vec<Vec<u8>> {
    vec![
        job_success("bluebird", "run_8f3kQ2LmZx9T", "2026-11-29T11:55:00Z").into_bytes(),
        job_success("copperhead", "run_8f3kQ2LmZx9T", "2026-11-29T11:55:00Z").into_bytes(),
        job_success("bluebird", "run_8f3kQ2LmZx9T", "2026-11-29T10:00:00Z").into_bytes(),
        job_success("bluebird", "run_8f3kQ2LmZx9T", "2026-02-30T11:55:00Z").into_bytes(),
        br#"{"approved": false, "approved": true}"#.to_vec(),
        format!(r#"{{"tool":"job_status","request_id":"{REQUEST_ID}","outcome":"failure","error":{{"code":"NOT_FOUND","retryable":false}}}}"#).into_bytes(),
        b"[[[[[[[[[[".to_vec(),
        Vec::new(),
    ]
}

#[test]
fn many_threads_get_exactly_the_single_threaded_decisions() {
    let contract = Arc::new(bundled("job_status"));
    let inputs = Arc::new(inputs());
    let expected: Vec<(String, Vec<u8>)> = inputs
        .iter()
        .map(|raw| {
            let decision = contract.admit(raw, &job_request(), now());
            (
                decision.outcome().as_str().to_owned(),
                decision.agent_bytes().to_vec(),
            )
        })
        .collect();
    let expected = Arc::new(expected);
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (contract, inputs, expected) = (
                Arc::clone(&contract),
                Arc::clone(&inputs),
                Arc::clone(&expected),
            );
            std::thread::spawn(move || {
                for round in 0..PER_THREAD / 4 {
                    let index = (thread + round) % inputs.len();
                    let decision = contract.admit(&inputs[index], &job_request(), now());
                    assert_eq!(decision.outcome().as_str(), expected[index].0);
                    assert_eq!(decision.agent_bytes(), expected[index].1.as_slice());
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("no thread panicked");
    }
}

#[test]
fn every_admission_under_load_writes_exactly_one_whole_audit_line() {
    let contract = Arc::new(bundled("job_status"));
    let inputs = Arc::new(inputs());
    let dir = std::env::temp_dir().join(format!("toolgate-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("audit.jsonl");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .unwrap();
    let sink = Arc::new(JsonLinesSink::new(file));
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (contract, inputs, sink) = (
                Arc::clone(&contract),
                Arc::clone(&inputs),
                Arc::clone(&sink),
            );
            std::thread::spawn(move || {
                for index in 0..PER_THREAD {
                    let request = job_request();
                    let request = toolgate_gate::Request::new(format!("req.t{thread}n{index:05}"))
                        .with_context_map(request.context().clone());
                    let decision = contract.admit(&inputs[index % inputs.len()], &request, now());
                    sink.record_decision(&decision).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    drop(sink);
    let log = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), THREADS * PER_THREAD, "one line per admission");
    assert!(log.ends_with('\n'));
    let mut ids = HashSet::new();
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("a torn line {line:?}: {error}"));
        assert!(
            ids.insert(event["request_id"].as_str().unwrap().to_owned()),
            "each admission once"
        );
    }
}
