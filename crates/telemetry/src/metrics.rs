//! The Prometheus metrics every production front keeps (the MCP proxy, `toolgate serve`, the
//! Python binding): what was decided and how long it took, what the upstream did, who was
//! refused at the door, what is in flight.
//!
//! Every label is bounded by configuration, never by a request: a tool and a version come from
//! a compiled contract (a front records a decision only after it found the contract), and every
//! other label is one of a finite set of words the gate or the front defines. So an attacker
//! who sends a million tool names adds no series.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use toolgate_gate::{Contract, Decision, Direction, ErrorCode, Layer, Outcome, Sha256Digest};
use toolgate_store::{Retainer, StatsReader};

/// The media type of the Prometheus text format (version 0.0.4), which every scraper reads.
pub const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
/// The media type of the OpenMetrics text format, which Prometheus asks for first.
pub const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Why a call's upstream did not answer it with a result the gate could read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpstreamFailure {
    /// It answered with a JSON-RPC error, or `isError`.
    Error,
    /// It was gone, or not running, or its era could not be settled.
    Unavailable,
    /// It did not answer within the proxy's timeout.
    Timeout,
    /// Its answer was longer than the line cap.
    TooLong,
    /// It wrote a line nobody can read.
    Unreadable,
    /// It asked for something the proxy does not pass on (input, a capability, a revision).
    Unusable,
    /// Its tool is not the one pinned: changed, or no longer listed.
    Changed,
    /// The proxy stopped (its drain deadline passed) while the call was out.
    Cut,
}

impl UpstreamFailure {
    /// Every reason, in a stable order.
    pub const ALL: [UpstreamFailure; 8] = [
        UpstreamFailure::Error,
        UpstreamFailure::Unavailable,
        UpstreamFailure::Timeout,
        UpstreamFailure::TooLong,
        UpstreamFailure::Unreadable,
        UpstreamFailure::Unusable,
        UpstreamFailure::Changed,
        UpstreamFailure::Cut,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamFailure::Error => "error",
            UpstreamFailure::Unavailable => "unavailable",
            UpstreamFailure::Timeout => "timeout",
            UpstreamFailure::TooLong => "too_long",
            UpstreamFailure::Unreadable => "unreadable",
            UpstreamFailure::Unusable => "unusable",
            UpstreamFailure::Changed => "changed",
            UpstreamFailure::Cut => "cut",
        }
    }
}

/// Why the HTTP listener turned a caller away before anything was read or forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallerRefusal {
    /// No bearer token (401).
    Missing,
    /// A token that did not verify (401).
    Invalid,
    /// A valid token without the scope or claim a tool needs (403).
    Insufficient,
    /// Over `--caller-rate` (429).
    Rate,
    /// An `Origin` the operator did not allow (403).
    Origin,
    /// The shared rate store (`--caller-rate-store`) could not be asked, and the limit fails
    /// closed (503).
    RateStoreUnavailable,
}

impl CallerRefusal {
    /// The HTTP status the caller got.
    pub fn status(self) -> &'static str {
        match self {
            CallerRefusal::Missing | CallerRefusal::Invalid => "401",
            CallerRefusal::Insufficient | CallerRefusal::Origin => "403",
            CallerRefusal::Rate => "429",
            CallerRefusal::RateStoreUnavailable => "503",
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            CallerRefusal::Missing => "missing_token",
            CallerRefusal::Invalid => "invalid_token",
            CallerRefusal::Insufficient => "insufficient_scope",
            CallerRefusal::Rate => "rate_limited",
            CallerRefusal::Origin => "origin",
            CallerRefusal::RateStoreUnavailable => "rate_store_unavailable",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    tool: Arc<str>,
    contract_version: Arc<str>,
    direction: &'static str,
    outcome: &'static str,
    layer: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    tool: Arc<str>,
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailureLabels {
    tool: Arc<str>,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ShadowLabels {
    tool: Arc<str>,
    contract_version: Arc<str>,
    shadow_version: Arc<str>,
    agreement: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    status: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContractLabels {
    tool: Arc<str>,
    contract_version: Arc<str>,
    contract_digest: Arc<str>,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// A decision takes microseconds: buckets from 1 µs, doubling, to half a second.
fn decision_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-6, 2.0, 20))
}

/// An upstream takes milliseconds to minutes: from 0.5 ms, doubling, to about 65 s (past the
/// default timeout of 60 s).
fn upstream_histogram() -> Histogram {
    Histogram::new(exponential_buckets(5e-4, 2.0, 18))
}

/// What a front knows only when it is scraped: whether its upstream is there, what its
/// retainer did.
#[derive(Default)]
struct Probes {
    upstream_up: Option<Box<dyn Fn() -> bool + Send + Sync>>,
    withheld: Option<Box<dyn Fn() -> usize + Send + Sync>>,
    retention: Option<StatsReader>,
}

#[derive(Default)]
struct ProbeCollector {
    probes: Mutex<Probes>,
}

impl std::fmt::Debug for ProbeCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProbeCollector")
    }
}

