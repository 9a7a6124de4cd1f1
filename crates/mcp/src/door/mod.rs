//! A door: the gate inside a gateway someone else runs (Envoy's external processing filter,
//! agentgateway's ExtMcp hook). The gateway carries each MCP message end to end; the door is
//! handed the host's message before it is forwarded and the upstream's answer before the host
//! reads it, and decides both as `mcp-proxy` does, with the same functions (`call.rs`): argument
//! contracts before anything is forwarded, a call's result rebuilt by projection, a `tools/list`
//! rewritten, every closed route refused.
//!
//! Unlike the proxy, a door does not stand between two sessions: the host and the upstream share
//! one (the gateway's), so both speak the same era, ids are the host's, and `initialize` and
//! `server/discover` reach the upstream, their answers rewritten as the proxy would write them.
//! Pins are held from the listings that pass through the door: a pinned tool is served once a
//! listing seen by this door matched its pin.
//!
//! Fail closed: whatever the door cannot read answers the host with the fixed failure (a call)
//! or an error, never with the upstream's bytes.

mod answer;
mod parsed;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use toolgate_front::{Front, FrontConfig, Runner};
use toolgate_gate::Response;
use toolgate_repo::UsageError;
use toolgate_telemetry::{CallAttributes, UpstreamFailure};

use crate::call::{self, ArgumentsAsked, Call};
use crate::era::{self, RequestEra};
use crate::era::{plain, refusal_line};
use crate::loaded::Loaded;
use crate::lock;
use crate::message::{self, Message, codes, result_line};
use crate::pins;
use crate::route::Route;
use crate::tools;

pub use answer::{Answered, HttpAnswer};
pub use parsed::{ArgumentsDecided, Handed, ResultDecided, fixed_failure};

/// What a door is opened with.
#[derive(Debug, Clone)]
pub struct DoorConfig {
    /// The door's name, as its log lines, metrics and traces name it (`ext-proc`, `ext-mcp`).
    pub name: &'static str,
    /// The contracts: a repository folder or a bundle.
    pub root: PathBuf,
    /// What every front shares: audit, retention, rollout, metrics, tracing.
    pub front: FrontConfig,
    /// The operator's trusted context (as `mcp-proxy --context`).
    pub context: Option<PathBuf>,
    /// Routes for data opened beyond the default; their messages pass unchanged and ungated.
    pub allow: Vec<Route>,
    /// The longest message read from either side (default: as `mcp-proxy`'s line cap).
    pub max_message_bytes: Option<usize>,
    /// The one tool whose contracts are compiled (`None`: every tool's). A door that lives for
    /// one call (a coding agent's hook) compiles what that call needs, not the repository.
    pub only_tool: Option<String>,
}

/// The gate as a gateway's hook: see the module's documentation.
pub struct Door {
    name: &'static str,
    loaded: Loaded,
    front: Front,
    allowed: Vec<Route>,
    line_cap: usize,
    /// Each pinned tool's descriptor digest as the last listing through the door held it
    /// (`None`: the listing did not hold it); no entry until a listing is seen.
    surface: Mutex<BTreeMap<String, Option<String>>>,
}

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door")
            .field("name", &self.name)
            .field("front", &self.front)
            .finish_non_exhaustive()
    }
}

/// Who sent a host's message, as the gateway knows: the caller it authenticated, the trace the
/// request continues, the session it belongs to.
#[derive(Debug, Clone, Default)]
pub struct Sender<'a> {
    /// The authenticated caller (a token's subject), for the audit and the contracts' rules.
    pub caller: Option<&'a str>,
    /// The W3C trace context of the HTTP request (a request's `params._meta.traceparent` comes
    /// first).
    pub traceparent: Option<&'a str>,
    /// The handshake-era session (`Mcp-Session-Id`).
    pub session: Option<&'a str>,
}

/// What the door says of a host's message.
pub enum Asked {
    /// Forward it (`rewritten`: with these bytes in its place), and hand the upstream's answer
    /// to [`Door::answer`] with `exchange` (`None`: a notification, whose answer carries
    /// nothing to decide; the host is given none of it).
    Forward {
        /// The message as the upstream receives it, where the door rewrote it.
        rewritten: Option<Vec<u8>>,
        /// What the answer is decided as.
        exchange: Option<Exchange>,
    },
    /// Do not forward it: answer the host with this JSON-RPC message (empty: nothing, as a
    /// notification is answered).
    Answer(Vec<u8>),
}

