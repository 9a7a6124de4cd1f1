//! The agent-visible wire format: the only code that writes bytes an agent will read.
//!
//! Architecture invariant: every agent-visible byte is written here, from values the projection
//! chose or from trusted inputs (the contract's tool name, the outstanding request's id, a code from
//! the finite set). Nothing here takes a validator message, a path or raw input text.
//!
//! Output is canonical: compact, members in the order the contract lists them, nested objects
//! with keys sorted, so two inputs that differ only in key order or whitespace give identical bytes.

use std::fmt;

use crate::document::{Element, Node};
use crate::outcome::ErrorCode;

/// Bytes an agent (or, for an action, an executor) may see.
///
/// Architecture invariant held by the type: the field is private to this module, so every value
/// of this type was written by one of the functions below: the fixed failure envelope, or an
/// object holding exactly the members projection pushed. Nothing else in the crate can turn a
/// `Vec<u8>` into agent-visible bytes.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct AgentBytes(Vec<u8>);

impl AgentBytes {
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.0
    }

    pub(crate) fn into_vec(self) -> Vec<u8> {
        self.0
    }
}

impl fmt::Debug for AgentBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentBytes({})", String::from_utf8_lossy(&self.0))
    }
}

/// A string as JSON writes it, quotes and escapes included, encoded once: the contract's tool
/// name and field names, copied into every success instead of being written again each time.
#[derive(Debug, Clone)]
pub(crate) struct Encoded(Box<[u8]>);

impl Encoded {
    pub(crate) fn new(text: &str) -> Encoded {
        let mut out = Vec::with_capacity(text.len() + 2);
        write_string(&mut out, text);
        Encoded(out.into())
    }
}

/// The fixed failure envelope the agent sees for every rejection and every admitted upstream
/// failure: `{"tool","request_id","outcome":"failure","error":{"code","retryable"}}`.
pub(crate) fn failure(
    tool: &str,
    request_id: &str,
    code: ErrorCode,
    retryable: bool,
) -> AgentBytes {
    let mut out = Vec::with_capacity(96 + tool.len() + request_id.len());
    out.extend_from_slice(b"{\"tool\":");
    write_string(&mut out, tool);
    out.extend_from_slice(b",\"request_id\":");
    write_string(&mut out, request_id);
    out.extend_from_slice(b",\"outcome\":\"failure\",\"error\":{\"code\":\"");
    out.extend_from_slice(code.as_str().as_bytes());
    out.extend_from_slice(b"\",\"retryable\":");
    out.extend_from_slice(if retryable { b"true" } else { b"false" });
    out.extend_from_slice(b"}}");
    AgentBytes(out)
}

/// A result contract's success: the envelope around exactly the members `fill` pushes.
/// `capacity` is a guess at the final length, to allocate once.
pub(crate) fn success_envelope<E>(
    tool: &Encoded,
    request_id: &str,
    capacity: usize,
    fill: impl FnOnce(&mut Members<'_>) -> Result<(), E>,
) -> Result<AgentBytes, E> {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"tool\":");
    out.extend_from_slice(&tool.0);
    out.extend_from_slice(b",\"request_id\":");
    write_string(&mut out, request_id);
    out.extend_from_slice(b",\"outcome\":\"success\",\"data\":");
    write_object(&mut out, fill)?;
    out.push(b'}');
    Ok(AgentBytes(out))
}

/// An action contract's admitted call: an object holding exactly the members `fill` pushes.
pub(crate) fn action_call<E>(
    capacity: usize,
    fill: impl FnOnce(&mut Members<'_>) -> Result<(), E>,
) -> Result<AgentBytes, E> {
    let mut out = Vec::with_capacity(capacity);
    write_object(&mut out, fill)?;
    Ok(AgentBytes(out))
}

fn write_object<E>(
    out: &mut Vec<u8>,
    fill: impl FnOnce(&mut Members<'_>) -> Result<(), E>,
) -> Result<(), E> {
    out.push(b'{');
    fill(&mut Members {
        out: &mut *out,
        written: 0,
    })?;
    out.push(b'}');
    Ok(())
}

/// Writes the members of an object, in the order they are pushed.
pub(crate) struct Members<'o> {
    out: &'o mut Vec<u8>,
    written: usize,
}

impl Members<'_> {
    pub(crate) fn push(&mut self, name: &Encoded, value: Node<'_>) {
        if self.written > 0 {
            self.out.push(b',');
        }
        self.out.extend_from_slice(&name.0);
        self.out.push(b':');
        write_canonical(self.out, value);
        self.written += 1;
    }

    /// Writes member `name` as an array with one new object per item, whose members `fill`
    /// writes from the item.
    pub(crate) fn push_list<'d, E>(
        &mut self,
        name: &Encoded,
        items: impl Iterator<Item = Node<'d>>,
        mut fill: impl FnMut(usize, Node<'d>, &mut Members<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.written > 0 {
            self.out.push(b',');
        }
        self.out.extend_from_slice(&name.0);
        self.out.extend_from_slice(b":[");
        for (index, item) in items.enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            self.out.push(b'{');
            let mut members = Members {
                out: &mut *self.out,
                written: 0,
            };
            fill(index, item, &mut members)?;
            self.out.push(b'}');
        }
        self.out.push(b']');
        self.written += 1;
        Ok(())
    }
}

