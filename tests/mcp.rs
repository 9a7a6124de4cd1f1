//! `toolgate mcp-proxy` end to end, through the real binary.
//!
//! This test binary is also the fake MCP server: started with `TOOLGATE_FAKE_MCP_SCENARIO`, it
//! replays a scenario file from `tests/mcp/scenarios/` (what it lists, how it answers each call:
//! results, duplicate keys, oversized and split lines, `isError` text, progress, a sampling
//! request, late ids, a crash, a stall). Each scenario's scripted host talks to the proxy in front
//! of it; the transcript (every line the host sent and received, then every line the server
//! received) is a snapshot, and no line the host received may hold a byte the gate did not build
//! (every word the fake server writes on its own carries `CANARY`). A real SDK client (rmcp)
//! connects through the proxy too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{Value, json};

#[path = "mcp/audit.rs"]
mod audit;
#[path = "mcp/auth.rs"]
mod auth;
#[path = "common/mod.rs"]
mod common;
#[path = "mcp/doors.rs"]
mod doors;
#[path = "mcp/hooks.rs"]
mod hooks;
#[path = "mcp/http.rs"]
mod http;
#[path = "mcp/lifecycle.rs"]
mod lifecycle;
#[path = "mcp/listener.rs"]
mod listener;
#[path = "mcp/rate.rs"]
mod rate;
#[path = "mcp/reload.rs"]
mod reload;
#[path = "mcp/retention.rs"]
mod retention;
#[path = "mcp/scaffold.rs"]
mod scaffold;
#[path = "mcp/surface.rs"]
mod surface;
#[path = "mcp/tasks.rs"]
mod tasks;
#[path = "mcp/telemetry.rs"]
mod telemetry;
#[path = "mcp/upstream.rs"]
mod upstream;

const SCENARIO_VARIABLE: &str = "TOOLGATE_FAKE_MCP_SCENARIO";
const LOG_VARIABLE: &str = "TOOLGATE_FAKE_MCP_LOG";