/// A host's request forwarded, waiting for the upstream's answer.
pub struct Exchange {
    id: Value,
    modern_host: bool,
    since: Instant,
    kind: Kind,
}

enum Kind {
    Call(Box<Call>),
    Other(Other),
}

/// A request that is not a call.
enum Other {
    ToolsList { first_page: bool },
    Initialize,
    Discover,
    Ping,
    Passthrough(String),
}

impl Door {
    /// Opens the contracts and the front `config` names. Call it before any async runtime
    /// starts (the front's OTLP exporter may not be made on one).
    pub fn open(config: &DoorConfig) -> Result<Door, UsageError> {
        let repository = toolgate_repo::bundle::open_contracts(&config.root)?;
        let front = Front::open(
            &FrontConfig {
                runner: Runner {
                    name: config.name,
                    stdout_taken: None,
                    keeps_metrics: false,
                    logs_refusals: true,
                },
                ..config.front.clone()
            },
            &repository,
        )?;
        let loaded = Loaded::of_only(
            &repository,
            front.shadows(),
            config.context.as_deref(),
            config.only_tool.as_deref(),
        )?;
        front.contract_set(
            &loaded.digest,
            loaded.registry.contracts().map(|(_, contract)| contract),
        );
        let line_cap = config.max_message_bytes.unwrap_or_else(|| {
            (loaded.registry.largest_max_bytes * 2 + 64 * 1024).max(1024 * 1024)
        });
        front.log(&format!(
            "serving {} tool(s) (contract set {}); {}",
            loaded.registry.iter().count(),
            loaded.digest,
            front.summary()
        ));
        Ok(Door {
            name: config.name,
            loaded,
            front,
            allowed: config.allow.clone(),
            line_cap,
            surface: Mutex::new(BTreeMap::new()),
        })
    }

    /// The longest message the door reads, either way: a longer one is refused.
    pub fn max_message_bytes(&self) -> usize {
        self.line_cap
    }

    /// The front: its metrics (to serve), its log, its summary.
    pub fn front(&self) -> &Front {
        &self.front
    }

    /// A host's message, before it is forwarded: see [`Asked`].
    pub fn request(&self, body: &[u8], sender: &Sender<'_>) -> Asked {
        if body.len() > self.line_cap {
            return Asked::Answer(message::error_line(
                &Value::Null,
                codes::INVALID_REQUEST,
                &format!(
                    "a message longer than {} bytes; not forwarded",
                    self.line_cap
                ),
            ));
        }
        match message::parse(body) {
            Err(why) => Asked::Answer(message::error_line(
                &Value::Null,
                codes::PARSE_ERROR,
                &format!("not a JSON-RPC message toolgate can read: {why}"),
            )),
            Ok(Message::Request { id, method, params }) => {
                self.host_request(id, &method, params, sender, true)
            }
            Ok(Message::Notification { method, .. }) => self.host_notification(&method),
            // A host's answer to the upstream's request: only on an opened client-side route.
            Ok(Message::Response { .. }) => {
                if self.allowed.iter().any(|route| route.is_client_side()) {
                    Asked::Forward {
                        rewritten: None,
                        exchange: None,
                    }
                } else {
                    Asked::Answer(Vec::new())
                }
            }
        }
    }

    fn host_notification(&self, method: &str) -> Asked {
        let forwarded = match method {
            "notifications/initialized" | "notifications/cancelled" => true,
            "notifications/roots/list_changed" => self.allowed.contains(&Route::Roots),
            _ => false,
        };
        if forwarded {
            Asked::Forward {
                rewritten: None,
                exchange: None,
            }
        } else {
            Asked::Answer(Vec::new())
        }
    }

