//! JSON-RPC 2.0 messages, one per line, read with the gate's strict parser (a duplicate member
//! name anywhere in a message is a refusal, never a silent last-wins) and written by the proxy
//! itself, so every byte the host receives is one the proxy put there.

use serde_json::Value;
use toolgate_gate::internals::{Node, parse_strict_json};

/// How deep a JSON-RPC message may nest: the gate's ceiling for a contract's depth, which the
/// contract's own limit then applies to the tool's result inside it.
pub(crate) const MAX_MESSAGE_DEPTH: usize = 100;

/// One message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Message {
    /// A request: it has an id and expects a response.
    Request {
        /// The id, exactly as sent: `1` and `"1"` are different ids.
        id: Value,
        /// The method.
        method: String,
        /// The parameters, if any.
        params: Value,
    },
    /// A notification: no id, no response.
    Notification {
        /// The method.
        method: String,
        /// The parameters, if any.
        params: Value,
    },
    /// A response to a request.
    Response {
        /// The id of the request it answers.
        id: Value,
        /// `Ok(result)` or `Err(error)`.
        outcome: Result<Value, Value>,
    },
}

/// Parses one line: strict JSON (no duplicate member names, no invalid UTF-8, bounded depth),
/// then the JSON-RPC 2.0 shape. Batches (arrays) are refused.
pub(crate) fn parse(line: &[u8]) -> Result<Message, String> {
    classify(parse_strict_json(line, MAX_MESSAGE_DEPTH)?)
}

/// The JSON-RPC 2.0 shape of a message already parsed strictly.
pub(crate) fn classify(value: Value) -> Result<Message, String> {
    let Value::Object(mut members) = value else {
        return Err("not a JSON-RPC message object (batches are not supported)".to_owned());
    };
    if members.get("jsonrpc") != Some(&Value::from("2.0")) {
        return Err("not JSON-RPC 2.0 (`jsonrpc` must be \"2.0\")".to_owned());
    }
    let id = members.remove("id");
    if let Some(id) = &id
        && !(id.is_string() || id.is_number() || id.is_null())
    {
        return Err("an id must be a string or a number".to_owned());
    }
    let params = members.remove("params").unwrap_or(Value::Null);
    match (members.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) if !id.is_null() => {
            Ok(Message::Request { id, method, params })
        }
        (Some(Value::String(_)), Some(_)) => Err("a request's id must not be null".to_owned()),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(_), _) => Err("`method` must be a string".to_owned()),
        (None, Some(id)) => match (members.remove("result"), members.remove("error")) {
            (Some(result), None) => Ok(Message::Response {
                id,
                outcome: Ok(result),
            }),
            (None, Some(error)) if error.is_object() => Ok(Message::Response {
                id,
                outcome: Err(error),
            }),
            _ => Err("a response has exactly one of `result` and an `error` object".to_owned()),
        },
        (None, None) => Err("neither a request, a notification nor a response".to_owned()),
    }
}

/// A response carrying a `result`, read in place from the strictly parsed document: its id and
/// its result, or `None` for anything else (a request, a notification, an error, a malformed
/// message), which [`classify`] then reads in full.
pub(crate) fn result_in_place<'d>(root: Node<'d>) -> Option<(Value, Node<'d>)> {
    if root.get("jsonrpc")?.as_str() != Some("2.0")
        || root.get("method").is_some()
        || root.get("error").is_some()
    {
        return None;
    }
    let id = root.get("id")?;
    if id.as_str().is_none() && id.as_number().is_none() {
        return None;
    }
    Some((id.to_value(), root.get("result")?))
}

/// The key that matches a response to its request: the id's exact JSON text, so the number `1`
/// and the string `"1"` never match each other.
pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

/// A response line carrying `result`, given as JSON text the proxy built.
pub(crate) fn result_line(id: &Value, result: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        id_key(id)
    )
    .into_bytes()
}

/// An error response line. The message is the proxy's own words.
pub(crate) fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{code},"message":{}}}}}"#,
        id_key(id),
        Value::from(message)
    )
    .into_bytes()
}

/// An error response line carrying an error object as it is.
pub(crate) fn error_object_line(id: &Value, error: &Value) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id_key(id)).into_bytes()
}

/// A notification line.
pub(crate) fn notification_line(method: &str, params: &Value) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","method":{},"params":{params}}}"#,
        Value::from(method)
    )
    .into_bytes()
}

/// A request line.
pub(crate) fn request_line(id: &Value, method: &str, params: &Value) -> Vec<u8> {
    let mut line = format!(
        r#"{{"id":{},"jsonrpc":"2.0","method":{}"#,
        id_key(id),
        Value::from(method)
    );
    if !params.is_null() {
        line.push_str(r#","params":"#);
        line.push_str(&params.to_string());
    }
    line.push('}');
    line.into_bytes()
}

/// JSON-RPC's error codes the proxy answers with.
pub(crate) mod codes {
    /// The line is not JSON.
    pub(crate) const PARSE_ERROR: i64 = -32700;
    /// The message is not a valid request.
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    /// The method is not available through the proxy.
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters are not acceptable (an unknown tool).
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    /// The upstream failed, crashed or stalled.
    pub(crate) const INTERNAL_ERROR: i64 = -32603;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_notifications_and_responses_are_told_apart_strictly() {
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Message::Request { .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response { outcome: Ok(_), .. })
        ));
        for bad in [
            &br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#[..],
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
            br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_ne!(id_key(&json!(1)), id_key(&json!("1")));
    }
}
