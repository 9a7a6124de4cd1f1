//! From the upstream: its answers (a call's result decided by the gate, everything else in
//! the host's era), its requests and notifications on opened routes, the unreadable, the
//! oversized and the late, and the calls a gone upstream leaves.

use super::*;
use crate::call::{self, never_admitted};

impl Proxy {
    /// The upstream wrote a message no one can read: which request it answered is unknown, so
    /// every pending call is decided on those bytes (the gate refuses them, at the layer that
    /// owns the flaw) and every other pending request gets an error.
    pub(super) fn unreadable(&self, why: &str, line: &[u8]) {
        log(&format!(
            "the upstream wrote an unreadable line ({why}); every pending request is answered with the fixed failure"
        ));
        for pending in self.take_pending() {
            match (&pending.waiting, &pending.host) {
                (Waiting::Call(call), Some(host)) => {
                    let now = SystemTime::now();
                    call.record
                        .upstream_over(None, Some(UpstreamFailure::Unreadable), now);
                    // Bytes no message correlates with a call never answer it, even if a
                    // contract would admit them.
                    let response = never_admitted(
                        call,
                        Response::body(line),
                        "a line that answers no request",
                        now,
                    );
                    let decision = self.decide(call, response, now);
                    host.send_result(result_line(
                        &pending.id,
                        &tools::result_json(&decision, pending.modern_host),
                    ));
                }
                _ => self.answer_gone(
                    pending,
                    "it wrote an unreadable line",
                    UpstreamFailure::Unreadable,
                ),
            }
        }
    }

