//! JSON-RPC 2.0 messages, one per line, read with the gate's strict parser (a duplicate member
//! name anywhere in a message is a refusal, never a silent last-wins) and written by the proxy
//! itself, so every byte the host receives is one the proxy put there.

use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use toolgate_gate::internals::{Node, parse_document};

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
    let document = parse_document(line, MAX_MESSAGE_DEPTH)?;
    classify(document.root())
}

/// The JSON-RPC 2.0 shape of a message, read in place from its strictly parsed document: what
/// [`classify`] checks, with nothing built.
pub(crate) enum Shape<'d> {
    Request {
        id: Node<'d>,
        method: &'d str,
        params: Option<Node<'d>>,
    },
    Notification {
        method: &'d str,
        params: Option<Node<'d>>,
    },
    Response {
        id: Node<'d>,
        outcome: Result<Node<'d>, Node<'d>>,
    },
}

/// The shape of a message already parsed strictly, or why it is not JSON-RPC 2.0.
pub(crate) fn shape(root: Node<'_>) -> Result<Shape<'_>, String> {
    if !root.is_object() {
        return Err("not a JSON-RPC message object (batches are not supported)".to_owned());
    }
    if root.get("jsonrpc").and_then(|version| version.as_str()) != Some("2.0") {
        return Err("not JSON-RPC 2.0 (`jsonrpc` must be \"2.0\")".to_owned());
    }
    let id = root.get("id");
    if let Some(id) = id
        && !(id.as_str().is_some() || id.as_number().is_some() || id.is_null())
    {
        return Err("an id must be a string or a number".to_owned());
    }
    let params = root.get("params");
    let method = root.get("method").map(|method| method.as_str());
    match (method, id) {
        (Some(Some(method)), Some(id)) if !id.is_null() => {
            Ok(Shape::Request { id, method, params })
        }
        (Some(Some(_)), Some(_)) => Err("a request's id must not be null".to_owned()),
        (Some(Some(method)), None) => Ok(Shape::Notification { method, params }),
        (Some(None), _) => Err("`method` must be a string".to_owned()),
        (None, Some(id)) => match (root.get("result"), root.get("error")) {
            (Some(result), None) => Ok(Shape::Response {
                id,
                outcome: Ok(result),
            }),
            (None, Some(error)) if error.is_object() => Ok(Shape::Response {
                id,
                outcome: Err(error),
            }),
            _ => Err("a response has exactly one of `result` and an `error` object".to_owned()),
        },
        (None, None) => Err("neither a request, a notification nor a response".to_owned()),
    }
}

/// The JSON-RPC 2.0 message a document holds, its parts built as values.
pub(crate) fn classify(root: Node<'_>) -> Result<Message, String> {
    let params = |params: Option<Node<'_>>| params.map_or(Value::Null, Node::to_value);
    Ok(match shape(root)? {
        Shape::Request {
            id,
            method,
            params: held,
        } => Message::Request {
            id: id.to_value(),
            method: method.to_owned(),
            params: params(held),
        },
        Shape::Notification {
            method,
            params: held,
        } => Message::Notification {
            method: method.to_owned(),
            params: params(held),
        },
        Shape::Response { id, outcome } => Message::Response {
            id: id.to_value(),
            outcome: outcome.map(Node::to_value).map_err(Node::to_value),
        },
    })
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
    let mut key = Vec::with_capacity(16);
    push_json(&mut key, id);
    // serde_json writes UTF-8 (a `Value` holds only valid strings).
    String::from_utf8(key).unwrap_or_default()
}

/// Appends `value` as compact JSON, as `Value`'s `Display` writes it, straight into the line
/// (`Display` goes through the formatter a piece at a time: several times the instructions).
fn push_json(line: &mut Vec<u8>, value: &Value) {
    // Writing a `Value` to a `Vec` cannot fail (its keys are strings).
    let _ = serde_json::to_writer(line, value);
}

/// Appends `text` as a JSON string, escaped as `Value`'s `Display` escapes it.
fn push_string(line: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(line, text);
}

/// A line's opening up to its id: `{"jsonrpc":"2.0","id":ID`, with room for what follows.
fn line_with_id(id: &Value, room: usize) -> Vec<u8> {
    let mut line = Vec::with_capacity(32 + room);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    push_json(&mut line, id);
    line
}

/// A response line carrying `result`, given as JSON text the proxy built.
pub(crate) fn result_line(id: &Value, result: &[u8]) -> Vec<u8> {
    let mut line = line_with_id(id, result.len() + 12);
    line.extend_from_slice(br#","result":"#);
    line.extend_from_slice(result);
    line.push(b'}');
    line
}

/// A response line carrying `result`, a value.
pub(crate) fn value_result_line(id: &Value, result: &Value) -> Vec<u8> {
    response_line(id, br#","result":"#, result)
}

/// A response line: its id, then `member` (`,"result":` or `,"error":`) holding `value`.
fn response_line(id: &Value, member: &[u8], value: &Value) -> Vec<u8> {
    let mut line = line_with_id(id, 64);
    line.extend_from_slice(member);
    push_json(&mut line, value);
    line.push(b'}');
    line
}

/// An error response line. The message is the proxy's own words.
pub(crate) fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let mut line = line_with_id(id, message.len() + 40);
    line.extend_from_slice(br#","error":{"code":"#);
    line.extend_from_slice(code.to_string().as_bytes());
    line.extend_from_slice(br#","message":"#);
    push_string(&mut line, message);
    line.extend_from_slice(b"}}");
    line
}

/// An error response line carrying an error object as it is.
pub(crate) fn error_object_line(id: &Value, error: &Value) -> Vec<u8> {
    response_line(id, br#","error":"#, error)
}

/// A notification line.
pub(crate) fn notification_line(method: &str, params: &Value) -> Vec<u8> {
    let mut line = Vec::with_capacity(64 + method.len());
    line.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    push_string(&mut line, method);
    line.extend_from_slice(br#","params":"#);
    push_json(&mut line, params);
    line.push(b'}');
    line
}

/// A request line.
pub(crate) fn request_line(id: &Value, method: &str, params: &Value) -> Vec<u8> {
    let mut line = Vec::with_capacity(128 + method.len());
    line.extend_from_slice(br#"{"id":"#);
    push_json(&mut line, id);
    line.extend_from_slice(br#","jsonrpc":"2.0","method":"#);
    push_string(&mut line, method);
    if !params.is_null() {
        line.extend_from_slice(br#","params":"#);
        push_json(&mut line, params);
    }
    line.push(b'}');
    line
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

/// A path (member names from the root) [`members`] reads of a line: its value built, or only
/// whether it is there, the value skipped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted<'p> {
    path: &'p [&'p str],
    build: bool,
}

impl<'p> Wanted<'p> {
    /// The value at `path`, built.
    pub(crate) const fn value(path: &'p [&'p str]) -> Wanted<'p> {
        Wanted { path, build: true }
    }

    /// Whether `path` is there; its value is skipped, not built.
    pub(crate) const fn presence(path: &'p [&'p str]) -> Wanted<'p> {
        Wanted { path, build: false }
    }
}

/// What [`members`] read at one path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Found {
    /// A step is missing, or is not an object.
    Absent,
    /// There, its value not built ([`Wanted::presence`]).
    Present,
    /// There, with this value ([`Wanted::value`]).
    Value(Value),
}

impl Found {
    pub(crate) fn is_present(&self) -> bool {
        !matches!(self, Found::Absent)
    }

    pub(crate) fn into_value(self) -> Option<Value> {
        match self {
            Found::Value(value) => Some(value),
            Found::Absent | Found::Present => None,
        }
    }
}

/// The members at up to 32 paths of a line, learned in one pass that builds nothing else: every
/// member no path names is skipped, not turned into a value. Each path reads what indexing the
/// whole line as a `serde_json::Value` finds there (where a name repeats, the last one counts).
/// For lines the proxy wrote itself (already read strictly), to learn a few things of them per
/// call without reading them once per thing.
pub(crate) fn members<const N: usize>(
    line: &[u8],
    wanted: [Wanted<'_>; N],
) -> Result<[Found; N], serde_json::Error> {
    const { assert!(N <= 32, "a mask of u32 holds the paths") };
    let mut found = std::array::from_fn(|_| Found::Absent);
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    Position {
        wanted: &wanted,
        found: &mut found,
        active: ((1u64 << N) - 1) as u32,
        depth: 0,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(found)
}

/// The indices set in `mask`, lowest first.
fn indices(mask: u32) -> impl Iterator<Item = usize> {
    let mut rest = mask;
    std::iter::from_fn(move || {
        if rest == 0 {
            return None;
        }
        let index = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        Some(index)
    })
}

/// The indices of `mask` that `keep` selects, as a mask.
fn select(mask: u32, keep: impl Fn(usize) -> bool) -> u32 {
    indices(mask)
        .filter(|&index| keep(index))
        .fold(0, |selected, index| selected | 1 << index)
}

/// A value in the line where the `active` paths have matched their first `depth` names.
struct Position<'w, 'p> {
    wanted: &'w [Wanted<'p>],
    found: &'w mut [Found],
    active: u32,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Position<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let ending = select(self.active, |index| {
            self.wanted[index].path.len() == self.depth
        });
        if ending == 0 {
            return deserializer.deserialize_any(self);
        }
        let build = self.active != ending || indices(ending).any(|index| self.wanted[index].build);
        if !build {
            IgnoredAny::deserialize(deserializer)?;
            for index in indices(ending) {
                self.found[index] = Found::Present;
            }
            return Ok(());
        }
        // A path ends here and another goes on inside (or this one is wanted whole): the value
        // is built once and the rest of each path read from it.
        let value = Value::deserialize(deserializer)?;
        for index in indices(self.active) {
            let wanted = self.wanted[index];
            let at = wanted.path[self.depth..]
                .iter()
                .try_fold(&value, |value, name| value.get(name));
            self.found[index] = match at {
                None => Found::Absent,
                Some(at) if wanted.build => Found::Value(at.clone()),
                Some(_) => Found::Present,
            };
        }
        Ok(())
    }
}

impl<'de> Visitor<'de> for Position<'_, '_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Position {
            wanted,
            found,
            active,
            depth,
        } = self;
        while let Some(matching) = map.next_key_seed(Matching {
            wanted,
            active,
            depth,
        })? {
            if matching == 0 {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // A repeated name: what the last one holds is what counts.
            for index in indices(matching) {
                found[index] = Found::Absent;
            }
            map.next_value_seed(Position {
                wanted,
                found: &mut *found,
                active: matching,
                depth: depth + 1,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A member name, read only to learn which of the `active` paths name it next (nothing
/// allocated for it): the mask of those paths.
struct Matching<'w, 'p> {
    wanted: &'w [Wanted<'p>],
    active: u32,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Matching<'_, '_> {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u32, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Matching<'_, '_> {
    type Value = u32;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<u32, E> {
        Ok(select(self.active, |index| {
            self.wanted[index].path[self.depth] == name
        }))
    }
}

/// A JSON-RPC id as a trace names it: a string as it is, a number as its digits (written only
/// for a call that is traced).
pub(crate) struct IdText<'a>(pub(crate) &'a Value);

impl fmt::Display for IdText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::String(text) => f.write_str(text),
            other => write!(f, "{other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `members` finds what indexing the whole line as a `Value` finds, on every kind of line:
    /// present, absent, null, behind a non-object, repeated (the last counts), nested, in an
    /// array at the top (a batch), escaped names, and lines that are not JSON at all; each path
    /// alone and all of them in one pass, built and presence only, including a path that ends
    /// where another goes on and a path asked for twice.
    #[test]
    fn members_read_what_the_whole_value_holds() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601.0}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":18446744073709551615}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":"text"}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":null}"#,
            r#"{"jsonrpc":"2.0","method":null}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            r#"{"error":{"code":1},"error":{"code":2}}"#,
            r#"{"error":{"code":1},"error":7}"#,
            r#"{"error":{"code":1,"data":2},"error":{"data":3}}"#,
            r#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":3}}}"#,
            r#"{"par\u0061ms":{"_meta":[1,2]},"result":[{"a":{}}]}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            r#""a string""#,
            "12",
            "null",
            "{",
            r#"{"a":1} trailing"#,
        ];
        let paths: [&[&str]; 8] = [
            &["method"],
            &["result"],
            &["error", "code"],
            &["error"],
            &["params", "_meta", "io.modelcontextprotocol/protocolVersion"],
            &["params", "_meta"],
            &["error", "code"],
            &[],
        ];
        let read = |whole: &Value, path: &[&str], build: bool| match path
            .iter()
            .try_fold(whole, |value, name| value.get(name))
        {
            None => Found::Absent,
            Some(value) if build => Found::Value(value.clone()),
            Some(_) => Found::Present,
        };
        for line in lines {
            let whole = serde_json::from_str::<Value>(line);
            for build in [true, false] {
                let wanted = paths.map(|path| Wanted { path, build });
                let together = members(line.as_bytes(), wanted);
                for (index, path) in paths.iter().enumerate() {
                    let alone = members(line.as_bytes(), [wanted[index]]);
                    match &whole {
                        Err(_) => assert!(alone.is_err() && together.is_err(), "{line} {path:?}"),
                        Ok(whole) => {
                            let expected = read(whole, path, build);
                            assert_eq!(alone.as_ref().unwrap()[0], expected, "{line} {path:?}");
                            let together = together.as_ref().unwrap();
                            assert_eq!(together[index], expected, "{line} {path:?} together");
                        }
                    }
                }
            }
        }
    }
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

    /// The lines are written straight into bytes; they must be exactly the JSON `Value`'s own
    /// `Display` writes (what the proxy wrote before, and what its snapshots hold), escapes
    /// included, for ids, methods and messages that need them.
    #[test]
    fn lines_are_the_json_a_value_would_write() {
        let ids = [
            json!(7),
            json!(-1.5),
            json!("a\"b\u{1b}\u{2028}é"),
            json!(u64::MAX),
        ];
        let texts = [
            "tools/call",
            "quote\" and \\ and \n",
            "\u{0}\u{7f}\u{202e}ü",
        ];
        let params = json!({"name": "w", "arguments": {"z": [1, null, true], "a": "\t"}});
        for id in &ids {
            let id_text = id.to_string();
            assert_eq!(id_key(id), id_text);
            assert_eq!(
                result_line(id, b"{}"),
                format!(r#"{{"jsonrpc":"2.0","id":{id_text},"result":{{}}}}"#).into_bytes()
            );
            assert_eq!(
                value_result_line(id, &params),
                format!(r#"{{"jsonrpc":"2.0","id":{id_text},"result":{params}}}"#).into_bytes()
            );
            assert_eq!(
                error_object_line(id, &params),
                format!(r#"{{"jsonrpc":"2.0","id":{id_text},"error":{params}}}"#).into_bytes()
            );
            for text in texts {
                let quoted = Value::from(text);
                assert_eq!(
                    error_line(id, codes::INVALID_PARAMS, text),
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id_text},"error":{{"code":-32602,"message":{quoted}}}}}"#
                    )
                    .into_bytes()
                );
                assert_eq!(
                    request_line(id, text, &params),
                    format!(
                        r#"{{"id":{id_text},"jsonrpc":"2.0","method":{quoted},"params":{params}}}"#
                    )
                    .into_bytes()
                );
                assert_eq!(
                    request_line(id, text, &Value::Null),
                    format!(r#"{{"id":{id_text},"jsonrpc":"2.0","method":{quoted}}}"#).into_bytes()
                );
                assert_eq!(
                    notification_line(text, &params),
                    format!(r#"{{"jsonrpc":"2.0","method":{quoted},"params":{params}}}"#)
                        .into_bytes()
                );
            }
        }
    }
}
