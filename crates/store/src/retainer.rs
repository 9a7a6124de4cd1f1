//! The retainer: keeps what the policy chooses of each decision, in a store, on a thread of its
//! own, and never in a call's way.
//!
//! [`Retainer::offer`] costs a call the policy's choice (a comparison on the raw digest the
//! decision already holds) and, for what it keeps, a copy of the raw bytes into a bounded queue.
//! A full queue, or a store that refuses a write, drops the record: counted
//! ([`RetentionStats`]), logged at most once a second, and the call is decided as usual.
//!
//! The store is held to a byte budget, a number of records and an age limit: after each write,
//! and every minute (the store may be shared by replicas, whose writes only a listing shows), the
//! oldest objects are deleted until what is left is within all three. The budget counts what the
//! store really uses ([`Entry::size`]: a file's blocks on disk and its inode, not its length), so
//! many small records cannot take several times the budget; the index of what the store holds
//! never has more entries than the record limit, whatever a listing finds (the newest are kept
//! as the listing goes, the older deleted).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use toolgate_gate::{
    Captured, Decision, Request, Response, Retained, RetentionPolicy, SecretContext,
};

use crate::seal::{SEALED_SUFFIX, Seal};
use crate::store::{Entry, OBJECT_OVERHEAD, Store};

/// What a retainer keeps, and within what.
#[derive(Debug)]
pub struct RetentionOptions {
    /// Which decisions are kept.
    pub policy: RetentionPolicy,
    /// The most bytes the store may use (the oldest go first past it).
    pub budget_bytes: u64,
    /// The most records the store may hold (the oldest go first past it); also the most
    /// entries the retainer's index of the store holds.
    pub max_records: usize,
    /// The oldest an object may be.
    pub max_age: Duration,
    /// Context keys kept as their keyed digest only.
    pub secret: SecretContext,
    /// Seal every object to these recipients.
    pub seal: Option<Seal>,
    /// The most records waiting to be written.
    pub queue: usize,
}

impl Default for RetentionOptions {
    fn default() -> RetentionOptions {
        RetentionOptions {
            policy: RetentionPolicy::new(0.0),
            budget_bytes: 1 << 30,
            max_records: DEFAULT_MAX_RECORDS,
            max_age: Duration::from_secs(30 * 24 * 3600),
            secret: SecretContext::none(),
            seal: None,
            queue: 1024,
        }
    }
}

/// The most records a store holds unless the operator says otherwise (`--retain-max-records`):
/// its index is then some 15 MB at most.
pub const DEFAULT_MAX_RECORDS: usize = 100_000;

/// What a retainer has done so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RetentionStats {
    /// Records written to the store.
    pub kept: u64,
    /// Records dropped because the queue was full (the store is slower than the calls).
    pub dropped: u64,
    /// Records the store refused to take.
    pub failed: u64,
    /// Objects deleted to keep the store within its budget and age.
    pub evicted: u64,
    /// Records still waiting to be written when the front stopped and its drain ran out.
    pub lost: u64,
}

/// Reads what a retainer has done so far, from anywhere ([`Retainer::stats_reader`]).
#[derive(Clone)]
pub struct StatsReader(Arc<Counters>);

impl std::fmt::Debug for StatsReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StatsReader").field(&self.read()).finish()
    }
}

impl StatsReader {
    /// What the retainer has done so far.
    pub fn read(&self) -> RetentionStats {
        self.0.read()
    }
}

impl Counters {
    fn read(&self) -> RetentionStats {
        RetentionStats {
            kept: self.kept.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
        }
    }
}

#[derive(Default)]
struct Counters {
    kept: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    evicted: AtomicU64,
    lost: AtomicU64,
    /// Records offered and not yet taken by the writer: what a stop that cannot wait loses.
    waiting: AtomicU64,
}

enum Job {
    /// Taken on the call's path; made a record on the retainer's thread.
    Keep(Box<Captured>),
    /// Answered once everything before it is written.
    Flush(std::sync::mpsc::Sender<()>),
}