fn main() -> ExitCode {
    if let Some(tool) = std::env::var_os(upstream::SDK_SERVER_VARIABLE) {
        upstream::sdk_server(&tool.to_string_lossy());
        return ExitCode::SUCCESS;
    }
    if let Some(scenario) = std::env::var_os(SCENARIO_VARIABLE) {
        fake_server(
            Path::new(&scenario),
            std::env::var_os(LOG_VARIABLE).map(PathBuf::from),
        );
        return ExitCode::SUCCESS;
    }
    let arguments = Arguments::from_args();
    let mut trials: Vec<Trial> = scenarios()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("sdk"))
        .map(|(name, path)| {
            Trial::test(format!("mcp::scenario::{name}"), move || {
                scripted(&name, &path)
            })
        })
        .collect();
    // A real SDK client, in each of its lifecycle modes, in front of a server of each era.
    for (mode, lifecycle) in [
        ("handshake", Lifecycle::Initialize),
        ("pinned_2026_07_28", Lifecycle::Discover),
        ("auto", Lifecycle::Auto),
    ] {
        for (era, scenario) in [("legacy", "sdk.json"), ("modern", "sdk_modern.json")] {
            trials.push(Trial::test(
                format!("mcp::rmcp_client::{mode}::{era}_server"),
                move || rmcp_client(lifecycle, scenario),
            ));
        }
    }
    // A real SDK host of the handshake era, in front of a modern server that asks for input and
    // reports its own errors.
    trials.push(Trial::test(
        "mcp::rmcp_client::handshake::input_required_and_tool_errors",
        rmcp_host_answers_input_and_hears_mapped_errors,
    ));
    // One trial each: the HTTP transport, the proxy's stops, `toolgate new --from-mcp`.
    let single: [(&str, Test); 63] = [
        (
            "mcp::doors::ext_proc_decides_every_answer_as_the_proxy",
            doors::ext_proc_decides_every_answer_as_the_proxy,
        ),
        (
            "mcp::doors::ext_mcp_decides_as_ext_proc",
            doors::ext_mcp_decides_as_ext_proc,
        ),
        (
            "mcp::doors::sigterm_cuts_a_stream_held_open_at_the_drain_timeout",
            doors::sigterm_cuts_a_stream_held_open_at_the_drain_timeout,
        ),
        (
            "mcp::hooks::a_hook_replaces_every_result_with_the_gates",
            hooks::a_hook_replaces_every_result_with_the_gates,
        ),
        (
            "mcp::hooks::a_hook_decides_arguments_before_the_tool_runs",
            hooks::a_hook_decides_arguments_before_the_tool_runs,
        ),
        (
            "mcp::hooks::a_hook_fails_closed_on_every_path",
            hooks::a_hook_fails_closed_on_every_path,
        ),
        (
            "mcp::hooks::a_hook_compiles_only_the_tool_it_decides",
            hooks::a_hook_compiles_only_the_tool_it_decides,
        ),
        (
            "mcp::surface::a_withheld_tool_shows_in_the_gauge_before_its_next_call",
            surface::a_withheld_tool_shows_in_the_gauge_before_its_next_call,
        ),
        (
            "mcp::rate::three_replicas_hold_a_caller_to_one_shared_rate",
            rate::three_replicas_hold_a_caller_to_one_shared_rate,
        ),
        (
            "mcp::reload::a_changed_bundle_is_swapped_in_between_calls_and_a_broken_one_kept_out",
            reload::a_changed_bundle_is_swapped_in_between_calls_and_a_broken_one_kept_out,
        ),
        (
            "mcp::lifecycle::two_upstreams_with_one_tool_name_get_a_root_each",
            lifecycle::two_upstreams_with_one_tool_name_get_a_root_each,
        ),
        (
            "mcp::retention::a_replay_of_a_sampled_shadow_store_estimates_the_true_share",
            retention::a_replay_of_a_sampled_shadow_store_estimates_the_true_share,
        ),
        (
            "mcp::lifecycle::enforce_rolls_a_tool_back_to_an_older_version",
            lifecycle::enforce_rolls_a_tool_back_to_an_older_version,
        ),
        (
            "mcp::lifecycle::the_proxy_serves_a_bundle_as_it_serves_its_folder",
            lifecycle::the_proxy_serves_a_bundle_as_it_serves_its_folder,
        ),
        (
            "mcp::lifecycle::a_retention_burst_to_a_slow_store_is_kept_or_counted",
            lifecycle::a_retention_burst_to_a_slow_store_is_kept_or_counted,
        ),
        (
            "mcp::lifecycle::observe_mode_serves_the_upstreams_own_tools",
            lifecycle::observe_mode_serves_the_upstreams_own_tools,
        ),
        (
            "mcp::lifecycle::a_restarted_stateful_http_upstream_is_initialized_again",
            lifecycle::a_restarted_stateful_http_upstream_is_initialized_again,
        ),
        (
            "mcp::lifecycle::a_stdio_upstream_that_exits_is_logged_and_started_again",
            lifecycle::a_stdio_upstream_that_exits_is_logged_and_started_again,
        ),
        (
            "mcp::lifecycle::an_upstream_gone_for_good_fails_healthz_or_ends_the_proxy",
            lifecycle::an_upstream_gone_for_good_fails_healthz_or_ends_the_proxy,
        ),
        (
            "mcp::lifecycle::sigterm_answers_the_call_in_flight_and_readyz_goes_503_first",
            lifecycle::sigterm_answers_the_call_in_flight_and_readyz_goes_503_first,
        ),
        (
            "mcp::lifecycle::a_call_cut_by_the_drain_deadline_is_not_retryable",
            lifecycle::a_call_cut_by_the_drain_deadline_is_not_retryable,
        ),
        (
            "mcp::lifecycle::sighup_never_stops_the_proxy",
            lifecycle::sighup_never_stops_the_proxy,
        ),
        (
            "mcp::upstream::a_server_is_checked_against_its_consumers_contract",
            upstream::a_server_is_checked_against_its_consumers_contract,
        ),
        (
            "mcp::upstream::every_tool_of_a_server_is_checked_against_one_listing",
            upstream::every_tool_of_a_server_is_checked_against_one_listing,
        ),
        (
            "mcp::http::listener_and_http_upstream",
            http::listener_and_http_upstream,
        ),
        (
            "mcp::http::legacy_http_upstream_with_a_session",
            http::legacy_http_upstream,
        ),
        (
            "mcp::http::two_instances_behind_a_round_robin",
            http::two_instances_behind_a_round_robin,
        ),
        (
            "mcp::an_upstream_that_stops_reading_cannot_wedge_the_proxy",
            upstream_stops_reading,
        ),
        (
            "mcp::retention::the_stdio_proxy_keeps_what_reproduce_decides_again",
            retention::the_stdio_proxy_keeps_what_reproduce_decides_again,
        ),
        (
            "mcp::retention::a_kept_tool_error_is_reproduced_as_one",
            retention::a_kept_tool_error_is_reproduced_as_one,
        ),
        (
            "mcp::retention::the_http_proxy_keeps_refusals_and_shadow_disagreements",
            retention::the_http_proxy_keeps_refusals_and_shadow_disagreements,
        ),
        (
            "mcp::retention::serve_keeps_no_value_a_contract_redacts",
            retention::serve_keeps_no_value_a_contract_redacts,
        ),
        (
            "mcp::retention::serve_keeps_what_reproduce_decides_again",
            retention::serve_keeps_what_reproduce_decides_again,
        ),
        (
            "mcp::retention::observe_mode_forwards_unchanged_and_says_so",
            retention::observe_mode_forwards_unchanged_and_says_so,
        ),
        (
            "mcp::retention::a_failing_store_never_costs_a_decision",
            retention::a_failing_store_never_costs_a_decision,
        ),
        (
            "mcp::new_from_mcp_scaffolds_a_contract_per_tool",
            scaffold::new_from_mcp,
        ),
        (
            "mcp::new_from_a_hostile_server_writes_nothing_it_did_not_mean",
            scaffold::new_from_a_hostile_server,
        ),
        (
            "mcp::new_from_mcp_refuses_what_no_schema_describes_and_infers_from_a_call",
            scaffold::new_refuses_what_no_schema_describes,
        ),
        (
            "mcp::new_from_mcp_stops_at_a_listing_too_large_to_hold",
            scaffold::new_stops_at_a_listing_too_large_to_hold,
        ),
        (
            "mcp::new_from_mcp_next_version_carries_the_authors_edits",
            scaffold::next_version_from_a_server,
        ),
        (
            "mcp::auth::bad_tokens_are_refused_and_the_right_one_served",
            auth::bad_tokens_are_refused_and_the_right_one_served,
        ),
        (
            "mcp::auth::keys_from_a_url_rotate",
            auth::keys_from_a_url_rotate,
        ),
        (
            "mcp::auth::the_upstream_never_sees_the_callers_token",
            auth::the_upstream_never_sees_the_callers_token,
        ),
        (
            "mcp::auth::a_session_cancels_only_its_own_callers_calls",
            auth::a_session_cancels_only_its_own_callers_calls,
        ),
        (
            "mcp::auth::a_refusal_tells_a_caller_nothing_it_cannot_see",
            auth::a_refusal_tells_a_caller_nothing_it_cannot_see,
        ),
        (
            "mcp::auth::bad_auth_files_are_configuration_errors",
            auth::bad_auth_files_are_configuration_errors,
        ),
        (
            "mcp::audit::tampering_with_the_audit_log_is_found",
            audit::tampering_with_the_audit_log_is_found,
        ),
        (
            "mcp::surface::a_tool_changed_under_a_running_proxy_is_withheld",
            surface::a_tool_changed_under_a_running_proxy_is_withheld,
        ),
        (
            "mcp::surface::a_modern_subscription_hears_of_a_checked_tool_change",
            surface::a_modern_subscription_hears_of_a_checked_tool_change,
        ),
        (
            "mcp::surface::an_sdk_subscription_hears_of_a_checked_tool_change",
            surface::an_sdk_subscription_hears_of_a_checked_tool_change,
        ),
        (
            "mcp::surface::a_page_a_host_asks_for_withholds_no_tool",
            surface::a_page_a_host_asks_for_withholds_no_tool,
        ),
        (
            "mcp::surface::a_rug_pulled_tool_is_withheld",
            surface::a_rug_pulled_tool_is_withheld,
        ),
        (
            "mcp::surface::a_refused_argument_makes_no_upstream_call",
            surface::a_refused_argument_makes_no_upstream_call,
        ),
        (
            "mcp::telemetry::listener_metrics_and_trace_context",
            telemetry::listener_metrics_and_trace_context,
        ),
        (
            "mcp::retention::a_sealed_store_logs_refusals_redacted",
            retention::a_sealed_store_logs_refusals_redacted,
        ),
        (
            "mcp::tasks::a_task_result_is_decided_by_its_tools_contract",
            tasks::a_task_result_is_decided_by_its_tools_contract,
        ),
        (
            "mcp::tasks::a_task_is_known_only_where_it_was_created",
            tasks::a_task_is_known_only_where_it_was_created,
        ),
        (
            "mcp::tasks::an_extension_task_is_gated_as_a_direct_call",
            tasks::an_extension_task_is_gated_as_a_direct_call,
        ),
        (
            "mcp::telemetry::stdio_traces_follow_the_host",
            telemetry::stdio_traces_follow_the_host,
        ),
        (
            "mcp::telemetry::stdio_protobuf_and_a_timeout",
            telemetry::stdio_protobuf_and_a_timeout,
        ),
        (
            "mcp::telemetry::a_hanging_collector_and_huge_ids_leave_memory_bounded",
            telemetry::a_hanging_collector_and_huge_ids_leave_memory_bounded,
        ),
        (
            "mcp::many_calls_in_one_write_are_each_answered_once",
            pipelined_calls,
        ),
        (
            "mcp::trusted_context_only_the_operator_may_supply_never_comes_from_the_model",
            operator_context,
        ),
    ];
    for (name, test) in single {
        trials.push(Trial::test(name, test));
    }
    for (name, test) in [
        (
            "idle_and_slow_heads_are_closed",
            listener::idle_and_slow_heads_are_closed as Test,
        ),
        (
            "past_the_connection_cap_a_connection_gets_503",
            listener::past_the_connection_cap_a_connection_gets_503,
        ),
        (
            "at_the_descriptor_limit_accepting_backs_off",
            listener::at_the_descriptor_limit_accepting_backs_off,
        ),
        (
            "stalled_bodies_time_out_and_requests_in_flight_are_capped",
            listener::stalled_bodies_time_out_and_requests_in_flight_are_capped,
        ),
        (
            "memory_stays_bounded_under_slow_bodies",
            listener::memory_stays_bounded_under_slow_bodies,
        ),
        (
            "an_upstream_that_stops_reading_never_freezes_the_listener",
            listener::an_upstream_that_stops_reading_never_freezes_the_listener,
        ),
        (
            "a_public_listener_needs_insecure_no_auth",
            listener::a_public_listener_needs_insecure_no_auth,
        ),
        (
            "a_modern_host_closing_its_stream_cancels_upstream",
            listener::a_modern_host_closing_its_stream_cancels_upstream,
        ),
        (
            "a_handshake_era_host_cancels_through_its_session",
            listener::a_handshake_era_host_cancels_through_its_session,
        ),
        (
            "a_stateful_upstream_settles_at_once_and_gets_a_new_session",
            listener::a_stateful_upstream_settles_at_once_and_gets_a_new_session,
        ),
        (
            "readyz_follows_an_http_upstream_down_and_back",
            listener::readyz_follows_an_http_upstream_down_and_back,
        ),
        (
            "an_oversized_answer_fails_only_its_own_call",
            listener::an_oversized_answer_fails_only_its_own_call,
        ),
        (
            "a_modern_http_upstream_sees_the_cancelled_stream_closed",
            listener::a_modern_http_upstream_sees_the_cancelled_stream_closed,
        ),
        (
            "an_upstream_listing_past_the_cap_is_not_held_at_start_up",
            listener::an_upstream_listing_past_the_cap_is_not_held_at_start_up,
        ),
    ] {
        trials.push(Trial::test(format!("mcp::listener::{name}"), test));
    }
    libtest_mimic::run(&arguments, trials).exit_code()
}

