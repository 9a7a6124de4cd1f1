//! Redaction of named response members before a decision is kept (`retention: redact:` in the
//! contract): a member's value is replaced in the raw bytes, in place, by [`REDACTED`], and
//! every other byte is kept as received, so the record stays the evidence but for the secret.
//!
//! The places are found on the bytes themselves (serde_json's `RawValue` hands back each
//! member's exact slice), not on a parsed and re-serialized value, which would rewrite numbers,
//! escapes and spacing. A member written twice is redacted both times: the strict parse refuses
//! such bytes, but the store keeps refusals, and a secret must not survive in the copy the parser
//! would have ignored.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// What a redacted value becomes: a JSON string saying so.
pub const REDACTED: &str = "\"[redacted]\"";

/// The bytes with the value at every place `patterns` names (JSON pointers in which `*` stands
/// for any array index or member name) replaced by [`REDACTED`], and the concrete pointers
/// replaced; `None` where the bytes are not JSON, so nothing can be found in them (the caller
/// then keeps none of them).
pub(crate) fn redact(raw: &[u8], patterns: &[Box<str>]) -> Option<(Vec<u8>, Vec<String>)> {
    let text = std::str::from_utf8(raw).ok()?;
    let whole: &RawValue = serde_json::from_str(text).ok()?;
    let mut spans = Vec::new();
    for pattern in patterns {
        let tokens: Vec<String> = pattern
            .split('/')
            .skip(1)
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect();
        find(text, whole, &tokens, String::new(), &mut spans);
    }
    // Outermost first: a place inside one already replaced is gone with it.
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut kept = Vec::with_capacity(raw.len());
    let mut redacted = Vec::new();
    let mut done = 0;
    for (start, end, pointer) in spans {
        if start < done {
            continue;
        }
        kept.extend_from_slice(&raw[done..start]);
        kept.extend_from_slice(REDACTED.as_bytes());
        redacted.push(pointer);
        done = end;
    }
    kept.extend_from_slice(&raw[done..]);
    Some((kept, redacted))
}

/// Pushes the byte span of every value under `value` (a slice of `text`) that `tokens` names,
/// with its concrete pointer.
fn find(
    text: &str,
    value: &RawValue,
    tokens: &[String],
    at: String,
    spans: &mut Vec<(usize, usize, String)>,
) {
    let Some((token, rest)) = tokens.split_first() else {
        let start = value.get().as_ptr() as usize - text.as_ptr() as usize;
        spans.push((start, start + value.get().len(), at));
        return;
    };
    let Ok(Children(children)) = serde_json::from_str::<Children<'_>>(value.get()) else {
        return; // a scalar: nothing below it
    };
    for (name, child) in children {
        if token == "*" || *token == name {
            let escaped = name.replace('~', "~0").replace('/', "~1");
            find(text, child, rest, format!("{at}/{escaped}"), spans);
        }
    }
}

/// An object's members in the order written (a name written twice, twice), or an array's items
/// named by their index; the values left as the slices of text they are.
struct Children<'a>(Vec<(String, &'a RawValue)>);

impl<'de> de::Deserialize<'de> for Children<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ChildrenVisitor)
    }
}

struct ChildrenVisitor;

impl<'de> Visitor<'de> for ChildrenVisitor {
    type Value = Children<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object or an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Children<'de>, A::Error> {
        let mut children = Vec::new();
        while let Some((name, value)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
            children.push((name.into_owned(), value));
        }
        Ok(Children(children))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Children<'de>, A::Error> {
        let mut children = Vec::new();
        while let Some(value) = seq.next_element::<&'de RawValue>()? {
            children.push((children.len().to_string(), value));
        }
        Ok(Children(children))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(raw: &str, patterns: &[&str]) -> Option<(String, Vec<String>)> {
        let patterns: Vec<Box<str>> = patterns.iter().map(|pattern| (*pattern).into()).collect();
        redact(raw.as_bytes(), &patterns)
            .map(|(kept, places)| (String::from_utf8(kept).unwrap(), places))
    }

    #[test]
    fn only_the_named_values_change_and_every_other_byte_is_kept() {
        let raw = "{ \"id\" : 1.50e1,\n \"token\":\"s3cr\\u0065t\", \"a\\/b\": {\"x\": [1, {\"token\": 7}]}}";
        let (kept, places) = redacted(raw, &["/token", "/a~1b/x/*/token", "/missing"]).unwrap();
        assert_eq!(
            kept,
            "{ \"id\" : 1.50e1,\n \"token\":\"[redacted]\", \"a\\/b\": {\"x\": [1, {\"token\": \"[redacted]\"}]}}"
        );
        assert_eq!(places, ["/token", "/a~1b/x/1/token"]);
    }

    #[test]
    fn a_member_written_twice_is_redacted_twice_and_nested_places_once() {
        let (kept, places) =
            redacted(r#"{"k":{"s":1},"k":{"s":2}}"#, &["/k", "/k/s", "/*/s"]).unwrap();
        assert_eq!(kept, r#"{"k":"[redacted]","k":"[redacted]"}"#);
        assert_eq!(places, ["/k", "/k"]);
    }

    #[test]
    fn bytes_that_are_not_json_cannot_be_searched() {
        assert!(redacted("{\"token\": \"s3cret\"", &["/token"]).is_none());
        assert!(redact(b"\xff", &["/token".into()]).is_none());
        // A whole document named by the empty pointer.
        assert_eq!(redacted("[1]", &[""]).unwrap().0, REDACTED);
    }
}
