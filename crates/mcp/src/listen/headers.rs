//! The HTTP headers the listener reads and writes: `Origin` (DNS rebinding), the MCP headers a
//! request must agree with its body on, sessions, and the header value codec (also the HTTP
//! upstream's).

use super::*;

/// The handshake-era session a request names (`Mcp-Session-Id`), when it is one the listener
/// could have minted: visible ASCII, at most 128 bytes.
pub(super) fn session_of(headers: &HeaderMap) -> Option<Arc<str>> {
    let value = headers.get("mcp-session-id")?.to_str().ok()?;
    (!value.is_empty()
        && value.len() <= 128
        && value.bytes().all(|byte| (0x21..=0x7e).contains(&byte)))
    .then(|| Arc::from(value))
}

/// A new session id: 128 bits from the operating system's generator, in hex.
pub(super) fn new_session_id() -> HeaderValue {
    HeaderValue::from_str(&crate::random_id())
        .unwrap_or_else(|_| HeaderValue::from_static("toolgate"))
}

/// DNS rebinding protection: a page on another site that resolved its name to this machine
/// sends its own `Host` and `Origin`. On a loopback listener the `Host` must name a loopback
/// host; an `Origin`, when sent, must be a loopback one (on a loopback listener) or one the
/// operator listed.
pub(super) fn check_origin(headers: &HeaderMap, options: &Listen) -> Result<(), &'static str> {
    if options.loopback {
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        if !is_loopback_authority(host) {
            return Err(
                "this Host is not the loopback address the proxy listens on (DNS rebinding)",
            );
        }
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let listed = options
        .allowed_origins
        .iter()
        .any(|allowed| allowed.as_bytes() == origin.as_bytes());
    let loopback = options.loopback
        && origin.to_str().is_ok_and(|origin| {
            origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .is_some_and(is_loopback_authority)
        });
    if listed || loopback {
        Ok(())
    } else {
        Err("this Origin is not allowed (toolgate mcp-proxy --allow-origin)")
    }
}

/// Whether a `host[:port]` names the loopback interface.
pub(super) fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Whether a request's headers agree with its body. A modern request must send
/// `MCP-Protocol-Version`, `Mcp-Method` and (for a named call) `Mcp-Name`, each equal to what
/// its body says. A handshake-era request (its `_meta` names no revision) need not send them,
/// but a balancer rule may read them all the same: one it sends must agree too, and a modern
/// `MCP-Protocol-Version` on it disagrees with its body.
pub(super) fn check_headers(
    headers: &HeaderMap,
    method: &str,
    params: &Value,
) -> Result<(), String> {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| value.to_str().unwrap_or("\u{fffd}"))
    };
    let version_header = header("mcp-protocol-version");
    let modern = match era::request_era(params) {
        Ok(RequestEra::Modern { version, .. }) => Some(version),
        // The era's own refusal (unknown revision, missing fields) is the proxy's to answer.
        Err(_) => return Ok(()),
        Ok(RequestEra::Legacy) => None,
    };
    match (&modern, version_header) {
        (Some(version), Some(named)) if named == version => {}
        (Some(version), Some(named)) => {
            return Err(format!(
                "Header mismatch: MCP-Protocol-Version header value {:?} does not match the body's {version:?}",
                shown(named)
            ));
        }
        (Some(_), None) => {
            return Err("Header mismatch: the MCP-Protocol-Version header is missing".to_owned());
        }
        (None, Some(named)) if era::MODERN_VERSIONS.contains(&named) => {
            return Err(format!(
                "Header mismatch: MCP-Protocol-Version is {named} but the body's _meta names no protocol version"
            ));
        }
        (None, _) => {}
    }
    let required = modern.is_some();
    match header("mcp-method") {
        Some(named) if named == method => {}
        Some(named) => {
            return Err(format!(
                "Header mismatch: Mcp-Method header value {:?} does not match the body's {:?}",
                shown(named),
                shown(method)
            ));
        }
        None if required => {
            return Err("Header mismatch: the Mcp-Method header is missing".to_owned());
        }
        None => {}
    }
    let named_in_body = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        _ => None,
    };
    match (header("mcp-name").map(decode_header_value), named_in_body) {
        (Some(Some(named)), Some(in_body)) if named == in_body => Ok(()),
        (Some(Some(named)), Some(in_body)) => Err(format!(
            "Header mismatch: Mcp-Name header value {:?} does not match the body's {:?}",
            shown(&named),
            shown(in_body)
        )),
        (Some(Some(named)), None) => Err(format!(
            "Header mismatch: Mcp-Name header value {:?} names nothing the body names",
            shown(&named)
        )),
        (Some(None), _) => {
            Err("Header mismatch: the Mcp-Name header is not valid base64".to_owned())
        }
        (None, Some(_)) if required => {
            Err("Header mismatch: the Mcp-Name header is missing".to_owned())
        }
        (None, _) => Ok(()),
    }
}

/// A header value, decoded from the revision's `=?base64?…?=` form when it has it.
pub(crate) fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_owned()),
    }
}

/// A value as a header carries it: as is when it is plain visible ASCII without edge spaces,
/// else in the revision's `=?base64?…?=` form (which a plain value of that shape takes too).
pub(crate) fn encode_header_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|byte| byte == b' ' || byte == b'\t' || (0x21..=0x7e).contains(&byte))
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && (!value.starts_with("=?base64?") || !value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// Text from a header or a host's body, as the proxy quotes it in an error: capped, escaped.
pub(super) fn shown(text: &str) -> String {
    crate::lines::inert(text, 200)
}

pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.split(',').any(|part| part.trim().starts_with(media)))
}