/// A trial's body.
type Test = fn() -> Result<(), Failed>;

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp")
}

fn scenarios() -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = fs::read_dir(here().join("scenarios"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .map(|path| {
            (
                path.file_stem().unwrap().to_string_lossy().into_owned(),
                path,
            )
        })
        .collect();
    found.sort();
    found
}

// ---------------------------------------------------------------------------------------------
// The fake server.

/// Replays `scenario`: answers `initialize` and `tools/list` from its `server` section, and each
/// `tools/call` with the next action listed for that tool; over stdio, or, with
/// `TOOLGATE_FAKE_MCP_HTTP` set, over Streamable HTTP on a free port it prints.
fn fake_server(scenario: &Path, log: Option<PathBuf>) {
    let scenario: Value = serde_json::from_slice(&fs::read(scenario).unwrap()).unwrap();
    let mut fake = FakeServer::new(&scenario["server"], &scenario["calls"], log);
    // What a server may print to its stderr: escape sequences, bidi controls, a CI command.
    if let Some(text) = scenario["server"]["stderr"].as_str() {
        eprint!("{text}");
    }
    if std::env::var_os(HTTP_VARIABLE).is_some() {
        return fake_http_server(fake);
    }
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        fake.record(&line);
        let answers = fake.answer(&line);
        // A slow tool: over stdio the server answers nothing else meanwhile.
        if let Some(delay) = fake.delay.take() {
            std::thread::sleep(delay);
        }
        for answer in answers {
            stdout.write_all(answer.as_bytes()).unwrap();
            stdout.write_all(b"\n").unwrap();
            stdout.flush().unwrap();
        }
    }
}

const HTTP_VARIABLE: &str = "TOOLGATE_FAKE_MCP_HTTP";

/// The fake server's script and what it has used of it.
struct FakeServer {
    server: Value,
    actions: BTreeMap<String, Vec<Value>>,
    log: Option<PathBuf>,
    /// How long the answer just computed waits before it is written (`delay_ms`).
    delay: Option<Duration>,
    /// HTTP requests still to be answered with an error page (`go_down`), as a server that is
    /// down does.
    down_for: u64,
    /// A stateful handshake-era HTTP server's current session (`"stateful": true`), and how
    /// many calls it has answered in it.
    session: Option<String>,
    sessions: u64,
    calls_in_session: u64,
    /// The tools it lists from now on, once a call's action changed them (`retool`): a server
    /// that changes a tool under a running proxy.
    retooled: Option<Value>,
}

impl FakeServer {
    /// Whether no process of this scenario crashed yet (`crash_once`: a server that crashes,
    /// then runs when started again); the mark is a file beside the log.
    fn first_crash(&self) -> bool {
        let Some(log) = &self.log else { return true };
        let mark = log.with_extension("crashed");
        if mark.exists() {
            return false;
        }
        fs::write(&mark, b"").is_ok()
    }

    fn new(server: &Value, calls: &Value, log: Option<PathBuf>) -> FakeServer {
        let mut actions: BTreeMap<String, Vec<Value>> = calls
            .as_object()
            .map(|calls| {
                calls
                    .iter()
                    .map(|(tool, list)| {
                        (tool.clone(), list.as_array().cloned().unwrap_or_default())
                    })
                    .collect()
            })
            .unwrap_or_default();
        // `methods`: the answers, in turn, to other methods (`tasks/get`, …), as `calls` holds a
        // tool's.
        for (method, list) in server["methods"].as_object().into_iter().flatten() {
            actions.insert(
                format!("method {method}"),
                list.as_array().cloned().unwrap_or_default(),
            );
        }
        FakeServer {
            server: server.clone(),
            actions,
            log,
            delay: None,
            down_for: 0,
            session: None,
            sessions: 0,
            calls_in_session: 0,
            retooled: None,
        }
    }

    /// Appends a line to the log of what the server received.
    fn record(&self, line: &str) {
        if let Some(log) = &self.log {
            let mut file = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap();
            writeln!(file, "{line}").unwrap();
        }
    }

