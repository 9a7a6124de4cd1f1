//! G2 parse: a strict RFC 8259 parse that rejects what a lenient parser would quietly resolve.
//!
//! Duplicate member names must be caught here, by the parser itself: once a value is built, the
//! evidence that `"approved"` appeared twice is gone, and two parsers (a proxy keeping the first,
//! the application keeping the last) may already disagree about what the document said. The
//! visitor below fills a [`Document`] straight from serde_json's tokenizer, refuses a member name
//! it has seen in the same object (compared after unescaping, so `"appr\u006fved"` is
//! `"approved"`), and refuses nesting deeper than the contract allows before descending into it.
//! Both checks ride on work the parse does anyway (placing the member, the recursion).
//!
//! The rest of the strictness is serde_json's own: no NaN/Infinity, no trailing content, no lone
//! surrogate escapes, no raw control characters in strings, and `1e400` is out of range (which is
//! why the workspace must never enable serde_json's `arbitrary_precision`).

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

use crate::document::{Builder, Document, Element};
use crate::fault::Fault;
use crate::outcome::Layer;

/// Parses `bytes` as one strict JSON document no deeper than `max_depth` containers.
pub(crate) fn parse_document(bytes: &[u8], max_depth: usize) -> Result<Document<'_>, Fault> {
    let text = utf8(bytes)?;
    parse_document_text(text, max_depth)
}

/// Parses `bytes` as [`parse_document`] does, into a `serde_json::Value`: for cold paths (a
/// rejection's explanation, contract files, the harness's own files).
pub(crate) fn parse_value(bytes: &[u8], max_depth: usize) -> Result<serde_json::Value, Fault> {
    parse_document(bytes, max_depth).map(|document| document.root().to_value())
}

/// Checks that `bytes` are UTF-8 without a byte-order mark, and returns them as text.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, Fault> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(Fault::new(
            Layer::Parse,
            "byte_order_mark",
            "the response starts with a UTF-8 byte-order mark, which RFC 8259 forbids in JSON sent over a network",
            "make the upstream (or the connector) send the document without a BOM",
        ));
    }
    std::str::from_utf8(bytes).map_err(|error| {
        Fault::new(
            Layer::Parse,
            "invalid_utf8",
            format!(
                "the response is not valid UTF-8: invalid byte at offset {}",
                error.valid_up_to()
            ),
            "the upstream sent bytes in another encoding or corrupted bytes; JSON must be UTF-8",
        )
    })
}

/// Parses already-validated UTF-8 text strictly.
pub(crate) fn parse_document_text(text: &str, max_depth: usize) -> Result<Document<'_>, Fault> {
    let state = ParseState {
        max_depth,
        builder: RefCell::new(Builder::for_input(text.len())),
        violation: RefCell::new(None),
        path: RefCell::new(Vec::new()),
    };
    // `from_str` skips serde_json's per-string UTF-8 check (`utf8` above already covered the
    // whole input) and hands over every string without escapes as a borrow of the input.
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = NodeSeed {
        state: &state,
        depth: 0,
    }
    .deserialize(&mut deserializer)
    .and_then(|root| deserializer.end().map(|()| root));
    match parsed {
        Ok(root) => Ok(state.builder.into_inner().finish(root)),
        Err(error) => Err(state.into_fault(&error)),
    }
}

#[derive(Debug)]
enum Violation {
    DuplicateMember,
    TooDeep,
}

/// One step of the path to where the parse stopped; member names as the parser read them.
enum Segment<'de> {
    Index(usize),
    Member(Cow<'de, str>),
}

struct ParseState<'de> {
    max_depth: usize,
    builder: RefCell<Builder<'de>>,
    violation: RefCell<Option<Violation>>,
    /// Filled only while an error unwinds, innermost segment first.
    path: RefCell<Vec<Segment<'de>>>,
}

impl<'de> ParseState<'de> {
    fn violate<E: de::Error>(&self, violation: Violation) -> E {
        *self.violation.borrow_mut() = Some(violation);
        E::custom("toolgate strict-parse violation")
    }

    fn unwinding(&self, segment: Segment<'de>) {
        self.path.borrow_mut().push(segment);
    }