/// Writes a string the parser found with no escape in it (see `Element::Verbatim`): it needs
/// none, so it is copied without looking at it.
fn write_verbatim(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// Writes `text` as a JSON string, exactly as serde_json writes it. Also the audit line's string
/// writer: that line is not agent-visible, but it is JSON all the same.
pub(crate) fn write_string(out: &mut Vec<u8>, text: &str) {
    // Most strings need no escaping (no control character, quote or backslash): copy those as
    // they are. serde_json's encoder, the reference, writes every other one; a test checks the
    // two agree.
    // A fold without an early exit: the compiler vectorizes it.
    let needs_escape = text.bytes().fold(false, |found, byte| {
        found | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
    });
    if !needs_escape {
        write_verbatim(out, text);
        return;
    }
    serde_json::to_writer(&mut *out, text).expect("writing JSON to a Vec<u8> is infallible");
}

/// [`write_canonical`], for `internals::write_json`.
pub(crate) fn write_json(out: &mut Vec<u8>, value: Node<'_>) {
    write_canonical(out, value);
}

/// Writes a value compactly, object members sorted by name, whatever order the input had them in.
fn write_canonical(out: &mut Vec<u8>, value: Node<'_>) {
    match value.element() {
        Element::Null => out.extend_from_slice(b"null"),
        Element::Bool(true) => out.extend_from_slice(b"true"),
        Element::Bool(false) => out.extend_from_slice(b"false"),
        Element::Number(number) => serde_json::to_writer(&mut *out, number)
            .expect("writing JSON to a Vec<u8> is infallible"),
        Element::Verbatim(text) => write_verbatim(out, text),
        Element::String(text) => write_string(out, text),
        Element::Array(_) => {
            out.push(b'[');
            for (index, item) in value.elements().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        Element::Object(_) => {
            // Members already in order (as a serializer that sorts wrote them) are written as
            // they stand, with no list of them to collect and sort.
            let mut previous: Option<&str> = None;
            let in_order = value.members().all(|(name, _)| {
                let follows = previous.is_none_or(|previous| previous <= name);
                previous = Some(name);
                follows
            });
            if in_order {
                write_members(out, value.members());
            } else {
                let mut members: Vec<(&str, Node<'_>)> = value.members().collect();
                members.sort_unstable_by_key(|(name, _)| *name);
                write_members(out, members.into_iter());
            }
        }
    }
}

/// Writes an object's members, in the order given.
fn write_members<'d>(out: &mut Vec<u8>, members: impl Iterator<Item = (&'d str, Node<'d>)>) {
    out.push(b'{');
    for (index, (name, member)) in members.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_string(out, name);
        out.push(b':');
        write_canonical(out, member);
    }
    out.push(b'}');
}

/// The JSON Schema of the fixed failure [`failure`] writes for `tool`, its `request_id` held to
/// `request_id` (a schema): built from [`ErrorCode::ALL`], so a new code is in every copy.
pub(crate) fn failure_schema(tool: &str, request_id: serde_json::Value) -> serde_json::Value {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
    serde_json::json!({
        "type": "object",
        "required": ["tool", "request_id", "outcome", "error"],
        "properties": {
            "tool": {"const": tool},
            "request_id": request_id,
            "outcome": {"const": "failure"},
            "error": {
                "type": "object",
                "required": ["code", "retryable"],
                "properties": {
                    "code": {"enum": codes},
                    "retryable": {"type": "boolean"}
                },
                "additionalProperties": false
            }
        },
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    #[test]
    fn every_failure_meets_the_failure_schema_and_no_other_does() {
        let schema = failure_schema("job_status", json!({"type": "string"}));
        let validator = jsonschema::validator_for(&schema).unwrap();
        for code in ErrorCode::ALL {
            for retryable in [false, true] {
                let bytes = failure("job_status", "r-1", code, retryable).into_vec();
                let failure: Value = serde_json::from_slice(&bytes).unwrap();
                assert!(validator.is_valid(&failure), "{failure}");
            }
        }
        let bytes = failure("job_status", "r-1", ErrorCode::NotFound, false).into_vec();
        let mut other: Value = serde_json::from_slice(&bytes).unwrap();
        other["error"]["code"] = json!("TEAPOT");
        assert!(!validator.is_valid(&other));
        other = serde_json::from_slice(&bytes).unwrap();
        other["tool"] = json!("other_tool");
        assert!(!validator.is_valid(&other));
    }

    #[test]
    fn strings_are_written_exactly_as_serde_json_writes_them() {
        let mut samples: Vec<String> = [
            "",
            "plain",
            "Solicitação resolvida",
            "日本",
            "a\"b",
            "back\\slash",
            "tab\there",
            "\u{0}",
            "\u{1f}",
            "\u{7f}",
            "\u{2028}",
            "emoji 🚀",
            "</script>",
        ]
        .iter()
        .map(|text| text.to_string())
        .collect();
        samples.extend((0u8..128).map(|byte| format!("x{}y", byte as char)));
        for text in samples {
            let mut ours = Vec::new();
            write_string(&mut ours, &text);
            assert_eq!(ours, serde_json::to_vec(&text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn failure_envelope_has_the_fixed_shape() {
        let bytes = failure(
            "review_status",
            "req.J7q94MkP",
            ErrorCode::InvalidResponse,
            false,
        );
        assert_eq!(
            std::str::from_utf8(bytes.as_slice()).unwrap(),
            r#"{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"failure","error":{"code":"INVALID_RESPONSE","retryable":false}}"#
        );
    }

    /// A decision's `Debug` (adapters log it) shows the agent bytes as text.
    #[test]
    fn agent_bytes_debug_as_their_text() {
        let bytes = failure("t", "r", ErrorCode::NotFound, false);
        assert_eq!(
            format!("{bytes:?}"),
            r#"AgentBytes({"tool":"t","request_id":"r","outcome":"failure","error":{"code":"NOT_FOUND","retryable":false}})"#
        );
    }

    #[test]
    fn strings_are_escaped_by_the_json_encoder() {
        let bytes = failure("t", "a\"b\n\u{1b}", ErrorCode::NotFound, true);
        let parsed: Value = serde_json::from_slice(bytes.as_slice()).unwrap();
        assert_eq!(parsed["request_id"], "a\"b\n\u{1b}");
        assert!(
            !bytes.as_slice().contains(&b'\n'),
            "agent bytes are one line"
        );
    }

    #[test]
    fn nested_objects_are_written_with_sorted_keys() {
        let value = json!({"b": 1, "a": [true, null, {"d": "x", "c": 2.5}]});
        let out = action_call(0, |members| {
            members.push(&Encoded::new("v"), Document::from_value(&value).root());
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(
            std::str::from_utf8(out.as_slice()).unwrap(),
            r#"{"v":{"a":[true,null,{"c":2.5,"d":"x"}],"b":1}}"#
        );
    }

    /// Any string: mostly the characters a writer could get wrong (quotes, backslashes, every
    /// control character, DEL, the line separators, multi-byte text), in any number and order.
    fn any_text() -> impl Strategy<Value = String> {
        let tricky = prop_oneof![
            Just('"'),
            Just('\\'),
            (0u32..0x20).prop_map(|code| char::from_u32(code).unwrap()),
            Just('\u{7f}'),
            Just('\u{2028}'),
            Just('é'),
            Just('日'),
            Just('🚀'),
            proptest::char::range('a', 'z'),
        ];
        prop_oneof![
            proptest::collection::vec(tricky, 0..40).prop_map(String::from_iter),
            any::<String>(),
        ]
    }

    /// Any JSON value, objects with any member names, numbers of every kind serde_json keeps.
    fn any_value() -> impl Strategy<Value = Value> {
        let number = prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", |float| {
                serde_json::Number::from_f64(float).map(Value::Number)
            }),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number,
            any_text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((any_text(), inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The one function that writes agent-visible strings: byte for byte serde_json's.
        #[test]
        fn any_string_is_written_exactly_as_serde_json_writes_it(text in any_text()) {
            let mut ours = Vec::new();
            write_string(&mut ours, &text);
            prop_assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(&text).unwrap()
            );
        }

        /// The canonical writer, over a document built from a value and over one the strict
        /// parser read from serde_json's own text (where strings are lent from the input and
        /// written back unscanned): serde_json's bytes (its maps are sorted by name, as ours are).
        #[test]
        fn any_value_is_written_exactly_as_serde_json_writes_it(value in any_value()) {
            let expected = serde_json::to_string(&value).unwrap();
            let mut built = Vec::new();
            write_canonical(&mut built, Document::from_value(&value).root());
            prop_assert_eq!(String::from_utf8(built).unwrap(), expected.clone());

            let parsed = crate::parse::parse_document(expected.as_bytes(), 128).unwrap();
            let mut reread = Vec::new();
            write_canonical(&mut reread, parsed.root());
            prop_assert_eq!(String::from_utf8(reread).unwrap(), expected.clone());

            // Members in the reverse order (a sender that does not sort) are sorted all the same.
            let reversed = reversed_text(&value);
            let parsed = crate::parse::parse_document(reversed.as_bytes(), 128).unwrap();
            let mut sorted = Vec::new();
            write_canonical(&mut sorted, parsed.root());
            prop_assert_eq!(String::from_utf8(sorted).unwrap(), expected);
        }
    }

    /// `value` as JSON text with every object's members in the reverse of serde_json's order.
    fn reversed_text(value: &Value) -> String {
        match value {
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(reversed_text).collect();
                format!("[{}]", items.join(","))
            }
            Value::Object(members) => {
                let members: Vec<String> = members
                    .iter()
                    .rev()
                    .map(|(name, member)| {
                        format!("{}:{}", Value::from(name.as_str()), reversed_text(member))
                    })
                    .collect();
                format!("{{{}}}", members.join(","))
            }
            scalar => scalar.to_string(),
        }
    }
}
