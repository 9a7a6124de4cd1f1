//! One front, opened from one configuration: the audit log, retention, metrics, tracing and the
//! rollout plan every production front runs with, each opened (and each refusal to open said)
//! in the same order wherever the front runs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use toolgate_gate::Contract;
use toolgate_repo::{Repository, UsageError};
use toolgate_store::{Retainer, RetentionConfig};
use toolgate_telemetry::{Metrics, MetricsEndpoint};

use crate::audit_log::{ChainedAuditLog, open_audit};
use crate::decide::Steps;
use crate::log::{FrontLog, StderrLog};
use crate::rollout::{ShadowPlan, refuse_observe_in_ci};
use crate::span::Tracing;

/// What a front is opened with: the settings every front shares (one flattened set of command
/// line flags in the binary), and what the front running them says of itself.
#[derive(Debug, Clone, Default)]
pub struct FrontConfig {
    /// Append every decision's audit event (one JSON line, hash-chained) to this file; `-` is
    /// stdout where the front leaves it free.
    pub audit: Option<PathBuf>,
    /// Sign the audit lines with this Ed25519 private key (PKCS#8 PEM).
    pub audit_key: Option<PathBuf>,
    /// Hold audit lines back for at most this long and write them together (one `write` for
    /// a burst); `None` writes each line before the answer goes.
    pub audit_flush_interval: Option<Duration>,
    /// Keep refused responses (and admitted ones at a sampled rate) in a store.
    pub retention: Option<RetentionConfig>,
    /// Log refusals without what quotes the response.
    pub redact_values: bool,
    /// Candidate versions decided beside the enforced ones (`vN`, or `TOOL=vN`).
    pub shadow: Vec<String>,
    /// Versions enforced in place of each tool's newest (`vN`, or `TOOL=vN`): a rollback.
    pub enforce: Vec<String>,
    /// Report-only: decide and audit, and pass what the upstream returned on unchanged.
    pub observe: bool,
    /// Serve Prometheus metrics at `http://ADDR/metrics`.
    pub metrics: Option<SocketAddr>,
    /// Trace every call and export it over OTLP.
    #[cfg(feature = "otlp")]
    pub tracing: Option<crate::span::TracingConfig>,
    /// What the front running this configuration says of itself.
    pub runner: Runner,
}

/// What the front running a configuration says of itself, set by the front, not by a flag.
#[derive(Debug, Clone, Default)]
pub struct Runner {
    /// Its name, starting every line it logs (`toolgate mcp-proxy`).
    pub name: &'static str,
    /// Why stdout is not free for `--audit -`, where it is not.
    pub stdout_taken: Option<&'static str>,
    /// Whether metrics are kept without `--metrics` (someone else reads them: the listener's
    /// own `/metrics`, a `serve` request).
    pub keeps_metrics: bool,
    /// Whether a refusal's operator record is logged (the proxy), or handed to the caller in
    /// its answer (`serve`).
    pub logs_refusals: bool,
}

/// A production front's shared parts, opened: see [`Steps`] for what it does with a decision.
pub struct Front {
    log: StderrLog,
    /// What it was opened with, in one line (`Front::summary`).
    summary: String,
    observe: bool,
    redact_values: bool,
    logs_refusals: bool,
    shadows: ShadowPlan,
    audit: Option<ChainedAuditLog>,
    metrics: Option<Arc<Metrics>>,
    endpoint: Option<MetricsEndpoint>,
    tracing: Option<Arc<Tracing>>,
    retainer: Option<Retainer>,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front")
            .field("name", &self.log.name())
            .field("steps", &self.steps())
            .field("shadows", &self.shadows)
            .finish_non_exhaustive()
    }
}

