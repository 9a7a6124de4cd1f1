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

/// A prefix no other test (or earlier run) has written under.
fn unique(what: &str) -> String {
    format!(
        "{what}-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// The names `store.list(prefix)` gives, sorted.
fn listed(store: &S3Store, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = store
        .list(prefix)
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    names.sort();
    names
}

#[test]
fn objects_go_to_the_bucket_under_the_prefix_and_come_back() {
    let Some((endpoint, bucket)) = server() else {
        return;
    };
    common::behaves_as_a_store(&store(&endpoint, &bucket, &unique("test")));
}

/// A store larger than a page (S3 lists 1,000 keys a request) is listed in parts, one per
/// character a name may begin with: every object comes back once, whatever it begins with,
/// and nothing of a neighbouring tool or store does.
#[test]
fn a_store_of_many_pages_is_listed_whole_and_only_itself() {
    let Some((endpoint, bucket)) = server() else {
        return;
    };
    let prefix = unique("pages");
    let kept = store(&endpoint, &bucket, &prefix);
    // 1,050 records beginning with `0` (more than a page even for `job/0`), and one beginning
    // with each of the other kinds of character a name may begin with.
    let mut names: Vec<String> = (0..1050).map(|n| format!("job/0{n:063x}-k")).collect();
    names.extend(
        "9afAZ_-"
            .chars()
            .map(|leading| format!("job/{leading}rest")),
    );
    let neighbours = ["jobs/0same", "jobs/Zsame", "jo/0short"];
    let objects: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(String::as_str)
        .chain(neighbours)
        .map(|name| (name.to_owned(), b"{}".to_vec()))
        .collect();
    assert!(kept.put_all(&objects).iter().all(Result::is_ok));
    // A store whose prefix extends this one's, holding a record of the same tool.
    let next_door = store(&endpoint, &bucket, &format!("{prefix}x"));
    next_door.put("job/0next-door", b"{}").unwrap();
    names.sort();
    assert_eq!(listed(&kept, "job/"), names, "one tool, listed in parts");
    let zeros: Vec<String> = names
        .iter()
        .filter(|name| name.starts_with("job/0"))
        .cloned()
        .collect();
    assert_eq!(
        listed(&kept, "job/0"),
        zeros,
        "a prefix inside a name, page after page"
    );
    let mut everything: Vec<String> = objects.into_iter().map(|(name, _)| name).collect();
    everything.sort();
    assert_eq!(
        listed(&kept, ""),
        everything,
        "the whole store, listed in parts"
    );
    assert_eq!(
        listed(&kept, "job/9r"),
        ["job/9rest"],
        "one page, one request"
    );
    assert_eq!(listed(&next_door, ""), ["job/0next-door"]);
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
    let prefix = unique("retainer");
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
