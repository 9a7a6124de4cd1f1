//! The S3 store against a real S3-compatible server: `.ci/run` starts moto's server mode on
//! loopback and names it in `TOOLGATE_S3_ENDPOINT` (a bucket `TOOLGATE_S3_BUCKET`, default
//! `evidence`, already made); `cargo test` alone skips this, saying so, unless
//! `TOOLGATE_REQUIRE_S3=1` makes a missing server a failure (as `.ci/run` does).

mod common;

use std::time::{Duration, SystemTime};

use toolgate_gate::{Contract, ContractSource, Request, Response};
use toolgate_store::{Retainer, RetentionOptions, S3Store, Store, read_retained};

/// The server's endpoint and bucket, or `None` (skipped) when there is none.
fn server() -> Option<(String, String)> {
    match std::env::var("TOOLGATE_S3_ENDPOINT") {
        Ok(endpoint) => {
            // The credentials come from the environment too (`.ci/run` sets moto's).
            let bucket = std::env::var("TOOLGATE_S3_BUCKET").unwrap_or_else(|_| "evidence".into());
            Some((endpoint, bucket))
        }
        Err(_) => {
            assert!(
                std::env::var("TOOLGATE_REQUIRE_S3").as_deref() != Ok("1"),
                "TOOLGATE_REQUIRE_S3=1 but no TOOLGATE_S3_ENDPOINT: start an S3-compatible server"
            );
            eprintln!("skipped: no S3-compatible server (TOOLGATE_S3_ENDPOINT is not set)");
            None
        }
    }
}

fn store(endpoint: &str, bucket: &str, prefix: &str) -> S3Store {
    S3Store::open(bucket, prefix, Some(endpoint)).unwrap()
}

#[test]
fn objects_go_to_the_bucket_under_the_prefix_and_come_back() {
    let Some((endpoint, bucket)) = server() else {
        return;
    };
    let prefix = format!(
        "test-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    common::behaves_as_a_store(&store(&endpoint, &bucket, &prefix));
}

#[test]
fn a_retainer_keeps_a_decision_in_the_bucket_that_decides_again() {
    let Some((endpoint, bucket)) = server() else {
        return;
    };
    let folder =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contracts/review_status/v1");
    let contract = Contract::compile(&ContractSource::read_dir(folder).unwrap()).unwrap();
    let raw = br#"{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"success","data":{"change_id":"CR-1","decision":"maybe","reviewed_by":"ana"}}"#;
    let request = Request::new("req.J7q94MkP");
    let now = toolgate_gate::internals::parse_timestamp("2026-11-29T12:00:00Z").unwrap();
    let decision = contract.admit(raw, &request, now);
    let prefix = format!(
        "retainer-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let retainer = Retainer::start(
        Box::new(store(&endpoint, &bucket, &prefix)),
        RetentionOptions::default(),
        std::sync::Arc::new(|line: &str| eprintln!("{line}")),
    );
    assert!(retainer.offer(&decision, &Response::body(raw), &request));
    assert!(retainer.flush(Duration::from_secs(30)));
    assert_eq!(retainer.stats().kept, 1, "{:?}", retainer.stats());
    let reader = store(&endpoint, &bucket, &prefix);
    let entries = reader.list("").unwrap();
    assert_eq!(entries.len(), 1);
    let retained = read_retained(&reader, &entries[0].name, None)
        .unwrap()
        .unwrap();
    let again = contract.admit_response(
        retained.response(),
        &retained.request(&Default::default(), None).unwrap(),
        retained.time().unwrap(),
    );
    assert_eq!(again.operator_record(), decision.operator_record());
}