/// Where a retainer's lines go (the front's own stderr line, or its logger).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Keeps decisions in a store, on a thread of its own.
pub struct Retainer {
    sender: SyncSender<Job>,
    counters: Arc<Counters>,
    policy: RetentionPolicy,
    log: Log,
    full_logged: Mutex<Option<Instant>>,
    describe: String,
}

impl std::fmt::Debug for Retainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Retainer({})", self.describe)
    }
}

impl Retainer {
    /// A retainer writing to `store`, its lines to `log`.
    pub fn start(store: Box<dyn Store>, options: RetentionOptions, log: Log) -> Retainer {
        let (sender, receiver) = std::sync::mpsc::sync_channel(options.queue.max(1));
        let counters = Arc::new(Counters::default());
        let describe = store.describe();
        let worker = Worker {
            // One batch is at most the queue's size: what waits in memory is then at most twice
            // the queue, whatever the store's speed.
            batch: BATCH.min(options.queue.max(1)),
            store,
            secret: options.secret,
            budget: options.budget_bytes,
            max_records: options.max_records.max(1),
            max_age: options.max_age,
            seal: options.seal,
            counters: Arc::clone(&counters),
            log: Arc::clone(&log),
            index: VecDeque::new(),
            held: 0,
            failure_logged: None,
        };
        std::thread::Builder::new()
            .name("toolgate-retainer".to_owned())
            .spawn(move || worker.run(receiver))
            .expect("the retainer's thread starts");
        Retainer {
            sender,
            counters,
            policy: options.policy,
            log,
            full_logged: Mutex::new(None),
            describe,
        }
    }

    /// Keeps `decision` (made on `response` for `request`) if the policy chooses it; never
    /// waits. `true` when it was queued. The call pays for copying the raw bytes and the
    /// context; the record is made and written on the retainer's thread.
    pub fn offer(&self, decision: &Decision, response: &Response<'_>, request: &Request) -> bool {
        if !self.policy.keeps(decision) {
            return false;
        }
        let captured =
            Captured::of(decision, response, request).sampled_at(self.policy.rate_of(decision));
        // Counted before it is sent: the writer may take it at once.
        self.counters.waiting.fetch_add(1, Ordering::Relaxed);
        match self.sender.try_send(Job::Keep(Box::new(captured))) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                let mut last = self
                    .full_logged
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                    *last = Some(Instant::now());
                    (self.log)(&format!(
                        "retention: {} is behind; a decision was not kept (decided as usual; {} dropped so far)",
                        self.describe,
                        self.counters.dropped.load(Ordering::Relaxed)
                    ));
                }
                false
            }
        }
    }

    /// The policy it keeps by.
    pub fn policy(&self) -> RetentionPolicy {
        self.policy
    }

    /// What it has done so far.
    pub fn stats(&self) -> RetentionStats {
        self.counters.read()
    }

    /// A reader of [`Retainer::stats`] that outlives any borrow of the retainer (a metrics
    /// collector reads it at each scrape).
    pub fn stats_reader(&self) -> StatsReader {
        StatsReader(Arc::clone(&self.counters))
    }

    /// Waits up to `within` for everything queued so far to be written; `false` if it was not.
    pub fn flush(&self, within: Duration) -> bool {
        let (done, finished) = std::sync::mpsc::channel();
        let deadline = Instant::now() + within;
        // The queue may be full: a flush waits its turn too, within the same bound.
        let mut job = Job::Flush(done);
        loop {
            match self.sender.try_send(job) {
                Ok(()) => break,
                Err(TrySendError::Full(again)) if Instant::now() < deadline => {
                    job = again;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return false,
            }
        }
        finished
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    }

    /// Writes what is queued (waiting up to `within`), and says, for the front's last line,
    /// what was kept and what was not.
    pub fn finish(&self, within: Duration) -> String {
        if !self.flush(within) {
            // What the writer has not taken will not be written: counted as lost (a write in
            // progress may still land, and is then counted kept as well).
            let waiting = self.counters.waiting.swap(0, Ordering::Relaxed);
            self.counters.lost.fetch_add(waiting, Ordering::Relaxed);
        }
        let stats = self.stats();
        format!(
            "retention: kept {} in {}; not kept: {} failed, {} dropped (queue full), {} lost (the stop's deadline, {:.1} s, passed first); {} evicted for the budget or age",
            stats.kept,
            self.describe,
            stats.failed,
            stats.dropped,
            stats.lost,
            within.as_secs_f64(),
            stats.evicted
        )
    }

    /// What it writes to, for messages.
    pub fn describe(&self) -> &str {
        &self.describe
    }
}

