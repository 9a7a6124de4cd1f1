//! The admission path's shortcuts (the gate's own `Document`, the `oneOf` narrowed by the outcome
//! member, the positional pattern matcher) on contracts nobody tuned them for: each decides
//! exactly as the plain reference validator over serde_json's `Value`. The hand-written cases are
//! the shapes that once disagreed; `random_contracts` generates many more.

mod common;

use common::{REQUEST_ID, now};
use toolgate_gate::internals::stages;
use toolgate_gate::{Contract, ContractSource, Request};

/// The corpus of contracts on which the fast path once disagreed with its reference, each a
/// contract folder with its documents (`documents.jsonl`, one raw document a line).
fn corpus() -> Vec<(String, Contract, Vec<String>)> {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/fast-path");
    let mut cases: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    cases.sort();
    cases
        .into_iter()
        .map(|case| {
            let name = case.file_name().unwrap().to_string_lossy().into_owned();
            let source = ContractSource::read_dir(&case).unwrap();
            let contract =
                Contract::compile(&source).unwrap_or_else(|errors| panic!("{name}: {errors}"));
            let documents = std::fs::read_to_string(case.join("documents.jsonl"))
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect();
            (name, contract, documents)
        })
        .collect()
}

/// The gate's decision on `raw` (admitted or not), after checking that every shortcut agrees with
/// the reference on it.
fn admitted(contract: &Contract, raw: &str) -> bool {
    let document = stages::parse(contract, raw.as_bytes()).expect("valid JSON");
    assert!(
        stages::schema_agrees_with_reference(contract, &document),
        "the admission path and its reference disagree on {raw}"
    );
    contract
        .admit(raw.as_bytes(), &Request::new(REQUEST_ID), now())
        .is_admitted()
}

#[test]
fn the_contracts_that_once_disagreed_agree() {
    let cases = corpus();
    assert!(cases.len() >= 2, "{}", cases.len());
    for (name, contract, documents) in &cases {
        assert!(!documents.is_empty(), "{name}");
        for raw in documents {
            admitted(contract, raw);
        }
    }
}

#[test]
fn a_file_that_refers_back_to_the_root_keeps_its_meaning_under_the_narrowed_one_of() {
    // A tree of results: the envelope's success data is a node of another file, and a node's
    // child is a whole envelope again, reached from `node.schema.json` by a `$ref` back to the
    // root (`tree-of-results`), or by a `$dynamicRef` that resolves to the root's
    // `$dynamicAnchor`, the outermost in the dynamic scope (`dynamic-anchor-root`).
    for case in ["tree-of-results", "dynamic-anchor-root"] {
        let (_, contract, documents) = corpus()
            .into_iter()
            .find(|(name, _, _)| name == case)
            .unwrap();
        // A nested `{}` matches both branches of the envelope (neither requires a member), so
        // `oneOf` fails there and the reference rejects the tree; a nested success and a nested
        // failure are envelopes, and the tree is admitted.
        let decided: Vec<bool> = documents
            .iter()
            .map(|raw| admitted(&contract, raw))
            .collect();
        assert_eq!(decided, [false, true, true], "{case}");
    }
    // The dynamic scope is the document's, so that envelope is never narrowed, and why is kept.
    let (_, contract, _) = corpus()
        .into_iter()
        .find(|(name, _, _)| name == "dynamic-anchor-root")
        .unwrap();
    let census = toolgate_gate::internals::fast_paths(&contract);
    assert_eq!((census.one_of_envelopes, census.narrowed), (1, 0));
    assert!(
        census.declined[0].starts_with("envelope.schema.json#/$dynamicAnchor: "),
        "{:?}",
        census.declined
    );
}

