//! A schema inferred from samples of a tool's output: the types seen at each place, a member
//! required where every sample has it, formats recognised (a format is kept only when every
//! string seen there has it), strings and arrays bounded from the longest seen with a stated
//! margin, every object closed. Each bound is an assumption, listed.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::convert::{Assumption, escape};

/// How much longer than the longest seen a string or array may be.
pub const MARGIN: u64 = 4;
/// The least bound a string gets, however short the ones seen.
const SHORTEST_STRING_BOUND: u64 = 64;
/// The least bound an array gets.
const SHORTEST_ARRAY_BOUND: u64 = 16;

/// Each member's values, and in how many objects it appeared.
type Members = BTreeMap<String, (Seen, usize)>;

/// What the samples showed at one place.
#[derive(Debug, Default)]
struct Seen {
    null: bool,
    boolean: bool,
    integer: Option<(i128, i128)>,
    number: bool,
    /// Longest string, in characters, and the formats every string so far had.
    string: Option<(u64, Vec<&'static str>)>,
    /// Members: what each held and in how many of the objects it appeared; objects seen.
    object: Option<(Members, usize)>,
    /// Items, and the longest array.
    array: Option<(Box<Seen>, u64)>,
}

/// The formats recognised in strings, checked as the gate checks them.
const FORMATS: [&str; 5] = ["date-time", "date", "uuid", "email", "uri"];

impl Seen {
    fn add(&mut self, value: &Value) {
        match value {
            Value::Null => self.null = true,
            Value::Bool(_) => self.boolean = true,
            Value::Number(number) => match number
                .as_i64()
                .map(i128::from)
                .or_else(|| number.as_u64().map(i128::from))
            {
                Some(integer) => {
                    let (low, high) = self.integer.get_or_insert((integer, integer));
                    *low = (*low).min(integer);
                    *high = (*high).max(integer);
                }
                None => self.number = true,
            },
            Value::String(text) => {
                let formats: Vec<&'static str> = FORMATS
                    .into_iter()
                    .filter(|format| {
                        toolgate_gate::internals::format_accepts(format, text) == Some(true)
                            // `uri` takes any `scheme:rest`; only a web address reads as one.
                            && (*format != "uri" || text.starts_with("http://") || text.starts_with("https://"))
                    })
                    .collect();
                let length = text.chars().count() as u64;
                match &mut self.string {
                    Some((longest, known)) => {
                        *longest = (*longest).max(length);
                        known.retain(|format| formats.contains(format));
                    }
                    None => self.string = Some((length, formats)),
                }
            }
            Value::Array(items) => {
                let (seen, longest) = self.array.get_or_insert_with(|| (Box::default(), 0));
                *longest = (*longest).max(items.len() as u64);
                for item in items {
                    seen.add(item);
                }
            }
            Value::Object(members) => {
                let (known, count) = self.object.get_or_insert_with(|| (BTreeMap::new(), 0));
                *count += 1;
                for (name, member) in members {
                    let (seen, present) = known.entry(name.clone()).or_default();
                    seen.add(member);
                    *present += 1;
                }
            }
        }
    }