/// The retainer's thread: writes, and keeps the store within its bounds.
struct Worker {
    /// The most records written in one batch.
    batch: usize,
    store: Box<dyn Store>,
    /// Context keys kept as their keyed digest only (hashed here, off the call's path).
    secret: SecretContext,
    budget: u64,
    max_records: usize,
    max_age: Duration,
    seal: Option<Seal>,
    counters: Arc<Counters>,
    log: Log,
    /// What the store holds, oldest first, as last listed and written since: at most
    /// `max_records` entries.
    index: VecDeque<Entry>,
    held: u64,
    failure_logged: Option<Instant>,
}

/// How often the store is listed again (its other writers' objects counted).
const RELIST_EVERY: Duration = Duration::from_secs(60);

/// The most records written in one batch (the store's `put_all`), for a queue at least as long.
const BATCH: usize = 128;

impl Worker {
    fn run(mut self, jobs: Receiver<Job>) {
        self.relist();
        let mut listed = Instant::now();
        let mut batch: Vec<Captured> = Vec::with_capacity(self.batch);
        loop {
            let first = match jobs.recv_timeout(RELIST_EVERY) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout) => {
                    self.relist();
                    listed = Instant::now();
                    self.enforce();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            // What is queued behind it goes in the same batch, up to a flush.
            let mut flush = None;
            let mut next = Some(first);
            while let Some(job) = next.take() {
                match job {
                    Job::Keep(captured) => {
                        self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
                        batch.push(*captured);
                    }
                    Job::Flush(done) => {
                        flush = Some(done);
                        break;
                    }
                }
                if batch.len() < self.batch {
                    next = jobs.try_recv().ok();
                }
            }
            self.keep_all(&mut batch);
            if listed.elapsed() >= RELIST_EVERY {
                self.relist();
                listed = Instant::now();
            }
            self.enforce();
            // Answered once what came before it is written and the store within its bounds.
            if let Some(done) = flush {
                let _ = done.send(());
            }
        }
    }

    /// Lists the store again: the newest `max_records` objects become the index, and every
    /// older one is deleted as the listing goes, so the index is bounded whatever the store
    /// holds (other replicas' objects, an older run's).
    fn relist(&mut self) {
        let capacity = self.max_records;
        // A heap whose top is the oldest of the newest objects seen so far.
        let mut newest: BinaryHeap<Reverse<ByAge>> = BinaryHeap::with_capacity(capacity + 1);
        let (mut evicted, mut failed) = (0u64, None);
        let store = &self.store;
        let listed = store.visit("", &mut |entry| {
            newest.push(Reverse(ByAge(entry)));
            if newest.len() > capacity {
                let Some(Reverse(ByAge(oldest))) = newest.pop() else {
                    return;
                };
                match store.delete(&oldest.name) {
                    Ok(()) => evicted += 1,
                    Err(error) => failed = Some(format!("cannot delete {}: {error}", oldest.name)),
                }
            }
        });
        self.counters.evicted.fetch_add(evicted, Ordering::Relaxed);
        if let Some(why) = failed {
            self.failure(&why);
        }
        match listed {
            Ok(()) => {
                let mut entries: Vec<Entry> = newest
                    .into_vec()
                    .into_iter()
                    .map(|Reverse(ByAge(entry))| entry)
                    .collect();
                entries.sort_by(ByAge::order);
                self.held = entries.iter().map(|entry| entry.size).sum();
                self.index = entries.into();
            }
            Err(error) => self.failure(&format!("cannot list it: {error}")),
        }
    }

