//! Structure-aware: start from a valid fixture, apply a sequence of mutations (inject members,
//! duplicate member names, replace values, splice bytes), then admit. Checks the invariants, and
//! that an injected unknown member or a duplicate name is never admitted.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate_model::edit::{object_pointers, text_with_duplicate, value_pointers, with_member, with_value};
use toolgate_fuzz::{admit_and_check, tools};

#[derive(Debug, Arbitrary)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Long(u16),
}

#[derive(Debug, Arbitrary)]
enum Mutation {
    /// Adds `x_<name>` (a member no bundled contract declares) to an object.
    Inject { object: u16, name: String, value: Scalar },
    /// Replaces a value.
    Replace { target: u16, value: Scalar },
    /// Wraps a value in an array.
    Wrap { target: u16 },
}

#[derive(Debug, Arbitrary)]
struct Input {
    tool: u8,
    fixture: u8,
    mutations: Vec<Mutation>,
    /// Repeats one member of one object at the end (applied last, to the text).
    duplicate: Option<(u16, u16, Scalar)>,
    /// Splices bytes into the final text.
    splice: Option<(u16, Vec<u8>)>,
}

fn scalar(value: Scalar) -> Value {
    match value {
        Scalar::Null => Value::Null,
        Scalar::Bool(flag) => Value::Bool(flag),
        Scalar::Int(number) => Value::from(number),
        Scalar::Float(number) => serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number),
        Scalar::Text(text) => Value::String(text),
        Scalar::Long(length) => Value::String("A".repeat(usize::from(length))),
    }
}

fn pick(items: &[String], index: u16) -> Option<&String> {
    (!items.is_empty()).then(|| &items[usize::from(index) % items.len()])
}

fuzz_target!(|input: Input| {
    let tools = tools();
    let tool = &tools[usize::from(input.tool) % tools.len()];
    if tool.accepted.is_empty() {
        return;
    }
    let mut document = tool.accepted[usize::from(input.fixture) % tool.accepted.len()].clone();
    let mut injected = false;
    for mutation in input.mutations.into_iter().take(8) {
        let mutated = match mutation {
            Mutation::Inject { object, name, value } => pick(&object_pointers(&document), object)
                .and_then(|pointer| with_member(&document, pointer, &format!("x_{name}"), scalar(value)))
                .inspect(|_| injected = true),
            Mutation::Replace { target, value } => {
                pick(&value_pointers(&document), target).and_then(|pointer| with_value(&document, pointer, scalar(value)))
            }
            Mutation::Wrap { target } => pick(&value_pointers(&document), target).and_then(|pointer| {
                let inner = document.pointer(pointer)?.clone();
                with_value(&document, pointer, Value::Array(vec![inner]))
            }),
        };
        if let Some(mutated) = mutated {
            document = mutated;
        }
    }
    let mut duplicated = false;
    let mut text = match input.duplicate {
        Some((object, member, value)) => {
            let objects = object_pointers(&document);
            let names: Option<Vec<String>> = pick(&objects, object)
                .and_then(|pointer| document.pointer(pointer))
                .and_then(Value::as_object)
                .map(|members| members.keys().cloned().collect());
            match (pick(&objects, object), names.as_deref().and_then(|names| pick(names, member))) {
                (Some(pointer), Some(name)) => {
                    duplicated = true;
                    text_with_duplicate(&document, pointer, name, &scalar(value)).into_bytes()
                }
                _ => serde_json::to_vec(&document).expect("a value serializes"),
            }
        }
        None => serde_json::to_vec(&document).expect("a value serializes"),
    };
    let spliced = input.splice.is_some();
    if let Some((at, bytes)) = input.splice {
        let at = usize::from(at) % (text.len() + 1);
        text.splice(at..at, bytes);
    }
    let decision = admit_and_check(tool, &text);
    if !spliced {
        assert!(!(injected && decision.is_admitted()), "an injected unknown member was admitted: {}", String::from_utf8_lossy(&text));
        assert!(!(duplicated && decision.is_admitted()), "a duplicate member name was admitted: {}", String::from_utf8_lossy(&text));
    }
});
