//! Documents for a generated contract: successes drawn from its data schema (following `$ref`
//! across its files), failures, and mutants of both that land just inside and just outside what
//! the schema says (a member added or removed, a value of another type, a string emptied,
//! lengthened or given a character the pattern's classes disagree about across regex dialects).

use serde_json::{Map, Value, json};

use crate::entropy::Entropy;
use crate::schema::MEMBER_PATTERNS;
use crate::{REQUEST_ID, TOOL};

/// How deep a drawn instance may go, each reference and each nested value a step: recursive
/// schemas stop here. Deep enough for a nested result (a child envelope with its error object,
/// reached through two references) under the data to be drawn whole.
const DEPTH: usize = 9;

/// Strings a pattern or format may read differently across regex dialects and parsers: Arabic
/// and full-width digits, a non-breaking space, line terminators, a character outside the BMP,
/// a combining mark.
const TRICKY: [&str; 10] = [
    "٣",
    "７",
    "\u{a0}",
    "a\rb",
    "a\u{2028}b",
    "𝟘",
    "e\u{301}",
    "İ",
    "ſ",
    "K",
];

pub(crate) fn documents(
    entropy: &mut impl Entropy,
    files: &[(String, Value)],
    envelope_is_one_of: bool,
    count: usize,
) -> Vec<Vec<u8>> {
    let drawer = Drawer { files };
    let mut documents = Vec::with_capacity(count);
    for index in 0..count {
        let data = drawer.instance(
            entropy,
            "envelope.schema.json",
            &json!({"$ref": "#/$defs/data"}),
            DEPTH,
        );
        let mut document =
            json!({"tool": TOOL, "request_id": REQUEST_ID, "outcome": "success", "data": data});
        if envelope_is_one_of && index % 5 == 4 {
            let code = *entropy.pick(&[
                "NOT_FOUND",
                "UPSTREAM_UNAVAILABLE",
                "INVALID_RESPONSE",
                "TEAPOT",
            ]);
            document = json!({"tool": TOOL, "request_id": REQUEST_ID, "outcome": "failure", "error": {"code": code, "retryable": entropy.chance(50)}});
        }
        // A third of the documents are left as drawn; the rest are mutated a few times.
        if index % 3 != 0 {
            for _ in 0..1 + entropy.below(3) {
                mutate(entropy, &mut document);
            }
        }
        let mut text = document.to_string().into_bytes();
        if entropy.chance(5) {
            // A duplicate member: the parser refuses it before any schema runs.
            text = format!(r#"{{"tool":"{TOOL}","tool":"{TOOL}"}}"#).into_bytes();
        }
        documents.push(text);
    }
    documents
}

struct Drawer<'f> {
    files: &'f [(String, Value)],
}

