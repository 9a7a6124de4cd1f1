//! JSONTestSuite (nst/JSONTestSuite, vendored under corpora/) through the gate's strict parse.
//!
//! Every file goes through `Contract::admit` of a contract whose schema accepts any document, with
//! the gate's default limits, so only the transport and parse layers can say no:
//! - every `n_` file must be rejected, cleanly, at the transport or parse layer;
//! - every `y_` file must be admitted;
//! - every `i_` file's decision, and every deviation from the two rules above, is an entry in
//!   `corpora/json-test-suite-decisions.md` with a one-line reason. An entry that no longer
//!   describes what the gate does fails the test, so the table stays true;
//! - every admitted file reaches the agent as exactly the bytes serde_json writes for it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::SystemTime;

use toolgate_gate::{Contract, ContractSource, Layer, Request};

fn corpora() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpora")
}

/// A contract that admits any JSON document with the default limits and projects it whole.
fn accept_anything() -> Contract {
    let source = ContractSource::new(
        "tool: corpus\nversion: 1\ndirection: result\nshape:\n  schema: any.json\n  fields: [{ name: document, from: \"\" }]\nagent_schema: any.json\n",
    )
    .with_schema("any.json", "true");
    Contract::compile(&source).expect("the corpus contract compiles")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Accept,
    Reject,
}

fn decisions_table() -> BTreeMap<String, (Decision, String)> {
    let text = std::fs::read_to_string(corpora().join("json-test-suite-decisions.md")).unwrap();
    let mut table = BTreeMap::new();
    for line in text.lines().filter(|line| {
        line.starts_with("| ") && !line.starts_with("| file") && !line.starts_with("| ---")
    }) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let [file, decision, reason] = cells.as_slice() else {
            panic!("malformed table line: {line}")
        };
        let decision = match *decision {
            "accept" => Decision::Accept,
            "reject" => Decision::Reject,
            other => panic!("decision must be accept or reject, not {other:?}: {line}"),
        };
        assert!(!reason.is_empty(), "every entry needs a reason: {line}");
        let file = file.trim_matches('`').to_owned();
        assert!(
            table
                .insert(file.clone(), (decision, reason.to_string()))
                .is_none(),
            "{file} is listed twice"
        );
    }
    table
}

#[test]
fn every_file_of_json_test_suite_is_decided_as_recorded() {
    let contract = accept_anything();
    let request = Request::new("req.corpus01");
    let table = decisions_table();
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpora().join("json-test-suite/test_parsing"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    let mut counts: BTreeMap<(char, &str), usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut seen = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let raw = std::fs::read(path).unwrap();
        let decision = contract.admit(&raw, &request, SystemTime::UNIX_EPOCH);
        let actual = if decision.is_admitted() {
            Decision::Accept
        } else {
            Decision::Reject
        };
        if let Some(rejection) = decision.rejection() {
            assert!(
                matches!(rejection.layer(), Layer::Transport | Layer::Parse),
                "{name}: rejected at {} ({}); with a schema that accepts anything only transport or parse may refuse",
                rejection.layer(),
                decision.rule().unwrap_or_default()
            );
        }
        if decision.is_admitted() {
            // What the agent reads is the document itself, written canonically: exactly what
            // serde_json writes for the value it parses from the same bytes (members sorted).
            let value: serde_json::Value = serde_json::from_slice(&raw).unwrap_or_else(|error| {
                panic!("{name}: admitted, but serde_json cannot read it: {error}")
            });
            let expected = format!(
                r#"{{"tool":"corpus","request_id":"req.corpus01","outcome":"success","data":{{"document":{}}}}}"#,
                serde_json::to_string(&value).unwrap()
            );
            if decision.agent_bytes() != expected.as_bytes() {
                wrong.push(format!(
                    "{name}: the agent bytes are {}, not serde_json's {expected}",
                    String::from_utf8_lossy(decision.agent_bytes())
                ));
            }
        }
        let kind = name.chars().next().unwrap();
        let default = match kind {
            'y' => Some(Decision::Accept),
            'n' => Some(Decision::Reject),
            _ => None,
        };
        let expected = match (table.get(&name), default) {
            (Some((decision, _)), Some(default)) if *decision == default => {
                wrong.push(format!("{name}: the table lists it, but {decision:?} is what its prefix already says; remove the entry"));
                continue;
            }
            (Some((decision, _)), _) => *decision,
            (None, Some(default)) => default,
            (None, None) => {
                wrong.push(format!(
                    "{name}: an i_ file with no entry; the gate decides {actual:?} (rule {:?})",
                    decision.rule()
                ));
                continue;
            }
        };
        if actual != expected {
            let rule = decision.rule().unwrap_or("admitted");
            wrong.push(format!(
                "{name}: expected {expected:?}, the gate decided {actual:?} ({rule})"
            ));
        }
        seen.push(name);
        *counts
            .entry((
                kind,
                if actual == Decision::Accept {
                    "accepted"
                } else {
                    "rejected"
                },
            ))
            .or_default() += 1;
    }
    for listed in table.keys() {
        if !files
            .iter()
            .any(|path| path.file_name().unwrap().to_string_lossy() == *listed)
        {
            wrong.push(format!(
                "{listed}: listed in the table, but there is no such file"
            ));
        }
    }
    let count = |kind: char, what: &str| counts.get(&(kind, what)).copied().unwrap_or_default();
    // Straight to stderr, past libtest's capture: the counts belong in every `cargo test` log.
    let _ = writeln!(
        std::io::stderr(),
        "JSONTestSuite: {} files; y_ {} accepted, {} rejected (deviations listed); n_ {} rejected, {} accepted; i_ {} accepted, {} rejected",
        files.len(),
        count('y', "accepted"),
        count('y', "rejected"),
        count('n', "rejected"),
        count('n', "accepted"),
        count('i', "accepted"),
        count('i', "rejected"),
    );
    assert!(
        wrong.is_empty(),
        "{} files disagree with corpora/json-test-suite-decisions.md:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(files.len(), 318, "the vendored corpus is complete");
}
