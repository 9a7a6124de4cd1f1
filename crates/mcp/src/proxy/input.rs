//! A modern upstream's `input_required` for a handshake-era host, where the operator opened the
//! routes it asks for: the proxy asks the host itself, one request of the legacy kind per input
//! request (`elicitation/create`, `sampling/createMessage`, `roots/list`), every string in them
//! made inert, and once the host has answered them all, sends the call again with
//! `inputResponses` and the upstream's `requestState`, gated like any call. A refusal, an error
//! or no answer within [`INPUT_PATIENCE`] ends the call with the fixed failure, not retryable.

use super::*;
use serde_json::Map;

/// How long a person has to answer: a form is filled by hand, so longer than a call's timeout.
pub(super) const INPUT_PATIENCE: Duration = Duration::from_secs(600);

/// The most input requests one round may hold: each is a request to the host.
const MOST_INPUT_REQUESTS: usize = 8;

/// One round of asking the host for a call's input.
pub(crate) struct Round {
    host: Arc<Host>,
    /// The call as the proxy holds it, answered with the fixed failure if the round fails.
    call: Box<Call>,
    /// The host's id of the call.
    id: Value,
    request_state: Option<Value>,
    /// The host's answers so far, by input request.
    responses: Map<String, Value>,
    /// How many input requests are still unanswered.
    left: usize,
    since: Instant,
    /// Whether the round has ended (answered, failed or expired).
    over: bool,
}

impl Proxy {
    /// Starts a round for `result` (an `input_required` answer to `call`) when this host can take
    /// part: a handshake-era host on a connection that carries requests, which declared the
    /// capability of every route asked for, each opened by the operator. The call comes back
    /// when it cannot.
    pub(super) fn ask_host_for_input(
        &self,
        host: &Arc<Host>,
        id: &Value,
        call: Box<Call>,
        result: &Value,
    ) -> Result<(), Box<Call>> {
        let Some(session) = host
            .session()
            .filter(|_| host.duplex && call.retry.is_some())
        else {
            return Err(call);
        };
        let Some(requests) = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .filter(|requests| (1..=MOST_INPUT_REQUESTS).contains(&requests.len()))
        else {
            return Err(call);
        };
        let mut asks = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let route = request
                .get("method")
                .and_then(Value::as_str)
                .and_then(|method| Route::of_upstream_method(method).map(|route| (method, route)));
            match route {
                Some((method, route))
                    if self.allows(route)
                        && route.is_client_side()
                        && session.capabilities.get(route.capability()).is_some() =>
                {
                    let params = era::inert_value(request.get("params").unwrap_or(&Value::Null));
                    asks.push((key.clone(), method.to_owned(), params));
                }
                _ => return Err(call),
            }
        }
        let round = Arc::new(Mutex::new(Round {
            host: Arc::clone(host),
            call,
            id: id.clone(),
            request_state: result
                .get("requestState")
                .filter(|state| state.is_string())
                .cloned(),
            responses: Map::new(),
            left: asks.len(),
            since: Instant::now(),
            over: false,
        }));
        log(
            "asking the host for the input the upstream requires (input_required), on an opened route",
        );
        for (key, method, params) in asks {
            let ask = Value::from(format!("toolgate-input-{}", self.next_upstream_id()));
            self.state()
                .input_asks
                .insert(id_key(&ask), (Arc::clone(&round), key));
            host.send(message::request_line(&ask, &method, &params));
        }
        Ok(())
    }

    /// A host's answer to one of the proxy's own input requests; `false` when `id` is none of
    /// them.
    pub(super) fn input_answered(&self, id: &Value, outcome: &Result<Value, Value>) -> bool {
        let Some((round, key)) = self.state().input_asks.remove(&id_key(id)) else {
            return false;
        };
        let mut round = lock(&round);
        if round.over {
            return true;
        }
        let declined = match outcome {
            Ok(answer) => {
                round.responses.insert(key, answer.clone());
                round.left -= 1;
                if round.left > 0 {
                    return true;
                }
                None
            }
            Err(_) => Some("the host answered the input request with an error"),
        };
        round.over = true;
        match declined {
            Some(reason) => self.fail_round(&round, reason),
            None => {
                // The call again, as a modern host would send it: its params, the answers and
                // the upstream's state; gated and answered like any call.
                let mut params = round.call.retry.clone().unwrap_or_default();
                params["inputResponses"] = Value::Object(round.responses.clone());
                if let Some(state) = &round.request_state {
                    params["requestState"] = state.clone();
                }
                let (host, call_id) = (Arc::clone(&round.host), round.id.clone());
                drop(round);
                self.host_request(&host, call_id, "tools/call", params);
            }
        }
        true
    }

    /// Ends every round the host has left unanswered past [`INPUT_PATIENCE`].
    pub(super) fn expire_input_rounds(&self) {
        let expired: Vec<Arc<Mutex<Round>>> = {
            let mut state = self.state();
            let mut expired: Vec<Arc<Mutex<Round>>> = Vec::new();
            state.input_asks.retain(|_, (round, _)| {
                let stale = lock(round).since.elapsed() >= INPUT_PATIENCE;
                if stale && !expired.iter().any(|seen| Arc::ptr_eq(seen, round)) {
                    expired.push(Arc::clone(round));
                }
                !stale
            });
            expired
        };
        for round in expired {
            let mut round = lock(&round);
            if !round.over {
                round.over = true;
                self.fail_round(&round, "the host did not answer the input request in time");
            }
        }
    }

    fn fail_round(&self, round: &Round, reason: &str) {
        log(&format!(
            "{reason}; the call gets the fixed failure, not retryable"
        ));
        self.decide_failure(
            &round.host,
            &round.id,
            &round.call,
            false,
            Response::incomplete(reason),
            (Some(round.since.elapsed()), UpstreamFailure::Unusable),
        );
    }
}