impl Collector for ProbeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let probes = self
            .probes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(up) = &probes.upstream_up {
            let gauge = ConstGauge::new(i64::from(up()));
            let metric = encoder.encode_descriptor(
                "toolgate_upstream_up",
                "Whether the upstream is settled, still there and answering (1), or not (0): what /readyz says",
                None,
                gauge.metric_type(),
            )?;
            gauge.encode(metric)?;
        }
        if let Some(withheld) = &probes.withheld {
            let gauge = ConstGauge::new(i64::try_from(withheld()).unwrap_or(i64::MAX));
            let metric = encoder.encode_descriptor(
                "toolgate_tools_withheld",
                "Pinned tools withheld from hosts now (toolgate pin): the upstream changed their descriptor, or no longer lists them; a rug pull shows here before anyone calls the tool",
                None,
                gauge.metric_type(),
            )?;
            gauge.encode(metric)?;
        }
        if let Some(retention) = &probes.retention {
            let counts = retention.read();
            let mut family = encoder.encode_descriptor(
                "toolgate_retention_records",
                "What the retainer did with the records it was handed (--retain): kept, dropped (its queue full), failed (the store refused), lost (still waiting when the front stopped and its drain ran out), evicted (budget or age)",
                None,
                prometheus_client::metrics::MetricType::Counter,
            )?;
            for (result, value) in [
                ("kept", counts.kept),
                ("dropped", counts.dropped),
                ("failed", counts.failed),
                ("lost", counts.lost),
                ("evicted", counts.evicted),
            ] {
                let labels = [("result", result)];
                ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// Every metric a front keeps, registered once; recording is a few atomic operations behind a
/// read lock (a new label set, seen once per tool and outcome, takes the write lock).
pub struct Metrics {
    registry: Registry,
    no_contract: Counter,
    decisions: Family<DecisionLabels, Counter>,
    decision_seconds: HistogramFamily<DurationLabels>,
    upstream_seconds: HistogramFamily<ToolLabels>,
    upstream_failures: Family<FailureLabels, Counter>,
    shadow: Family<ShadowLabels, Counter>,
    refusals: Family<RefusalLabels, Counter>,
    in_flight: Family<ToolLabels, Gauge>,
    contracts: Family<ContractLabels, Gauge>,
    /// The digest of the contract set served (one series, 1), which replicas compare.
    contract_set: Family<[(&'static str, String); 1], Gauge>,
    /// Reloads of the contract set, by result.
    reloads: Family<[(&'static str, &'static str); 1], Counter>,
    /// The door the front serves (`mcp-proxy`, `ext-proc`, `ext-mcp`, `serve`): one series, 1.
    door: Family<[(&'static str, &'static str); 1], Gauge>,
    probes: Arc<ProbeCollector>,
    /// Each contract's handles, resolved once (by the digest of its bytes).
    by_contract: RwLock<HashMap<Sha256Digest, Arc<ContractMetrics>, DigestHash>>,
}

/// A SHA-256 digest is already uniformly spread: its first eight bytes are its hash.
#[derive(Default, Clone, Copy)]
struct DigestHash;

impl BuildHasher for DigestHash {
    type Hasher = DigestHasher;

    fn build_hasher(&self) -> DigestHasher {
        DigestHasher(0)
    }
}

struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // A digest hashes as its length (the same for all) and then its 32 bytes: the first
        // eight of each write are plenty.
        let mut word = [0u8; 8];
        let taken = bytes.len().min(8);
        word[..taken].copy_from_slice(&bytes[..taken]);
        self.0 ^= u64::from_le_bytes(word);
    }
}

/// How many outcome, layer and code combinations a decision can have: admitted; a failure the
/// contract allows, with one of the codes; a refusal at one of the layers, with one of the codes.
const COMBINATIONS: usize = 1 + ErrorCode::ALL.len() * (1 + Layer::ALL.len());

/// The combination a decision is, as an index below [`COMBINATIONS`].
fn combination(outcome: &Outcome) -> usize {
    let code = |code: ErrorCode| {
        ErrorCode::ALL
            .iter()
            .position(|known| *known == code)
            .unwrap_or(0)
    };
    match outcome {
        Outcome::Admitted => 0,
        Outcome::AdmittedFailure { code: failure, .. } => 1 + code(*failure),
        Outcome::Rejected(rejection) => {
            let layer = Layer::ALL
                .iter()
                .position(|known| *known == rejection.layer())
                .unwrap_or(0);
            1 + ErrorCode::ALL.len() * (1 + layer) + code(rejection.code())
        }
    }
}

/// One contract's metrics, resolved once ([`Metrics::contract`]): recording a call's decision,
/// latency, failure or flight is then an atomic operation or a histogram's lock, with no label
/// built and no family looked up. A decision's series is created the first time it is seen.
pub struct ContractMetrics {
    tool: Arc<str>,
    version: Arc<str>,
    direction: &'static str,
    decisions_family: Family<DecisionLabels, Counter>,
    decisions: [OnceLock<Counter>; COMBINATIONS],
    failures_family: Family<FailureLabels, Counter>,
    failures: [OnceLock<Counter>; UpstreamFailure::ALL.len()],
    shadow: Family<ShadowLabels, Counter>,
    decision_seconds: Histogram,
    upstream_seconds: Histogram,
    in_flight: Gauge,
}

impl std::fmt::Debug for ContractMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContractMetrics")
            .field("tool", &self.tool)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl ContractMetrics {
    /// A decision this contract made, which took `took` (a shadow version's decision too, when
    /// the decision carries one).
    pub fn decided(&self, decision: &Decision, took: Duration) {
        let outcome = decision.outcome();
        self.decisions[combination(outcome)]
            .get_or_init(|| {
                self.decisions_family.get_or_create_owned(&DecisionLabels {
                    tool: Arc::clone(&self.tool),
                    contract_version: Arc::clone(&self.version),
                    direction: self.direction,
                    outcome: outcome.as_str(),
                    layer: decision
                        .rejection()
                        .map_or("none", |rejection| rejection.layer().as_str()),
                    code: outcome.code().map_or("none", |code| code.as_str()),
                })
            })
            .inc();
        if let Some(shadow) = decision.shadow() {
            self.shadow
                .get_or_create(&ShadowLabels {
                    tool: Arc::clone(&self.tool),
                    contract_version: Arc::clone(&self.version),
                    shadow_version: Arc::from(shadow.version.as_str()),
                    agreement: if decision.shadow_disagrees() {
                        "disagree"
                    } else {
                        "agree"
                    },
                })
                .inc();
        }
        self.decision_seconds.observe(took.as_secs_f64());
    }

    /// The upstream answered a call of this tool after `took`.
    pub fn upstream_answered(&self, took: Duration) {
        self.upstream_seconds.observe(took.as_secs_f64());
    }

    /// A call of this tool got no readable result from the upstream.
    pub fn upstream_failed(&self, reason: UpstreamFailure) {
        let index = UpstreamFailure::ALL
            .iter()
            .position(|known| *known == reason)
            .unwrap_or(0);
        self.failures[index]
            .get_or_init(|| {
                self.failures_family.get_or_create_owned(&FailureLabels {
                    tool: Arc::clone(&self.tool),
                    reason: reason.as_str(),
                })
            })
            .inc();
    }

    /// A call of this tool is in flight until the guard is dropped, whichever way it ends.
    pub fn call_started(&self) -> InFlight {
        self.in_flight.inc();
        InFlight {
            gauge: self.in_flight.clone(),
            done: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric, at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let decisions = Family::<DecisionLabels, Counter>::default();
        registry.register(
            "toolgate_decisions",
            "Decisions the gate made, by the contract that decided (tool, version, direction: result or action), the outcome (admitted, admitted_failure, rejected), the refusing layer and the code the agent saw (none where there is none)",
            decisions.clone(),
        );
        let decision_seconds: HistogramFamily<DurationLabels> =
            Family::new_with_constructor(decision_histogram);
        registry.register_with_unit(
            "toolgate_decision_duration",
            "How long the gate took to decide, by tool and direction (a shadow version's decision included)",
            Unit::Seconds,
            decision_seconds.clone(),
        );
        let upstream_seconds: HistogramFamily<ToolLabels> =
            Family::new_with_constructor(upstream_histogram);
        registry.register_with_unit(
            "toolgate_upstream_duration",
            "How long the upstream took to answer a tool call, from forwarding it to reading its answer",
            Unit::Seconds,
            upstream_seconds.clone(),
        );
        let upstream_failures = Family::<FailureLabels, Counter>::default();
        registry.register(
            "toolgate_upstream_failures",
            "Tool calls the upstream did not answer with a readable result, by reason (error, unavailable, timeout, too_long, unreadable, unusable, changed); each is also a decision with code UPSTREAM_UNAVAILABLE or INVALID_RESPONSE",
            upstream_failures.clone(),
        );
        let shadow = Family::<ShadowLabels, Counter>::default();
        registry.register(
            "toolgate_shadow_decisions",
            "Decisions a shadow version (--shadow) made beside the enforced one, by whether it agreed (same outcome and agent bytes) or disagreed",
            shadow.clone(),
        );
        let refusals = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "toolgate_caller_refusals",
            "Requests the HTTP listener refused before reading them, by status (401, 403, 429) and reason",
            refusals.clone(),
        );
        let in_flight = Family::<ToolLabels, Gauge>::default();
        registry.register(
            "toolgate_in_flight_calls",
            "Tool calls forwarded and not yet answered, by tool",
            in_flight.clone(),
        );
        let no_contract = Counter::default();
        registry.register(
            "toolgate_no_contract_calls",
            "Tool calls forwarded in observe mode (--mode observe) to a tool no contract covers: passed on undecided, and unaudited",
            no_contract.clone(),
        );
        let contracts = Family::<ContractLabels, Gauge>::default();
        registry.register(
            "toolgate_contract_info",
            "The contracts a front has loaded (1 each): tool, version and the SHA-256 of the contract's bytes",
            contracts.clone(),
        );
        let contract_set = Family::<[(&'static str, String); 1], Gauge>::default();
        registry.register(
            "toolgate_contract_set_info",
            "The contract set a front serves (1): its digest, a bundle's or the SHA-256 of every contract's; replicas serving different digests are mid-rollout, or stuck",
            contract_set.clone(),
        );
        let reloads = Family::<[(&'static str, &'static str); 1], Counter>::default();
        registry.register(
            "toolgate_contract_reloads",
            "Reloads of the contract set (SIGHUP, or its files changed), by result: loaded (swapped in between calls) or refused (the old set kept)",
            reloads.clone(),
        );
        let door = Family::<[(&'static str, &'static str); 1], Gauge>::default();
        registry.register(
            "toolgate_door_info",
            "The door a front serves (1): mcp-proxy, ext-proc, ext-mcp or serve, so replicas behind different gateways are told apart",
            door.clone(),
        );
        let build = Family::<[(&'static str, &'static str); 1], Gauge>::default();
        build
            .get_or_create(&[("version", env!("CARGO_PKG_VERSION"))])
            .set(1);
        registry.register(
            "toolgate_build_info",
            "The toolgate build serving (1)",
            build,
        );
        let probes = Arc::new(ProbeCollector::default());
        registry.register_collector(Box::new(Arc::clone(&probes)));
        Metrics {
            registry,
            no_contract,
            decisions,
            decision_seconds,
            upstream_seconds,
            upstream_failures,
            shadow,
            refusals,
            in_flight,
            contracts,
            contract_set,
            reloads,
            door,
            probes,
            by_contract: RwLock::new(HashMap::with_hasher(DigestHash)),
        }
    }

    /// The front serves through `door` (`toolgate_door_info`).
    pub fn serving_door(&self, door: &'static str) {
        self.door.get_or_create(&[("door", door)]).set(1);
    }

    /// `contract`'s metrics, resolved the first time and shared after (keep them where a
    /// call can reach them without asking again).
    pub fn contract(&self, contract: &Contract) -> Arc<ContractMetrics> {
        let digest = contract.digest();
        if let Some(found) = self
            .by_contract
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&digest)
        {
            return Arc::clone(found);
        }
        let tool: Arc<str> = Arc::from(contract.tool());
        let direction = direction(contract);
        let resolved = Arc::new(ContractMetrics {
            version: Arc::from(contract.version()),
            direction,
            decisions_family: self.decisions.clone(),
            decisions: std::array::from_fn(|_| OnceLock::new()),
            failures_family: self.upstream_failures.clone(),
            failures: std::array::from_fn(|_| OnceLock::new()),
            shadow: self.shadow.clone(),
            decision_seconds: self.decision_seconds.get_or_create_owned(&DurationLabels {
                tool: Arc::clone(&tool),
                direction,
            }),
            upstream_seconds: self.upstream_seconds.get_or_create_owned(&ToolLabels {
                tool: Arc::clone(&tool),
            }),
            in_flight: self.in_flight.get_or_create_owned(&ToolLabels {
                tool: Arc::clone(&tool),
            }),
            tool,
        });
        let mut by_contract = self
            .by_contract
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(by_contract.entry(digest).or_insert(resolved))
    }

    /// A decision `contract` made, which took `took` ([`ContractMetrics::decided`], the
    /// contract's metrics looked up by its digest).
    pub fn decided(&self, contract: &Contract, decision: &Decision, took: Duration) {
        self.contract(contract).decided(decision, took);
    }

    /// A call of a tool without a contract passed on undecided (observe mode).
    pub fn called_without_contract(&self) {
        self.no_contract.inc();
    }

    /// The HTTP listener turned a caller away.
    pub fn caller_refused(&self, refusal: CallerRefusal) {
        self.refusals
            .get_or_create(&RefusalLabels {
                status: refusal.status(),
                reason: refusal.as_str(),
            })
            .inc();
    }

    /// A contract the front loaded, named with its digest in `toolgate_contract_info`.
    pub fn contract_loaded(&self, contract: &Contract) {
        self.contracts
            .get_or_create(&ContractLabels {
                tool: Arc::from(contract.tool()),
                contract_version: Arc::from(contract.version()),
                contract_digest: Arc::from(contract.digest().to_hex()),
            })
            .set(1);
    }

    /// The contract set served is `digest`, made of `contracts`: `toolgate_contract_set_info`
    /// and `toolgate_contract_info` name it, and nothing of a set served before.
    pub fn contract_set<'a>(&self, digest: &str, contracts: impl Iterator<Item = &'a Contract>) {
        self.contract_set.clear();
        self.contract_set
            .get_or_create(&[("digest", digest.to_owned())])
            .set(1);
        self.contracts.clear();
        for contract in contracts {
            self.contract_loaded(contract);
        }
    }

    /// A reload of the contract set was `loaded` (swapped in) or refused (the old set kept).
    pub fn reloaded(&self, loaded: bool) {
        self.reloads
            .get_or_create(&[("result", if loaded { "loaded" } else { "refused" })])
            .inc();
    }

    /// Reports `toolgate_upstream_up` from `probe` at each scrape.
    pub fn watch_upstream(&self, probe: impl Fn() -> bool + Send + Sync + 'static) {
        self.probes().upstream_up = Some(Box::new(probe));
    }

    /// Reports `toolgate_tools_withheld` from `probe` at each scrape.
    pub fn watch_withheld(&self, probe: impl Fn() -> usize + Send + Sync + 'static) {
        self.probes().withheld = Some(Box::new(probe));
    }

    /// Reports what `retainer` did as `toolgate_retention_records_total`, read at each scrape.
    pub fn watch_retainer(&self, retainer: &Retainer) {
        self.probes().retention = Some(retainer.stats_reader());
    }

    fn probes(&self) -> std::sync::MutexGuard<'_, Probes> {
        self.probes
            .probes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The exposition in the Prometheus text format (version 0.0.4), [`PROMETHEUS_TEXT`].
    pub fn prometheus_text(&self) -> String {
        let mut text = String::with_capacity(4096);
        // Writing to a String cannot fail; a collector's error would leave what it wrote.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }

    /// The exposition in the OpenMetrics text format, [`OPENMETRICS_TEXT`].
    pub fn openmetrics_text(&self) -> String {
        let mut text = String::with_capacity(4096);
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// The exposition a scraper that sent `accept` (its `Accept` header) reads best, and its
    /// media type: OpenMetrics where it asks for it (Prometheus does), the Prometheus text
    /// format otherwise.
    pub fn exposition_for(&self, accept: Option<&str>) -> (&'static str, String) {
        if accept.is_some_and(|accept| accept.contains("application/openmetrics-text")) {
            (OPENMETRICS_TEXT, self.openmetrics_text())
        } else {
            (PROMETHEUS_TEXT, self.prometheus_text())
        }
    }
}

fn direction(contract: &Contract) -> &'static str {
    match contract.direction() {
        Direction::Result => "result",
        Direction::Action => "action",
    }
}

/// A call in flight: `toolgate_in_flight_calls` goes down once, when the call is answered
/// ([`InFlight::answered`], before the answer is sent, so a scrape after it sees the call
/// gone) or when the guard is dropped, whichever comes first.
#[derive(Debug)]
pub struct InFlight {
    gauge: Gauge,
    done: std::sync::atomic::AtomicBool,
}

impl InFlight {
    /// The call is answered: it is no longer in flight.
    pub fn answered(&self) {
        if !self.done.swap(true, std::sync::atomic::Ordering::Relaxed) {
            self.gauge.dec();
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.answered();
    }
}