    fn schema(&self, at: &str, name: Option<&str>, assumptions: &mut Vec<Assumption>) -> Value {
        let mut assume = |what: String| {
            assumptions.push(Assumption {
                pointer: at.to_owned(),
                what,
            })
        };
        let mut types = Vec::new();
        let mut schema = Map::new();
        if self.null {
            types.push("null");
        }
        if self.boolean {
            types.push("boolean");
        }
        if self.number {
            types.push("number");
        } else if let Some((low, high)) = self.integer {
            types.push("integer");
            if low >= 0 && name.is_some_and(counts_or_identifies) {
                schema.insert("minimum".to_owned(), json!(0));
                schema.insert("maximum".to_owned(), json!(9_007_199_254_740_991_u64));
                assume(format!(
                    "integer between 0 and 2^53-1: every sample was, from {low} to {high}"
                ));
            }
        }
        if let Some((longest, formats)) = &self.string {
            types.push("string");
            let bound = (longest * MARGIN).max(SHORTEST_STRING_BOUND);
            schema.insert("maxLength".to_owned(), json!(bound));
            assume(format!(
                "maxLength {bound}: {MARGIN} times the longest seen ({longest})"
            ));
            if let Some(format) = formats.first() {
                schema.insert("format".to_owned(), json!(format));
                assume(format!("format {format}: every string seen here was one"));
            }
        }
        if let Some((items, longest)) = &self.array {
            types.push("array");
            let bound = (longest * MARGIN).max(SHORTEST_ARRAY_BOUND);
            schema.insert("maxItems".to_owned(), json!(bound));
            assume(format!(
                "maxItems {bound}: {MARGIN} times the longest seen ({longest})"
            ));
            let inner = format!("{at}/items");
            schema.insert("items".to_owned(), items.schema(&inner, None, assumptions));
        }
        if let Some((members, count)) = &self.object {
            types.push("object");
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (member, (seen, present)) in members {
                let inner = format!("{at}/properties/{}", escape(member));
                properties.insert(
                    member.clone(),
                    seen.schema(&inner, Some(member), assumptions),
                );
                if present == count {
                    required.push(Value::from(member.as_str()));
                }
            }
            schema.insert("properties".to_owned(), Value::Object(properties));
            if !required.is_empty() {
                schema.insert("required".to_owned(), Value::Array(required));
            }
            schema.insert("additionalProperties".to_owned(), Value::Bool(false));
        }
        let types: Vec<Value> = types.into_iter().map(Value::from).collect();
        match types.len() {
            0 => {}
            1 => {
                schema.insert("type".to_owned(), types[0].clone());
            }
            _ => {
                schema.insert("type".to_owned(), Value::Array(types));
            }
        }
        Value::Object(schema)
    }
}

/// Whether a member named `name` holds a count or an identifier (never negative).
fn counts_or_identifies(name: &str) -> bool {
    ["id", "number", "count", "size", "total"].contains(&name)
        || ["_id", "_count", "_number"]
            .iter()
            .any(|suffix| name.ends_with(suffix))
}

/// The schema every one of `samples` fits, and what was assumed to bound it.
pub fn infer(samples: &[Value]) -> (Value, Vec<Assumption>) {
    let mut seen = Seen::default();
    for sample in samples {
        seen.add(sample);
    }
    let mut assumptions = Vec::new();
    let mut schema = seen.schema("", None, &mut assumptions);
    schema["$schema"] = Value::from("https://json-schema.org/draft/2020-12/schema");
    (schema, assumptions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_fits_and_what_varies_is_optional_or_a_union() {
        let samples = [
            json!({"id": 7, "state": "open", "merged_at": null, "labels": [{"name": "bug"}], "url": "https://api.example.com/pulls/7", "opened_at": "2026-11-29T10:00:00Z"}),
            json!({"id": 8, "state": "closed", "merged_at": "2026-11-29T11:00:00Z", "labels": [], "url": "https://api.example.com/pulls/8", "opened_at": "2026-11-28T10:00:00Z", "draft": true}),
        ];
        let (schema, assumptions) = infer(&samples);
        let validator = toolgate_gate::internals::standalone_validator(&schema).unwrap();
        for sample in &samples {
            assert!(validator.is_valid(sample), "{sample}");
        }
        let properties = &schema["properties"];
        assert_eq!(properties["merged_at"]["type"], json!(["null", "string"]));
        assert_eq!(properties["opened_at"]["format"], "date-time");
        assert_eq!(properties["url"]["format"], "uri");
        assert_eq!(properties["id"]["minimum"], 0);
        assert_eq!(properties["labels"]["items"]["additionalProperties"], false);
        assert!(
            !schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!("draft"))
        );
        assert!(!validator.is_valid(&json!({"id": 9, "state": "open", "merged_at": null, "labels": [], "url": "https://x.example/9", "opened_at": "2026-11-29T10:00:00Z", "extra": 1})));
        assert!(
            assumptions
                .iter()
                .any(|assumption| assumption.what.starts_with("maxLength"))
        );
    }
}
