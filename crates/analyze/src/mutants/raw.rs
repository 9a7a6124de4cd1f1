//! Mutations of the bytes as received: what the parser and the byte limit must refuse before any
//! value exists.

use serde_json::Value;

use super::{Family, Out, Seed};
use toolgate_model::edit::{escaped_name, object_pointers};

pub(super) fn derive(seed: &Seed<'_>, out: &mut Out<'_>) {
    let document = seed.document;
    match out.family {
        Family::DuplicateTopLevel | Family::DuplicateNested | Family::DuplicateEscaped => {
            duplicates(seed, out);
        }
        Family::ByteOrderMark => {
            let mut bytes = b"\xEF\xBB\xBF".to_vec();
            bytes.extend_from_slice(seed.raw);
            out.push("", "prefixed a UTF-8 byte-order mark", Some(bytes));
        }
        Family::TrailingContent => {
            let canary = out.canary(0);
            let mut bytes = seed.raw.to_vec();
            bytes.extend_from_slice(b"\n");
            bytes.extend_from_slice(serde_json::json!({ "note": canary }).to_string().as_bytes());
            out.push_marked(
                "",
                "appended a second JSON value carrying a canary",
                Some(bytes),
                vec![canary],
            );
        }
        Family::Truncated => {
            let half = seed.raw.len() / 2;
            out.push(
                "",
                format!("cut the {} bytes to the first {half}", seed.raw.len()),
                Some(seed.raw[..half].to_vec()),
            );
        }
        Family::PaddedPastMaxBytes if seed.raw.len() <= seed.max_bytes => {
            let mut bytes = seed.raw.to_vec();
            bytes.resize(seed.max_bytes + 1, b' ');
            out.push(
                "",
                format!(
                    "padded with trailing whitespace to {} bytes, one past the limit",
                    seed.max_bytes + 1
                ),
                Some(bytes),
            );
        }
        Family::NestedPastMaxDepth => {
            // The first member of the root (or the root itself), wrapped in as many arrays as
            // the limit allows levels: with the levels above it, one too deep at least.
            let pointer = match document {
                Value::Object(members) => members
                    .keys()
                    .next()
                    .map(|name| format!("/{}", name.replace('~', "~0").replace('/', "~1")))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            if let Some(value) = document.pointer(&pointer) {
                let mut nested = value.clone();
                for _ in 0..seed.max_depth {
                    nested = Value::Array(vec![nested]);
                }
                out.push(
                    &pointer,
                    format!(
                        "wrapped the value in {} arrays, past the depth limit of {}",
                        seed.max_depth, seed.max_depth
                    ),
                    seed.layout.with_value(&pointer, &nested),
                );
            }
        }
        Family::InvalidUtf8 => {
            let strings = seed.pointers(Value::is_string);
            if let Some(pointer) = strings.first() {
                let text = seed.text(pointer).unwrap_or_default();
                let mut literal = Value::from(text).to_string().into_bytes();
                literal.insert(literal.len() - 1, 0xFF);
                out.push(
                    pointer,
                    "put the byte 0xFF, never valid in UTF-8, at the end of the string",
                    seed.layout.with_raw_value(pointer, &literal),
                );
            }
        }
        Family::NanForNumber => {
            for pointer in out.sample_pointers(seed.pointers(Value::is_number)) {
                out.push(
                    &pointer,
                    "replaced the number with the token NaN",
                    seed.layout.with_raw_value(&pointer, b"NaN"),
                );
            }
        }
        _ => {}
    }
}

/// Every member of the chosen objects repeated with a canary: in the top-level object, in nested
/// ones, or (escaped) in any, with the copy's name spelled with a `\u` escape.
fn duplicates(seed: &Seed<'_>, out: &mut Out<'_>) {
    let family = out.family;
    let mut members = Vec::new();
    for object in object_pointers(seed.document) {
        let nested = !object.is_empty();
        let wanted = match family {
            Family::DuplicateTopLevel => !nested,
            Family::DuplicateNested => nested,
            _ => true,
        };
        if let Some(Value::Object(names)) = seed.document.pointer(&object)
            && wanted
        {
            members.extend(names.keys().map(|name| (object.clone(), name)));
        }
    }
    let members = out.sample(members, |(object, name): &(String, &String)| {
        format!("{object}/{}", name.replace('~', "~0").replace('/', "~1"))
    });
    for (index, (object, name)) in members.into_iter().enumerate() {
        {
            let pointer = format!("{object}/{}", name.replace('~', "~0").replace('/', "~1"));
            let canary = out.canary(index);
            let other = Value::from(canary.as_str());
            let (spelled_name, spelled) = if family == Family::DuplicateEscaped {
                (
                    escaped_name(name),
                    " (the copy's name spelled with a \\u escape)",
                )
            } else {
                (Value::from(name.as_str()).to_string(), "")
            };
            out.push_marked(
                &pointer,
                format!("repeated member `{name}` with another value{spelled}"),
                seed.layout.with_duplicate(&object, &spelled_name, &other),
                vec![canary],
            );
        }
    }
}
