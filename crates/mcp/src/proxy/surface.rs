//! The upstream's tools as the proxy holds them: listed again when a change is announced (and
//! every minute), each pinned tool's descriptor against its pin, every page of a listing
//! followed within bounds.

use super::*;

/// What the proxy knows of the upstream's pinned tools: each one's descriptor digest as last
/// listed (`None` where the listing did not hold it), and how many changes the upstream has
/// announced against how many a finished listing has seen: a listing in progress when a change
/// is announced does not count for it, so no call goes out on it.
#[derive(Default)]
pub(super) struct Surface {
    pub(super) listed: Option<BTreeMap<String, Option<String>>>,
    pub(super) announced: u64,
    pub(super) seen: u64,
}

impl Surface {
    pub(super) fn stale(&self) -> bool {
        self.announced > self.seen
    }
}

/// How often the proxy lists the upstream's tools again on its own, for an upstream that does
/// not announce changes (`notifications/tools/list_changed`).
pub(super) const SURFACE_REFRESH: Duration = Duration::from_secs(60);

/// The most pages of tools followed.
pub(super) const MOST_PAGES: usize = 100;

/// The most a whole listing may hold, every page together (as JSON): a server that lists more
/// is refused rather than held in memory. A large real catalogue is a few hundred kilobytes.
pub(super) const LISTING_TOTAL_CAP: usize = 16 << 20;

/// The most tools a listing may hold.
pub(super) const MOST_TOOLS: usize = 2000;

impl Proxy {
    /// Lists the upstream's tools again whenever a change is announced, and every minute,
    /// until the proxy stops (run on a thread of its own, only where tools are pinned).
    pub(crate) fn watch_surface(&self) {
        let mut surface = lock(&self.surface);
        while !self.stopping.load(Ordering::Relaxed) {
            if !surface.stale() {
                surface = self
                    .surface_changed
                    .wait_timeout(surface, SURFACE_REFRESH)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0;
            }
            if self.stopping.load(Ordering::Relaxed) {
                return;
            }
            drop(surface);
            self.refresh_surface();
            surface = lock(&self.surface);
        }
    }

    /// Lists the upstream's tools (every page) and holds what it says of the pinned ones. A
    /// listing that fails leaves every pinned tool withheld until one succeeds: a surface
    /// nobody could check is not the reviewed one.
    pub(crate) fn refresh_surface(&self) {
        if self.loaded().pins.is_empty() {
            return;
        }
        // The changes announced before this listing was asked for are the ones it sees.
        let covers = lock(&self.surface).announced;
        match self.list_all_tools("upstream", self.timeout) {
            Ok(tools) => self.note_surface(&tools, true),
            Err(error) => {
                log(&format!(
                    "cannot list the upstream's tools to check them against their pins ({error}); the pinned tools are withheld"
                ));
                lock(&self.surface).listed = Some(BTreeMap::new());
            }
        }
        let mut surface = lock(&self.surface);
        let newly_checked = covers > surface.seen;
        surface.seen = surface.seen.max(covers);
        drop(surface);
        // The change is announced once the listing that reflects it has been checked.
        if newly_checked {
            self.announce_tools_changed();
        }
    }

