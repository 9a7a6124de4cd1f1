//! One HTTP request on the listener: routed, its caller admitted and held to its rate, and a
//! POST's JSON-RPC messages forwarded to the proxy, their answers written back as JSON or as a
//! stream of events.

use super::*;

pub(super) async fn handle(
    proxy: Arc<Proxy>,
    options: &Listen,
    requests: &Arc<Semaphore>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Response<Body> {
    if request.method() == Method::GET
        && let Some(metadata) = options
            .auth
            .as_ref()
            .and_then(|auth| auth.metadata(request.uri().path()))
    {
        // RFC 9728 §3.2: the metadata, as JSON, to anyone (it is what a client reads first).
        return json(
            StatusCode::OK,
            serde_json::to_vec(metadata).unwrap_or_default(),
        );
    }
    if options.serve_metrics
        && request.uri().path() == toolgate_telemetry::METRICS_PATH
        && let Some(metrics) = &options.metrics
    {
        // The metrics name tools, versions, digests and counts: with a scrape token, only to
        // whoever sends it; under --auth without one, not here at all (--metrics ADDR serves
        // them on a port of the operator's choosing); else, like /healthz, to anyone.
        match (&options.metrics_token, &options.auth) {
            (Some(wanted), _) if !scrape_token_matches(request.headers(), wanted) => {
                let mut response = text(
                    StatusCode::UNAUTHORIZED,
                    "/metrics needs the scrape token (Authorization: Bearer …, --metrics-token-file)\n",
                );
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
            (None, Some(_)) => {
                return text(
                    StatusCode::NOT_FOUND,
                    "not found: under --auth the metrics are served on --metrics ADDR, or here with --metrics-token-file\n",
                );
            }
            _ => {
                return toolgate_telemetry::scrape_response(metrics, &request)
                    .map(|body| body.map_err(|never| match never {}).boxed());
            }
        }
    }
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/healthz") if proxy.healthy() => text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/healthz") => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the upstream process exited and is not started again (--upstream-restart)\n",
        ),
        (&Method::GET, "/readyz") if proxy.draining() => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "draining: the proxy is stopping (SIGTERM); it answers the calls in flight\n",
        ),
        (&Method::GET, "/readyz") if proxy.ready() => text(StatusCode::OK, "ready\n"),
        (&Method::GET, "/readyz") => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the upstream's era is not settled, or it is gone or not answering\n",
        ),
        (&Method::POST, ENDPOINT) => post(proxy, options, requests, peer, request).await,
        (_, ENDPOINT) => {
            let mut response = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "the MCP endpoint takes POST only: no session stream, no session to delete\n",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            response
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: the MCP endpoint is /mcp\n",
        ),
    }
}

