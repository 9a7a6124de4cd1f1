//! `toolgate diff TOOL --upstream -- SERVER`: a real MCP server, built with the official Rust
//! SDK (rmcp) and run from this very test binary, checked against the weather contract its
//! consumers keep. The test edits what the server declares (its `outputSchema`) and what it
//! answers, and the check must say each time whether this release would be refused.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::retention::repository;

/// Set to a tool name (or several, comma-separated), this binary is an rmcp server offering
/// those tools, each declared and answered alike.
pub(crate) const SDK_SERVER_VARIABLE: &str = "TOOLGATE_SDK_SERVER_TOOL";
/// The server's declared `outputSchema` (JSON); none declared when unset.
const OUTPUT_SCHEMA_VARIABLE: &str = "TOOLGATE_SDK_SERVER_OUTPUT_SCHEMA";
/// What every call answers, as `structuredContent` (JSON).
const RESULT_VARIABLE: &str = "TOOLGATE_SDK_SERVER_RESULT";

/// Its tools, each declared and answered as the environment says.
struct SdkServer {
    tools: Vec<String>,
    output_schema: Option<rmcp::model::JsonObject>,
    result: Value,
}

impl rmcp::ServerHandler for SdkServer {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let input = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        let Value::Object(input) = input else {
            unreachable!()
        };
        let tools = self
            .tools
            .iter()
            .map(|name| {
                let tool =
                    rmcp::model::Tool::new(name.clone(), "The weather in a city.", input.clone());
                match &self.output_schema {
                    Some(schema) => tool.with_raw_output_schema(Arc::new(schema.clone())),
                    None => tool,
                }
            })
            .collect();
        Ok(rmcp::model::ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        _: rmcp::model::CallToolRequestParams,
        _: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        Ok(rmcp::model::CallToolResult::structured(self.result.clone()).into())
    }
}

/// Serves `tools` (comma-separated) over stdio until the client closes it.
pub(crate) fn sdk_server(tools: &str) {
    use rmcp::ServiceExt;
    let read = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|text| serde_json::from_str::<Value>(&text).expect("JSON in the environment"))
    };
    let server = SdkServer {
        tools: tools.split(',').map(str::to_owned).collect(),
        output_schema: read(OUTPUT_SCHEMA_VARIABLE).map(|schema| match schema {
            Value::Object(schema) => schema,
            _ => panic!("an outputSchema is an object"),
        }),
        result: read(RESULT_VARIABLE).unwrap_or(Value::Null),
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .expect("the SDK server starts");
            let _ = running.waiting().await;
        });
}

/// What one check printed (its JSON report) and its exit code.
struct Checked {
    code: i32,
    report: Value,
    stderr: String,
}

