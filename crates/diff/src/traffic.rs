//! `--replay STORE`: the bump tried on real traffic. Every response a production front kept of
//! the tool (`--retain`) is decided again under both versions, with the request and the time it
//! was first decided under, and the report counts what the new version would newly refuse, newly
//! admit, or show the agent differently, by layer and code, with the first few as the raw
//! bytes' digest and a JSON pointer. Never a value: a pull-request comment is public to the
//! repository, and the responses are production data.
//!
//! A store holds every refusal and only a sample of admissions (`--retain-admitted`), so its
//! records are not the traffic: each record says the probability it was kept with, and a shift's
//! share of traffic is estimated with each record weighted by its inverse (Horvitz-Thompson), with
//! the estimate's 95 % margin. Counts stay counts of records; the two are reported apart.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Map;
use toolgate_gate::{Contract, Decision, Retained};
use toolgate_repo::UsageError;
use toolgate_store::{Opener, ReadError, SEALED_SUFFIX, Store, read_all_retained};

/// Where the traffic is, and how much of it to decide.
#[derive(Debug, Clone, Default)]
pub struct TrafficSource {
    /// The folder, or `s3://BUCKET/PREFIX`, the fronts were given with `--retain`.
    pub store: String,
    /// The endpoint of an S3-compatible server.
    pub endpoint: Option<String>,
    /// The `age` identity file that opens a sealed store.
    pub identity: Option<PathBuf>,
    /// The most records decided, newest first (0: the default, [`DEFAULT_LIMIT`]).
    pub limit: usize,
}

/// How many retained responses `--replay` decides when not told.
pub const DEFAULT_LIMIT: usize = 10_000;

/// How many of each shift the report names one by one.
const EXAMPLES: usize = 5;

/// The longest pointer a report prints (a response's member names are the upstream's to choose).
const MAX_POINTER_CHARS: usize = 120;

/// What the new version would do differently on the traffic production kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlastRadius {
    /// The store, as it describes itself.
    pub store: String,
    /// Records of the tool the store holds.
    pub held: usize,
    /// Records decided under both versions (the newest, up to the limit).
    pub decided: usize,
    /// Records that could not be decided, and why (counted, and the first few reasons).
    pub undecided: usize,
    /// The first few reasons a record could not be decided.
    pub undecided_reasons: Vec<String>,
    /// FROM admitted (a success or an allowed failure), TO refuses.
    pub newly_refused: Shift,
    /// FROM refused, TO admits.
    pub newly_admitted: Shift,
    /// Both decide alike, but the agent would see other bytes.
    pub output_changed: Shift,
    /// How many calls the decided records stand for: each weighted by the inverse of the
    /// probability it was kept with.
    pub traffic: f64,
    /// Records that do not say the probability they were kept with (written before records
    /// did): weighted as kept at 1.
    pub unrated: usize,
    /// The weight a record that could not be decided is counted at, where a threshold counts
    /// it as shifted (unknown is not safe): the largest any decided record had.
    pub heaviest: f64,
    /// Each decided record's probability of being kept, and which shift it is in (0 newly
    /// refused, 1 newly admitted, 2 output changed; none: `None`), for the estimates' margins.
    samples: Vec<(f64, Option<u8>)>,
}

/// A shift's share of traffic, estimated from a weighted sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// The estimated share of calls, 0 to 1.
    pub share: f64,
    /// Half the 95 % interval around it (a normal approximation of the ratio estimator's
    /// variance under Poisson sampling): 0 where every record was kept at 1.
    pub margin: f64,
}

/// One kind of difference: how many, by cause, and the first few.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shift {
    /// How many records.
    pub count: usize,
    /// The share of traffic it stands for.
    pub estimate: Estimate,
    /// The calls it stands for: its records' weights.
    weight: f64,
    /// How many by (layer, code) of the refusing version's decision; `("", "")` for a shift
    /// no refusal explains (an output that changed).
    pub by_cause: BTreeMap<(String, String), usize>,
    /// The first few, newest first.
    pub examples: Vec<Example>,
}

/// One record that shifts: named by digests and a pointer, never by its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// The raw bytes' SHA-256 (the audit line's `raw_sha256`: `toolgate reproduce --digest`).
    pub raw_sha256: String,
    /// When production decided it.
    pub time: String,
    /// The version that kept it.
    pub kept_by: String,
    /// The refusing version's layer and rule (an output change: none).
    pub layer: Option<String>,
    /// The rule.
    pub rule: Option<String>,
    /// The code the agent is given by the refusing version.
    pub code: Option<String>,
    /// Where in the response the refusing version found the fault, when it says.
    pub pointer: Option<String>,
}

