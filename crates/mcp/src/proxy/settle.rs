//! Settling the upstream's era before any host request is forwarded: the `server/discover`
//! probe, and the `initialize` handshake the proxy makes itself with a legacy upstream; the
//! proxy's own requests to the upstream.

use super::*;

impl Proxy {
    /// Settles the upstream's era before any host request is forwarded, as the revision's stdio
    /// compatibility rules describe: a `server/discover` probe; a `DiscoverResult` or a modern
    /// error means a modern upstream (and a version it lists is chosen), any other error or
    /// silence a legacy one, with which the proxy opens the session itself (`initialize`, then
    /// `notifications/initialized`) declaring only the opened client-side routes.
    pub(crate) fn settle(&self) -> &Settled {
        let settled = self.probe();
        match &settled {
            Settled::Modern { version, .. } | Settled::Legacy { version, .. } => {
                self.link.agreed(version);
            }
            Settled::Unusable(reason) => log(&format!(
                "the upstream cannot be served: {reason}; every request is answered with an error"
            )),
        }
        self.settled.get_or_init(|| settled)
    }

    pub(super) fn probe(&self) -> Settled {
        let capabilities = era::strip_client_capabilities(&json!({}), &self.allowed);
        let discover = json!({"_meta": {
            era::meta::PROTOCOL_VERSION: MODERN_VERSIONS[0],
            era::meta::CLIENT_CAPABILITIES: capabilities,
            era::meta::CLIENT_INFO: era::implementation(),
        }});
        let window = PROBE_WINDOW.min(self.timeout);
        match self.ask("server/discover", discover, window) {
            // A DiscoverResult lists the revisions spoken; a result without that list is a
            // legacy server answering a method it does not know with something.
            Some(Ok(result)) if result.get("supportedVersions").is_some_and(Value::is_array) => {
                let supported = versions(result.get("supportedVersions"));
                match MODERN_VERSIONS
                    .iter()
                    .find(|version| supported.iter().any(|listed| listed == *version))
                {
                    Some(version) => Settled::Modern {
                        version: (*version).to_owned(),
                        capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
                    },
                    None => self.legacy_or(&supported),
                }
            }
            Some(Err(error))
                if error.get("code").and_then(Value::as_i64)
                    == Some(modern_codes::UNSUPPORTED_PROTOCOL_VERSION) =>
            {
                let supported = versions(error.get("data").and_then(|data| data.get("supported")));
                self.legacy_or(&supported)
            }
            None if self.state().gone.is_some() => Settled::Unusable(format!(
                "it ended before answering ({})",
                self.state().gone.clone().unwrap_or_default()
            )),
            // Any other error, or silence: a legacy upstream.
            _ => self.handshake(LEGACY_VERSIONS[0]),
        }
    }

    /// A modern upstream that speaks none of the proxy's modern revisions: the legacy
    /// handshake if it lists a legacy revision the proxy speaks, else unusable.
    pub(super) fn legacy_or(&self, supported: &[String]) -> Settled {
        match LEGACY_VERSIONS
            .iter()
            .find(|version| supported.iter().any(|listed| listed == *version))
        {
            Some(version) => self.handshake(version),
            None => Settled::Unusable(format!(
                "it speaks {}; toolgate speaks {}",
                if supported.is_empty() {
                    "no revision it names".to_owned()
                } else {
                    supported.join(", ")
                },
                era::supported_versions().join(", ")
            )),
        }
    }

    pub(super) fn handshake(&self, version: &str) -> Settled {
        let capabilities = era::strip_client_capabilities(
            &json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}, "tasks": {}}),
            &self.allowed,
        );
        let params = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": era::implementation(),
        });
        match self.ask("initialize", params, self.timeout) {
            Some(Ok(result)) => {
                let chosen = result
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !LEGACY_VERSIONS.contains(&chosen) {
                    return Settled::Unusable(format!(
                        "it chose protocol version {chosen:?} in the handshake; toolgate speaks {}",
                        LEGACY_VERSIONS.join(", ")
                    ));
                }
                self.link.send(Outgoing {
                    line: notification_line("notifications/initialized", &json!({})),
                    id: None,
                    method: Some("notifications/initialized".to_owned()),
                    name: None,
                    traceparent: None,
                    meta_version: None,
                });
                Settled::Legacy {
                    version: chosen.to_owned(),
                    capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
                }
            }
            Some(Err(error)) => {
                let supported = versions(error.get("data").and_then(|data| data.get("supported")));
                Settled::Unusable(format!(
                    "it refused the handshake (error {}){}",
                    error
                        .get("code")
                        .and_then(Value::as_i64)
                        .unwrap_or_default(),
                    if supported.is_empty() {
                        String::new()
                    } else {
                        format!(" and speaks {}", supported.join(", "))
                    }
                ))
            }
            None => Settled::Unusable("it did not answer the handshake".to_owned()),
        }
    }

    /// Sends the proxy's own request and waits up to `window` for its answer (`None`: no
    /// answer, or the upstream is gone).
    pub(super) fn ask(
        &self,
        method: &str,
        params: Value,
        window: Duration,
    ) -> Option<Result<Value, Value>> {
        // The proxy asks from threads that read no messages (settling, before the host is read;
        // a listing's caller): a reader holding its writes would wait on its own held request.
        debug_assert!(!batch::holding(), "asked while holding writes back");
        let (answer, answered) = mpsc::channel();
        let id = self.next_upstream_id();
        let key = id_key(&id);
        self.state().pending.insert(
            key.clone(),
            Pending {
                host: None,
                upstream_id: id.clone(),
                id: id.clone(),
                modern_host: false,
                progress_token: None,
                waiting: Waiting::Own(answer),
                since: Instant::now(),
            },
        );
        let sent = self.link.send(Outgoing {
            line: message::request_line(&id, method, &params),
            id: Some(id),
            method: Some(method.to_owned()),
            name: None,
            traceparent: None,
            meta_version: None,
        });
        let outcome = if sent {
            answered.recv_timeout(window).ok()
        } else {
            None
        };
        self.state().pending.remove(&key);
        outcome
    }

    /// The proxy's own request to a settled upstream, in its era (a modern upstream's request
    /// carries the protocol fields), waiting up to `window`.
    pub(crate) fn request(
        &self,
        method: &str,
        params: &Value,
        window: Duration,
    ) -> Option<Result<Value, Value>> {
        let params = era::params_for_upstream(
            params.clone(),
            self.upstream().modern_version(),
            &json!({}),
            &self.allowed,
        );
        self.ask(method, params, window)
    }

    pub(super) fn next_upstream_id(&self) -> Value {
        Value::from(self.next_id.fetch_add(1, Ordering::Relaxed))
    }
}