/// Who asks, and whether they may now: their verified token's caller under `--auth`, each
/// held to the caller rate (a token not verified before, or none, to its address's first, before
/// any signature is checked, so a stream of junk tokens is answered 429 without one); or why
/// not, and the answer to give.
async fn admit_caller(
    options: &Listen,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> Result<Option<Grant>, Box<(CallerRefusal, Response<Body>)>> {
    let grant = match &options.auth {
        Some(auth) => {
            let token = auth.bearer_token(headers);
            let cached = token.as_ref().ok().and_then(|token| auth.cached(token));
            if cached.is_none() {
                rate_check(options, format!("address {}", peer.ip())).await?;
            }
            let verified = match (token, cached) {
                (Err(denied), _) => Err(denied),
                (Ok(_), Some(answer)) => answer,
                (Ok(token), None) => auth.verify(token).await,
            }
            .and_then(|caller| auth.admits(&caller).map(|()| caller))
            .map_err(|denied| Box::new((refusal_of(&denied), unauthorized(auth, &denied))))?;
            Some(Grant {
                caller: verified,
                authorizer: Arc::clone(auth),
            })
        }
        None => None,
    };
    rate_check(
        options,
        match &grant {
            Some(grant) => format!("caller {}", grant.caller.subject),
            None => format!("address {}", peer.ip()),
        },
    )
    .await?;
    Ok(grant)
}

/// Holds `key` (a caller, or an address) to `--caller-rate`: `Ok`, or the refusal to answer.
async fn rate_check(
    options: &Listen,
    key: String,
) -> Result<(), Box<(CallerRefusal, Response<Body>)>> {
    let Some(rate) = &options.rate else {
        return Ok(());
    };
    match rate.check(&key).await {
        Ok(()) => Ok(()),
        Err(OverLimit::Wait(wait)) => Err(Box::new((CallerRefusal::Rate, too_many(wait)))),
        Err(OverLimit::StoreUnavailable) => {
            let mut response = json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                codes::INTERNAL_ERROR,
                "the caller rate limit cannot be checked now; try again",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Err(Box::new((CallerRefusal::RateStoreUnavailable, response)))
        }
    }
}

async fn post(
    proxy: Arc<Proxy>,
    options: &Listen,
    requests: &Arc<Semaphore>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Response<Body> {
    let refused_caller = |refusal: CallerRefusal| {
        if let Some(metrics) = &options.metrics {
            metrics.caller_refused(refusal);
        }
    };
    if let Err(refused) = check_origin(request.headers(), options) {
        refused_caller(CallerRefusal::Origin);
        return json_error(
            StatusCode::FORBIDDEN,
            &Value::Null,
            codes::INVALID_REQUEST,
            refused,
        );
    }
    // Who asks, before anything of theirs is read: a token that does not verify costs the
    // listener no body.
    let grant = match admit_caller(options, peer, request.headers()).await {
        Ok(grant) => grant,
        Err(refused) => {
            let (refusal, response) = *refused;
            refused_caller(refusal);
            return response;
        }
    };
    // A request is read and answered holding one of the permits, which bounds the bodies and
    // answers held at once; its turn is waited for no longer than a body may take.
    let permit = match tokio::time::timeout(
        options.limits.body_timeout,
        Arc::clone(requests).acquire_owned(),
    )
    .await
    {
        Ok(Ok(permit)) => permit,
        _ => {
            BUSY.log(&format!("({})", options.limits.max_requests_in_flight));
            let mut response = json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                codes::INTERNAL_ERROR,
                "the proxy is answering as many requests as it may; try again",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
    };
    let wants_stream = accepts(request.headers(), "text/event-stream");
    let headers = request.headers().clone();
    let traceparent = headers
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .filter(|value| value.len() <= 128)
        .map(str::to_owned);
    let body = match tokio::time::timeout(
        options.limits.body_timeout,
        Limited::new(request.into_body(), options.body_cap).collect(),
    )
    .await
    {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(_)) => {
            return json_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Value::Null,
                codes::INVALID_REQUEST,
                &format!(
                    "a message longer than {} bytes; not forwarded",
                    options.body_cap
                ),
            );
        }
        Err(_) => {
            return json_error(
                StatusCode::REQUEST_TIMEOUT,
                &Value::Null,
                codes::INVALID_REQUEST,
                &format!(
                    "the body did not arrive within {:?}; not forwarded",
                    options.limits.body_timeout
                ),
            );
        }
    };
    let parsed = match message::parse(&body) {
        Ok(parsed) => parsed,
        Err(why) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                codes::PARSE_ERROR,
                &format!("not forwarded: {why}"),
            );
        }
    };
    let session = session_of(&headers);
    let (id, method, params) = match parsed {
        Message::Response { .. } => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                codes::INVALID_REQUEST,
                "a client does not send responses over Streamable HTTP: toolgate passes no server requests to an HTTP host",
            );
        }
        Message::Notification { method, params } => {
            if let Err(mismatch) = check_headers(&headers, &method, &params) {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    &Value::Null,
                    modern_codes::HEADER_MISMATCH,
                    &mismatch,
                );
            }
            let host = Host::with_peer(Arc::new(|_, _| {}), false, session, grant, None);
            forward(
                &proxy,
                &host,
                Message::Notification { method, params },
                body,
            )
            .await;
            return empty(StatusCode::ACCEPTED);
        }
        Message::Request { id, method, params } => (id, method, params),
    };
    if let Err(mismatch) = check_headers(&headers, &method, &params) {
        return json_error(
            StatusCode::BAD_REQUEST,
            &id,
            modern_codes::HEADER_MISMATCH,
            &mismatch,
        );
    }
    // A call's tool name is read once, strictly, before anything decides on it: a name that
    // is not a string (`["weather"]`) is refused, never taken for no name.
    let tool_name = match (method.as_str(), params.get("name")) {
        ("tools/call", Some(Value::String(name))) => Some(name.as_str()),
        ("tools/call", _) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &id,
                codes::INVALID_PARAMS,
                "tools/call needs a tool `name`, a string",
            );
        }
        _ => None,
    };
    // A tool the caller may not call is refused here and never reaches the upstream; one with
    // no contract is refused alike, so that the answer tells a caller nothing of the tools it
    // cannot see.
    if let (Some(grant), Some(name)) = (&grant, tool_name)
        && let Err(denied) = grant
            .authorizer
            .may_call(&grant.caller, proxy.has_contract(name).then_some(name))
    {
        refused_caller(refusal_of(&denied));
        return unauthorized(&grant.authorizer, &denied);
    }
    let modern = matches!(era::request_era(&params), Ok(RequestEra::Modern { .. }));
    let streams = wants_stream
        && params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .is_some();
    let (reply, progressed, answered) = answer_channels();
    let host = Host::with_peer(reply, false, session, grant, traceparent);
    // Until the answer is had, a modern host that goes away (its stream closed: the future
    // dropped) has cancelled the request.
    let waiting = Waiting {
        proxy: Arc::clone(&proxy),
        host: modern.then(|| Arc::clone(&host)),
    };
    let is_initialize = method == "initialize";
    let request = Message::Request {
        id: id.clone(),
        method,
        params,
    };
    forward(&proxy, &host, request, body).await;
    drop(host);
    if streams {
        return sse(progressed, answered, waiting, permit);
    }
    let Ok((line, answer)) = answered.await else {
        return json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &id,
            codes::INTERNAL_ERROR,
            "the proxy ended the request without an answer",
        );
    };
    waiting.answered();
    let status = answer.status();
    let opened = is_initialize && status == StatusCode::OK && answer.result;
    let mut response = json(status, line);
    if opened {
        // A handshake-era host's session: what ties its later `notifications/cancelled` to the
        // requests it made. Nothing else is kept for it.
        response
            .headers_mut()
            .insert("mcp-session-id", new_session_id());
    }
    drop(permit);
    response
}