    pub(super) fn upstream_response(&self, id: &Value, outcome: Result<Value, Value>) {
        let Some(pending) = self.state().pending.remove(&id_key(id)) else {
            log(
                "dropped a response from the upstream to no pending request (a late, cancelled or unknown id)",
            );
            return;
        };
        let Some(host) = pending.host.clone() else {
            if let Waiting::Own(answer) = pending.waiting {
                let _ = answer.send(outcome);
            }
            return;
        };
        let id = &pending.id;
        let modern_host = pending.modern_host;
        let waited = Some(Instant::now().saturating_duration_since(pending.since));
        let line = match (pending.waiting, outcome) {
            (Waiting::Own(_), _) => return,
            (Waiting::Passthrough(method), Ok(result)) => {
                value_result_line(id, &era::passthrough_result(&method, result, modern_host))
            }
            // An opened route: its error passes as the upstream wrote it.
            (Waiting::Passthrough(_), Err(error)) => message::error_object_line(id, &error),
            (Waiting::Ping, Ok(_)) => result_line(id, b"{}"),
            (Waiting::ToolsList { first_page }, Ok(result)) => {
                if result.get("nextCursor").is_some() {
                    log(
                        "the upstream lists its tools in pages; toolgate lists the first page only",
                    );
                }
                let upstream_tools = result
                    .get("tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                // A page a host asked for by cursor says nothing of the tools on other pages:
                // only a listing from the first page to the last can withhold a tool.
                self.note_surface(
                    &upstream_tools,
                    first_page && result.get("nextCursor").is_none(),
                );
                let offered =
                    |name: &str, tool: &Value| host.may_call(name) && self.matches_pin(name, tool);
                let listed = call::listing_for_host(
                    &self.loaded().registry,
                    self.observe,
                    result,
                    offered,
                    modern_host,
                );
                value_result_line(id, &listed)
            }
            (Waiting::Call(call), Ok(result)) if tasks::created_task(&result).is_some() => {
                return self.task_created(&host, id, &call, &result, waited, modern_host);
            }
            (Waiting::Task(wait), Ok(result)) => self
                .task_answer(*wait, &result, waited, modern_host)
                .map_or_else(
                    |answer| refusal_line(id, &answer),
                    |answer| value_result_line(id, &answer),
                ),
            (Waiting::Call(call), Ok(result)) => {
                let call = if !modern_host && era::result_kind(&result) == ResultKind::InputRequired
                {
                    match self.ask_host_for_input(&host, id, call, &result) {
                        Ok(()) => return,
                        Err(call) => call,
                    }
                } else {
                    call
                };
                let unusable = match era::result_kind(&result) {
                    ResultKind::Complete => None,
                    ResultKind::InputRequired => {
                        if modern_host
                            && let Some(passed) =
                                era::input_required_for_host(&result, &self.allowed)
                        {
                            log("passed an input_required result to the host on an opened route");
                            return host.send(value_result_line(id, &passed));
                        }
                        Some(
                            "the upstream asked for input (input_required) on a route that is closed, or of a host that cannot give it",
                        )
                    }
                    ResultKind::Unknown => {
                        Some("the upstream's result has a resultType toolgate does not know")
                    }
                };
                if let Some(reason) = unusable {
                    return self.decide_failure(
                        &host,
                        id,
                        &call,
                        modern_host,
                        Response::incomplete(reason),
                        (waited, UpstreamFailure::Unusable),
                    );
                }
                self.decided_result(&call, &result, waited, modern_host)
                    .into_line(id)
            }
            (Waiting::Call(call), Err(error)) if self.observe => {
                self.failure_decision(
                    &call,
                    Response::unreachable("the upstream answered the call with a JSON-RPC error"),
                    (waited, UpstreamFailure::Error),
                );
                message::error_object_line(id, &error)
            }
            (Waiting::Call(call), Err(error)) => {
                let (response, failure, logged) = call::call_error(&error);
                if let Some(line) = logged {
                    log(&line);
                }
                return self.decide_failure(
                    &host,
                    id,
                    &call,
                    modern_host,
                    response,
                    (waited, failure),
                );
            }
            (_, Err(error)) => refusal_line(id, &relayed_error(&error)),
        };
        host.send(line);
    }

    /// A call's result decided by its contract (counted, traced, audited, retained, shadowed):
    /// what the host is given, or in observe mode the upstream's result as it came.
    pub(super) fn decided_result(
        &self,
        call: &Call,
        result: &Value,
        waited: Option<Duration>,
        modern_host: bool,
    ) -> Decided {
        call::decided_result(&self.front, call, result, waited, modern_host)
    }

    /// The upstream answered a call with a task: followed, and the host given the proxy's id for
    /// it and the task's fixed fields, where the call could be answered so (`--allow tasks`);
    /// otherwise the fixed failure (a task nobody asked for holds no result to decide).
    fn task_created(
        &self,
        host: &Arc<Host>,
        id: &Value,
        call: &Call,
        result: &Value,
        waited: Option<Duration>,
        modern_host: bool,
    ) {
        let Some((upstream_task, task, extension)) = tasks::created_task(result) else {
            return;
        };
        if !call.may_task {
            return self.decide_failure(
                host,
                id,
                call,
                modern_host,
                Response::incomplete(
                    "the upstream answered with a task, which the call did not ask for",
                ),
                (waited, UpstreamFailure::Unusable),
            );
        }
        let host_id = self.tasks.created(
            upstream_task,
            Arc::clone(&call.contract),
            call.shadow.clone(),
            call.request.clone(),
            host.task_owner(),
            extension,
        );
        call.record.upstream_over(waited, None, SystemTime::now());
        call.record.answered();
        let mut rebuilt = tasks::rebuilt(task, &host_id, extension);
        let answer = if extension {
            rebuilt.insert("resultType".to_owned(), Value::from("task"));
            Value::Object(rebuilt)
        } else {
            json!({"task": rebuilt})
        };
        host.send_result(value_result_line(id, &answer));
    }

    /// The upstream's answer to a host's request about a task, as the host hears it: the task's
    /// fixed fields, and a completed extension task's result decided as a direct call's; `Err`
    /// with the refusal to send instead.
    fn task_answer(
        &self,
        wait: TaskWait,
        result: &Value,
        waited: Option<Duration>,
        modern_host: bool,
    ) -> Result<Value, Refusal> {
        let complete = || json!({"resultType": "complete"});
        Ok(match wait {
            TaskWait::Update => complete(),
            TaskWait::Cancel {
                extension: true, ..
            } => complete(),
            TaskWait::Cancel {
                id,
                extension: false,
            } => Value::Object(tasks::rebuilt(result, &id, false)),
            TaskWait::Get {
                id,
                call,
                extension,
            } => {
                let mut task = tasks::rebuilt(result, &id, extension);
                if extension {
                    match tasks::status(result) {
                        "completed" => {
                            let inner = result.get("result").cloned().unwrap_or(Value::Null);
                            let decided = self.decided_result(&call, &inner, waited, modern_host);
                            task.insert("result".to_owned(), decided.into_value());
                        }
                        "failed" => {
                            // Decided and audited as an upstream that failed the call; the host
                            // hears a fixed error, never the upstream's.
                            self.failure_decision(
                                &call,
                                Response::unreachable("the task failed upstream"),
                                (waited, UpstreamFailure::Error),
                            );
                            task.insert(
                                "error".to_owned(),
                                json!({"code": codes::INTERNAL_ERROR, "message": "the task failed upstream (toolgate passes no upstream text)"}),
                            );
                        }
                        "input_required" => {
                            match era::input_required_for_host(result, &self.allowed) {
                                Some(passed) => {
                                    task.insert(
                                        "inputRequests".to_owned(),
                                        passed["inputRequests"].clone(),
                                    );
                                }
                                None => {
                                    task.insert("status".to_owned(), Value::from("failed"));
                                    task.insert(
                                    "error".to_owned(),
                                    json!({"code": codes::INTERNAL_ERROR, "message": "the task asks for input on a route that is closed (--allow)"}),
                                );
                                }
                            }
                        }
                        _ => {}
                    }
                    task.insert("resultType".to_owned(), Value::from("complete"));
                }
                Value::Object(task)
            }
        })
    }

    pub(super) fn upstream_request(&self, id: &Value, method: &str, raw: Vec<u8>) {
        if method == "ping" {
            self.link.send(Outgoing::response(result_line(id, b"{}")));
            return;
        }
        let host = lock(&self.duplex_host).clone();
        match (Route::of_upstream_method(method), host) {
            (Some(route), Some(host)) if self.allows(route) && host.duplex => {
                self.state()
                    .upstream_requests
                    .insert(id_key(id), Instant::now());
                host.send(raw);
            }
            _ => {
                log(&format!(
                    "refused the upstream's `{method}` request: toolgate passes no server requests to the host unless allowed"
                ));
                self.link.send(Outgoing::response(error_line(
                    id,
                    codes::METHOD_NOT_FOUND,
                    "not available: the client is behind toolgate, which does not pass this request on",
                )));
            }
        }
    }

    pub(super) fn upstream_notification(&self, method: &str, params: &Value, raw: Vec<u8>) {
        let duplex_host = || lock(&self.duplex_host).clone();
        match method {
            "notifications/progress" => {
                let Some(token) = params.get("progressToken") else {
                    return;
                };
                let target = self
                    .state()
                    .pending
                    .get(&id_key(token))
                    .and_then(|pending| {
                        let host_token = pending.progress_token.clone()?;
                        matches!(pending.waiting, Waiting::Call(_))
                            .then(|| pending.host.clone())
                            .flatten()
                            .map(|host| (host, host_token))
                    });
                let Some((host, host_token)) = target else {
                    return log("dropped progress for no pending call");
                };
                // Progress without its free-text message: numbers the proxy writes itself.
                let mut rebuilt = json!({"progressToken": host_token});
                for field in ["progress", "total"] {
                    if let Some(number) = params.get(field).filter(|value| value.is_number()) {
                        rebuilt[field] = number.clone();
                    }
                }
                host.send(notification_line(method, &rebuilt));
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info");
                let data = params.get("data").map(Value::to_string).unwrap_or_default();
                log(&format!("upstream log ({level}): {data}"));
            }
            "notifications/tools/list_changed" if !self.loaded().pins.is_empty() => {
                // Listed again and checked against the pins on the watcher's thread, which then
                // tells the hosts; until then the last listing stands.
                lock(&self.surface).announced += 1;
                self.surface_changed.notify_all();
            }
            "notifications/tools/list_changed" => self.announce_tools_changed(),
            // A 2025-11-25 task's status: its fixed fields, under the host's id for it, to the
            // host (the stdio one) that created it.
            "notifications/tasks/status" if self.allows(Route::Tasks) => {
                let known = params
                    .get("taskId")
                    .and_then(Value::as_str)
                    .and_then(|upstream| self.tasks.by_upstream_id(upstream));
                match (known, duplex_host()) {
                    (Some((host_id, _)), Some(host)) => host.send(notification_line(
                        method,
                        &Value::Object(tasks::rebuilt(params, &host_id, false)),
                    )),
                    _ => log("dropped a task status for no task a host created"),
                }
            }
            // An extension task's notification may hold its result, which a poll decides: a
            // host polls `tasks/get`.
            "notifications/tasks" => log("dropped a task notification: a host polls tasks/get"),
            _ if (method.starts_with("notifications/resources/")
                && self.allows(Route::Resources))
                || (method == "notifications/prompts/list_changed"
                    && self.allows(Route::Prompts)) =>
            {
                match duplex_host() {
                    Some(host) => host.send(raw),
                    None => log(&format!(
                        "dropped the upstream's `{method}` notification: no host holds a connection"
                    )),
                }
            }
            _ => log(&format!("dropped the upstream's `{method}` notification")),
        }
    }

    /// How the upstream is reached, as `network.transport` names it.
    pub(super) fn upstream_transport(&self) -> &'static str {
        if self.link.send_may_block() {
            "pipe"
        } else {
            "tcp"
        }
    }