/// Contracts drawn at random, a dozen documents each: every shortcut of the admission path
/// decides as the reference does, and every admitted document's agent bytes are what serde_json
/// writes for its promised values. A fuzz target (`fuzz/fuzz_targets/random_contract.rs`) runs
/// the same check for hours; what it finds is kept in `tests/corpora/fast-path/`.
#[test]
fn random_contracts_decide_as_the_reference_does() {
    let (mut compiled, mut documents, mut admitted, mut rules) = (0u64, 0, 0, 0u64);
    let mut failures = Vec::new();
    // More with TOOLGATE_FAST_PATH_SEEDS=N (RELIABILITY.md, "Random contracts").
    let seeds: u64 = std::env::var("TOOLGATE_FAST_PATH_SEEDS")
        .ok()
        .and_then(|seeds| seeds.parse().ok())
        .unwrap_or(1000);
    for seed in 0..seeds {
        let generated =
            toolgate_contractgen::generate(&mut toolgate_contractgen::Seeded::new(seed), 12);
        let Ok(contract) = Contract::compile(&generated.source()) else {
            continue;
        };
        compiled += 1;
        rules += generated.rules.len() as u64;
        documents += generated.documents.len();
        admitted += generated
            .documents
            .iter()
            .filter(|raw| {
                contract
                    .admit(raw, &generated.request(), now())
                    .is_admitted()
            })
            .count();
        for problem in toolgate_contractgen::disagreements(&generated, &contract, now()) {
            failures.push(format!("seed {seed}: {problem}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements, e.g.:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
    // The generator must produce contracts the gate takes, or this test checks nothing.
    assert!(
        compiled * 3 >= seeds * 2,
        "only {compiled} of {seeds} generated contracts compile"
    );
    assert!(documents as u64 >= compiled * 12);
    // Rules are drawn for some contracts (bindings and freshness windows).
    assert!(
        rules * 10 >= compiled,
        "{rules} rules in {compiled} contracts"
    );
    eprintln!("{compiled} contracts, {rules} rules, {documents} documents, {admitted} admitted");
}

/// The census `fast_paths` reports (BENCHMARKS.md, "Fast paths on contracts written by others")
/// counts what the gate takes: a `oneOf` envelope narrowed by its outcome member, one that cannot
/// be (no `const` to tell its branches apart), `pattern` keywords wherever a schema may hold
/// them, and neither a property called `pattern` nor a `pattern` inside data (`const`, `enum`,
/// `examples`, `default`).
#[test]
fn the_fast_path_census_counts_what_the_gate_takes() {
    use serde_json::json;
    use toolgate_gate::internals::{FastPaths, fast_paths, is_positional_pattern};
    let contract = |root: serde_json::Value| {
        let source = ContractSource::new(
            "tool: t\nversion: 1\ndirection: result\nshape:\n  schema: s.json\n  outcome: { pointer: /outcome, success: success, failure: failure }\n  error_code: /error/code\n  fields:\n    - { name: v, from: /v, optional: true }\n",
        )
        .with_schema_value("s.json", root);
        Contract::compile(&source).unwrap_or_else(|errors| panic!("{errors}"))
    };
    let data = json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "pattern": "^[a-z]+$"},
            "v": {"const": {"pattern": "^(a|b)$"}, "examples": [{"pattern": "x"}]},
            "w": {"enum": [{"pattern": "y"}], "default": {"pattern": "z"}},
            // A property named like a data keyword is still a schema.
            "default": {"pattern": "^q+$"},
            "list": {"prefixItems": [{"pattern": "^(ab|cd)$"}], "items": {"pattern": "[0-9]+"}}
        },
        "$defs": {"pattern": {"pattern": ".*"}}
    });
    let envelope = json!({
        "oneOf": [
            {"properties": {"outcome": {"const": "success"}, "data": data}},
            {"properties": {"outcome": {"const": "failure"}}}
        ]
    });
    assert_eq!(
        fast_paths(&contract(envelope)),
        FastPaths {
            shapes: 1,
            one_of_envelopes: 1,
            narrowed: 1,
            declined: Vec::new(),
            positional: 4,
            other_patterns: vec!["^(ab|cd)$".to_owned()],
        }
    );
    // Branches no `const` tells apart: a `oneOf`, not narrowed; and no patterns at all.
    let undecided = json!({"oneOf": [{"required": ["outcome"]}, {"required": ["v"]}]});
    let census = fast_paths(&contract(undecided));
    assert_eq!((census.one_of_envelopes, census.narrowed), (1, 0));
    // And why, decided when the contract was compiled.
    assert_eq!(census.declined.len(), 1);
    assert!(
        census.declined[0].contains("branch 0 fixes no string `const`"),
        "{:?}",
        census.declined
    );
    assert_eq!((census.positional, census.other_patterns.len()), (0, 0));
    let plain = fast_paths(&contract(json!({"type": "object"})));
    assert_eq!((plain.shapes, plain.one_of_envelopes), (1, 0));
    assert!(is_positional_pattern("^[a-z]{2,8}$"));
    assert!(!is_positional_pattern("^(0[1-9]|1[012])$"));
}