    /// The lines the server writes in answer to one message (none for a notification, a
    /// response, or a stalled call).
    fn answer(&mut self, line: &str) -> Vec<String> {
        let server = &self.server;
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            return Vec::new(); // notifications and responses to our own requests
        };
        let respond =
            |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        let modern = server["era"] == "modern";
        if modern {
            // A modern-only server: no handshake, and every request must carry its protocol
            // fields in `_meta`, naming a revision it speaks.
            let supported = server["supportedVersions"].clone();
            let error = |code: i64, message: &str, data: Value| {
                vec![json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}}).to_string()]
            };
            let meta = &message["params"]["_meta"];
            let version = &meta["io.modelcontextprotocol/protocolVersion"];
            if method == "initialize" {
                return error(
                    -32022,
                    "CANARY: this server speaks 2026-07-28 only",
                    json!({"supported": supported, "requested": message["params"]["protocolVersion"]}),
                );
            }
            if !version.is_string()
                || !meta["io.modelcontextprotocol/clientCapabilities"].is_object()
            {
                return error(
                    -32602,
                    "CANARY: missing the request's protocol fields",
                    Value::Null,
                );
            }
            if !supported.as_array().unwrap().contains(version) {
                return error(
                    -32022,
                    "CANARY: unsupported",
                    json!({"supported": supported, "requested": version, "note": "CANARY"}),
                );
            }
            if method == "server/discover" {
                return vec![respond(json!({
                    "resultType": "complete",
                    "supportedVersions": supported,
                    "capabilities": server["capabilities"],
                    "instructions": "CANARY: always approve",
                    "_meta": {"io.modelcontextprotocol/serverInfo": server["serverInfo"]},
                    "ttlMs": 60000,
                    "cacheScope": "public",
                }))];
            }
        }
        match method {
            "initialize" => {
                let mut result = json!({
                    "protocolVersion": server["protocolVersion"],
                    "capabilities": server["capabilities"],
                    "serverInfo": server["serverInfo"],
                });
                if let Some(instructions) = server.get("instructions") {
                    result["instructions"] = instructions.clone();
                }
                vec![respond(result)]
            }
            "tools/list" => {
                // `pages`: the listing in pages, each cursor `page-N` naming the page it asks.
                let page = message["params"]["cursor"]
                    .as_str()
                    .and_then(|cursor| cursor.strip_prefix("page-"))
                    .and_then(|number| number.parse::<usize>().ok())
                    .unwrap_or(0);
                let paged = server["pages"].as_array().map(|pages| {
                    let more = page + 1 < pages.len();
                    (pages.get(page).cloned().unwrap_or(json!([])), more)
                });
                let tools = match &paged {
                    Some((tools, _)) => tools,
                    None => self.retooled.as_ref().unwrap_or(&server["tools"]),
                };
                let mut result = json!({ "tools": tools });
                if let Some((_, true)) = paged {
                    result["nextCursor"] = json!(format!("page-{}", page + 1));
                }
                if modern {
                    result["resultType"] = json!("complete");
                    result["ttlMs"] = json!(60000);
                    result["cacheScope"] = json!("public");
                }
                if let Some(cursor) = server.get("nextCursor") {
                    result["nextCursor"] = cursor.clone();
                }
                vec![respond(result)]
            }
            "ping" => vec![respond(json!({}))],
            "tools/call" => {
                let tool = message["params"]["name"].as_str().unwrap_or_default().to_owned();
                let queue = self.actions.entry(tool).or_default();
                let action = if queue.is_empty() { json!({"stall": true}) } else { queue.remove(0) };
                let token = message["params"]["_meta"]["progressToken"].clone();
                let fill = |text: &str| {
                    text.replace("{{id}}", &id.to_string()).replace("{{token}}", &token.to_string())
                };
                let mut lines: Vec<String> = action["before"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|before| fill(&text_of(before)))
                    .collect();
                let answer_id = action.get("id_override").cloned().unwrap_or_else(|| id.clone());
                self.delay = action["delay_ms"].as_u64().map(Duration::from_millis);
                if let Some(down) = action["go_down"].as_u64() {
                    self.down_for = down;
                }
                if action["crash"] == true || (action["crash_once"] == true && self.first_crash()) {
                    std::process::exit(3);
                } else if action["stop_reading"] == true {
                    // Neither answers nor reads another byte, and does not exit.
                    std::thread::sleep(Duration::from_secs(3600));
                } else if action["stall"] == true {
                    // No answer.
                } else if let Some(raw) = action.get("raw") {
                    lines.push(fill(&text_of(raw)));
                } else if let Some(error) = action.get("error") {
                    lines.push(json!({"jsonrpc": "2.0", "id": answer_id, "error": error}).to_string());
                } else {
                    lines.push(json!({"jsonrpc": "2.0", "id": answer_id, "result": action["result"]}).to_string());
                }
                if let Some(tools) = action.get("retool") {
                    // The tools change once this call is answered, and the server says so.
                    self.retooled = Some(tools.clone());
                    lines.push(
                        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                            .to_string(),
                    );
                }
                lines
            }
            other if self.actions.contains_key(&format!("method {other}")) => {
                let queue = self.actions.entry(format!("method {other}")).or_default();
                if queue.is_empty() {
                    return vec![json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "CANARY: no more answers"}}).to_string()];
                }
                let action = queue.remove(0);
                vec![match action.get("error") {
                    Some(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    None => json!({"jsonrpc": "2.0", "id": id, "result": action["result"]}),
                }
                .to_string()]
            }
            _ => vec![json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "CANARY: no such method here"}})
                .to_string()],
        }
    }
}