    /// The gate's decision on a call that has no result to read (the upstream's part `ended`
    /// as it says: how long it took to answer, if it did, and what went wrong), audited and
    /// answered.
    pub(super) fn decide_failure(
        &self,
        host: &Host,
        id: &Value,
        call: &Call,
        modern_host: bool,
        response: Response<'_>,
        ended: (Option<Duration>, UpstreamFailure),
    ) {
        let decision = self.failure_decision(call, response, ended);
        host.send_result(result_line(id, &tools::result_json(&decision, modern_host)));
    }

    /// The decision on an upstream that gave a call no result (`response` says how), made whole
    /// as every call's is.
    fn failure_decision(
        &self,
        call: &Call,
        response: Response<'_>,
        ended: (Option<Duration>, UpstreamFailure),
    ) -> Decision {
        call::failure_decision(&self.front, call, response, ended)
    }

    /// A call's decision on `response`, made whole by the front (shadowed, marked observed,
    /// counted, traced, logged, audited, retained); the call is then answered.
    pub(super) fn decide(&self, call: &Call, response: Response<'_>, now: SystemTime) -> Decision {
        call::decide(&self.front, call, response, now)
    }

    /// A request the upstream will not answer (`failure` says why, for a call).
    pub(super) fn answer_gone(&self, pending: Pending, reason: &str, failure: UpstreamFailure) {
        match (&pending.waiting, &pending.host) {
            (Waiting::Call(call), Some(host)) => self.decide_failure(
                host,
                &pending.id,
                call,
                pending.modern_host,
                Response::unreachable(reason),
                (None, failure),
            ),
            (_, Some(host)) => host.send(error_line(
                &pending.id,
                codes::INTERNAL_ERROR,
                &format!("the upstream server is unavailable ({reason})"),
            )),
            // The proxy's own request: its waiter sees the channel close.
            (_, None) => {}
        }
    }

