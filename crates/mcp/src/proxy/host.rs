//! From a host: its requests (routed, rewritten into the upstream's era, a call's arguments
//! gated), its notifications, and `initialize` and `server/discover` answered by the proxy.

use super::*;

impl Proxy {
    /// Registers the stdio host, the one to which the upstream's requests on opened routes go.
    pub(crate) fn attach_duplex_host(&self, host: &Arc<Host>) {
        *lock(&self.duplex_host) = Some(Arc::clone(host));
    }

    /// One message from a host, already read (at most the line cap).
    pub(crate) fn host_message(&self, host: &Arc<Host>, line: Vec<u8>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        self.host_parsed(host, message::parse(&line), line);
    }

    /// A message from a host, already read (`parsed`) from its `line`: the listener reads each
    /// body to check it against its headers, and hands on what it read.
    pub(crate) fn host_parsed(
        &self,
        host: &Arc<Host>,
        parsed: Result<Message, String>,
        line: Vec<u8>,
    ) {
        match parsed {
            Err(why) => host.send(error_line(
                &Value::Null,
                codes::PARSE_ERROR,
                &format!("not forwarded: {why}"),
            )),
            Ok(Message::Request { id, method, params }) => {
                self.host_request(host, id, &method, params)
            }
            Ok(Message::Notification { method, params }) => {
                self.host_notification(host, &method, &params, line)
            }
            Ok(Message::Response { id, outcome }) => {
                if self.input_answered(&id, &outcome) {
                    return;
                }
                let forwarded = self
                    .state()
                    .upstream_requests
                    .remove(&id_key(&id))
                    .is_some();
                if forwarded {
                    self.link.send(Outgoing::response(line));
                } else {
                    log("dropped a response from the host to no request the upstream made");
                }
            }
        }
    }

    /// A message from a host that is longer than the cap.
    pub(crate) fn host_message_too_long(&self, host: &Host, cap: usize) {
        host.send(error_line(
            &Value::Null,
            codes::INVALID_REQUEST,
            &format!("a message longer than {cap} bytes; not forwarded"),
        ));
    }