impl Drawer<'_> {
    /// The schema a `$ref` in `file` names (by JSON pointer or by `$anchor`), and the file it
    /// is in.
    fn resolve(&self, file: &str, reference: &str) -> Option<(String, Value)> {
        let (target, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let target = if target.is_empty() {
            file.to_owned()
        } else {
            target.to_owned()
        };
        let document = &self.files.iter().find(|(name, _)| *name == target)?.1;
        let schema = if fragment.is_empty() {
            document.clone()
        } else if fragment.starts_with('/') {
            document.pointer(fragment)?.clone()
        } else {
            anchored(document, fragment)?.clone()
        };
        Some((target, schema))
    }

    /// The schema a `$dynamicRef` in `file` names: the root, when it carries the dynamic anchor
    /// named (it is the outermost resource of the dynamic scope); otherwise as a `$ref`.
    fn resolve_dynamic(&self, file: &str, reference: &str) -> Option<(String, Value)> {
        let (_, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let (root_file, root) = self.files.first()?;
        if root.get("$dynamicAnchor").and_then(Value::as_str) == Some(fragment) {
            return Some((root_file.clone(), root.clone()));
        }
        self.resolve(file, reference)
    }

    /// A value drawn from `schema` (in `file`): valid for what the drawer understands, which is
    /// most of it; the gate and its reference decide either way.
    fn instance(
        &self,
        entropy: &mut impl Entropy,
        file: &str,
        schema: &Value,
        depth: usize,
    ) -> Value {
        let Some(object) = schema.as_object() else {
            return Value::Null;
        };
        if depth == 0 {
            return Value::Null;
        }
        let reference = match (object.get("$ref"), object.get("$dynamicRef")) {
            (Some(Value::String(reference)), _) => Some(self.resolve(file, reference)),
            (_, Some(Value::String(reference))) => Some(self.resolve_dynamic(file, reference)),
            _ => None,
        };
        if let Some(reference) = reference {
            return match reference {
                Some((file, target)) => self.instance(entropy, &file, &target, depth - 1),
                None => Value::Null,
            };
        }
        if let Some(value) = object.get("const") {
            return value.clone();
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array)
            && !values.is_empty()
        {
            return entropy.pick(values).clone();
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(branches) = object.get(keyword).and_then(Value::as_array)
                && !branches.is_empty()
            {
                let branch = entropy.pick(branches).clone();
                return self.instance(entropy, file, &branch, depth - 1);
            }
        }
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            Some(Value::Array(kinds)) if !kinds.is_empty() => {
                entropy.pick(kinds).as_str().unwrap_or("null").to_owned()
            }
            _ => match object.get("allOf").and_then(Value::as_array) {
                Some(branches) if !branches.is_empty() => {
                    let branch = branches[0].clone();
                    return self.instance(entropy, file, &branch, depth - 1);
                }
                _ => "string".to_owned(),
            },
        };
        match kind.as_str() {
            "string" => string(entropy, object),
            "integer" | "number" => number(entropy, object, kind == "integer"),
            "boolean" => Value::Bool(entropy.chance(50)),
            "null" => Value::Null,
            "array" => {
                let items = object.get("items").cloned().unwrap_or(json!({}));
                let most = object
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .unwrap_or(3)
                    .min(3) as usize;
                let mut values: Vec<Value> = Vec::new();
                if let Some(prefix) = object.get("prefixItems").and_then(Value::as_array) {
                    for schema in prefix {
                        values.push(self.instance(entropy, file, schema, depth - 1));
                    }
                }
                for _ in 0..entropy.below(most + 1) {
                    values.push(self.instance(entropy, file, &items, depth - 1));
                }
                Value::Array(values)
            }
            _ => self.object(entropy, file, object, depth),
        }
    }

    fn object(
        &self,
        entropy: &mut impl Entropy,
        file: &str,
        schema: &Map<String, Value>,
        depth: usize,
    ) -> Value {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        let mut add_properties = |properties: Option<&Value>, out: &mut Map<String, Value>| {
            for (name, property) in properties.and_then(Value::as_object).into_iter().flatten() {
                if required.contains(&name.as_str()) || entropy.chance(60) {
                    let value = self.instance(entropy, file, property, depth - 1);
                    out.insert(name.clone(), value);
                }
            }
        };
        add_properties(schema.get("properties"), &mut out);
        for branch in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add_properties(branch.get("properties"), &mut out);
        }
        // Members a pattern governs: a name it matches, now and then.
        for (pattern, property) in schema
            .get("patternProperties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let names = MEMBER_PATTERNS
                .iter()
                .find(|(known, _)| known == pattern)
                .map(|(_, names)| *names);
            if let Some(names) = names
                && entropy.chance(50)
            {
                let name = (*entropy.pick(names)).to_owned();
                let value = self.instance(entropy, file, property, depth - 1);
                out.insert(name, value);
            }
        }
        Value::Object(out)
    }
}

/// The schema in `document` that carries `$anchor` (or `$dynamicAnchor`) `name`.
fn anchored<'v>(document: &'v Value, name: &str) -> Option<&'v Value> {
    match document {
        Value::Object(members) => {
            let named = ["$anchor", "$dynamicAnchor"]
                .iter()
                .any(|keyword| members.get(*keyword).and_then(Value::as_str) == Some(name));
            if named {
                return Some(document);
            }
            members.values().find_map(|member| anchored(member, name))
        }
        Value::Array(items) => items.iter().find_map(|item| anchored(item, name)),
        _ => None,
    }
}