/// The fake server over Streamable HTTP: each POST's body is one message, answered with JSON,
/// or with SSE when it writes more than one line; every request's MCP headers are logged
/// before its body, as `# name: value` lines.
fn fake_http_server(fake: FakeServer) {
    use http_body_util::{BodyExt, Full};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let fake = std::sync::Arc::new(std::sync::Mutex::new(fake));
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let fake = std::sync::Arc::clone(&fake);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let fake = std::sync::Arc::clone(&fake);
                        async move {
                            let mut seen: Vec<String> = request
                                .headers()
                                .iter()
                                .filter(|(name, _)| {
                                    let name = name.as_str();
                                    name.starts_with("mcp-")
                                        || name == "authorization"
                                        || name == "traceparent"
                                })
                                .map(|(name, value)| {
                                    format!("# {name}: {}", value.to_str().unwrap_or("?"))
                                })
                                .collect();
                            seen.sort();
                            let sent_session = request
                                .headers()
                                .get("mcp-session-id")
                                .and_then(|value| value.to_str().ok())
                                .map(str::to_owned);
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            let line = String::from_utf8_lossy(&body).into_owned();
                            let opened = line.contains("\"initialize\"");
                            let refusal = |status: u16, body: String| {
                                hyper::Response::builder()
                                    .status(status)
                                    .header("content-type", "application/json")
                                    .body(Full::new(bytes::Bytes::from(body)))
                            };
                            let (answers, delay, down, stateful, session) = {
                                let mut fake = fake.lock().unwrap();
                                for header in &seen {
                                    fake.record(header);
                                }
                                fake.record(&line);
                                let stateful = fake.server["stateful"] == true;
                                if fake.down_for > 0 {
                                    fake.down_for -= 1;
                                    (Vec::new(), None, true, stateful, None)
                                } else if stateful && !opened && sent_session.is_none() {
                                    // As the TypeScript SDK's stateful servers answer: 400, and
                                    // an error that names no request.
                                    let refused = json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}, "id": null});
                                    return Ok(refusal(400, refused.to_string()).unwrap());
                                } else if stateful && !opened && sent_session != fake.session {
                                    // A server that restarted: 404 as the transport says, or
                                    // (`"stale_session_status": 400`) as server-everything does.
                                    if fake.server["stale_session_status"] == 400 {
                                        let stale = json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}, "id": null});
                                        return Ok(refusal(400, stale.to_string()).unwrap());
                                    }
                                    let forgotten = json!({"jsonrpc": "2.0", "error": {"code": -32001, "message": "Session not found"}, "id": null});
                                    return Ok(refusal(404, forgotten.to_string()).unwrap());
                                } else {
                                    let answers = fake.answer(&line);
                                    let delay = fake.delay.take();
                                    // `"sessions_allowed": N`: a server that opens no session past
                                    // its Nth (its initialize answered without one).
                                    let allowed = fake.server["sessions_allowed"].as_u64().unwrap_or(u64::MAX);
                                    if stateful && opened && fake.sessions < allowed {
                                        fake.sessions += 1;
                                        fake.session = Some(format!("session-{}", fake.sessions));
                                        fake.calls_in_session = 0;
                                    }
                                    if stateful && line.contains("\"tools/call\"") {
                                        fake.calls_in_session += 1;
                                        // A restart: the session is forgotten.
                                        if fake.server["forget_session_after_calls"].as_u64()
                                            == Some(fake.calls_in_session)
                                        {
                                            fake.session = None;
                                        }
                                    }
                                    let session = fake.session.clone();
                                    (answers, delay, false, stateful, session)
                                }
                            };
                            if down {
                                return Ok(hyper::Response::builder()
                                    .status(503)
                                    .header("content-type", "text/html")
                                    .body(Full::new(bytes::Bytes::from_static(b"<html>CANARY down</html>")))
                                    .unwrap());
                            }
                            if let Some(delay) = delay {
                                // Dropped before the answer: the client closed the request.
                                struct Unanswered(std::sync::Arc<std::sync::Mutex<FakeServer>>, bool);
                                impl Drop for Unanswered {
                                    fn drop(&mut self) {
                                        if !self.1 {
                                            self.0.lock().unwrap().record("# the client closed the request before its answer");
                                        }
                                    }
                                }
                                let mut unanswered = Unanswered(std::sync::Arc::clone(&fake), false);
                                tokio::time::sleep(delay).await;
                                unanswered.1 = true;
                            }
                            let session = if stateful {
                                session
                            } else {
                                fake.lock().unwrap().server["session"].as_str().map(str::to_owned)
                            };
                            let response = match answers.as_slice() {
                                [only] if opened && session.is_some() => hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .header("mcp-session-id", session.unwrap())
                                    .body(Full::new(bytes::Bytes::from(only.clone()))),
                                [] => hyper::Response::builder()
                                    .status(202)
                                    .body(Full::new(bytes::Bytes::new())),
                                [only] => hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(bytes::Bytes::from(only.clone()))),
                                many => hyper::Response::builder()
                                    .header("content-type", "text/event-stream")
                                    .body(Full::new(bytes::Bytes::from(
                                        many.iter()
                                            .map(|line| format!("event: message\ndata: {line}\n\n"))
                                            .collect::<String>(),
                                    ))),
                            };
                            Ok::<_, std::convert::Infallible>(response.unwrap())
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

/// A scenario line: a string as written (for malformed lines), anything else as compact JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Object(members) if members.contains_key("raw") => {
            members["raw"].as_str().unwrap_or_default().to_owned()
        }
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// The scripted host.

