//! `toolgate diff TOOL --upstream -- SERVER`: the one verb that needs both the differ and an MCP
//! client, so the binary joins them: the differ reads the contract and the calls to make
//! ([`toolgate_diff::upstream_plan`]), the MCP crate asks the server and decides each live
//! result as the proxy would, and the differ compares and reports.

use std::io::Write;
use std::time::SystemTime;

use serde_json::Value;
use toolgate_repo::{Status, UsageError};

use crate::args::UpstreamCheck;

/// Runs a server check and writes its report.
pub(crate) fn run(check: UpstreamCheck, out: &mut impl Write) -> Result<Status, UsageError> {
    let UpstreamCheck {
        config,
        call,
        arguments,
        mut ask,
    } = check;
    let plan = toolgate_diff::upstream_plan(
        &config.root,
        &config.tool,
        config.from.as_deref(),
        call,
        &arguments,
    )?;
    ask.calls = plan
        .call_arguments()
        .map(|arguments| (plan.tool().to_owned(), arguments.clone()))
        .collect();
    let answers = toolgate_mcp::ask_server(&ask)?;
    let listed = answers.tools.iter().find(|tool| tool.name == plan.tool());
    let now = SystemTime::now();
    let decided = answers
        .calls
        .iter()
        .zip(plan.call_arguments())
        .enumerate()
        .map(|(index, (result, arguments))| {
            result.as_ref().map_err(Clone::clone).map(|result| {
                toolgate_mcp::decide_call_result(
                    plan.contract(),
                    &Value::from(index + 1),
                    arguments,
                    plan.context().clone(),
                    result,
                    now,
                )
            })
        })
        .collect();
    let report = plan.check(
        &answers.shown,
        listed.map(|tool| tool.output_schema.as_ref()),
        decided,
        config.search,
    );
    toolgate_diff::emit(&report, &config, out)
}