fn string(entropy: &mut impl Entropy, schema: &Map<String, Value>) -> Value {
    if let Some(examples) = schema.get("examples").and_then(Value::as_array)
        && !examples.is_empty()
        && entropy.chance(85)
    {
        return entropy.pick(examples).clone();
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        let sample = match format {
            "date-time" => *entropy.pick(&[
                "2026-11-29T12:00:00Z",
                "2026-11-29T12:00:00.5+05:30",
                "2026-02-30T12:00:00Z",
                "2026-11-29 12:00:00Z",
            ]),
            "date" => *entropy.pick(&["2026-11-29", "2026-13-01"]),
            "time" => *entropy.pick(&["12:00:00Z", "25:00:00Z"]),
            "email" => *entropy.pick(&["a@example.com", "not an address", "é@example.com"]),
            "uuid" => *entropy.pick(&[
                "123e4567-e89b-12d3-a456-426614174000",
                "123e4567e89b12d3a456426614174000",
            ]),
            "ipv4" => *entropy.pick(&["192.0.2.1", "192.0.2.256"]),
            "ipv6" => *entropy.pick(&["2001:db8::1", "2001:db8::g"]),
            "hostname" => *entropy.pick(&["example.com", "-bad-.com"]),
            _ => *entropy.pick(&["P1D", "PT1H30M", "1 day"]),
        };
        return json!(sample);
    }
    let low = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let high = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(12)
        .min(40) as usize;
    let length = low + entropy.below(high.saturating_sub(low) + 1);
    let alphabet = ['a', 'b', 'Z', '0', '_', 'é', ' ', '日'];
    Value::String((0..length).map(|_| *entropy.pick(&alphabet)).collect())
}

fn number(entropy: &mut impl Entropy, schema: &Map<String, Value>, integer: bool) -> Value {
    let bound = |name: &str| schema.get(name).and_then(Value::as_f64);
    let low = bound("minimum")
        .or_else(|| bound("exclusiveMinimum").map(|value| value + 1.0))
        .unwrap_or(-5.0);
    let high = bound("maximum")
        .or_else(|| bound("exclusiveMaximum").map(|value| value - 1.0))
        .unwrap_or(low + 100.0);
    let span = (high - low).max(0.0) as usize;
    let mut value = low + entropy.below(span + 1) as f64;
    if let Some(step) = bound("multipleOf")
        && step > 0.0
    {
        value = (value / step).round() * step;
    }
    if integer || entropy.chance(50) {
        json!(value.round() as i64)
    } else {
        json!(value + 0.25)
    }
}

/// Every pointer in `document` to a value, the root excluded.
fn pointers(document: &Value, at: &str, out: &mut Vec<String>) {
    match document {
        Value::Object(members) => {
            for (name, value) in members {
                let pointer = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                out.push(pointer.clone());
                pointers(value, &pointer, out);
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                let pointer = format!("{at}/{index}");
                out.push(pointer.clone());
                pointers(value, &pointer, out);
            }
        }
        _ => {}
    }
}

/// One change to `document`, somewhere in it.
fn mutate(entropy: &mut impl Entropy, document: &mut Value) {
    let mut places = Vec::new();
    pointers(document, "", &mut places);
    if places.is_empty() {
        return;
    }
    let place = entropy.pick(&places).clone();
    let Some(target) = document.pointer_mut(&place) else {
        return;
    };
    match entropy.below(9) {
        0 => *target = Value::Null,
        1 => *target = json!(1e300),
        2 => *target = json!(-1),
        3 => *target = json!(""),
        4 => *target = json!("x".repeat(80)),
        5 => *target = json!(*entropy.pick(&TRICKY)),
        6 => match target {
            Value::Object(members) => {
                let name = *entropy.pick(&["zz_extra", "x_zz"]);
                members.insert(name.to_owned(), json!("unpromised"));
            }
            Value::Array(items) => items.push(json!({})),
            Value::String(text) => {
                let tricky: &&str = entropy.pick(&TRICKY);
                text.push_str(tricky);
            }
            _ => *target = json!({}),
        },
        7 => {
            // Remove the member (or item) itself.
            let (parent, last) = place.rsplit_once('/').unwrap_or(("", ""));
            let last = last.replace("~1", "/").replace("~0", "~");
            match document.pointer_mut(parent) {
                Some(Value::Object(members)) => {
                    members.remove(&last);
                }
                Some(Value::Array(items)) => {
                    if let Ok(index) = last.parse::<usize>()
                        && index < items.len()
                    {
                        items.remove(index);
                    }
                }
                _ => {}
            }
        }
        _ => *target = json!([target.clone()]),
    }
}