    /// The exchange an answer to a request the door did not see is decided as (agentgateway's
    /// response hook is handed the result alone): request `id`, `method`, `params`, as the host
    /// sent them; their arguments were decided by the request hook, so they are not decided
    /// again. `Err` with the answer to give instead (a tool without a contract, a closed route).
    pub fn expect(
        &self,
        id: Value,
        method: &str,
        params: Value,
        sender: &Sender<'_>,
    ) -> Result<Exchange, Vec<u8>> {
        match self.host_request(id, method, params, sender, false) {
            Asked::Forward {
                exchange: Some(exchange),
                ..
            } => Ok(exchange),
            Asked::Forward { exchange: None, .. } => Err(Vec::new()),
            Asked::Answer(line) => Err(line),
        }
    }

    fn host_request(
        &self,
        id: Value,
        method: &str,
        mut params: Value,
        sender: &Sender<'_>,
        gate_arguments: bool,
    ) -> Asked {
        let refuse = |refusal: era::Refusal| Asked::Answer(refusal_line(&id, &refusal));
        let request_era = match era::request_era(&params) {
            Ok(request_era) => request_era,
            Err(refusal) => return refuse(refusal),
        };
        let modern_host = matches!(request_era, RequestEra::Modern { .. });
        let kind = match method {
            "initialize" => {
                // The upstream hears only of the client capabilities of opened routes.
                params["capabilities"] = era::strip_client_capabilities(
                    params.get("capabilities").unwrap_or(&Value::Null),
                    &self.allowed,
                );
                Kind::Other(Other::Initialize)
            }
            "server/discover" => Kind::Other(Other::Discover),
            "ping" => Kind::Other(Other::Ping),
            "tools/list" => Kind::Other(Other::ToolsList {
                first_page: params.get("cursor").is_none_or(Value::is_null),
            }),
            "tools/call" if params.get("task").is_some() => {
                return refuse(plain(
                    codes::METHOD_NOT_FOUND,
                    "task-augmented tool calls are not available through a toolgate door",
                ));
            }
            "tools/call" => {
                match self.tool_call(&id, &params, &request_era, sender, gate_arguments) {
                    Ok((call, arguments)) => {
                        if let Some(arguments) = arguments {
                            params["arguments"] = arguments;
                        }
                        params = era::call_params_for_upstream(params, &self.allowed);
                        Kind::Call(call)
                    }
                    Err(answer) => return Asked::Answer(answer),
                }
            }
            _ => match Route::of_host_method(method) {
                Some(route) if route != Route::Tasks && self.allowed.contains(&route) => {
                    Kind::Other(Other::Passthrough(method.to_owned()))
                }
                Some(route) => {
                    return refuse(plain(
                        codes::METHOD_NOT_FOUND,
                        &format!(
                            "`{method}` is not available through toolgate: closed by default, as a route for unvetted data (allow it with --allow {})",
                            route.capability()
                        ),
                    ));
                }
                None => {
                    return refuse(plain(
                        codes::METHOD_NOT_FOUND,
                        &format!("`{method}` is not available through toolgate"),
                    ));
                }
            },
        };
        // Modern `_meta` capabilities are stripped as `initialize`'s are.
        if let RequestEra::Modern { capabilities, .. } = &request_era {
            params["_meta"][era::meta::CLIENT_CAPABILITIES] =
                era::strip_client_capabilities(capabilities, &self.allowed);
        }
        let rewritten = match &kind {
            // An opened route's messages pass as they came.
            Kind::Other(
                Other::Passthrough(_) | Other::Ping | Other::Discover | Other::ToolsList { .. },
            ) if !modern_host => None,
            _ => Some(message::request_line(&id, method, &params)),
        };
        Asked::Forward {
            rewritten,
            exchange: Some(Exchange {
                id,
                modern_host,
                since: Instant::now(),
                kind,
            }),
        }
    }