/// `toolgate diff weather --upstream --format json EXTRA… -- <the SDK server>`, the server
/// listing `tool`, declaring `output_schema` and answering `result`.
fn check(
    root: &Path,
    tool: &str,
    output_schema: Option<&Value>,
    result: &Value,
    extra: &[&str],
) -> Checked {
    let extra: Vec<&str> = ["--format", "json"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    check_as(
        &["diff", "weather"],
        root,
        tool,
        output_schema,
        result,
        &extra,
    )
}

/// As [`check`], `toolgate` run with `verb` (`diff` and the tool, or `diff` alone for every
/// tool) and the server listing every tool of `tools` (comma-separated).
fn check_as(
    verb: &[&str],
    root: &Path,
    tools: &str,
    output_schema: Option<&Value>,
    result: &Value,
    extra: &[&str],
) -> Checked {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(verb)
        .args(["--upstream", "--root"])
        .arg(root)
        .args(extra)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(SDK_SERVER_VARIABLE, tools)
        .env(RESULT_VARIABLE, result.to_string())
        .env_remove(OUTPUT_SCHEMA_VARIABLE);
    if let Some(schema) = output_schema {
        command.env(OUTPUT_SCHEMA_VARIABLE, schema.to_string());
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    Checked {
        code: output.status.code().unwrap_or(-1),
        report: serde_json::from_str(&stdout).unwrap_or(Value::String(stdout)),
        stderr,
    }
}

fn ensure(condition: bool, what: impl Into<String>) -> Result<(), Failed> {
    if condition {
        Ok(())
    } else {
        Err(what.into().into())
    }
}

pub(crate) fn a_server_is_checked_against_its_consumers_contract() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let root = repository(dir.path());
    fs::create_dir_all(root.join("fixtures/weather"))?;
    fs::write(
        root.join("fixtures/weather/request.json"),
        json!({"request_id": "req-1", "context": {"city": "Lisbon"}}).to_string(),
    )?;
    let contract: Value = serde_json::from_str(&fs::read_to_string(
        root.join("contracts/weather/v1/weather.schema.json"),
    )?)?;
    let lisbon = json!({"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"});
    let call = ["--call", "--arguments", r#"{"city": "Lisbon"}"#];

    // The server declares exactly what the contract admits, and answers within it: ships.
    let same = check(&root, "weather", Some(&contract), &lisbon, &call);
    ensure(
        same.code == 0,
        format!("{}\n{:#}", same.stderr, same.report),
    )?;
    ensure(
        same.report["summary"]["upstream_loosened"] == false,
        format!("{:#}", same.report),
    )?;
    ensure(
        same.report["to"] == "server" && same.report["from"] == "v1",
        format!("{:#}", same.report),
    )?;
    let server = &same.report["server"];
    ensure(
        server["listed"] == true && server["declares_output_schema"] == true,
        format!("{server:#}"),
    )?;
    ensure(
        server["calls"][0]["decided"]["outcome"] == "admitted"
            && server["calls"][0]["arguments_from"] == "--arguments #1",
        format!("{server:#}"),
    )?;

    // The same declaration in draft-07, as many SDKs write it, is read keyword for keyword.
    let mut draft_07 = contract.clone();
    draft_07["$schema"] = json!("http://json-schema.org/draft-07/schema#");
    let older = check(&root, "weather", Some(&draft_07), &lisbon, &[]);
    ensure(
        older.code == 0 && older.report["summary"]["upstream_loosened"] == false,
        format!("{}\n{:#}", older.stderr, older.report),
    )?;

    // The release adds a condition the contract does not know: refused, with a response that
    // shows it, decided both ways by the gate.
    let mut hail = contract.clone();
    hail["properties"]["conditions"]["enum"]
        .as_array_mut()
        .unwrap()
        .push(json!("hail"));
    let loosened = check(&root, "weather", Some(&hail), &lisbon, &[]);
    ensure(
        loosened.code == 1,
        format!("{}\n{:#}", loosened.stderr, loosened.report),
    )?;
    ensure(
        loosened.report["summary"]["upstream_loosened"] == true,
        format!("{:#}", loosened.report),
    )?;
    let witness = loosened.report["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|witness| witness["verdict"] == "upstream_loosened")
        .ok_or("no witness for upstream_loosened")?;
    ensure(
        witness["response"].as_str().unwrap().contains("hail")
            && witness["from"]["outcome"] == "rejected"
            && witness["to"]["outcome"] == "admitted",
        format!("{witness:#}"),
    )?;
    let change = &loosened.report["changes"][witness["change"].as_u64().unwrap() as usize];
    ensure(
        change["kind"] == "enum_widened" && change["file"] == "server.output.schema.json",
        format!("{change:#}"),
    )?;
    // Told only to fail on breaking, the same release passes: what fails is the team's choice.
    let told = check(
        &root,
        "weather",
        Some(&hail),
        &lisbon,
        &["--fail-on", "breaking", "--no-search"],
    );
    ensure(
        told.code == 0,
        format!("{}\n{:#}", told.stderr, told.report),
    )?;

    // Declared within the contract, but a live answer is not: the call is refused.
    let hot = json!({"city": "Lisbon", "temperature_c": 75, "conditions": "clear"});
    let refused = check(&root, "weather", Some(&contract), &hot, &call);
    ensure(
        refused.code == 1 && refused.report["summary"]["upstream_loosened"] == false,
        format!("{}\n{:#}", refused.stderr, refused.report),
    )?;
    let decided = &refused.report["server"]["calls"][0]["decided"];
    ensure(
        decided["outcome"] == "rejected" && decided["layer"] == "schema",
        format!("{decided:#}"),
    )?;

    // No outputSchema: nothing can be proven, so it is not safe.
    let undeclared = check(&root, "weather", None, &lisbon, &[]);
    ensure(
        undeclared.code == 1
            && undeclared.report["summary"]["upstream_loosened"].is_null()
            && undeclared.report["server"]["declares_output_schema"] == false,
        format!("{}\n{:#}", undeclared.stderr, undeclared.report),
    )?;

    // The release renames the tool: its consumers' calls would fail.
    let renamed = check(&root, "forecast", Some(&contract), &lisbon, &[]);
    ensure(
        renamed.code == 1 && renamed.report["server"]["listed"] == false,
        format!("{}\n{:#}", renamed.stderr, renamed.report),
    )?;

    // Usage: --call with nothing to call with, and arguments that are not an object.
    let nothing = check(&root, "weather", Some(&contract), &lisbon, &["--call"]);
    ensure(
        nothing.code == 2
            && nothing
                .stderr
                .contains("fixtures/weather.arguments/accepted"),
        nothing.stderr.clone(),
    )?;
    let array = check(
        &root,
        "weather",
        Some(&contract),
        &lisbon,
        &["--call", "--arguments", "[1]"],
    );
    ensure(
        array.code == 2
            && array
                .stderr
                .contains("--arguments #1: a tool's arguments are a JSON object"),
        array.stderr.clone(),
    )?;
    Ok(())
}

/// `toolgate diff --upstream -- SERVER` without a tool: every tool with a result contract is
/// checked against one listing, one report each, and the run fails when any would.
pub(crate) fn every_tool_of_a_server_is_checked_against_one_listing() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let root = repository(dir.path());
    // Two tools the server offers: weather, and forecast (the same contract under its name).
    fs::remove_dir_all(root.join("contracts/get-structured-content"))?;
    fs::remove_dir_all(root.join("contracts/service_state"))?;
    super::retention::copy_tree(
        &root.join("contracts/weather/v1"),
        &root.join("contracts/forecast/v1"),
    );
    let contract_file = root.join("contracts/forecast/v1/contract.yaml");
    let text = fs::read_to_string(&contract_file)?;
    fs::write(
        &contract_file,
        text.replace("tool: weather", "tool: forecast"),
    )?;
    let contract: Value = serde_json::from_str(&fs::read_to_string(
        root.join("contracts/weather/v1/weather.schema.json"),
    )?)?;
    let lisbon = json!({"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"});
    let every = |tools: &str, format: &str| {
        check_as(
            &["diff"],
            &root,
            tools,
            Some(&contract),
            &lisbon,
            &["--format", format],
        )
    };

    // Both listed, both declared as their contracts admit: one report each, and it ships.
    let both = every("weather,forecast", "json");
    let reports = both.report.as_array().cloned().unwrap_or_default();
    ensure(
        both.code == 0 && reports.len() == 2,
        format!("{}\n{:#}", both.stderr, both.report),
    )?;
    let tools: Vec<&str> = reports
        .iter()
        .filter_map(|report| report["tool"].as_str())
        .collect();
    ensure(tools == ["forecast", "weather"], format!("{tools:?}"))?;
    ensure(
        reports.iter().all(|report| {
            report["server"]["listed"] == true && report["summary"]["upstream_loosened"] == false
        }),
        format!("{:#}", both.report),
    )?;

    // The release drops forecast: its consumers' calls would fail, and the run names it.
    let dropped = every("weather", "human");
    let text = dropped.report.as_str().unwrap_or_default();
    ensure(
        dropped.code == 1
            && text.contains("2 tools checked against")
            && text.contains("1 would refuse this release (forecast)"),
        format!("{}\n{text}", dropped.stderr),
    )?;

    // SARIF: one run per tool, each named by its tool.
    let sarif = every("weather", "sarif");
    let runs = sarif.report["runs"].as_array().cloned().unwrap_or_default();
    let ids: Vec<&str> = runs
        .iter()
        .filter_map(|run| run["automationDetails"]["id"].as_str())
        .collect();
    ensure(
        sarif.code == 1 && ids == ["toolgate/diff/forecast/", "toolgate/diff/weather/"],
        format!("{}\n{:#}", sarif.stderr, sarif.report),
    )?;

    // --arguments names one tool's call: without a tool it is a usage error.
    let ambiguous = check_as(
        &["diff"],
        &root,
        "weather,forecast",
        Some(&contract),
        &lisbon,
        &["--call", "--arguments", r#"{"city": "Lisbon"}"#],
    );
    ensure(
        ambiguous.code == 2 && ambiguous.stderr.contains("name the tool"),
        ambiguous.stderr.clone(),
    )?;
    Ok(())
}