    fn pointer(&self) -> String {
        let mut pointer = String::new();
        for segment in self.path.borrow().iter().rev() {
            pointer.push('/');
            match segment {
                Segment::Index(index) => {
                    let _ = write!(pointer, "{index}");
                }
                Segment::Member(name) => {
                    for ch in name.chars() {
                        match ch {
                            '~' => pointer.push_str("~0"),
                            '/' => pointer.push_str("~1"),
                            other => pointer.push(other),
                        }
                    }
                }
            }
        }
        pointer
    }

    /// The member name the parse stopped at (the duplicate, for a duplicate member).
    fn innermost_name(&self) -> String {
        match self.path.borrow().first() {
            Some(Segment::Member(name)) => name.to_string(),
            _ => String::new(),
        }
    }

    fn into_fault(self, error: &serde_json::Error) -> Fault {
        let pointer = self.pointer();
        match self.violation.borrow().as_ref() {
            Some(Violation::DuplicateMember) => Fault::new(
                Layer::Parse,
                "duplicate_member",
                format!("member name {:?} appears more than once in the same object (compared after unescaping)", self.innermost_name()),
                "RFC 8259 leaves duplicate names undefined and parsers disagree on which copy wins; the upstream must send each member once",
            )
            .at(&pointer),
            Some(Violation::TooDeep) => depth_fault(self.max_depth).at(&pointer),
            None => syntax_fault(error, self.max_depth).at(&pointer),
        }
    }
}

fn depth_fault(max_depth: usize) -> Fault {
    Fault::new(
        Layer::Parse,
        "max_depth",
        format!("nesting is deeper than the contract's limit of {max_depth} containers"),
        "no answer of this tool needs this much nesting: make the connector flatten it, or raise limits.max_depth in a new contract version",
    )
}

fn syntax_fault(error: &serde_json::Error, max_depth: usize) -> Fault {
    let message = error.to_string();
    // serde_json's own limit (128) can only speak if the contract's is higher, which compile
    // refuses; map it to the same rule anyway so the answer never depends on which one fired.
    if message.starts_with("recursion limit exceeded") {
        return depth_fault(max_depth);
    }
    let (rule, hint) = if error.is_eof() && error.line() == 1 && error.column() == 0 {
        ("empty", "the upstream sent no document at all")
    } else if error.is_eof() {
        (
            "truncated",
            "the document ends before it is complete; the upstream or a proxy cut it short",
        )
    } else if message.starts_with("number out of range") {
        (
            "number_out_of_range",
            "a number does not fit a 64-bit float; the upstream must send it as a string or within range",
        )
    } else if message.starts_with("trailing characters") {
        (
            "trailing_content",
            "there is content after the JSON document; exactly one document is allowed",
        )
    } else if message.starts_with("lone leading surrogate")
        || message.starts_with("unexpected end of hex escape")
        || message.starts_with("invalid escape")
    {
        // (serde_json's fourth escape error, "invalid unicode code point", is about invalid
        // UTF-8, which `utf8` refuses before serde_json reads a byte.)
        (
            "invalid_escape",
            "a string holds an escape that does not denote a Unicode scalar value (e.g. a lone surrogate)",
        )
    } else {
        (
            "syntax",
            "the bytes are not JSON as RFC 8259 defines it (NaN, Infinity, comments, single quotes and trailing commas are not JSON)",
        )
    };
    Fault::new(Layer::Parse, rule, message, hint)
}

/// Deserializes one JSON value at a known depth into the document.
struct NodeSeed<'s, 'de> {
    state: &'s ParseState<'de>,
    depth: usize,
}