impl Front {
    /// Opens what `config` asks for, against `repository` (which `--shadow` names versions
    /// of). Call it before any async runtime starts: the OTLP exporter's blocking HTTP client
    /// may not be made on one. Everything that can be wrong is a configuration error here, not
    /// a front that fails every call: observe mode in CI, an audit log that cannot be opened,
    /// a retention store or key, a `--shadow` naming nothing, a taken metrics port, a collector
    /// URL.
    pub fn open(config: &FrontConfig, repository: &Repository) -> Result<Front, UsageError> {
        let runner = &config.runner;
        let log = StderrLog::new(runner.name);
        if config.observe {
            refuse_observe_in_ci(runner.name)?;
        }
        let shadows = ShadowPlan::resolve(repository, &config.shadow, &config.enforce)?;
        let audit = config
            .audit
            .as_deref()
            .map(|path| open_audit(path, config.audit_key.as_deref(), runner.stdout_taken))
            .transpose()?
            .map(|log| match config.audit_flush_interval {
                Some(interval) => log.flushing_every(interval),
                None => log,
            });
        let retainer = config
            .retention
            .as_ref()
            .map(|retention| {
                retention
                    .start(Arc::new(move |line: &str| log.line(line)))
                    .map_err(|why| UsageError::new(format!("--retain {}: {why}", retention.store)))
            })
            .transpose()?;
        let metrics = (runner.keeps_metrics || config.metrics.is_some()).then(|| {
            let metrics = Arc::new(Metrics::new());
            metrics.serving_door(runner.name.trim_start_matches("toolgate "));
            if let Some(retainer) = &retainer {
                metrics.watch_retainer(retainer);
            }
            metrics
        });
        let endpoint = match (config.metrics, &metrics) {
            (Some(address), Some(metrics)) => Some(
                MetricsEndpoint::start(address, Arc::clone(metrics)).map_err(UsageError::new)?,
            ),
            _ => None,
        };
        if let Some(endpoint) = &endpoint {
            log.line(&format!("metrics on {}", endpoint.url()));
        }
        let tracing = open_tracing(config)?;
        if config.observe {
            log.line(
                "OBSERVE MODE (--mode observe): decisions are made and audited but NOT enforced; what the upstream returned passes on unchanged, refused results included",
            );
        }
        let mut summary = summary_of(config, &shadows);
        if let Some(endpoint) = &endpoint {
            summary = summary.replace(
                "metrics on --metrics",
                &format!("metrics on {}", endpoint.url()),
            );
        }
        Ok(Front {
            log,
            summary,
            observe: config.observe,
            redact_values: config.redact_values,
            logs_refusals: runner.logs_refusals,
            shadows,
            audit,
            metrics,
            endpoint,
            tracing,
            retainer,
        })
    }

    /// A front that takes no step but deciding (listing a server's tools, a fuzzer's proxy).
    pub fn bare(name: &'static str) -> Front {
        Front {
            log: StderrLog::new(name),
            summary: String::new(),
            observe: false,
            redact_values: false,
            logs_refusals: false,
            shadows: ShadowPlan::default(),
            audit: None,
            metrics: None,
            endpoint: None,
            tracing: None,
            retainer: None,
        }
    }

    /// The steps this front takes around a decision.
    pub fn steps(&self) -> Steps<'_> {
        Steps {
            observe: self.observe,
            metrics: self.metrics.as_deref(),
            tracing: self.tracing.as_deref(),
            log: Some(&self.log),
            log_refusals: self.logs_refusals,
            redact_values: self.redact_values,
            audit: self.audit.as_ref().map(|audit| audit as _),
            retainer: self.retainer.as_ref(),
            identifies_calls: true,
        }
    }

    /// Whether the front only observes.
    pub fn observe(&self) -> bool {
        self.observe
    }

    /// What the front was opened with, in one line for its start (audit and its key, retention,
    /// mode, shadows, metrics, traces); never a secret, only where each is.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// Whether decisions are offered for retention.
    pub fn retains(&self) -> bool {
        self.retainer.is_some()
    }

    /// Whether refusals are logged redacted.
    pub fn redact_values(&self) -> bool {
        self.redact_values
    }

    /// Which version each tool enforces and which it shadows.
    pub fn shadows(&self) -> &ShadowPlan {
        &self.shadows
    }

    /// The metrics, where the front keeps them.
    pub fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.metrics.as_ref()
    }

    /// The exporter, where the front traces.
    pub fn tracing(&self) -> Option<&Arc<Tracing>> {
        self.tracing.as_ref()
    }

    /// The address metrics are served on (`--metrics`), once bound.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(MetricsEndpoint::address)
    }

    /// `contract` is loaded: its series exist from now on (at zero), before any call.
    pub fn contract_loaded(&self, contract: &Contract) {
        if let Some(metrics) = &self.metrics {
            metrics.contract_loaded(contract);
        }
    }

    /// The contract set served is now `digest`, made of `contracts` (a reload swapped it in):
    /// the metrics name it, and nothing of the set before.
    pub fn contract_set<'a>(&self, digest: &str, contracts: impl Iterator<Item = &'a Contract>) {
        if let Some(metrics) = &self.metrics {
            metrics.contract_set(digest, contracts);
        }
    }

    /// A reload of the contract set was `loaded`, or refused (the old set kept).
    pub fn reloaded(&self, loaded: bool) {
        if let Some(metrics) = &self.metrics {
            metrics.reloaded(loaded);
        }
    }

    /// Says `message` as this front does.
    pub fn log(&self, message: &str) {
        self.log.line(message);
    }

    /// The front stops: the audit log's last lines are signed (a checkpoint), what retention
    /// holds is written, waiting at most `within` (a line says what was kept and what was not),
    /// and what the exporter holds is sent.
    pub fn finish(&self, within: Duration) {
        // The audit log's last lines are signed before anything else can fail.
        if let Some(audit) = &self.audit
            && let Err(error) = audit.checkpoint()
        {
            self.log.line(&format!(
                "cannot sign the audit log's last checkpoint: {error}"
            ));
        }
        if let Some(retainer) = &self.retainer {
            self.log.line(&retainer.finish(within));
        }
        #[cfg(feature = "otlp")]
        if let Some(tracing) = &self.tracing {
            tracing.shutdown(within);
        }
    }
}

