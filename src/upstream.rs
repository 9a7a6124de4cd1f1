//! `toolgate diff TOOL --upstream -- SERVER`: the one verb that needs both the differ and an MCP
//! client, so the binary joins them: the differ reads the contract and the calls to make
//! ([`toolgate_diff::upstream_plan`]), the MCP crate asks the server and decides each live
//! result as the proxy would, and the differ compares and reports.

use std::io::Write;
use std::time::SystemTime;

use serde_json::Value;
use toolgate_repo::{Status, UsageError};

use crate::args::UpstreamCheck;

/// Runs a server check and writes its report: of TOOL, or without one, of every tool with a
/// result contract, against one listing of the server (one session, every call in it).
pub(crate) fn run(check: UpstreamCheck, out: &mut impl Write) -> Result<Status, UsageError> {
    let UpstreamCheck {
        config,
        call,
        arguments,
        mut ask,
    } = check;
    let every_tool = config.tool.is_empty();
    let plans = if every_tool {
        if !arguments.is_empty() {
            return Err(UsageError::new(
                "--arguments gives one tool's call: name the tool (toolgate diff TOOL --upstream --call --arguments JSON -- SERVER)",
            ));
        }
        toolgate_diff::upstream_plans(&config.root, call)?
    } else {
        vec![toolgate_diff::upstream_plan(
            &config.root,
            &config.tool,
            config.from.as_deref(),
            call,
            &arguments,
        )?]
    };
    ask.calls = plans
        .iter()
        .flat_map(|plan| {
            plan.call_arguments()
                .map(|arguments| (plan.tool().to_owned(), arguments.clone()))
        })
        .collect();
    let answers = toolgate_mcp::ask_server(&ask)?;
    let now = SystemTime::now();
    let mut results = answers.calls.iter();
    let mut id = 0;
    let reports: Vec<toolgate_diff::Report> = plans
        .iter()
        .map(|plan| {
            let listed = answers.tools.iter().find(|tool| tool.name == plan.tool());
            let decided = plan
                .call_arguments()
                .zip(results.by_ref())
                .map(|(arguments, result)| {
                    id += 1;
                    result.as_ref().map_err(Clone::clone).map(|result| {
                        toolgate_mcp::decide_call_result(
                            plan.contract(),
                            &Value::from(id),
                            arguments,
                            plan.context().clone(),
                            result,
                            now,
                        )
                    })
                })
                .collect();
            plan.check(
                &answers.shown,
                listed.map(|tool| tool.output_schema.as_ref()),
                decided,
                config.search,
            )
        })
        .collect();
    match reports.as_slice() {
        [report] if !every_tool => toolgate_diff::emit(report, &config, out),
        _ => toolgate_diff::emit_all(&reports, &config, out),
    }
}