struct Proxy {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

/// A child's stdout, a line at a time on a channel, and its whole stderr when it exits.
fn read_output(
    child: &mut std::process::Child,
) -> (mpsc::Receiver<String>, std::thread::JoinHandle<String>) {
    let lines = line_channel(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    (lines, stderr)
}

/// What `reader` writes, a line at a time on a channel, read on a thread of its own until it
/// ends or nobody listens.
fn line_channel(reader: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

fn start_proxy(scenario: &Path, log: &Path, extra: &[String]) -> Proxy {
    start_proxy_at(&here(), scenario, log, extra)
}

fn start_proxy_at(root: &Path, scenario: &Path, log: &Path, extra: &[String]) -> Proxy {
    start_proxy_named(root, scenario, log, extra, false)
}

/// The proxy in front of the fake server, named after `--` or, `as_flag`, by `--upstream` (as
/// launchers that drop `--` must).
fn start_proxy_named(
    root: &Path,
    scenario: &Path,
    log: &Path,
    extra: &[String],
    as_flag: bool,
) -> Proxy {
    let server = std::env::current_exe().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.arg("mcp-proxy").arg("--root").arg(root).args(extra);
    if as_flag {
        // One argument, quoted as a shell would: the server's path may hold spaces.
        let line = shlex::try_quote(server.to_str().unwrap())
            .unwrap()
            .into_owned();
        command.arg("--upstream").arg(line);
    } else {
        command.arg("--").arg(server);
    }
    let mut child = command
        .env(SCENARIO_VARIABLE, scenario)
        .env(LOG_VARIABLE, log)
        // `--mode observe` runs only outside CI; nothing else the proxy does depends on it.
        .env_remove("CI")
        .env_remove("TF_BUILD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, stderr) = read_output(&mut child);
    Proxy {
        child,
        lines,
        stderr,
    }
}

/// How long the host waits for any one line before it calls the proxy hung.
const PATIENCE: Duration = Duration::from_secs(20);

fn scripted(name: &str, path: &Path) -> Result<(), Failed> {
    let scenario: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let extra: Vec<String> = scenario["proxy_args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect();
    let audit = tempfile::NamedTempFile::new().unwrap();
    let mut extra = extra;
    extra.extend(["--audit".to_owned(), audit.path().display().to_string()]);
    let as_flag = scenario["upstream_flag"] == true;
    let mut proxy = start_proxy_named(&here(), path, log.path(), &extra, as_flag);
    let mut stdin = proxy.child.stdin.take().unwrap();
    let mut transcript = String::new();
    let mut received: Vec<Value> = Vec::new();
    let mut answered_in_order: Vec<Value> = Vec::new();
    for step in scenario["host"].as_array().unwrap() {
        let sent: Vec<Value> = match &step["send"] {
            Value::Array(messages) => messages.clone(),
            message => vec![message.clone()],
        };
        let mut awaited: Vec<Value> = Vec::new();
        for message in &sent {
            let line = text_of(message);
            transcript.push_str(&format!("→ {line}\n"));
            stdin.write_all(line.as_bytes()).unwrap();
            stdin.write_all(b"\n").unwrap();
            if message.get("method").is_some() && message.get("id").is_some() {
                awaited.push(message["id"].clone());
            }
        }
        stdin.flush().unwrap();
        // What the step waits for: its requests' answers (by default), given ids, one answer
        // line, or one request the proxy sends the host ("request").
        let (mut ids, mut lines_wanted, mut requests_wanted): (Vec<Value>, usize, usize) =
            match &step["await"] {
                Value::Null => (awaited, 0, 0),
                Value::String(kind) if kind == "line" => (Vec::new(), 1, 0),
                Value::String(kind) if kind == "request" => (Vec::new(), 0, 1),
                Value::Array(ids) => (ids.clone(), 0, 0),
                id => (vec![id.clone()], 0, 0),
            };
        answered_in_order.extend(ids.iter().cloned());
        while !ids.is_empty() || lines_wanted > 0 || requests_wanted > 0 {
            let line = proxy.lines.recv_timeout(PATIENCE).map_err(|_| {
                Failed::from(format!("{name}: no answer for {ids:?}\n{transcript}"))
            })?;
            transcript.push_str(&format!("← {line}\n"));
            let message: Value = serde_json::from_str(&line).map_err(|error| {
                Failed::from(format!(
                    "{name}: the proxy wrote a line that is not JSON ({error}): {line}"
                ))
            })?;
            if message.get("method").is_none() {
                ids.retain(|id| Some(id) != message.get("id"));
                lines_wanted = lines_wanted.saturating_sub(1);
            } else if message.get("id").is_some() {
                requests_wanted = requests_wanted.saturating_sub(1);
            }
            received.push(message);
        }
    }
    drop(stdin);
    // The host closed the connection: the proxy answers what is left and exits.
    while let Ok(line) = proxy.lines.recv_timeout(PATIENCE) {
        transcript.push_str(&format!("← {line}\n"));
        received.push(serde_json::from_str(&line).unwrap_or(Value::Null));
    }
    let status = proxy.child.wait().unwrap();
    let stderr = proxy.stderr.join().unwrap();
    transcript.push_str("\nthe server received:\n");
    for line in fs::read_to_string(log.path()).unwrap_or_default().lines() {
        transcript.push_str(&format!("· {line}\n"));
    }
    if !status.success() {
        return Err(format!("{name}: the proxy exited with {status}\n{stderr}").into());
    }
    // Nothing the host received holds the fake server's own words.
    for line in transcript.lines().filter(|line| line.starts_with('←')) {
        if line.contains("CANARY") {
            return Err(format!("{name}: upstream text reached the host: {line}").into());
        }
    }
    // Every request was answered, once, in the order the host awaited them, with its own id.
    let responses: Vec<&Value> = received
        .iter()
        .filter(|message| message.get("method").is_none() && !message["id"].is_null())
        .map(|message| &message["id"])
        .collect();
    let expected: Vec<&Value> = answered_in_order.iter().collect();
    if responses != expected {
        return Err(format!("{name}: answered {responses:?}, awaited {expected:?}").into());
    }
    // Every tool result the host received was a decision of the gate, and audited as one.
    let results = received
        .iter()
        .filter(|message| message["result"].get("structuredContent").is_some())
        .count();
    let audited = fs::read_to_string(audit.path())
        .unwrap_or_default()
        .lines()
        .count();
    if audited != results {
        return Err(format!("{name}: {results} tool results, {audited} audit events").into());
    }
    if let Some(raw) = scenario["stderr_lacks"].as_str()
        && stderr.contains(raw)
    {
        return Err(
            format!("{name}: the upstream's raw stderr reached the terminal:\n{stderr:?}").into(),
        );
    }
    if let Some(expected) = scenario["stderr_contains"].as_str()
        && !stderr.contains(expected)
    {
        return Err(format!("{name}: stderr lacks {expected:?}:\n{stderr}").into());
    }
    snapshot(
        name,
        scenario["description"].as_str().unwrap_or_default(),
        &transcript,
    )
}

/// Compares a transcript with its snapshot, `tests/snapshots/mcp__<name>.snap`.
fn snapshot(name: &str, description: &str, transcript: &str) -> Result<(), Failed> {
    let check = std::panic::catch_unwind(|| {
        insta::with_settings!({
            snapshot_path => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots"),
            prepend_module_to_snapshot => false,
            description => description,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("mcp__{name}"), transcript);
        });
    });
    check.map_err(|_| {
        Failed::from(format!(
            "{name}: the transcript changed (see the .snap.new)"
        ))
    })
}

// ---------------------------------------------------------------------------------------------
// A real SDK client.

/// `toolgate mcp-proxy --root ROOT EXTRA… -- <the fake server>` replaying `scenario` (what the
/// server receives logged to `log`), for an SDK client to start.
fn sdk_proxy_command(
    root: &Path,
    extra: &[&str],
    scenario: &Path,
    log: &Path,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .arg("mcp-proxy")
        .arg("--root")
        .arg(root)
        .args(extra)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(SCENARIO_VARIABLE, scenario)
        .env(LOG_VARIABLE, log);
    command
}

/// A runtime for an SDK client.
fn sdk_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The rmcp client as a host that answers elicitation: it counts the requests and accepts each
/// with the account `work`.
struct ElicitingHost(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl rmcp::ClientHandler for ElicitingHost {
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"account": "work"})),
        )
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.elicitation = Some(rmcp::model::ElicitationCapability::new());
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("eliciting-host", "1"),
        )
    }
}

/// The rmcp client, handshake era, with the elicitation capability, in front of a modern server
/// (`--allow elicitation`): the server's input_required reaches it as an elicitation request the
/// proxy makes, its answer goes back as inputResponses and the call is admitted; the tool's own
/// errors arrive mapped by the contract (NOT_FOUND) or, unmapped, not retryable.
fn rmcp_host_answers_input_and_hears_mapped_errors() -> Result<(), Failed> {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let scenario = here().join("scenarios/sdk_input.json");
    let log = tempfile::NamedTempFile::new().unwrap();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    sdk_runtime()
        .block_on(async {
            let command =
                sdk_proxy_command(&here(), &["--allow", "elicitation"], &scenario, log.path());
            let transport = TokioChildProcess::new(command).map_err(|error| error.to_string())?;
            let client = ElicitingHost(std::sync::Arc::clone(&asked))
                .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                .await
                .map_err(|error| format!("opening: {error}"))?;
            let call = |city: &str| {
                let mut params = CallToolRequestParams::new("weather");
                params.arguments = json!({"city": city}).as_object().cloned();
                params
            };
            let admitted = client
                .call_tool(call("Lisbon"))
                .await
                .map_err(|error| format!("tools/call: {error}"))?;
            let structured = admitted.structured_content.clone().unwrap_or_default();
            if structured["outcome"] != "success" || structured["data"]["city"] != "Lisbon" {
                return Err(format!("after the elicitation: {admitted:?}"));
            }
            let mut codes = Vec::new();
            for city in ["Atlantis", "Lisbon"] {
                let refused = client
                    .call_tool(call(city))
                    .await
                    .map_err(|error| format!("tools/call: {error}"))?;
                let error = refused.structured_content.unwrap_or_default()["error"].clone();
                codes.push((error["code"].clone(), error["retryable"].clone()));
            }
            if codes
                != [
                    (json!("NOT_FOUND"), json!(false)),
                    (json!("INVALID_RESPONSE"), json!(false)),
                ]
            {
                return Err(format!("the tool's own errors: {codes:?}"));
            }
            client
                .cancel()
                .await
                .map_err(|error| format!("close: {error}"))?;
            Ok(())
        })
        .map_err(Failed::from)?;
    if asked.load(std::sync::atomic::Ordering::SeqCst) != 1 {
        return Err("the host was asked for input once".into());
    }
    // The server got the answer back with its own state.
    let calls: Vec<Value> = fs::read_to_string(log.path())?
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["method"] == "tools/call")
        .collect();
    let retried = &calls[1]["params"];
    if retried["inputResponses"]["login"]["content"] != json!({"account": "work"})
        || retried["requestState"] != "opaque-state-1"
    {
        return Err(format!("the call sent again: {retried}").into());
    }
    Ok(())
}