    pub(super) fn host_request(
        &self,
        host: &Arc<Host>,
        id: Value,
        method: &str,
        mut params: Value,
    ) {
        let refuse = |refusal: Refusal| host.send(refusal_line(&id, &refusal));
        // A call's arguments as its argument contract rebuilt them, when it has one.
        let mut gated_arguments: Option<Value> = None;
        let request_era = match era::request_era(&params) {
            Ok(request_era) => request_era,
            Err(refusal) => return refuse(refusal),
        };
        let modern_host = matches!(request_era, RequestEra::Modern { .. });
        let duplicate = self.state().pending.values().any(|pending| {
            pending.id == id
                && pending
                    .host
                    .as_ref()
                    .is_some_and(|asker| Arc::ptr_eq(asker, host))
        });
        if duplicate {
            return refuse(plain(
                codes::INVALID_REQUEST,
                "a request with this id is still pending",
            ));
        }
        let waiting = match method {
            "initialize" => return self.initialize(host, &id, &params, modern_host),
            "server/discover" => return self.discover(host, &id, modern_host),
            "ping" if modern_host => {
                return refuse(plain(
                    codes::METHOD_NOT_FOUND,
                    "`ping` is not part of the 2026-07-28 revision",
                ));
            }
            // A modern upstream has no ping: the proxy answers for itself.
            "ping" if self.upstream().modern_version().is_some() => {
                return host.send_result(result_line(&id, b"{}"));
            }
            "ping" => Waiting::Ping,
            "tools/list" => Waiting::ToolsList {
                first_page: params.get("cursor").is_none_or(Value::is_null),
            },
            "tools/call" if params.get("task").is_some() && !self.allows(Route::Tasks) => {
                return refuse(plain(
                    codes::METHOD_NOT_FOUND,
                    "task-augmented tool calls are closed by default; --allow tasks opens them, their results decided by the tool's contract",
                ));
            }
            "tools/call" => match self.tool_call(host, &id, &params, &request_era, modern_host) {
                Some((waiting, arguments)) => {
                    gated_arguments = arguments;
                    waiting
                }
                None => return,
            },
            "subscriptions/listen" => return self.listen(host, &id, &params, modern_host),
            "tasks/list" => {
                return refuse(plain(
                    codes::METHOD_NOT_FOUND,
                    "`tasks/list` is not available through toolgate: a task is asked about by the id its call returned",
                ));
            }
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update"
                if self.allows(Route::Tasks) =>
            {
                match self.task_request(host, method, &params) {
                    Ok((waiting, upstream_params)) => {
                        params = upstream_params;
                        waiting
                    }
                    Err(refusal) => return refuse(refusal),
                }
            }
            _ => match Route::of_host_method(method) {
                Some(route) if self.allows(route) => Waiting::Passthrough(method.to_owned()),
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
        if let Some(arguments) = gated_arguments {
            params["arguments"] = arguments;
        }
        // A call the proxy decides carries only what the protocol defines; an opened route's
        // messages pass as they came.
        if method == "tools/call" {
            params = era::call_params_for_upstream(params, &self.allowed);
        }
        // The client capabilities the upstream hears of: this request's (modern), or the
        // handshake's on this connection (legacy), stripped either way.
        let capabilities = match &request_era {
            RequestEra::Modern { capabilities, .. } => capabilities.clone(),
            RequestEra::Legacy => host
                .session()
                .map(|session| session.capabilities)
                .unwrap_or_else(|| json!({})),
        };
        let upstream_id = self.next_upstream_id();
        let progress_token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .cloned();
        // What `Mcp-Name` names toward an HTTP upstream: the tool, the resource, or the task.
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut upstream_params = era::params_for_upstream(
            params,
            self.upstream().modern_version(),
            &capabilities,
            &self.allowed,
        );
        if progress_token.is_some() {
            upstream_params["_meta"]["progressToken"] = upstream_id.clone();
        }
        // A traced call's upstream continues its trace, under the client span.
        let traceparent = match (&waiting, &name) {
            (Waiting::Call(call), Some(tool)) => call
                .record
                .span()
                .and_then(|trace| trace.upstream_started(tool, self.upstream_transport())),
            _ => None,
        };
        if let Some(traceparent) = &traceparent {
            upstream_params["_meta"]["traceparent"] = Value::from(traceparent.as_str());
        }
        let pending = Pending {
            host: Some(Arc::clone(host)),
            upstream_id: upstream_id.clone(),
            id,
            modern_host,
            progress_token,
            waiting,
            since: Instant::now(),
        };
        if let Settled::Unusable(reason) = self.upstream() {
            // Asking again cannot help: no call is retryable while no revision is shared.
            return match (&pending.waiting, &pending.host) {
                (Waiting::Call(call), Some(host)) => self.decide_failure(
                    host,
                    &pending.id,
                    call,
                    modern_host,
                    Response::incomplete(reason),
                    (None, UpstreamFailure::Unavailable),
                ),
                _ => self.answer_gone(pending, reason, UpstreamFailure::Unavailable),
            };
        }
        let gone = self.state().gone.clone();
        if let Some(reason) = gone {
            return self.answer_gone(pending, &reason, UpstreamFailure::Unavailable);
        }
        let key = id_key(&upstream_id);
        self.state().pending.insert(key.clone(), pending);
        let meta_version = upstream_params
            .get("_meta")
            .and_then(|meta| meta.get(era::meta::PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let outgoing = Outgoing {
            line: message::request_line(&upstream_id, method, &upstream_params),
            id: Some(upstream_id),
            method: Some(method.to_owned()),
            name,
            traceparent,
            meta_version: Some(meta_version),
        };
        if !self.link.send(outgoing)
            && let Some(pending) = self.state().pending.remove(&key)
        {
            self.answer_gone(
                pending,
                "the upstream is not running",
                UpstreamFailure::Unavailable,
            );
        }
    }

    /// A host's request about a task (`tasks/get`, `tasks/result`, `tasks/cancel`,
    /// `tasks/update`): what it waits for, and its params toward the upstream; refused for a
    /// task this host's caller did not create (answered as one that does not exist).
    fn task_request(
        &self,
        host: &Host,
        method: &str,
        params: &Value,
    ) -> Result<(Waiting, Value), Refusal> {
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| plain(codes::INVALID_PARAMS, "a task request needs a `taskId`"))?;
        let task = self
            .tasks
            .get(task_id, host.task_owner().as_ref())
            .ok_or_else(|| {
                plain(
                    codes::INVALID_PARAMS,
                    "no such task: toolgate knows of no task by this id for this caller",
                )
            })?;
        // The result a task holds is decided as its call's would have been.
        let call = || Call {
            contract: Arc::clone(&task.contract),
            shadow: task.shadow.clone(),
            request: task.request.clone(),
            record: self.front.steps().begin(&task.contract, None),
            retry: None,
            may_task: false,
        };
        let waiting = match method {
            "tasks/result" => Waiting::Call(Box::new(call())),
            "tasks/get" => Waiting::Task(Box::new(TaskWait::Get {
                id: task_id.to_owned(),
                call: Box::new(call()),
                extension: task.extension,
            })),
            "tasks/cancel" => Waiting::Task(Box::new(TaskWait::Cancel {
                id: task_id.to_owned(),
                extension: task.extension,
            })),
            _ => Waiting::Task(Box::new(TaskWait::Update)),
        };
        let upstream = tasks::params_for_upstream(method, params, &task.upstream_id, &self.allowed);
        Ok((waiting, upstream))
    }

    /// A host's `tools/call`: the tool's contract found, the caller allowed, the tool as it was
    /// reviewed, the arguments gated where the tool has an argument contract, and the call
    /// traced and measured; `None` once the host has been answered (a refusal, or the fixed
    /// failure of a changed tool). Also the arguments the argument contract rebuilt, if any.
    fn tool_call(
        &self,
        host: &Arc<Host>,
        id: &Value,
        params: &Value,
        request_era: &RequestEra,
        modern_host: bool,
    ) -> Option<(Waiting, Option<Value>)> {
        let refuse_with = |refusal: Refusal| {
            host.send(refusal_line(id, &refusal));
            None
        };
        let mut gated_arguments: Option<Value> = None;
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return refuse_with(plain(
                codes::INVALID_PARAMS,
                "tools/call needs a tool `name`",
            ));
        };
        // The contract set this call is decided under, whatever a reload swaps in meanwhile.
        let loaded = self.loaded();
        let Some(tool) = loaded.registry.get(name) else {
            if self.observe && host.may_call(name) {
                // Observe mode: a tool nobody contracted yet passes as the upstream serves it,
                // undecided and counted (`toolgate_no_contract_calls_total`).
                if let Some(metrics) = self.front.metrics() {
                    metrics.called_without_contract();
                }
                return Some((Waiting::Passthrough("tools/call".to_owned()), None));
            }
            return refuse_with(plain(
                codes::INVALID_PARAMS,
                &format!(
                    "tool {name:?} has no contract in this toolgate repository, so it is not available"
                ),
            ));
        };
        if !host.may_call(name) {
            // The listener answers 403 before this; a host reaching here is refused
            // all the same.
            return refuse_with(plain(
                codes::INVALID_PARAMS,
                &format!("tool {name:?} is not available to this caller"),
            ));
        }
        let mut arguments = params.get("arguments").unwrap_or(&Value::Null);
        let span = self.front.tracing().map(|tracing| {
            tracing.call(&CallAttributes {
                tool: name,
                request_id: &IdText(id),
                transport: if host.duplex { "pipe" } else { "tcp" },
                door: "mcp-proxy",
                session: host.peer.as_deref(),
                protocol_version: match &request_era {
                    RequestEra::Modern { version, .. } => Some(version.as_str()),
                    RequestEra::Legacy => None,
                },
                traceparent: params
                    .get("_meta")
                    .and_then(|meta| meta.get("traceparent"))
                    .and_then(Value::as_str)
                    .or(host.traceparent.as_deref()),
                caller: host.caller().as_deref(),
            })
        });
        let record = self.front.steps().begin(&tool.contract, span);
        self.refresh_surface_if_changed(name);
        if let Some(reason) = self.surface_refusal(name) {
            // Not the tool that was reviewed: nothing is forwarded, and the refusal is
            // decided and audited like an unusable answer.
            let mut request =
                tools::request_for(id, arguments, tool, loaded.context.for_tool(name));
            if let Some(caller) = host.caller() {
                request = request.with_caller(caller);
            }
            let call = Call {
                contract: Arc::clone(&tool.contract),
                shadow: None,
                request,
                record,
                retry: None,
                may_task: false,
            };
            self.decide_failure(
                host,
                id,
                &call,
                modern_host,
                Response::incomplete(reason),
                (None, UpstreamFailure::Changed),
            );
            return None;
        }
        if let Some(gate) = &tool.arguments {
            // What the upstream receives is what the argument contract's projection
            // built, or nothing.
            let context = loaded.context.for_tool(&gate.folder);
            match self.gate_arguments(
                host,
                id,
                modern_host,
                tool,
                gate,
                arguments,
                &record,
                context,
            ) {
                Some(projected) => {
                    gated_arguments = Some(projected);
                    arguments = gated_arguments.as_ref().unwrap_or(&Value::Null);
                }
                None => return None,
            }
        }
        let mut request = tools::request_for(id, arguments, tool, loaded.context.for_tool(name));
        if let Some(caller) = host.caller() {
            request = request.with_caller(caller);
        }
        // A handshake-era host cannot answer a modern upstream's input_required itself: where
        // the operator opened a route it may ask for, the proxy keeps the call's params to ask
        // on the host's behalf and send the call again (proxy/input.rs).
        let may_ask = !modern_host
            && self.upstream().modern_version().is_some()
            && [Route::Elicitation, Route::Sampling, Route::Roots]
                .into_iter()
                .any(|route| self.allows(route));
        let waiting = Waiting::Call(Box::new(Call {
            contract: Arc::clone(&tool.contract),
            shadow: tool.shadow.clone(),
            request,
            record,
            retry: may_ask.then(|| params.clone()),
            may_task: self.allows(Route::Tasks)
                && (params.get("task").is_some_and(Value::is_object)
                    || matches!(request_era, RequestEra::Modern { capabilities, .. }
                        if capabilities.pointer("/extensions/io.modelcontextprotocol~1tasks").is_some())),
        }));
        Some((waiting, gated_arguments))
    }

    /// Decides a call's arguments by the tool's argument contract (`call::gate_arguments`): the
    /// arguments to forward, or, refused, `None` after answering the host with the tool's fixed
    /// failure (no upstream call is made).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gate_arguments(
        &self,
        host: &Host,
        id: &Value,
        modern_host: bool,
        tool: &tools::Tool,
        gate: &tools::ArgumentContract,
        arguments: &Value,
        call: &CallRecord,
        context: serde_json::Map<String, Value>,
    ) -> Option<Value> {
        let asked = crate::call::ArgumentsAsked {
            id,
            modern_host,
            tool,
            gate,
            arguments,
            caller: host.caller(),
            context,
        };
        match crate::call::gate_arguments(&self.front, asked, call) {
            Ok(arguments) => Some(arguments),
            Err(failure) => {
                host.send_result(result_line(id, &failure));
                None
            }
        }
    }

    /// A legacy host's handshake, answered by the proxy (it opened the upstream's session, or
    /// the upstream has none): the revision the host asked for when the proxy speaks it, the
    /// capabilities the proxy offers, the proxy's own identity. The upstream's `serverInfo` and
    /// `instructions` (free text a host may show the model) are not passed on.
    pub(super) fn initialize(
        &self,
        host: &Arc<Host>,
        id: &Value,
        params: &Value,
        modern_host: bool,
    ) {
        if modern_host {
            return host.send(refusal_line(
                id,
                &plain(
                    codes::INVALID_REQUEST,
                    "`initialize` belongs to the handshake revisions; a 2026-07-28 client calls server/discover",
                ),
            ));
        }
        if let Settled::Unusable(reason) = self.upstream() {
            return host.send(error_line(
                id,
                codes::INTERNAL_ERROR,
                &format!("the upstream server is unavailable ({reason})"),
            ));
        }
        let asked = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = LEGACY_VERSIONS
            .iter()
            .find(|version| **version == asked)
            .unwrap_or(&LEGACY_VERSIONS[0]);
        let capabilities = era::strip_client_capabilities(
            params.get("capabilities").unwrap_or(&Value::Null),
            &self.allowed,
        );
        *lock(&host.session) = Some(Session { capabilities });
        let result = json!({
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": era::implementation(),
        });
        host.send(value_result_line(id, &result));
    }

    /// `server/discover`, answered by the proxy: every revision it speaks, the capabilities it
    /// offers, its own identity; no `instructions` (the upstream's are free text).
    pub(super) fn discover(&self, host: &Arc<Host>, id: &Value, modern_host: bool) {
        if !modern_host {
            return host.send(refusal_line(
                id,
                &plain(
                    codes::INVALID_PARAMS,
                    &format!(
                        "server/discover needs `_meta.{}` and `_meta.{}`",
                        era::meta::PROTOCOL_VERSION,
                        era::meta::CLIENT_CAPABILITIES
                    ),
                ),
            ));
        }
        let result = era::modern_result(
            "server/discover",
            json!({
                "supportedVersions": era::supported_versions(),
                "capabilities": self.server_capabilities(),
            }),
            None,
        );
        host.send(value_result_line(id, &result));
    }

    /// A modern host's `subscriptions/listen`: served by the proxy itself, for the one
    /// notification it can vouch for, a changed tool list (announced once the new listing has
    /// been checked against the pins); every other kind (resources, prompts) would carry unvetted
    /// data, so the acknowledgment leaves it out. The stream stays open until the host cancels
    /// it (`notifications/cancelled`) or the connection ends.
    fn listen(&self, host: &Arc<Host>, id: &Value, params: &Value, modern_host: bool) {
        if !modern_host {
            return host.send(refusal_line(
                id,
                &plain(
                    codes::METHOD_NOT_FOUND,
                    "`subscriptions/listen` is part of the 2026-07-28 revision; a handshake-era host hears of a changed tool list by notifications/tools/list_changed",
                ),
            ));
        }
        if !host.duplex {
            return host.send(refusal_line(
                id,
                &plain(
                    codes::METHOD_NOT_FOUND,
                    "`subscriptions/listen` is served over stdio; over HTTP the listener answers each POST once, so list the tools again (tools/list) to see a change",
                ),
            ));
        }
        let wanted = params["notifications"]["toolsListChanged"] == Value::Bool(true);
        let honored =
            wanted && self.server_capabilities()["tools"]["listChanged"] == Value::Bool(true);
        if honored {
            lock(&self.tool_subscriptions).push((Arc::clone(host), id.clone()));
        }
        let notifications = if honored {
            json!({"toolsListChanged": true})
        } else {
            json!({})
        };
        host.send(notification_line(
            "notifications/subscriptions/acknowledged",
            &json!({"_meta": {SUBSCRIPTION_ID: id}, "notifications": notifications}),
        ));
    }

    /// The capabilities the proxy offers a host: tools (with the upstream's `listChanged` for a
    /// stdio host), and the capabilities of the server-side routes the operator opened, as the
    /// upstream declared them.
    pub(super) fn server_capabilities(&self) -> Value {
        era::offered_capabilities(&self.upstream().capabilities(), &self.allowed)
    }

    pub(super) fn host_notification(
        &self,
        host: &Arc<Host>,
        method: &str,
        params: &Value,
        raw: Vec<u8>,
    ) {
        let legacy_upstream = matches!(self.upstream(), Settled::Legacy { .. });
        match method {
            // The proxy opened the upstream's session itself.
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let Some(cancelled) = params.get("requestId") else {
                    return;
                };
                // A subscription ends when its host cancels it.
                lock(&self.tool_subscriptions)
                    .retain(|(subscriber, id)| !(id == cancelled && subscriber.is(host)));
                // The request this host (or another POST of its handshake-era session) made.
                let found = {
                    let mut state = self.state();
                    let key = state
                        .pending
                        .iter()
                        .find(|(_, pending)| {
                            &pending.id == cancelled
                                && pending.host.as_ref().is_some_and(|asker| asker.is(host))
                        })
                        .map(|(key, _)| key.clone());
                    key.and_then(|key| state.pending.remove(&key))
                };
                // A cancelled request's late answer is dropped as an unknown id.
                if let Some(pending) = found {
                    let reason = params
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("the host cancelled the request");
                    self.link.cancel(&pending.upstream_id, reason);
                }
            }
            "notifications/roots/list_changed" if self.allows(Route::Roots) && legacy_upstream => {
                self.forward_notification(method, raw)
            }
            "notifications/progress"
                if (self.allows(Route::Sampling) || self.allows(Route::Elicitation))
                    && legacy_upstream =>
            {
                self.forward_notification(method, raw)
            }
            _ => log(&format!("dropped the host's `{method}` notification")),
        }
    }

    pub(super) fn forward_notification(&self, method: &str, raw: Vec<u8>) {
        self.link.send(Outgoing {
            line: raw,
            id: None,
            method: Some(method.to_owned()),
            name: None,
            traceparent: None,
            meta_version: None,
        });
    }
}
