//! What the chained audit log costs a decision: one line appended to a file under its lock,
//! unsigned, and with a key (checkpoints signed every 1,024 lines or second, their Ed25519
//! signature shared among the lines they cover). `cargo bench -p toolgate-front --bench audit`;
//! BENCHMARKS.md, "Signed audit at a cost that fits every call", reports it.

use std::hint::black_box;
use std::path::Path;
use std::time::SystemTime;

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
    for (name, key) in [
        ("line_unsigned", None),
        ("line_signed_checkpoints", Some(&key)),
    ] {
        let log = open_audit_log(
            &dir.path().join(format!("{name}.jsonl")),
            key.map(|key| key.as_path()),
        )
        .expect("the log opens");
        group.bench_function(name, |bench| {
            bench.iter(|| log.record_decision(black_box(&decision)).expect("written"));
        });
    }
    group.finish();
    criterion.final_summary();
}