    /// A host's `tools/call`: the tool's contract found, the tool as it was reviewed, the
    /// arguments gated where the tool has an argument contract; the call and the arguments its
    /// argument contract rebuilt, or the answer to give the host instead.
    fn tool_call(
        &self,
        id: &Value,
        params: &Value,
        request_era: &RequestEra,
        sender: &Sender<'_>,
        gate_arguments: bool,
    ) -> Result<(Box<Call>, Option<Value>), Vec<u8>> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(refusal_line(
                id,
                &plain(codes::INVALID_PARAMS, "tools/call needs a tool `name`"),
            ));
        };
        let loaded = &self.loaded;
        let Some(tool) = loaded.registry.get(name) else {
            return Err(refusal_line(
                id,
                &plain(
                    codes::INVALID_PARAMS,
                    &format!(
                        "tool {name:?} has no contract in this toolgate repository, so it is not available"
                    ),
                ),
            ));
        };
        let modern_host = matches!(request_era, RequestEra::Modern { .. });
        let caller: Option<Arc<str>> = sender.caller.map(Arc::from);
        let span = self.front.tracing().map(|tracing| {
            tracing.call(&CallAttributes {
                tool: name,
                request_id: &message::IdText(id),
                transport: "tcp",
                door: self.name,
                session: sender.session,
                protocol_version: match request_era {
                    RequestEra::Modern { version, .. } => Some(version.as_str()),
                    RequestEra::Legacy => None,
                },
                traceparent: params
                    .get("_meta")
                    .and_then(|meta| meta.get("traceparent"))
                    .and_then(Value::as_str)
                    .or(sender.traceparent),
                caller: sender.caller,
            })
        });
        let record = self.front.steps().begin(&tool.contract, span);
        let mut arguments = params.get("arguments").unwrap_or(&Value::Null);
        let new_call = |arguments: &Value, record| {
            let mut request =
                tools::request_for(id, arguments, tool, loaded.context.for_tool(name));
            if let Some(caller) = &caller {
                request = request.with_caller(Arc::clone(caller));
            }
            Box::new(Call {
                contract: Arc::clone(&tool.contract),
                shadow: tool.shadow.clone(),
                request,
                record,
                retry: None,
                may_task: false,
            })
        };
        if let Some(reason) = self.surface_refusal(name) {
            // Not the tool that was reviewed: nothing is forwarded, and the refusal is decided
            // and audited like an unusable answer.
            let call = new_call(arguments, record);
            let decision = call::failure_decision(
                &self.front,
                &call,
                Response::incomplete(reason),
                (None, UpstreamFailure::Changed),
            );
            return Err(result_line(id, &tools::result_json(&decision, modern_host)));
        }
        let mut gated = None;
        if let Some(gate) = tool.arguments.as_ref().filter(|_| gate_arguments) {
            let asked = ArgumentsAsked {
                id,
                modern_host,
                tool,
                gate,
                arguments,
                caller: caller.clone(),
                context: loaded.context.for_tool(&gate.folder),
            };
            match call::gate_arguments(&self.front, asked, &record) {
                Ok(projected) => gated = Some(projected),
                Err(failure) => return Err(result_line(id, &failure)),
            }
            arguments = gated.as_ref().unwrap_or(&Value::Null);
        }
        let call = new_call(arguments, record);
        Ok((call, gated))
    }

    /// Why a pinned tool is withheld now, if it is (a tool without a pin never is).
    fn surface_refusal(&self, name: &str) -> Option<&'static str> {
        let pin = self.loaded.pins.get(name)?;
        pins::standing(pin, lock(&self.surface).get(name))
    }

    /// Holds what a listing (`complete`: every page) says of the pinned tools.
    fn note_surface(&self, tools: &[Value], complete: bool) {
        if self.loaded.pins.is_empty() {
            return;
        }
        let mut surface = lock(&self.surface);
        for name in self.loaded.pins.keys() {
            let found = tools
                .iter()
                .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name.as_str()));
            match found {
                Some(tool) => {
                    surface.insert(name.clone(), Some(pins::sha256(&pins::descriptor(tool))));
                }
                None if complete => {
                    surface.insert(name.clone(), None);
                }
                None => {}
            }
        }
    }

    /// Whether a listed tool is the one pinned (a tool without a pin always is).
    fn matches_pin(&self, name: &str, tool: &Value) -> bool {
        self.loaded
            .pins
            .get(name)
            .is_none_or(|pin| pins::sha256(&pins::descriptor(tool)) == pin.sha256)
    }

    /// The capabilities a host is offered for the upstream's `capabilities`.
    fn offered(&self, upstream: Option<&Value>) -> Value {
        era::offered_capabilities(upstream.unwrap_or(&json!({})), &self.allowed)
    }
}
