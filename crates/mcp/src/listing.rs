//! Asking an MCP server (stdio) which tools it offers, for `toolgate new --from-mcp`: start it,
//! settle its era as the proxy does (a `server/discover` probe, the handshake for a legacy
//! server), page through `tools/list`, stop it. The proxy's own core does the talking, so every
//! line is read capped and parsed strictly, and a server that does not answer in time is
//! stopped, never waited on.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::Value;
use toolgate_repo::UsageError;

use crate::proxy::{Proxy, Settled, Setup};
use crate::tools::Registry;
use crate::upstream;

/// The longest line read from the server while listing (a large catalogue of tools).
pub(crate) const LISTING_LINE_CAP: usize = 8 << 20;

/// One tool as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// Its name, as MCP names it.
    pub name: String,
    /// Its description, if it gives one.
    pub description: Option<String>,
    /// Its `outputSchema`, if it declares one.
    pub output_schema: Option<Value>,
    /// The tool as the server listed it, whole: what `toolgate new` pins beside its contract.
    pub listing: Value,
}

/// The tools the server started by `command` offers, within `timeout` for the whole listing.
pub fn list_tools(command: &[OsString], timeout: Duration) -> Result<Vec<ListedTool>, UsageError> {
    let shown = shown(command);
    let (link, source) = upstream::Stdio::spawn(command, LISTING_LINE_CAP, "toolgate new")?;
    let listed = session_over(Box::new(link), source, &shown, timeout, |proxy| {
        proxy.list_all_tools(&shown, timeout)
    })?;
    Ok(listed_tools(&listed))
}

/// The program of a server command (or its URL), as messages name it.
pub(crate) fn shown(command: &[OsString]) -> String {
    command
        .first()
        .map(|program| program.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Each tool of a `tools/list` answer that has a name, read.
pub(crate) fn listed_tools(listed: &[Value]) -> Vec<ListedTool> {
    listed
        .iter()
        .filter_map(|tool| {
            Some(ListedTool {
                name: tool.get("name")?.as_str()?.to_owned(),
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                output_schema: tool.get("outputSchema").cloned(),
                listing: tool.clone(),
            })
        })
        .collect()
}

/// `work` done with the server at the end of `link`, its era settled as the proxy settles it;
/// the server is stopped afterwards, whatever `work` returned.
pub(crate) fn session_over<T>(
    link: Box<dyn upstream::Link>,
    source: upstream::Source,
    shown: &str,
    timeout: Duration,
    work: impl FnOnce(&Proxy) -> Result<T, UsageError>,
) -> Result<T, UsageError> {
    let proxy = Proxy::new(Setup::closed(Registry::default(), timeout)?, link);
    std::thread::scope(|scope| {
        scope.spawn(|| proxy.pump(source));
        let done = match proxy.settle() {
            Settled::Unusable(reason) => Err(UsageError::new(format!(
                "the MCP server `{shown}` cannot be used: {reason}"
            ))),
            _ => work(&proxy),
        };
        proxy.shut_down("the session is done");
        done
    })
}