    /// Answers every request still waiting for the upstream now (the drain deadline passed):
    /// a call with a failure that is not retryable, since its request reached the upstream,
    /// which may have run the tool to the end; the upstream hears each one cancelled. How many
    /// calls were cut.
    pub(crate) fn cut_in_flight(&self, reason: &str) -> usize {
        let mut cut = 0;
        for pending in self.take_pending() {
            self.link.cancel(&pending.upstream_id, reason);
            match (&pending.waiting, &pending.host) {
                (Waiting::Call(call), Some(host)) => {
                    cut += 1;
                    self.decide_failure(
                        host,
                        &pending.id,
                        call,
                        pending.modern_host,
                        Response::incomplete(reason),
                        (None, UpstreamFailure::Cut),
                    );
                }
                _ => self.answer_gone(pending, reason, UpstreamFailure::Cut),
            }
        }
        cut
    }

    /// A host that will read no answer: a 2026-07-28 host that closed its HTTP stream, which the
    /// revision makes a cancellation. Each of its requests still in flight is dropped and
    /// cancelled toward the upstream, so the tool stops instead of running to completion.
    pub(crate) fn host_gone(&self, host: &Arc<Host>) {
        let gone: Vec<Pending> = {
            let mut state = self.state();
            let keys: Vec<String> = state
                .pending
                .iter()
                .filter(|(_, pending)| {
                    pending
                        .host
                        .as_ref()
                        .is_some_and(|asker| Arc::ptr_eq(asker, host))
                })
                .map(|(key, _)| key.clone())
                .collect();
            keys.iter()
                .filter_map(|key| state.pending.remove(key))
                .collect()
        };
        for pending in gone {
            log("a host closed its stream before the answer; the request is cancelled upstream");
            self.link
                .cancel(&pending.upstream_id, "the host closed its stream");
        }
    }