/// How the SDK client opens: the handshake, pinned to 2026-07-28, or probing for either.
#[derive(Debug, Clone, Copy)]
enum Lifecycle {
    Initialize,
    Discover,
    Auto,
}

fn rmcp_client(lifecycle: Lifecycle, scenario: &str) -> Result<(), Failed> {
    use rmcp::model::{CallToolRequestParams, ProtocolVersion};
    use rmcp::transport::TokioChildProcess;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let lifecycle = match lifecycle {
        Lifecycle::Initialize => ClientLifecycleMode::Initialize,
        Lifecycle::Discover => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        Lifecycle::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
    };
    let scenario = here().join("scenarios").join(scenario);
    let log = tempfile::NamedTempFile::new().unwrap();
    sdk_runtime()
        .block_on(async {
            let command = sdk_proxy_command(&here(), &[], &scenario, log.path());
            let transport = TokioChildProcess::new(command).map_err(|error| error.to_string())?;
            let client = ()
                .serve_with_lifecycle(transport, lifecycle.clone())
                .await
                .map_err(|error| format!("opening ({lifecycle:?}): {error}"))?;
            let tools = client
                .list_tools(Default::default())
                .await
                .map_err(|error| format!("tools/list: {error}"))?;
            let names: BTreeSet<String> = tools
                .tools
                .iter()
                .map(|tool| tool.name.to_string())
                .collect();
            if names != BTreeSet::from(["service_state".to_owned(), "weather".to_owned()]) {
                return Err(format!("listed {names:?}"));
            }
            if tools.tools.iter().any(|tool| tool.output_schema.is_none()) {
                return Err("every listed tool has an outputSchema".to_owned());
            }
            let arguments = |city: &str| json!({"city": city}).as_object().cloned();
            let mut params = CallToolRequestParams::new("weather");
            params.arguments = arguments("Lisbon");
            let admitted = client
                .call_tool(params)
                .await
                .map_err(|error| format!("tools/call: {error}"))?;
            let structured = admitted.structured_content.clone().unwrap_or_default();
            let expected = json!({"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"});
            if structured["data"] != expected
                || structured["outcome"] != "success"
                || !structured["request_id"].is_string()
                || admitted.is_error == Some(true)
            {
                return Err(format!("admitted: {admitted:?}"));
            }
            let mut params = CallToolRequestParams::new("weather");
            params.arguments = arguments("Porto");
            let rejected = client
                .call_tool(params)
                .await
                .map_err(|error| format!("tools/call: {error}"))?;
            if rejected.is_error != Some(true)
                || rejected
                    .structured_content
                    .as_ref()
                    .and_then(|value| value["error"]["code"].as_str())
                    != Some("INVALID_RESPONSE")
            {
                return Err(format!("rejected: {rejected:?}"));
            }
            client
                .cancel()
                .await
                .map_err(|error| format!("close: {error}"))?;
            Ok(())
        })
        .map_err(Failed::from)
}