    /// Writes every record of `batch` (emptied), several at once where the store can.
    fn keep_all(&mut self, batch: &mut Vec<Captured>) {
        let objects: Vec<(String, Vec<u8>)> = batch
            .drain(..)
            .filter_map(|captured| self.object(&captured.into_retained(&self.secret)))
            .collect();
        if objects.is_empty() {
            return;
        }
        let written = self.store.put_all(&objects);
        for ((name, _), result) in objects.into_iter().zip(written) {
            match result {
                Ok(used) => {
                    self.counters.kept.fetch_add(1, Ordering::Relaxed);
                    self.held += used;
                    self.index.push_back(Entry {
                        name,
                        size: used,
                        modified: SystemTime::now(),
                    });
                }
                Err(error) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    self.failure(&format!("cannot write to it: {error}"));
                }
            }
        }
    }

    /// A record's object: its name and bytes, sealed where the store is; `None` (counted
    /// failed) for one that cannot be sealed or is larger than the whole budget.
    fn object(&mut self, retained: &Retained) -> Option<(String, Vec<u8>)> {
        let mut name = retained.name();
        let mut bytes = retained.to_bytes();
        if let Some(seal) = &self.seal {
            match seal.seal(&bytes) {
                Ok(sealed) => {
                    bytes = sealed;
                    name.push_str(SEALED_SUFFIX);
                }
                Err(error) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    self.failure(&format!("cannot seal a record: {error}"));
                    return None;
                }
            }
        }
        if bytes.len() as u64 + OBJECT_OVERHEAD > self.budget {
            self.counters.failed.fetch_add(1, Ordering::Relaxed);
            self.failure(&format!(
                "a record of {} bytes is larger than the whole budget ({} bytes); not kept",
                bytes.len(),
                self.budget
            ));
            return None;
        }
        Some((name, bytes))
    }

    /// Deletes the oldest objects until the store is within its budget, its number of records
    /// and its age.
    fn enforce(&mut self) {
        let now = SystemTime::now();
        while let Some(oldest) = self.index.front() {
            let too_old = now
                .duration_since(oldest.modified)
                .is_ok_and(|age| age > self.max_age);
            if self.held <= self.budget && self.index.len() <= self.max_records && !too_old {
                break;
            }
            let oldest = self.index.pop_front().expect("a front entry");
            self.held = self.held.saturating_sub(oldest.size);
            match self.store.delete(&oldest.name) {
                Ok(()) => {
                    self.counters.evicted.fetch_add(1, Ordering::Relaxed);
                }
                Err(error) => {
                    self.failure(&format!("cannot delete {}: {error}", oldest.name));
                }
            }
        }
    }

    fn failure(&mut self, what: &str) {
        if self
            .failure_logged
            .is_none_or(|at| at.elapsed() >= Duration::from_secs(1))
        {
            self.failure_logged = Some(Instant::now());
            (self.log)(&format!(
                "retention: {}: {what} (calls are decided as usual)",
                self.store.describe()
            ));
        }
    }
}

/// An entry ordered by age: older first, then by name (the order the index keeps).
struct ByAge(Entry);

impl ByAge {
    fn order(a: &Entry, b: &Entry) -> std::cmp::Ordering {
        a.modified
            .cmp(&b.modified)
            .then_with(|| a.name.cmp(&b.name))
    }
}

impl PartialEq for ByAge {
    fn eq(&self, other: &ByAge) -> bool {
        ByAge::order(&self.0, &other.0).is_eq()
    }
}

impl Eq for ByAge {}

impl PartialOrd for ByAge {
    fn partial_cmp(&self, other: &ByAge) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByAge {
    fn cmp(&self, other: &ByAge) -> std::cmp::Ordering {
        ByAge::order(&self.0, &other.0)
    }
}
