//! Contracts reloaded without a restart: on SIGHUP, and when the files they are read from
//! change (the bundle or folder `--contracts` names; a mounted ConfigMap changes in place).
//!
//! The new set is loaded whole, as at start (the bundle checked, every contract compiled,
//! `--shadow` and `--enforce` resolved against it, the operator's context and the pins read),
//! then swapped in between calls: a call takes the set once, when it is asked, and is decided
//! wholly under it, whatever is swapped in meanwhile. A set that does not load is not swapped
//! in: the old one stays, and a line says why. Each reload is logged with the new set's digest,
//! and counted (`toolgate_contract_reloads_total`, `toolgate_contract_set_info`).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use toolgate_front::ShadowPlan;
use toolgate_repo::UsageError;

use super::Proxy;
use crate::lines::log;
use crate::loaded::Loaded;
use crate::lock;

/// The most entries of a contracts folder looked at for a change: far past any repository.
const MAX_WATCHED_ENTRIES: usize = 100_000;

/// How the contracts are loaded again: what the command line named.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reload {
    /// The bundle or repository folder (`--contracts`).
    pub root: PathBuf,
    /// `--shadow`'s values.
    pub shadow: Vec<String>,
    /// `--enforce`'s values.
    pub enforce: Vec<String>,
    /// The operator's context file (`--context`).
    pub context: Option<PathBuf>,
    /// How often the files are looked at for a change (`--reload-check`); `None`: on SIGHUP
    /// only.
    pub check_every: Option<Duration>,
}

impl Loaded {
    /// The set `reload` names, loaded again from the start.
    fn again(reload: &Reload) -> Result<Loaded, UsageError> {
        let repository = toolgate_repo::bundle::open_contracts(&reload.root)?;
        let plan = ShadowPlan::resolve(&repository, &reload.shadow, &reload.enforce)?;
        Loaded::of(&repository, &plan, reload.context.as_deref())
    }
}

/// What the files at `root` are now, cheaply (names, sizes, times, inodes; never contents):
/// when it changes, they changed. `None` when nothing can be read there.
fn fingerprint(root: &Path) -> Option<u64> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let metadata = std::fs::metadata(root).ok()?;
    if !metadata.is_dir() {
        describe(&metadata, &mut hasher);
        return Some(hasher.finish());
    }
    let mut pending = vec![root.join(toolgate_repo::CONTRACTS_DIR)];
    let mut seen = 0;
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WATCHED_ENTRIES {
                return Some(hasher.finish());
            }
            let path = entry.path();
            let Ok(metadata) = std::fs::metadata(&path) else {
                continue;
            };
            path.hash(&mut hasher);
            describe(&metadata, &mut hasher);
            if metadata.is_dir() {
                pending.push(path);
            }
        }
    }
    Some(hasher.finish())
}

/// A file's size, time and identity, into `hasher`.
fn describe(metadata: &std::fs::Metadata, hasher: &mut impl Hasher) {
    metadata.len().hash(hasher);
    metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok())
        .hash(hasher);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (metadata.dev(), metadata.ino()).hash(hasher);
    }
}

impl Proxy {
    /// The contract set calls are decided under now. A call takes it once and keeps it.
    pub(crate) fn loaded(&self) -> Arc<Loaded> {
        Arc::clone(
            &self
                .loaded
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Loads the contracts again and swaps the new set in, or keeps the old one and says why.
    /// `why` names what asked (`SIGHUP`, `the contracts changed`). Whether the new set is in.
    pub(crate) fn reload(&self, why: &str) -> bool {
        let old = self.loaded();
        let loaded = match Loaded::again(&self.reload) {
            Ok(loaded) => loaded,
            Err(error) => {
                log(&format!(
                    "contracts not reloaded ({why}): {error}; still serving {}",
                    old.digest
                ));
                self.front.reloaded(false);
                return false;
            }
        };
        if loaded.registry.largest_max_bytes > self.line_cap {
            log(&format!(
                "a reloaded contract admits responses up to {} bytes, past the {} a line may have here (set at start): larger ones are refused until the proxy is restarted (or --max-line-bytes raised)",
                loaded.registry.largest_max_bytes, self.line_cap
            ));
        }
        let pins_changed = loaded.pins != old.pins;
        let (count, digest) = (loaded.registry.iter().count(), loaded.digest.clone());
        self.front.contract_set(
            &digest,
            loaded.registry.contracts().map(|(_, contract)| contract),
        );
        *self
            .loaded
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(loaded);
        self.front.reloaded(true);
        log(&format!(
            "contracts reloaded ({why}): {count} contract(s), {digest} (was {}); calls asked from now on are decided under them",
            old.digest
        ));
        if pins_changed {
            // The new pins are checked against the upstream's tools before a pinned tool is
            // served again; until then its calls get the fixed failure.
            lock(&self.surface).listed = None;
            self.refresh_surface();
        }
        self.announce_tools_changed();
        true
    }

    /// Reloads on SIGHUP, and when the contracts' files change (looked at every
    /// `check_every`), for as long as the process runs. Runs on the calling thread (one of its
    /// own, never joined: the process's end ends it).
    pub(crate) fn watch_contracts(&self, watch: Watch) {
        let Watch {
            runtime,
            mut hangup,
        } = watch;
        runtime.block_on(async {
            let mut last = fingerprint(&self.reload.root);
            // Without --reload-check the timer only wakes to see the proxy stopped.
            let every = self.reload.check_every.unwrap_or(Duration::from_secs(3600));
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tokio::select! {
                    signalled = next_hangup(&mut hangup) => {
                        if signalled {
                            last = fingerprint(&self.reload.root);
                            self.reload("SIGHUP");
                        }
                    }
                    _ = ticks.tick() => {
                        let now = fingerprint(&self.reload.root);
                        if self.reload.check_every.is_some() && now != last {
                            // Taken before the load: a file still being written is seen to
                            // change again, and loaded again, at the next look.
                            last = now;
                            self.reload("the contracts changed");
                        }
                    }
                }
            }
        });
    }
}

/// What the watcher waits on, made before the proxy serves, so no SIGHUP sent once it serves
/// is missed: a runtime of its own, and SIGHUP's stream on it.
pub(crate) struct Watch {
    runtime: tokio::runtime::Runtime,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
    #[cfg(not(unix))]
    hangup: Option<()>,
}

impl Watch {
    /// The watcher's runtime, SIGHUP caught on it; `None` (said) where none can be made.
    pub(crate) fn new() -> Option<Watch> {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            log("cannot watch the contracts for a reload (no runtime); SIGHUP is ignored");
            return None;
        };
        let hangup = runtime.block_on(async { hangups() });
        Some(Watch { runtime, hangup })
    }
}

/// SIGHUP's stream, where the platform has one.
#[cfg(unix)]
fn hangups() -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

#[cfg(not(unix))]
fn hangups() -> Option<()> {
    None
}

/// The next SIGHUP (true), or never.
#[cfg(unix)]
async fn next_hangup(hangup: &mut Option<tokio::signal::unix::Signal>) -> bool {
    match hangup {
        Some(stream) => stream.recv().await.is_some(),
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Option<()>) -> bool {
    std::future::pending().await
}
