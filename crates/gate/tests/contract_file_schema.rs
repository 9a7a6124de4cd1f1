//! The contract schema is the format's one source of truth: the gate validates every
//! contract.yaml against it before reading it, the published copy is the embedded one, and over a
//! corpus of mutated contracts the reader accepts exactly what the schema accepts.

mod common;

use serde_json::Value;
use toolgate_gate::internals::{
    CONTRACT_SCHEMA, contract_schema_accepts, read_contract_file, read_strict_yaml,
};

fn bundled_contracts() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(common::contracts_dir()).unwrap() {
        let tool = entry.unwrap().path();
        if !tool.is_dir() {
            continue;
        }
        for version in std::fs::read_dir(&tool).unwrap() {
            let version = version.unwrap().path();
            if !version.is_dir() {
                continue; // lint.yaml beside the versions
            }
            let file = version.join("contract.yaml");
            let text = std::fs::read_to_string(&file).unwrap();
            found.push((file.display().to_string(), text));
        }
    }
    found.sort();
    found
}

#[test]
fn the_published_schema_is_the_one_the_gate_embeds() {
    let published =
        std::fs::read_to_string(common::contracts_dir().join("contract.schema.json")).unwrap();
    assert_eq!(
        published, CONTRACT_SCHEMA,
        "contracts/contract.schema.json must be a byte-for-byte copy of crates/gate/contract.schema.json"
    );
}

#[test]
fn every_bundled_contract_validates_against_the_schema() {
    let contracts = bundled_contracts();
    assert!(contracts.len() >= 4, "the bundled contracts");
    for (file, text) in contracts {
        assert!(contract_schema_accepts(&text), "{file}");
        read_contract_file(&text).unwrap_or_else(|error| panic!("{file}: {error}"));
    }
}

#[test]
fn quoted_scalars_are_never_coerced() {
    let base = "tool: t\nversion: 1\ndirection: result\nshape:\n  schema: s.json\n  fields: [{ name: a, from: /a }]\nagent_schema: a.json\nlimits: { max_bytes: 4096 }\nretry: { max_attempts: 3 }\nrules:\n  - { name: r, retryable: true, freshness: { field: a, max_age: 1m, max_future: 1m } }\n";
    read_contract_file(base).unwrap();
    for (from, to, line_column, words) in [
        (
            "version: 1",
            "version: \"1\"",
            "2:10",
            "version must be a whole number",
        ),
        (
            "max_bytes: 4096",
            "max_bytes: \"4096\"",
            "8:22",
            "max_bytes must be a whole number",
        ),
        (
            "max_attempts: 3",
            "max_attempts: \"3\"",
            "9:24",
            "max_attempts must be a whole number",
        ),
        (
            "retryable: true",
            "retryable: \"true\"",
            "11:27",
            "retryable must be true or false",
        ),
        (
            "max_bytes: 4096",
            "max_bytes: 4096.0",
            "8:22",
            "write it as an integer",
        ),
        (
            "max_bytes: 4096",
            "max_bytes: 18446744073709551615",
            "8:22",
            "past the ceiling",
        ),
    ] {
        let text = base.replace(from, to);
        let error = read_contract_file(&text).unwrap_err();
        assert!(
            error.starts_with(&format!("contract.yaml:{line_column}")) && error.contains(words),
            "{to}: {error}"
        );
    }
}

/// Every way to break a contract's types: quote a scalar, write a float for a whole number or a
/// fraction for an integer, change a value's type, add an unknown key, drop a key.
fn mutants(value: &Value, at: &mut Vec<String>, out: &mut Vec<(String, Value)>, root: &Value) {
    let replace = |replacement: Value| {
        let mut document = root.clone();
        let pointer: String = at.iter().map(|token| format!("/{token}")).collect();
        *document.pointer_mut(&pointer).unwrap() = replacement;
        document
    };
    let pointer: String = at.iter().map(|token| format!("/{token}")).collect();
    match value {
        Value::Object(members) => {
            let mut extra = members.clone();
            extra.insert("unknown_key".into(), Value::from(1));
            out.push((
                format!("{pointer} + unknown key"),
                replace(Value::Object(extra)),
            ));
            for key in members.keys() {
                let mut fewer = members.clone();
                fewer.remove(key);
                out.push((format!("{pointer} - {key}"), replace(Value::Object(fewer))));
            }
            out.push((
                format!("{pointer} -> []"),
                replace(Value::Array(Vec::new())),
            ));
            for (key, member) in members {
                at.push(key.replace('~', "~0").replace('/', "~1"));
                mutants(member, at, out, root);
                at.pop();
            }
        }
        Value::Array(items) => {
            out.push((
                format!("{pointer} -> {{}}"),
                replace(Value::Object(Default::default())),
            ));
            for (index, item) in items.iter().enumerate() {
                at.push(index.to_string());
                mutants(item, at, out, root);
                at.pop();
            }
        }
        Value::Number(number) => {
            out.push((
                format!("{pointer} quoted"),
                replace(Value::from(number.to_string())),
            ));
            out.push((
                format!("{pointer} + 0.5"),
                replace(Value::from(number.as_f64().unwrap() + 0.5)),
            ));
            out.push((
                format!("{pointer} negative"),
                replace(Value::from(-number.as_f64().unwrap() - 1.0)),
            ));
            out.push((format!("{pointer} -> true"), replace(Value::Bool(true))));
        }
        Value::Bool(flag) => {
            out.push((
                format!("{pointer} quoted"),
                replace(Value::from(flag.to_string())),
            ));
            out.push((format!("{pointer} -> 1"), replace(Value::from(1))));
        }
        Value::String(text) => {
            out.push((format!("{pointer} -> 7"), replace(Value::from(7))));
            out.push((format!("{pointer} -> null"), replace(Value::Null)));
            out.push((
                format!("{pointer} -> [text]"),
                replace(Value::Array(vec![Value::from(text.as_str())])),
            ));
            out.push((format!("{pointer} -> empty"), replace(Value::from(""))));
        }
        Value::Null => out.push((format!("{pointer} -> 0"), replace(Value::from(0)))),
    }
}

#[test]
fn over_mutated_contracts_the_reader_accepts_exactly_what_the_schema_accepts() {
    let mut checked = 0;
    let mut refused = 0;
    for (file, text) in bundled_contracts() {
        let document: Value = read_strict_yaml(&text).unwrap();
        let mut corpus = Vec::new();
        mutants(&document, &mut Vec::new(), &mut corpus, &document);
        for (mutation, mutant) in corpus {
            // JSON is YAML: the mutant is read exactly as a contract.yaml holding it would be.
            let yaml = serde_json::to_string_pretty(&mutant).unwrap();
            let schema = contract_schema_accepts(&yaml);
            let reader = read_contract_file(&yaml);
            assert_eq!(
                schema,
                reader.is_ok(),
                "{file}, {mutation}: the schema {} it, the reader {}",
                if schema { "accepts" } else { "refuses" },
                match &reader {
                    Ok(()) => "accepts it".to_owned(),
                    Err(error) => format!("refuses it: {error}"),
                }
            );
            checked += 1;
            refused += usize::from(!schema);
        }
    }
    println!(
        "{checked} mutated contracts: the schema and the reader agree on all ({refused} refused)"
    );
    assert!(checked > 500, "only {checked} mutants");
    assert!(refused > checked / 2, "only {refused} of {checked} refused");
}