    /// One request's answer was longer than the cap (a transport that knows whose it is): that
    /// request alone fails, a call decided by the gate on the bytes that arrived.
    pub(super) fn too_long_for(&self, id: &Value, prefix: &[u8]) {
        let Some(pending) = self.state().pending.remove(&id_key(id)) else {
            return log("dropped an oversized answer to no pending request");
        };
        log(
            "the upstream's answer to one request is longer than the proxy's line cap; that request is answered with the fixed failure",
        );
        match (&pending.waiting, &pending.host) {
            (Waiting::Call(call), Some(host)) => {
                let started = Instant::now();
                let now = SystemTime::now();
                call.record.upstream_over(
                    Some(started.saturating_duration_since(pending.since)),
                    Some(UpstreamFailure::TooLong),
                    now,
                );
                // Cut short, the bytes never parse; a result is never admitted from a prefix.
                let response = never_admitted(
                    call,
                    Response::body(prefix),
                    "an answer longer than the line cap",
                    now,
                );
                let decision = self.decide(call, response, now);
                host.send_result(result_line(
                    &pending.id,
                    &tools::result_json(&decision, pending.modern_host),
                ));
            }
            _ => self.answer_gone(
                pending,
                "its answer was longer than the line cap",
                UpstreamFailure::TooLong,
            ),
        }
    }

    /// Every request still waiting for the upstream, removed from the table, oldest first (so
    /// the hosts hear about them in the order they asked).
    pub(super) fn take_pending(&self) -> Vec<Pending> {
        let mut drained: Vec<Pending> = self
            .state()
            .pending
            .drain()
            .map(|(_, pending)| pending)
            .collect();
        drained.sort_by_key(|pending| pending.since);
        drained
    }

    pub(super) fn upstream_gone(&self, reason: &str) {
        {
            let mut state = self.state();
            if state.gone.is_none() {
                state.gone = Some(reason.to_owned());
            }
        }
        for pending in self.take_pending() {
            self.answer_gone(pending, reason, UpstreamFailure::Unavailable);
        }
    }

    /// Answers every request that has waited longer than the timeout.
    pub(super) fn expire(&self) {
        self.expire_input_rounds();
        let expired: Vec<Pending> = {
            let mut state = self.state();
            let now = Instant::now();
            let keys: Vec<String> = state
                .pending
                .iter()
                .filter(|(_, pending)| {
                    pending.host.is_some() && now.duration_since(pending.since) >= self.timeout
                })
                .map(|(key, _)| key.clone())
                .collect();
            let mut expired: Vec<Pending> = keys
                .iter()
                .filter_map(|key| state.pending.remove(key))
                .collect();
            expired.sort_by_key(|pending| pending.since);
            expired
        };
        for pending in expired {
            log(
                "a request waited past the timeout; answered with the fixed failure, and cancelled upstream",
            );
            self.link
                .cancel(&pending.upstream_id, "no answer within the proxy's timeout");
            self.answer_gone(
                pending,
                &format!("no answer within {:?}", self.timeout),
                UpstreamFailure::Timeout,
            );
        }
    }
}