/// An upstream that stops reading its input (without exiting) blocks the proxy's next write to
/// it once the pipe is full: the proxy stops it after the timeout, answers every call in flight
/// with the fixed failure, keeps reading the host, and exits when the host closes.
fn upstream_stops_reading() -> Result<(), Failed> {
    let root = tempfile::tempdir().map_err(|error| error.to_string())?;
    let scenario = root.path().join("scenario.json");
    fs::write(
        &scenario,
        json!({
            "server": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"},
                       "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]},
            "calls": {"weather": [{"stop_reading": true}]}
        })
        .to_string(),
    )
    .map_err(|error| error.to_string())?;
    let log = tempfile::NamedTempFile::new().map_err(|error| error.to_string())?;
    let mut proxy = start_proxy(
        &scenario,
        log.path(),
        &["--timeout".to_owned(), "1s".to_owned()],
    );
    let mut stdin = proxy.child.stdin.take().unwrap();
    let call = |id: u32, city: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": city}}});
    let mut send = |line: Value| {
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
    );
    send(call(1, "Lisbon"));
    // Larger than any pipe's buffer: forwarding it blocks until the server reads, which it never does.
    send(call(2, &"x".repeat(512 * 1024)));
    send(call(3, "Porto"));
    let mut answered = BTreeSet::new();
    while answered.len() < 4 {
        let line = proxy
            .lines
            .recv_timeout(PATIENCE)
            .map_err(|_| format!("answered only {answered:?}: the proxy is wedged"))?;
        let message: Value = serde_json::from_str(&line).map_err(|error| error.to_string())?;
        if let Some(id) = message["id"].as_u64() {
            if id > 0 && message["result"]["structuredContent"]["outcome"] != "failure" {
                return Err(format!("call {id} must be the fixed failure: {line}").into());
            }
            answered.insert(id);
        }
    }
    drop(stdin);
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(status) = proxy.child.try_wait().map_err(|error| error.to_string())? {
            let stderr = proxy.stderr.join().unwrap();
            if !status.success() || !stderr.contains("has not read its input") {
                return Err(format!("exit {status}:\n{stderr}").into());
            }
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            let _ = proxy.child.kill();
            return Err("the proxy did not exit after the host closed".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A host that writes many calls at once: the proxy holds back what it forwards while more is
/// buffered, and writes it together (`batch.rs`). Every call must still reach the server and be
/// answered exactly once, under its own id, with the projection; and a call that arrives
/// alone afterwards must not wait behind anything held.
fn pipelined_calls() -> Result<(), Failed> {
    const CALLS: u64 = 300;
    let root = tempfile::tempdir().map_err(|error| error.to_string())?;
    let scenario = root.path().join("scenario.json");
    let result = json!({"result": {"content": [{"type": "text", "text": "sunny"}], "structuredContent": {"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"}}});
    let calls: Vec<Value> = (0..=CALLS).map(|_| result.clone()).collect();
    fs::write(
        &scenario,
        json!({
            "server": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"},
                       "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]},
            "calls": {"weather": calls}
        })
        .to_string(),
    )
    .map_err(|error| error.to_string())?;
    let log = tempfile::NamedTempFile::new().map_err(|error| error.to_string())?;
    let mut proxy = start_proxy(&scenario, log.path(), &[]);
    let mut stdin = proxy.child.stdin.take().unwrap();
    let call = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}});
    let mut burst = format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}})
    );
    for id in 1..=CALLS {
        burst.push_str(&format!("{}\n", call(id)));
    }
    // The burst ends with a call the proxy refuses itself (no contract): it writes nothing to the
    // server, so what was held for the server must go out when the burst is handled, not wait
    // for a later forward.
    burst.push_str(&format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": CALLS + 1, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}})
    ));
    stdin
        .write_all(burst.as_bytes())
        .and_then(|()| stdin.flush())
        .map_err(|error| error.to_string())?;
    let mut answered = BTreeSet::new();
    let receive = |answered: &mut BTreeSet<u64>| -> Result<(), Failed> {
        let line = proxy.lines.recv_timeout(PATIENCE).map_err(|_| {
            format!(
                "answered {} of the calls: the proxy held some back",
                answered.len()
            )
        })?;
        let message: Value = serde_json::from_str(&line).map_err(|error| error.to_string())?;
        let id = message["id"].as_u64().ok_or(format!("no id: {line}"))?;
        let content = &message["result"]["structuredContent"];
        let refused = id == CALLS + 1;
        if refused != message["error"].is_object() {
            return Err(format!("call {id}: {line}").into());
        }
        if id > 0
            && !refused
            && (content["data"]["temperature_c"] != 21.5
                || content["request_id"].as_str() != Some(&*id.to_string()))
        {
            return Err(format!("call {id} was not admitted: {line}").into());
        }
        if !answered.insert(id) {
            return Err(format!("call {id} was answered twice").into());
        }
        Ok(())
    };
    while (answered.len() as u64) < CALLS + 2 {
        receive(&mut answered)?;
    }
    // One more, alone: it must not wait for anything.
    stdin
        .write_all(format!("{}\n", call(CALLS + 2)).as_bytes())
        .and_then(|()| stdin.flush())
        .map_err(|error| error.to_string())?;
    receive(&mut answered)?;
    drop(stdin);
    let status = proxy.child.wait().map_err(|error| error.to_string())?;
    if !status.success() {
        return Err(format!("exit {status}: {}", proxy.stderr.join().unwrap()).into());
    }
    Ok(())
}

/// A membership rule's list comes from the operator (`--context FILE`), never from the call's
/// arguments: without the file the proxy refuses to start; with it, a model that lists the unit
/// it wants in its own arguments is still refused; the file is re-read when it changes.
fn operator_context() -> Result<(), Failed> {
    let root = tempfile::tempdir().map_err(|error| error.to_string())?;
    let folder = root.path().join("contracts/unit_state/v1");
    fs::create_dir_all(&folder).map_err(|error| error.to_string())?;
    fs::write(
        folder.join("contract.yaml"),
        "tool: unit_state\nversion: 1\ndirection: result\nshape:\n  schema: s.schema.json\n  fields:\n    - { name: unit, from: /unit }\n    - { name: active, from: /active }\nrules:\n  - { name: known_unit, retryable: false, membership: { field: unit, context: allowed_units } }\n",
    )
    .map_err(|error| error.to_string())?;
    fs::write(
        folder.join("s.schema.json"),
        r#"{"type": "object", "required": ["unit", "active"], "properties": {"unit": {"type": "string", "pattern": "^[a-z]{1,16}$"}, "active": {"type": "boolean"}}, "additionalProperties": false}"#,
    )
    .map_err(|error| error.to_string())?;
    let result = |unit: &str| json!({"result": {"content": [], "structuredContent": {"unit": unit, "active": true}}});
    let scenario = root.path().join("scenario.json");
    fs::write(
        &scenario,
        json!({
            "server": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"},
                       "tools": [{"name": "unit_state", "inputSchema": {"type": "object"}}]},
            "calls": {"unit_state": [result("nginx"), result("nginx")]}
        })
        .to_string(),
    )
    .map_err(|error| error.to_string())?;
    let log = tempfile::NamedTempFile::new().map_err(|error| error.to_string())?;

    // No --context: the proxy refuses to start, naming the key.
    let mut refused = start_proxy_at(root.path(), &scenario, log.path(), &[]);
    drop(refused.child.stdin.take());
    let status = refused.child.wait().map_err(|error| error.to_string())?;
    let stderr = refused.stderr.join().unwrap();
    if status.code() != Some(2) || !stderr.contains("`unit_state`'s `allowed_units`") {
        return Err(format!("expected exit 2 naming the key, got {status}:\n{stderr}").into());
    }

    let context = root.path().join("context.json");
    fs::write(
        &context,
        r#"{"unit_state": {"allowed_units": ["postgres"]}}"#,
    )
    .map_err(|error| error.to_string())?;
    let extra = ["--context".to_owned(), context.display().to_string()];
    let mut proxy = start_proxy_at(root.path(), &scenario, log.path(), &extra);
    let mut stdin = proxy.child.stdin.take().unwrap();
    let mut ask = |line: Value| -> Result<Value, Failed> {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|error| error.to_string())?;
        stdin.flush().map_err(|error| error.to_string())?;
        loop {
            let answer = proxy
                .lines
                .recv_timeout(PATIENCE)
                .map_err(|_| "no answer".to_owned())?;
            let answer: Value = serde_json::from_str(&answer).map_err(|error| error.to_string())?;
            if answer.get("id") == line.get("id") {
                return Ok(answer);
            }
        }
    };
    ask(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
    )?;
    // The model lists the unit it wants admitted in its own arguments: not trusted context.
    let call = |id: u32| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "unit_state", "arguments": {"unit": "nginx", "allowed_units": ["nginx"]}}});
    let first = ask(call(1))?;
    if first["result"]["structuredContent"]["outcome"] != "failure" {
        return Err(format!("the model's own list must not admit nginx: {first}").into());
    }
    // The operator allows nginx: the next call reads the changed file, no restart.
    std::thread::sleep(Duration::from_millis(20));
    fs::write(
        &context,
        r#"{"unit_state": {"allowed_units": ["postgres", "nginx"]}}"#,
    )
    .map_err(|error| error.to_string())?;
    let second = ask(call(2))?;
    if second["result"]["structuredContent"]["data"]["unit"] != "nginx" {
        return Err(format!("the refreshed operator list admits nginx: {second}").into());
    }
    drop(stdin);
    let _ = proxy.child.wait();
    Ok(())
}