impl Shift {
    /// Adds `later`, the same shift among the records after these.
    fn merge(&mut self, later: Shift) {
        self.count += later.count;
        self.weight += later.weight;
        for (cause, count) in later.by_cause {
            *self.by_cause.entry(cause).or_default() += count;
        }
        let room = EXAMPLES.saturating_sub(self.examples.len());
        self.examples.extend(later.examples.into_iter().take(room));
    }

    fn add(&mut self, record: &Retained, weight: f64, refusing: Option<&Decision>) {
        self.count += 1;
        self.weight += weight;
        let rejection = refusing.and_then(Decision::rejection);
        let cause = (
            rejection.map_or("", |rejection| rejection.layer().as_str()),
            refusing
                .and_then(|decision| decision.outcome().code())
                .map_or("", |code| code.as_str()),
        );
        *self
            .by_cause
            .entry((cause.0.to_owned(), cause.1.to_owned()))
            .or_default() += 1;
        if self.examples.len() < EXAMPLES {
            let record_of = refusing.and_then(Decision::operator_record);
            self.examples.push(Example {
                raw_sha256: record.raw_sha256.clone(),
                time: record.time.clone(),
                kept_by: record.contract_version.clone(),
                layer: rejection.map(|rejection| rejection.layer().as_str().to_owned()),
                rule: refusing.and_then(Decision::rule).map(str::to_owned),
                code: (!cause.1.is_empty()).then(|| cause.1.to_owned()),
                pointer: record_of
                    .and_then(|record| record.instance_path())
                    .map(capped_pointer),
            });
        }
    }
}

/// A pointer as a report may print it: at most [`MAX_POINTER_CHARS`] characters.
fn capped_pointer(pointer: &str) -> String {
    if pointer.chars().count() <= MAX_POINTER_CHARS {
        return pointer.to_owned();
    }
    let cut: String = pointer.chars().take(MAX_POINTER_CHARS).collect();
    format!("{cut}…")
}

/// Decides every retained response of `tool` in `source` under `from` and `to`.
pub(crate) fn blast_radius(
    source: &TrafficSource,
    tool: &str,
    from: &Contract,
    to: &Contract,
) -> Result<BlastRadius, UsageError> {
    let (store, opener) = toolgate_store::open_kept(
        "--replay",
        &source.store,
        source.endpoint.as_deref(),
        source.identity.as_deref(),
    )
    .map_err(UsageError::new)?;
    let mut entries = store.list(&format!("{tool}/")).map_err(|error| {
        UsageError::new(format!(
            "--replay {}: cannot list it: {error}",
            store.describe()
        ))
    })?;
    if opener.is_none()
        && let Some(sealed) = entries
            .iter()
            .find(|entry| entry.name.ends_with(SEALED_SUFFIX))
    {
        return Err(UsageError::new(format!(
            "--replay {}: {} is sealed (--retain-recipient): give the identity that opens it (--identity FILE)",
            store.describe(),
            sealed.name
        )));
    }
    // Newest first: the traffic the bump would meet next.
    entries.sort_by(|a, b| b.modified.cmp(&a.modified).then(a.name.cmp(&b.name)));
    let limit = if source.limit == 0 {
        DEFAULT_LIMIT
    } else {
        source.limit
    };
    let chosen: Vec<&str> = entries
        .iter()
        .take(limit)
        .map(|entry| entry.name.as_str())
        .collect();
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(chosen.len().div_ceil(PER_WORKER).max(1));
    let versions = Versions { tool, from, to };
    let mut radius = decide_all(store.as_ref(), opener.as_ref(), &chosen, &versions, workers);
    radius.store = store.describe();
    radius.held = entries.len();
    Ok(radius)
}

/// The tool and the two versions its records are decided under.
struct Versions<'a> {
    tool: &'a str,
    from: &'a Contract,
    to: &'a Contract,
}