// Not derived: a derive would demand `ParseState: Copy`.
impl Clone for NodeSeed<'_, '_> {
    fn clone(&self) -> Self {
        *self
    }
}
impl Copy for NodeSeed<'_, '_> {}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_, 'de> {
    type Value = Element<'de>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Element<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_, 'de> {
    type Value = Element<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Element<'de>, E> {
        Ok(Element::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Element<'de>, E> {
        Ok(Element::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Element<'de>, E> {
        Ok(Element::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Element<'de>, E> {
        // serde_json never produces a non-finite float from JSON text; refuse one all the same.
        Number::from_f64(value)
            .map(Element::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Element<'de>, E> {
        // serde_json lends a string only when it held no escape (see `Element::Verbatim`).
        Ok(Element::Verbatim(value))
    }

    // A string that needed unescaping (serde_json never hands over an owned `String`; the
    // default `visit_string` would forward one here).
    fn visit_str<E>(self, value: &str) -> Result<Element<'de>, E> {
        Ok(Element::String(Cow::Owned(value.to_owned())))
    }

    fn visit_unit<E>(self) -> Result<Element<'de>, E> {
        Ok(Element::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Element<'de>, A::Error> {
        let inner = self.enter::<A::Error>()?;
        let array = self.state.builder.borrow().open_array();
        loop {
            match seq.next_element_seed(inner) {
                Ok(Some(element)) => self.state.builder.borrow_mut().push_element(element),
                Ok(None) => return Ok(self.state.builder.borrow_mut().close_array(array)),
                Err(error) => {
                    let index = self.state.builder.borrow().element_count(&array);
                    self.state.builder.borrow_mut().abandon_array(array);
                    self.state.unwinding(Segment::Index(index));
                    return Err(error);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Element<'de>, A::Error> {
        let inner = self.enter::<A::Error>()?;
        let mut object = self.state.builder.borrow().open_object();
        while let Some(name) = map.next_key_seed(NameSeed)? {
            let value = match map.next_value_seed(inner) {
                Ok(value) => value,
                Err(error) => {
                    self.state.unwinding(Segment::Member(name));
                    return Err(error);
                }
            };
            let placed = self
                .state
                .builder
                .borrow_mut()
                .push_member(&mut object, name, value);
            if let Err(name) = placed {
                self.state.unwinding(Segment::Member(name));
                return Err(self.state.violate(Violation::DuplicateMember));
            }
        }
        Ok(self.state.builder.borrow_mut().close_object(object))
    }
}

impl<'s, 'de> NodeSeed<'s, 'de> {
    /// The seed for the children of a container opened at this position, if the limit allows one.
    fn enter<E: de::Error>(self) -> Result<NodeSeed<'s, 'de>, E> {
        let depth = self.depth + 1;
        if depth > self.state.max_depth {
            return Err(self.state.violate(Violation::TooDeep));
        }
        Ok(NodeSeed {
            state: self.state,
            depth,
        })
    }
}

/// Deserializes a member name, borrowed from the input unless it had to be unescaped.
struct NameSeed;

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameSeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(value))
    }

    // A name that needed unescaping; serde_json never hands over an owned `String` for one (the
    // default `visit_string` would forward it here all the same).
    fn visit_str<E>(self, value: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(value.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rule_of(bytes: &[u8]) -> String {
        parse_document(bytes, 8).unwrap_err().rule.to_string()
    }

    #[test]
    fn plain_documents_hold_the_same_value_serde_json_builds() {
        let text = br#"{"a":[1,-2,3.5,true,null,"x\u00e9"],"b":{"c":{}}}"#;
        let ours = parse_document(text, 8).unwrap();
        let theirs: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(ours.root().to_value(), theirs);
    }

    #[test]
    fn only_strings_written_without_escapes_are_kept_verbatim() {
        // Every printable ASCII character raw, then every escape JSON has, each in its own string.
        let mut strings: Vec<String> = (0x20u8..0x7f)
            .map(|byte| match byte {
                b'"' => r#""\"""#.to_owned(),
                b'\\' => r#""\\""#.to_owned(),
                other => format!("\"a{}b\"", other as char),
            })
            .collect();
        strings.extend(
            [
                r"\n",
                r"\t",
                r"\u0000",
                r"\u001f",
                r"\u0041",
                r"\/",
                r"\ud83d\ude80",
                r"\\",
                "\\\"",
            ]
            .iter()
            .map(|escape| format!("\"x{escape}y\"")),
        );
        let text = format!("[{}]", strings.join(","));
        let document = parse_document(text.as_bytes(), 8).unwrap();
        let mut verbatim = 0;
        for (index, node) in document.root().elements().enumerate() {
            match node.element() {
                Element::Verbatim(value) => {
                    verbatim += 1;
                    assert!(!strings[index].contains('\\'), "{}", strings[index]);
                    assert!(
                        !value
                            .bytes()
                            .any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\'),
                        "{value:?}"
                    );
                }
                Element::String(_) => assert!(strings[index].contains('\\'), "{}", strings[index]),
                other => panic!("not a string: {other:?}"),
            }
        }
        assert_eq!(verbatim, 0x7f - 0x20 - 2);
        // A raw control character is not JSON at all, so it never reaches a string.
        assert_eq!(rule_of(b"[\"a\tb\"]"), "syntax");
    }

    #[test]
    fn duplicate_members_are_rejected_at_any_depth_and_after_unescaping() {
        assert_eq!(
            rule_of(br#"{"approved":false,"approved":true}"#),
            "duplicate_member"
        );
        assert_eq!(
            rule_of(br#"{"approved":false,"appr\u006fved":true}"#),
            "duplicate_member"
        );
        let fault = parse_document(br#"{"data":[{"x":1},{"y":1,"y":2}]}"#, 8).unwrap_err();
        assert_eq!(fault.rule, "duplicate_member");
        assert_eq!(fault.instance_path.as_deref(), Some("/data/1/y"));
        let fault = parse_document(br#"{"a/b":[{"~x\u0041":1,"~xA":2}]}"#, 8).unwrap_err();
        assert_eq!(fault.instance_path.as_deref(), Some("/a~1b/0/~0xA"));
        assert!(fault.message.contains(r#""~xA""#), "{}", fault.message);
    }

    #[test]
    fn the_same_name_in_different_objects_is_fine() {
        assert!(parse_document(br#"{"a":{"id":1},"b":{"id":2}}"#, 8).is_ok());
    }

    #[test]
    fn depth_is_enforced_while_parsing_and_names_the_limit() {
        assert!(parse_document(b"[[[]]]", 3).is_ok());
        let fault = parse_document(b"[[[[]]]]", 3).unwrap_err();
        assert_eq!(fault.rule, "max_depth");
        assert!(fault.message.contains("limit of 3"), "{}", fault.message);
        assert_eq!(fault.instance_path.as_deref(), Some("/0/0/0"));
    }

    #[test]
    fn a_hundred_thousand_open_brackets_are_a_clean_rejection() {
        let bytes = vec![b'['; 100_000];
        assert_eq!(parse_document(&bytes, 32).unwrap_err().rule, "max_depth");
        assert_eq!(
            parse_document(&bytes, Limits::MAX_DEPTH_CEILING)
                .unwrap_err()
                .rule,
            "max_depth"
        );
    }

    #[test]
    fn lenient_parser_leftovers_are_rejected_with_their_own_rule() {
        assert_eq!(rule_of(b"\xEF\xBB\xBF{}"), "byte_order_mark");
        assert_eq!(rule_of(b"{\"a\":\"\xff\"}"), "invalid_utf8");
        assert_eq!(rule_of(b"1e400"), "number_out_of_range");
        assert_eq!(rule_of(b"{} {}"), "trailing_content");
        assert_eq!(rule_of(br#""\ud800""#), "invalid_escape");
        assert_eq!(rule_of(br#""\udc00x""#), "invalid_escape");
        assert_eq!(rule_of(b"NaN"), "syntax");
        assert_eq!(rule_of(b"[Infinity]"), "syntax");
        assert_eq!(rule_of(b""), "empty");
        assert_eq!(rule_of(b"{\"a\":"), "truncated");
    }

    #[test]
    fn arbitrary_precision_is_not_enabled_by_feature_unification() {
        // Under serde_json's `arbitrary_precision`, 1e400 would parse as a number string.
        assert!(serde_json::from_str::<Value>("1e400").is_err());
        assert_eq!(rule_of(b"[1e400]"), "number_out_of_range");
        assert_eq!(json!(1.5).as_f64(), Some(1.5));
    }

    use crate::transport::Limits;
}
