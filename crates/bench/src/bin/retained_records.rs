//! A store of COUNT retained job_status records, written as a production front writes them, for
//! timing `toolgate diff --replay` at scale (BENCHMARKS.md, "Replaying a million records"): each
//! accepted fixture decided by v1 at instants a millisecond apart, refusals kept at 1 and
//! admissions marked as kept at 1 %. The store is a folder or `s3://BUCKET/PREFIX` (at
//! `AWS_ENDPOINT_URL`, with the environment's credentials).
//!
//! ```sh
//! retained_records /dev/shm/evidence 1000000
//! time toolgate diff job_status v1 v2 --replay /dev/shm/evidence --replay-limit all --format json
//! ```

use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

use toolgate_gate::{Captured, Request, Response, SecretContext};
use toolgate_store::StoreSpec;

/// Records written at once.
const BATCH: usize = 256;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(spec) = args.first() else {
        eprintln!("usage: retained_records FOLDER|s3://BUCKET/PREFIX [COUNT]");
        std::process::exit(2);
    };
    let count: usize = args
        .get(1)
        .and_then(|count| count.parse().ok())
        .unwrap_or(1_000_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repository = toolgate_repo::Repository::open(&root).expect("the bundled contracts");
    let v1 = repository
        .load("job_status", Some("v1"))
        .expect("job_status v1");
    let fixtures = root.join("fixtures/job_status");
    let request: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures.join("request.json")).expect("request"))
            .expect("request.json");
    let request = Request::new(request["request_id"].as_str().unwrap_or_default())
        .with_context_map(request["context"].as_object().cloned().unwrap_or_default());
    let mut responses: Vec<Vec<u8>> = std::fs::read_dir(fixtures.join("accepted"))
        .expect("accepted fixtures")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .map(|path| std::fs::read(path).expect("a fixture"))
        .collect();
    responses.sort();
    let store = StoreSpec::parse(spec)
        .and_then(|spec| spec.open(None))
        .unwrap_or_else(|error| panic!("{spec}: {error}"));
    let now = UNIX_EPOCH + Duration::from_secs(1_795_953_600);
    let began = Instant::now();
    // In batches, as a retainer writes them (a bucket takes a batch's writes at once).
    let mut batch = Vec::with_capacity(BATCH);
    for n in 0..count {
        let raw = &responses[n % responses.len()];
        let response = Response::body(raw);
        let at = now + Duration::from_micros((n / responses.len()) as u64);
        let decision = v1.admit_response(response, &request, at);
        let rate = if decision.is_admitted() { 0.01 } else { 1.0 };
        let record = Captured::of(&decision, &response, &request)
            .sampled_at(rate)
            .into_retained(&SecretContext::none());
        batch.push((record.name(), record.to_bytes()));
        if batch.len() == BATCH || n + 1 == count {
            for written in store.put_all(&batch) {
                written.expect("the record is written");
            }
            batch.clear();
        }
    }
    eprintln!(
        "wrote {count} records into {} in {:.1}s",
        store.describe(),
        began.elapsed().as_secs_f64()
    );
}
