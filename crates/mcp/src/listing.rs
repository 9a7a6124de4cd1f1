//! Asking an MCP server (stdio) which tools it offers, for `toolgate new --from-mcp`: start it,
//! settle its era as the proxy does (a `server/discover` probe, the handshake for a legacy
//! server), page through `tools/list`, stop it. The proxy's own core does the talking, so every
//! line is read capped and parsed strictly, and a server that does not answer in time is
//! stopped, never waited on.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_repo::UsageError;

use crate::proxy::{Proxy, Settled, Setup};
use crate::tools::Registry;
use crate::upstream;

/// The longest line read from the server while listing (a large catalogue of tools).
pub(crate) const LISTING_LINE_CAP: usize = 8 << 20;
/// The most pages of tools followed.
const MOST_PAGES: usize = 100;
/// The most a whole listing may hold, every page together (as JSON): a server that lists more
/// is refused rather than held in memory. A large real catalogue is a few hundred kilobytes.
const LISTING_TOTAL_CAP: usize = 16 << 20;
/// The most tools a listing may hold.
const MOST_TOOLS: usize = 2000;

/// One tool as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// Its name, as MCP names it.
    pub name: String,
    /// Its description, if it gives one.
    pub description: Option<String>,
    /// Its `outputSchema`, if it declares one.
    pub output_schema: Option<Value>,
}

/// The tools the server started by `command` offers, within `timeout` for the whole listing.
pub fn list_tools(command: &[OsString], timeout: Duration) -> Result<Vec<ListedTool>, UsageError> {
    let shown = command
        .first()
        .map(|program| program.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (link, source) = upstream::Stdio::spawn(command, LISTING_LINE_CAP, "toolgate new")?;
    let listed = list_over(Box::new(link), source, &shown, timeout)?;
    Ok(listed
        .iter()
        .filter_map(|tool| {
            Some(ListedTool {
                name: tool.get("name")?.as_str()?.to_owned(),
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                output_schema: tool.get("outputSchema").cloned(),
            })
        })
        .collect())
}

/// Every tool the server at the end of `link` lists: its era settled as the proxy settles it,
/// then listed, then stopped.
pub(crate) fn list_over(
    link: Box<dyn upstream::Link>,
    source: upstream::Source,
    shown: &str,
    timeout: Duration,
) -> Result<Vec<Value>, UsageError> {
    let proxy = Proxy::new(Setup::closed(Registry::default(), timeout)?, link);
    std::thread::scope(|scope| {
        scope.spawn(|| proxy.pump(source));
        let listed = match proxy.settle() {
            Settled::Unusable(reason) => Err(UsageError::new(format!(
                "the MCP server `{shown}` cannot be listed: {reason}"
            ))),
            _ => list_through(&proxy, shown, timeout),
        };
        proxy.shut_down("the listing is done");
        listed
    })
}

/// Every tool the upstream behind `proxy` (its era settled) lists, page after page, as it lists
/// them (each with a `name`), within `timeout` for the whole listing.
pub(crate) fn list_through(
    proxy: &Proxy,
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
        let result = match proxy.request("tools/list", &params, left) {
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
