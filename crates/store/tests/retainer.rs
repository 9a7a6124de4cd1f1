//! The retainer on a real folder: what it keeps reads back as the decision; the store stays
//! within its budget and age, oldest first; a full queue or a failing store drops records,
//! counted, and never holds up the caller; a sealed store holds nothing readable without the
//! identity.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use toolgate_gate::{Contract, ContractSource, Decision, Request, Response, RetentionPolicy};
use toolgate_store::{
    Entry, FolderStore, Opener, Retainer, RetentionOptions, Seal, Store, read_retained,
};

fn contract() -> Contract {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contracts/review_status/v1");
    Contract::compile(&ContractSource::read_dir(folder).unwrap()).unwrap()
}

fn now() -> SystemTime {
    toolgate_gate::internals::parse_timestamp("2026-11-29T12:00:00Z").unwrap()
}

/// A refused response (different bytes for each `index`), and its decision.
fn refused(contract: &Contract, index: usize) -> (Vec<u8>, Decision) {
    let raw = format!(r#"{{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"success","data":{{"change_id":"CR-{index}","decision":"maybe","reviewed_by":"ana"}}}}"#).into_bytes();
    let decision = contract.admit(&raw, &request(), now());
    assert!(!decision.is_admitted());
    (raw, decision)
}

fn request() -> Request {
    Request::new("req.J7q94MkP")
}

fn lines() -> (toolgate_store::Log, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    (
        Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned())),
        lines,
    )
}

/// A retainer writing to the folder `store` under `dir`, its lines dropped.
fn folder_retainer(dir: &Path, options: RetentionOptions) -> Retainer {
    let (log, _) = lines();
    Retainer::start(
        Box::new(FolderStore::open(&dir.join("store")).unwrap()),
        options,
        log,
    )
}

#[test]
fn what_is_kept_reads_back_as_the_decision_and_the_budget_keeps_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let contract = contract();
    let (log, _) = lines();
    // Each record is some 500 bytes, and takes a 4 KiB block and an inode on disk: a budget of
    // 14,000 holds the newest three.
    let retainer = Retainer::start(
        Box::new(FolderStore::open(&dir.path().join("store")).unwrap()),
        RetentionOptions {
            budget_bytes: 14_000,
            ..RetentionOptions::default()
        },
        log,
    );
    let mut names = Vec::new();
    for index in 0..10 {
        let (raw, decision) = refused(&contract, index);
        let response = Response::body(&raw);
        assert!(retainer.offer(&decision, &response, &request()));
        names.push(
            toolgate_gate::Retained::of(
                &decision,
                &response,
                &request(),
                &toolgate_gate::SecretContext::none(),
            )
            .name(),
        );
        // Modification times told apart.
        assert!(retainer.flush(Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(15));
    }
    let store = FolderStore::open(&dir.path().join("store")).unwrap();
    let held: u64 = store.list("").unwrap().iter().map(|entry| entry.size).sum();
    assert!(held <= 14_000, "{held}");
    let stats = retainer.stats();
    assert_eq!(stats.kept, 10);
    assert!(stats.evicted >= 5, "{stats:?}");
    // The newest is there, and decides again as it was decided; the oldest is gone.
    let newest = read_retained(&store, names.last().unwrap(), None)
        .unwrap()
        .unwrap();
    let (_, decision) = refused(&contract, 9);
    let again = contract.admit_response(
        newest.response(),
        &newest.request(&Default::default(), None).unwrap(),
        newest.time().unwrap(),
    );
    assert_eq!(again.agent_bytes(), decision.agent_bytes());
    assert_eq!(again.operator_record(), decision.operator_record());
    assert_eq!(read_retained(&store, &names[0], None).unwrap(), None);
}

#[test]
fn admissions_are_kept_at_their_rate_only() {
    let dir = tempfile::tempdir().unwrap();
    let contract = contract();
    let retainer = folder_retainer(
        dir.path(),
        RetentionOptions {
            policy: RetentionPolicy::new(0.0),
            ..RetentionOptions::default()
        },
    );
    let raw = br#"{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"success","data":{"change_id":"CR-1","decision":"approved","reviewed_by":"ana"}}"#;
    let decision = contract.admit(raw, &request(), now());
    assert!(decision.is_admitted());
    assert!(!retainer.offer(&decision, &Response::body(raw), &request()));
    assert!(retainer.flush(Duration::from_secs(10)));
    assert_eq!(retainer.stats().kept, 0);
}