/// Where one request's answers go: its response (one line, always kept) and the progress before
/// it, of which a stream nobody reads holds [`PROGRESS_HELD`] lines, never more (the rest are
/// dropped: progress is advisory).
pub(super) fn answer_channels() -> (crate::proxy::Reply, mpsc::Receiver<Vec<u8>>, Answered) {
    let (answer, answered) = oneshot::channel::<(Vec<u8>, Answer)>();
    let (progress, progressed) = mpsc::channel::<Vec<u8>>(PROGRESS_HELD);
    let answer = Mutex::new(Some(answer));
    let reply: crate::proxy::Reply = Arc::new(move |line, sent| {
        // Read once, here (unless the proxy said what it wrote): the response's status and
        // kind go with it.
        let read = match sent {
            Sent::Result => Answer::RESULT,
            Sent::Line => Answer::of(&line),
        };
        debug_assert_eq!(
            read,
            Answer::of(&line),
            "the proxy told its line's kind wrong"
        );
        if read.response {
            if let Some(answer) = lock(&answer).take() {
                let _ = answer.send((line, read));
            }
        } else {
            let _ = progress.try_send(line);
        }
    });
    (reply, progressed, answered)
}

/// Hands a host's message (read from `body`) to the proxy, on a blocking thread where
/// forwarding it may write to a stdio upstream's input, which blocks when the upstream stops
/// reading (its watchdog then stops it): that must never hold a worker that answers `/healthz`.
async fn forward(proxy: &Arc<Proxy>, host: &Arc<Host>, message: Message, body: Bytes) {
    if !proxy.forwarding_may_block() {
        // An HTTP upstream's sends are tasks of their own: nothing here waits.
        return proxy.host_parsed(host, Ok(message), body.to_vec());
    }
    let proxy = Arc::clone(proxy);
    let host = Arc::clone(host);
    let _ =
        tokio::task::spawn_blocking(move || proxy.host_parsed(&host, Ok(message), body.to_vec()))
            .await;
}

/// A modern request not yet answered: dropped before [`Waiting::answered`], its host has gone,
/// and the proxy cancels the request toward the upstream.
pub(super) struct Waiting {
    proxy: Arc<Proxy>,
    host: Option<Arc<Host>>,
}

impl Waiting {
    pub(super) fn answered(mut self) {
        self.host = None;
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // Cancelling never blocks (a stdio link queues it for a writer of its own).
        if let Some(host) = self.host.take() {
            self.proxy.host_gone(&host);
        }
    }
}