#[cfg(feature = "otlp")]
fn open_tracing(config: &FrontConfig) -> Result<Option<Arc<Tracing>>, UsageError> {
    config
        .tracing
        .as_ref()
        .map(|tracing| Tracing::start(tracing).map(Arc::new))
        .transpose()
        .map_err(UsageError::new)
}

#[cfg(not(feature = "otlp"))]
fn open_tracing(_config: &FrontConfig) -> Result<Option<Arc<Tracing>>, UsageError> {
    Ok(None)
}

/// `config` in one line: what an operator checks first when a front behaves otherwise than
/// expected. Names files and stores, never what they hold.
fn summary_of(config: &FrontConfig, shadows: &ShadowPlan) -> String {
    let flushed = match config.audit_flush_interval {
        Some(interval) => format!("written every {}ms", interval.as_millis()),
        None => "written line by line".to_owned(),
    };
    let audit = match (&config.audit, &config.audit_key) {
        (None, _) => "audit off".to_owned(),
        (Some(path), None) => format!("audit to {} (chained, unsigned, {flushed})", path.display()),
        (Some(path), Some(key)) => format!(
            "audit to {} (chained, signed with {}, {flushed})",
            path.display(),
            key.display()
        ),
    };
    let retention = match &config.retention {
        None => "retention off".to_owned(),
        Some(retention) => format!(
            "retention to {} (refusals{}, {}{})",
            retention.store,
            if retention.admitted_rate > 0.0 {
                format!(" and {}% of admissions", retention.admitted_rate * 100.0)
            } else {
                String::new()
            },
            if retention.recipients.is_empty() {
                "unsealed"
            } else {
                "sealed"
            },
            if retention.secret_keys.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} context key(s) kept as digests",
                    retention.secret_keys.len()
                )
            }
        ),
    };
    let mode = if config.observe {
        "mode OBSERVE"
    } else {
        "mode enforce"
    };
    let shadow = if shadows.is_empty() {
        "no shadow".to_owned()
    } else {
        format!("rollout {}", shadows.describe())
    };
    let metrics = if config.metrics.is_some() {
        "metrics on --metrics"
    } else if config.runner.keeps_metrics {
        "metrics kept"
    } else {
        "metrics off"
    };
    #[cfg(feature = "otlp")]
    let traces = match &config.tracing {
        Some(tracing) => format!(
            "traces to {} ({:.0}% sampled{})",
            tracing.endpoint,
            tracing.sample_ratio * 100.0,
            if tracing.audit_logs {
                ", audit as logs"
            } else {
                ""
            }
        ),
        None => "traces off".to_owned(),
    };
    #[cfg(not(feature = "otlp"))]
    let traces = "traces off".to_owned();
    format!("{audit}; {retention}; {mode}; {shadow}; {metrics}; {traces}")
}