/// Decides the records `names` (newest first) on `workers` threads, each a contiguous run of
/// them, merged in order: the same report, examples and reasons included, whatever the number
/// of workers.
fn decide_all(
    store: &dyn Store,
    opener: Option<&Opener>,
    names: &[&str],
    versions: &Versions<'_>,
    workers: usize,
) -> BlastRadius {
    let run = names.len().div_ceil(workers.max(1)).max(1);
    let parts: Vec<BlastRadius> = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .chunks(run)
            .map(|part| {
                scope.spawn(move || {
                    let mut radius = BlastRadius::default();
                    // A batch read at once (a bucket's reads overlap), then decided.
                    for batch in part.chunks(READ_AT_ONCE) {
                        let records = read_all_retained(store, batch, opener);
                        for (name, record) in batch.iter().zip(records) {
                            radius.decide(name, record, versions);
                        }
                    }
                    radius
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_default())
            .collect()
    });
    let mut radius = BlastRadius::default();
    for part in parts {
        radius.merge(part);
    }
    radius.estimate();
    radius
}

/// The fewest records a worker of the replay is given: fewer are decided on one thread.
const PER_WORKER: usize = 256;

/// The records a worker reads at once ([`read_all_retained`]) before deciding them: a
/// bucket's round trips overlap, and at most this many records are held per worker.
const READ_AT_ONCE: usize = 32;

impl BlastRadius {
    /// Decides the record read under `name` under both versions and counts it, or why it
    /// could not be.
    fn decide(
        &mut self,
        name: &str,
        record: Result<Option<Retained>, ReadError>,
        versions: &Versions<'_>,
    ) {
        let Versions { tool, from, to } = versions;
        match decide_both(name, record, tool, from, to) {
            Ok((record, before, after)) => {
                self.decided += 1;
                self.count(&record, &before, &after);
            }
            Err(why) => {
                self.undecided += 1;
                if self.undecided_reasons.len() < EXAMPLES {
                    self.undecided_reasons.push(why);
                }
            }
        }
    }

    /// Adds `later`, the count of the records after this one's in the newest-first list.
    fn merge(&mut self, later: BlastRadius) {
        self.decided += later.decided;
        self.undecided += later.undecided;
        let room = EXAMPLES.saturating_sub(self.undecided_reasons.len());
        self.undecided_reasons
            .extend(later.undecided_reasons.into_iter().take(room));
        for (shift, more) in [
            (&mut self.newly_refused, later.newly_refused),
            (&mut self.newly_admitted, later.newly_admitted),
            (&mut self.output_changed, later.output_changed),
        ] {
            shift.merge(more);
        }
        self.traffic += later.traffic;
        self.unrated += later.unrated;
        self.heaviest = self.heaviest.max(later.heaviest);
        self.samples.extend(later.samples);
    }

    fn count(&mut self, record: &Retained, before: &Decision, after: &Decision) {
        let rate = match record.sampling_rate {
            Some(rate) if rate > 0.0 && rate <= 1.0 => rate,
            // A rate a record cannot have been kept with is no weight to trust.
            Some(_) | None => {
                self.unrated += 1;
                1.0
            }
        };
        let weight = 1.0 / rate;
        self.traffic += weight;
        self.heaviest = self.heaviest.max(weight);
        let kind = match (before.is_admitted(), after.is_admitted()) {
            (true, false) => {
                self.newly_refused.add(record, weight, Some(after));
                Some(0)
            }
            (false, true) => {
                self.newly_admitted.add(record, weight, Some(before));
                Some(1)
            }
            _ if before.agent_bytes() != after.agent_bytes() => {
                self.output_changed.add(record, weight, None);
                Some(2)
            }
            _ => None,
        };
        self.samples.push((rate, kind));
    }

    /// Each shift's share of traffic, and its margin: the Horvitz-Thompson ratio estimate
    /// `Σ w·y / Σ w`, with the linearized variance `Σ (1 - π) w² (y - R)² / (Σ w)²`.
    fn estimate(&mut self) {
        if self.traffic <= 0.0 {
            return;
        }
        let traffic = self.traffic;
        for (kind, shift) in [
            &mut self.newly_refused,
            &mut self.newly_admitted,
            &mut self.output_changed,
        ]
        .into_iter()
        .enumerate()
        {
            let share = shift.weight / traffic;
            let variance: f64 = self
                .samples
                .iter()
                .map(|(rate, shifted)| {
                    let y = if *shifted == Some(kind as u8) {
                        1.0
                    } else {
                        0.0
                    };
                    let weight = 1.0 / rate;
                    (1.0 - rate) * weight * weight * (y - share) * (y - share)
                })
                .sum::<f64>()
                / (traffic * traffic);
            shift.estimate = Estimate {
                share,
                margin: 1.96 * variance.sqrt(),
            };
        }
    }

    /// How many records a `--fail-on` count threshold measures for `shift`: those that shift,
    /// and those that could not be decided (unknown is not safe).
    pub fn at_most_shifted(&self, shift: &Shift) -> usize {
        shift.count + self.undecided
    }

    /// The share of traffic a `--fail-on` percentage measures for `shift`: its estimate, with
    /// each record that could not be decided counted as shifted, at the heaviest weight.
    pub fn at_most_share(&self, shift: &Shift) -> f64 {
        let unknown = self.undecided as f64 * self.heaviest.max(1.0);
        let traffic = self.traffic + unknown;
        if traffic <= 0.0 {
            return 0.0;
        }
        (shift.weight + unknown) / traffic
    }
}

/// One record, decided by both versions as production decided it: its request, its time.
fn decide_both(
    name: &str,
    record: Result<Option<Retained>, ReadError>,
    tool: &str,
    from: &Contract,
    to: &Contract,
) -> Result<(Retained, Decision, Decision), String> {
    let record = record
        .map_err(|error| error.to_string())?
        .ok_or_else(|| format!("{name}: deleted while it was read (the store's budget or age)"))?;
    if record.tool != tool {
        return Err(format!(
            "{name}: holds a response of {:?}, not of {tool:?}",
            record.tool
        ));
    }
    let keys = record.secret_keys();
    if !keys.is_empty() {
        return Err(format!(
            "{name}: kept `{}` as a digest only (--retain-secret), so it cannot be decided again here (toolgate reproduce --request FILE can, one at a time)",
            keys.join("`, `")
        ));
    }
    let request = record
        .request(&Map::new(), None)
        .map_err(|why| format!("{name}: {why}"))?;
    for contract in [from, to] {
        let missing: Vec<&str> = contract
            .required_context()
            .into_iter()
            .filter(|key| !request.context().contains_key(*key))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{name}: its context lacks `{}`, which the rules of {} read: production never supplied it",
                missing.join("`, `"),
                contract.version()
            ));
        }
    }
    let now = record
        .time()
        .map_err(|why| format!("{name}: its time: {why}"))?;
    let before = from.admit_response(record.response(), &request, now);
    let after = to.admit_response(record.response(), &request, now);
    Ok((record, before, after))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use toolgate_gate::{Captured, Request, Response, SecretContext};
    use toolgate_store::FolderStore;

    use super::*;

    /// 600 records of job_status, decided by v1 as production would (each accepted fixture at
    /// 100 instants a millisecond apart, refusals kept at 1 and admissions at 10 %), in a
    /// folder store.
    fn store_of_records(folder: &Path) -> (FolderStore, Vec<String>, Contract, Contract) {
        let repository =
            toolgate_repo::Repository::open(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
                .unwrap();
        let v1 = repository.load("job_status", Some("v1")).unwrap();
        let v2 = repository.load("job_status", Some("v2")).unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/job_status");
        let request: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures.join("request.json")).unwrap()).unwrap();
        let context = request["context"].as_object().unwrap().clone();
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_953_600);
        let store = FolderStore::open(folder).unwrap();
        let mut names = Vec::new();
        for entry in std::fs::read_dir(fixtures.join("accepted")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|extension| extension != "json") {
                continue;
            }
            let raw = std::fs::read(&path).unwrap();
            for n in 0..100 {
                let request = Request::new(request["request_id"].as_str().unwrap())
                    .with_context_map(context.clone());
                let response = Response::body(&raw);
                let at = now + std::time::Duration::from_millis(n);
                let decision = v1.admit_response(response, &request, at);
                let rate = if decision.is_admitted() { 0.1 } else { 1.0 };
                let record = Captured::of(&decision, &response, &request)
                    .sampled_at(rate)
                    .into_retained(&SecretContext::none());
                Store::put(&store, &record.name(), &record.to_bytes()).unwrap();
                names.push(record.name());
            }
        }
        names.sort();
        (store, names, v1, v2)
    }

    /// The report is the same on one thread and on several: counts, causes, examples, reasons
    /// and the estimates.
    #[test]
    fn the_replay_decides_alike_on_any_number_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let (store, names, v1, v2) = store_of_records(dir.path());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(names.len(), 600);
        let versions = Versions {
            tool: "job_status",
            from: &v1,
            to: &v2,
        };
        let alone = decide_all(&store, None, &names, &versions, 1);
        assert_eq!(alone.decided, 600);
        assert!(alone.newly_refused.count > 0, "{alone:?}");
        for workers in [2, 3, 7] {
            assert_eq!(
                decide_all(&store, None, &names, &versions, workers),
                alone,
                "{workers} workers"
            );
        }
    }
}