    /// Holds what a listing (`complete`: every page) says of the pinned tools, and logs each
    /// one whose standing changed: withheld (naming what differs from its pin) or served again.
    pub(super) fn note_surface(&self, tools: &[Value], complete: bool) {
        let loaded = self.loaded();
        if loaded.pins.is_empty() {
            return;
        }
        let mut surface = lock(&self.surface);
        let mut listed = surface.listed.clone().unwrap_or_default();
        for (name, pin) in &loaded.pins {
            let found = tools
                .iter()
                .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name.as_str()));
            let now = match found {
                Some(tool) => Some(pins::sha256(&pins::descriptor(tool))),
                None if complete => None,
                // A page of a paged listing says nothing of the tools it does not hold.
                None => continue,
            };
            let before = listed.get(name).cloned();
            let was_served = before
                .as_ref()
                .is_some_and(|digest| digest.as_deref() == Some(pin.sha256.as_str()));
            let served = now.as_deref() == Some(pin.sha256.as_str());
            if before.is_none() || was_served != served {
                match (found, served) {
                    (_, true) if before.is_some() => log(&format!(
                        "the upstream's tool {name:?} matches its pin again; it is served"
                    )),
                    (_, true) => {}
                    (Some(tool), false) => log(&format!(
                        "the upstream's tool {name:?} changed since it was pinned ({} differ); it is withheld from tools/list and every call to it gets the fixed failure until it is reviewed and pinned again (toolgate pin)",
                        pins::changed(&pin.descriptor, &pins::descriptor(tool)).join(", ")
                    )),
                    (None, false) => log(&format!(
                        "the upstream no longer lists the pinned tool {name:?}; calls to it get the fixed failure"
                    )),
                }
            }
            listed.insert(name.clone(), now);
        }
        surface.listed = Some(listed);
    }

    /// Before a call of the pinned tool `name` is forwarded after the upstream announced a
    /// change, its tools are listed again, on this thread, where waiting blocks no one else (a
    /// stdio upstream: the host's reader, or a blocking thread of the listener): no call goes
    /// out on a listing the upstream said is stale. Over HTTP the watcher's thread lists again.
    pub(super) fn refresh_surface_if_changed(&self, name: &str) {
        if !self.loaded().pins.contains_key(name) || !self.link.send_may_block() {
            return;
        }
        let stale = lock(&self.surface).stale();
        if stale {
            self.refresh_surface();
        }
    }

    /// Why a call to `name` may not be forwarded: its pin and the upstream's tool disagree (or
    /// the upstream's tools could not be listed).
    pub(super) fn surface_refusal(&self, name: &str) -> Option<&'static str> {
        let loaded = self.loaded();
        let pin = loaded.pins.get(name)?;
        let surface = lock(&self.surface);
        pins::standing(
            pin,
            surface.listed.as_ref().and_then(|listed| listed.get(name)),
        )
    }

    /// How many pinned tools are withheld now: changed since they were pinned, or no longer
    /// listed (none before the first listing, which the proxy makes before serving).
    pub(crate) fn withheld(&self) -> usize {
        let listed = lock(&self.surface).listed.is_some();
        if !listed {
            return 0;
        }
        self.loaded()
            .pins
            .keys()
            .filter(|name| self.surface_refusal(name).is_some())
            .count()
    }

    /// Whether a listed tool is the one pinned (a tool without a pin always is).
    pub(super) fn matches_pin(&self, name: &str, tool: &Value) -> bool {
        self.loaded()
            .pins
            .get(name)
            .is_none_or(|pin| pins::sha256(&pins::descriptor(tool)) == pin.sha256)
    }

    /// Every tool the upstream (its era settled) lists, page after page, as it lists
    /// them (each with a `name`), within `timeout` for the whole listing.
    pub(crate) fn list_all_tools(
        &self,
        shown: &str,
        timeout: Duration,
    ) -> Result<Vec<Value>, UsageError> {
        let deadline = Instant::now() + timeout;
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut listed_bytes = 0usize;
        for _ in 0..MOST_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let result = match self.request("tools/list", &params, left) {
                Some(Ok(result)) => result,
                Some(Err(error)) => {
                    return Err(UsageError::new(format!(
                        "the MCP server `{shown}` refused tools/list: {error}"
                    )));
                }
                None => {
                    return Err(UsageError::new(format!(
                        "the MCP server `{shown}` did not answer within {}s",
                        timeout.as_secs()
                    )));
                }
            };
            for tool in result
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if tool.get("name").and_then(Value::as_str).is_none() {
                    continue;
                }
                listed_bytes += tool.to_string().len();
                if listed_bytes > LISTING_TOTAL_CAP || tools.len() >= MOST_TOOLS {
                    return Err(UsageError::new(format!(
                        "the MCP server `{shown}` lists more than {MOST_TOOLS} tools or {} MiB of them; toolgate stops there rather than hold them all",
                        LISTING_TOTAL_CAP >> 20
                    )));
                }
                tools.push(tool.clone());
            }
            cursor = result
                .get("nextCursor")
                .filter(|cursor| !cursor.is_null())
                .cloned();
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(UsageError::new(format!(
            "the MCP server `{shown}` kept paging past {MOST_PAGES} pages of tools"
        )))
    }
}
