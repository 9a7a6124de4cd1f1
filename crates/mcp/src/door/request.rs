//! A host's message, before it is forwarded: what is answered at once, what is forwarded (and
//! rewritten), and what the upstream's answer will be decided as.

use serde_json::Value;
use toolgate_gate::Response;
use toolgate_telemetry::{CallAttributes, UpstreamFailure};

use super::{Asked, Door, Exchange, Kind, Other, Sender};
use crate::call::{self, ArgumentsAsked, Call};
use crate::era::{self, RequestEra};
use crate::era::{plain, refusal_line};
use crate::message::{self, Message, codes, result_line};
use crate::route::Route;
use crate::tools;
use std::sync::Arc;
use std::time::Instant;

impl Door {
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
}