/// A store that takes its time, or fails.
struct Slow {
    delay: Duration,
    fail: bool,
}

impl Store for Slow {
    fn put(&self, _name: &str, bytes: &[u8]) -> std::io::Result<u64> {
        std::thread::sleep(self.delay);
        if self.fail {
            return Err(std::io::Error::other("the disk is full"));
        }
        Ok(bytes.len() as u64)
    }
    fn get(&self, _name: &str) -> std::io::Result<Option<Vec<u8>>> {
        Ok(None)
    }
    fn visit(&self, _prefix: &str, _each: &mut dyn FnMut(Entry)) -> std::io::Result<()> {
        Ok(())
    }
    fn delete(&self, _name: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn describe(&self) -> String {
        "a slow store".to_owned()
    }
}

#[test]
fn a_full_queue_or_a_failing_store_drops_records_counted_and_never_waits() {
    let contract = contract();
    let (log, logged) = lines();
    let retainer = Retainer::start(
        Box::new(Slow {
            delay: Duration::from_millis(300),
            fail: false,
        }),
        RetentionOptions {
            queue: 2,
            ..RetentionOptions::default()
        },
        log,
    );
    let started = std::time::Instant::now();
    let mut queued = 0;
    for index in 0..50 {
        let (raw, decision) = refused(&contract, index);
        queued += usize::from(retainer.offer(&decision, &Response::body(&raw), &request()));
    }
    // Fifty offers to a store that takes 300 ms a write: none waited for it.
    assert!(
        started.elapsed() < Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    // The queue (2), and the batch the writer took from it (at most the queue's size).
    assert!(queued <= 4, "{queued}");
    assert_eq!(retainer.stats().dropped as usize, 50 - queued);
    // Logged, once (a second's worth), not fifty times.
    assert_eq!(
        logged
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains("is behind"))
            .count(),
        1
    );
    let (log, logged) = lines();
    let failing = Retainer::start(
        Box::new(Slow {
            delay: Duration::ZERO,
            fail: true,
        }),
        RetentionOptions::default(),
        log,
    );
    for index in 0..5 {
        let (raw, decision) = refused(&contract, index);
        failing.offer(&decision, &Response::body(&raw), &request());
    }
    assert!(failing.flush(Duration::from_secs(10)));
    assert_eq!(failing.stats().failed, 5);
    assert_eq!(failing.stats().kept, 0);
    let lines = logged.lock().unwrap();
    assert!(
        lines[0].contains("the disk is full") && lines[0].contains("decided as usual"),
        "{lines:?}"
    );
    assert!(lines.len() <= 2, "{lines:?}");
}

#[test]
fn objects_older_than_the_age_limit_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let contract = contract();
    let retainer = folder_retainer(
        dir.path(),
        RetentionOptions {
            max_age: Duration::from_millis(300),
            ..RetentionOptions::default()
        },
    );
    let (raw, decision) = refused(&contract, 1);
    retainer.offer(&decision, &Response::body(&raw), &request());
    assert!(retainer.flush(Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(500));
    // The next write enforces the limit on what is there.
    let (raw, decision) = refused(&contract, 2);
    retainer.offer(&decision, &Response::body(&raw), &request());
    assert!(retainer.flush(Duration::from_secs(10)));
    let store = FolderStore::open(&dir.path().join("store")).unwrap();
    assert_eq!(store.list("").unwrap().len(), 1);
    assert_eq!(retainer.stats().evicted, 1);
}

#[test]
fn a_sealed_store_holds_nothing_readable_without_the_identity() {
    use age::secrecy::ExposeSecret;
    let dir = tempfile::tempdir().unwrap();
    let identity = age::x25519::Identity::generate();
    let contract = contract();
    let retainer = folder_retainer(
        dir.path(),
        RetentionOptions {
            seal: Some(Seal::new(&[identity.to_public().to_string()]).unwrap()),
            ..RetentionOptions::default()
        },
    );
    let (raw, decision) = refused(&contract, 7);
    retainer.offer(&decision, &Response::body(&raw), &request());
    assert!(retainer.flush(Duration::from_secs(10)));
    let store = FolderStore::open(&dir.path().join("store")).unwrap();
    let entries = store.list("").unwrap();
    assert_eq!(entries.len(), 1);
    let name = &entries[0].name;
    assert!(name.ends_with(".age"));
    let bytes = store.get(name).unwrap().unwrap();
    assert!(!bytes.windows(5).any(|window| window == b"CR-7\""));
    assert!(
        read_retained(&store, name, None)
            .unwrap_err()
            .to_string()
            .contains("--identity")
    );
    let key = dir.path().join("key");
    std::fs::write(&key, identity.to_string().expose_secret()).unwrap();
    let opener = Opener::from_file(&key).unwrap();
    let retained = read_retained(&store, name, Some(&opener)).unwrap().unwrap();
    assert_eq!(retained.raw, raw);
}

/// What the files of a folder take on disk: their blocks, and an inode each.
#[cfg(unix)]
fn disk_usage(folder: &Path) -> (u64, usize) {
    use std::os::unix::fs::MetadataExt;
    let (mut bytes, mut files) = (0, 0);
    for entry in walk(folder) {
        let metadata = std::fs::symlink_metadata(&entry).unwrap();
        if metadata.is_file() {
            bytes += metadata.blocks() * 512 + toolgate_store::OBJECT_OVERHEAD;
            files += 1;
        }
    }
    (bytes, files)
}

fn walk(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Many small records under a small budget: the store uses no more disk than the budget
/// (before, a 256 KiB budget held 467 files on 2,007,040 bytes of disk: 7.7 times it).
#[cfg(unix)]
#[test]
fn the_budget_counts_what_the_disk_holds() {
    let dir = tempfile::tempdir().unwrap();
    let contract = contract();
    let budget = 256 * 1024;
    let retainer = folder_retainer(
        dir.path(),
        RetentionOptions {
            budget_bytes: budget,
            ..RetentionOptions::default()
        },
    );
    for index in 0..300 {
        let (raw, decision) = refused(&contract, index);
        retainer.offer(&decision, &Response::body(&raw), &request());
        if index % 50 == 0 {
            assert!(retainer.flush(Duration::from_secs(10)));
        }
    }
    assert!(retainer.flush(Duration::from_secs(10)));
    let (used, files) = disk_usage(&dir.path().join("store"));
    assert!(used <= budget, "{files} files take {used} bytes of disk");
    assert!(files >= 30, "{files}");
    assert_eq!(retainer.stats().kept, 300);
}

/// The record limit holds the store to a number of records, whatever their size.
#[test]
fn the_number_of_records_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let contract = contract();
    let retainer = folder_retainer(
        dir.path(),
        RetentionOptions {
            max_records: 5,
            ..RetentionOptions::default()
        },
    );
    for index in 0..20 {
        let (raw, decision) = refused(&contract, index);
        retainer.offer(&decision, &Response::body(&raw), &request());
    }
    assert!(retainer.flush(Duration::from_secs(10)));
    let store = FolderStore::open(&dir.path().join("store")).unwrap();
    assert_eq!(store.list("").unwrap().len(), 5);
    assert_eq!(retainer.stats().evicted, 15);
}

/// A store already holding more records than the limit (another replica's, an older run's):
/// the listing keeps the newest within the limit and deletes the rest as it goes, so the index
/// never holds more than the limit.
#[test]
fn a_store_listed_past_the_record_limit_is_trimmed_to_its_newest() {
    let dir = tempfile::tempdir().unwrap();
    let store = FolderStore::open(&dir.path().join("store")).unwrap();
    for index in 0..40 {
        store.put(&format!("t/{index:03}"), b"x").unwrap();
        // Modification times told apart.
        std::thread::sleep(Duration::from_millis(3));
    }
    let retainer = folder_retainer(
        dir.path(),
        RetentionOptions {
            max_records: 10,
            ..RetentionOptions::default()
        },
    );
    assert!(retainer.flush(Duration::from_secs(10)));
    let names: Vec<String> = store
        .list("")
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    let newest: Vec<String> = (30..40).map(|index| format!("t/{index:03}")).collect();
    assert_eq!(names, newest);
    assert_eq!(retainer.stats().evicted, 30);
}
