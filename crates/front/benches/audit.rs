//! What the chained audit log costs a decision: one line appended to a file under its lock,
//! unsigned, with a key (checkpoints signed every 1,024 lines or second, their Ed25519
//! signature shared among the lines they cover), and with the lines of 25 ms written together. `cargo bench -p toolgate-front --bench audit`;
//! BENCHMARKS.md, "Signed audit at a cost that fits every call", reports it.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use toolgate_front::{generate_key_pair, open_audit_log};
use toolgate_gate::{AuditSink, Contract, ContractSource, Request};

const RESULT: &[u8] = br#"{"city":"Lisbon","temperature_c":21.5,"conditions":"clear"}"#;

fn weather() -> Contract {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/contracts/weather/v1");
    Contract::compile(&ContractSource::read_dir(folder).expect("the weather contract"))
        .expect("it compiles")
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let contract = weather();
    let request = Request::new("1").with_context("city", "Lisbon");
    let decision = contract.admit(RESULT, &request, SystemTime::now());
    let dir = tempfile::tempdir().expect("a folder");
    let key = dir.path().join("audit.pem");
    let (private, _) = generate_key_pair().expect("a key pair");
    std::fs::write(&key, private).expect("the key is written");
    let mut group = criterion.benchmark_group("audit");
    for (name, key, flush) in [
        ("line_unsigned", None, None),
        ("line_signed_checkpoints", Some(&key), None),
        ("line_signed_flushed_every_25ms", Some(&key), Some(25)),
    ] {
        let log = open_audit_log(
            &dir.path().join(format!("{name}.jsonl")),
            key.map(|key| key.as_path()),
        )
        .expect("the log opens");
        let log = match flush {
            Some(millis) => log.flushing_every(Duration::from_millis(millis)),
            None => log,
        };
        group.bench_function(name, |bench| {
            bench.iter(|| log.record_decision(black_box(&decision)).expect("written"));
        });
    }
    group.finish();
    criterion.final_summary();
}
