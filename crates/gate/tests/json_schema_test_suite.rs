//! JSON-Schema-Test-Suite, Draft 2020-12 (vendored under corpora/), through the schema layer
//! compiled exactly as the gate compiles contract schemas (2020-12 forced, format assertions on,
//! unknown formats refused, the linear-time regex engine), with the suite's remotes served from
//! the vendored folder and every other reference refused.
//!
//! Each case runs the way admission decides it: the instance is written out, parsed by the gate's
//! strict parser into its document, and validated by `document_compile_options`' validator. The
//! same case through the serde_json `Value` validator that explains rejections
//! (`compile_options`) must give the same answer.
//!
//! Every case that does not give the suite's answer is listed in
//! `corpora/json-schema-test-suite.xfail.md` with a reason; a listed case that starts passing fails
//! the test too, so the list stays true.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_gate::internals::{compile_options, document_compile_options, parse_document};

const REMOTE_BASE: &str = "http://localhost:1234/";

fn suite_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/json-schema-test-suite")
}

/// Serves `http://localhost:1234/...` from the vendored `remotes/` folder; refuses the rest.
struct VendoredRemotes(PathBuf);

impl jsonschema::Retrieve for VendoredRemotes {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let text = uri.as_str();
        let Some(path) = text.strip_prefix(REMOTE_BASE) else {
            return Err(format!("{text} is not a vendored remote; nothing is fetched").into());
        };
        let file = self.0.join(path.split('#').next().unwrap_or_default());
        let content = std::fs::read_to_string(&file)
            .map_err(|error| format!("{}: {error}", file.display()))?;
        Ok(serde_json::from_str(&content)?)
    }
}

/// Which part of the suite a file belongs to.
fn part_of(relative: &Path) -> &'static str {
    let text = relative.to_string_lossy();
    if text.starts_with("optional/format/") {
        "optional/format"
    } else if text.starts_with("optional/") {
        "optional"
    } else {
        "required"
    }
}

fn xfails() -> BTreeMap<(String, String, String), String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpora/json-schema-test-suite.xfail.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut entries = BTreeMap::new();
    for line in text.lines().filter(|line| {
        line.starts_with("| ") && !line.starts_with("| file") && !line.starts_with("| ---")
    }) {
        // Cells are separated by " | "; a literal `|` inside a description is written `\|`.
        let protected = line.replace("\\|", "\u{0}");
        let cells: Vec<String> = protected
            .trim()
            .trim_matches('|')
            .split(" | ")
            .map(|cell| cell.trim().replace('\u{0}', "|"))
            .collect();
        let [file, group, case, reason] = cells.as_slice() else {
            panic!("malformed xfail line: {line}")
        };
        assert!(!reason.is_empty(), "every xfail needs a reason: {line}");
        let key = (file.clone(), group.clone(), case.clone());
        assert!(
            entries.insert(key, reason.clone()).is_none(),
            "listed twice: {line}"
        );
    }
    entries
}

fn files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn draft_2020_12_as_the_gate_compiles_it() {
    let root = suite_root();
    let tests = root.join("tests/draft2020-12");
    let xfails = xfails();
    let mut seen = BTreeSet::new();
    let mut unexpected = Vec::new();
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for path in files(&tests) {
        let relative = path.strip_prefix(&tests).unwrap().to_path_buf();
        let file = relative.to_string_lossy().replace('\\', "/");
        let part = part_of(&relative);
        let groups: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for group in groups {
            let group_name = group["description"].as_str().unwrap().to_owned();
            let compiled = document_compile_options(VendoredRemotes(root.join("remotes")))
                .build(&group["schema"]);
            let explainer =
                compile_options(VendoredRemotes(root.join("remotes"))).build(&group["schema"]);
            assert_eq!(
                compiled.is_ok(),
                explainer.is_ok(),
                "{file} / {group_name}: both representations compile, or neither"
            );
            for case in group["tests"].as_array().unwrap() {
                let case_name = case["description"].as_str().unwrap().to_owned();
                let expected = case["valid"].as_bool().unwrap();
                let bytes = serde_json::to_vec(&case["data"]).unwrap();
                let document = parse_document(&bytes, 100).expect("suite data is strict JSON");
                let passed = match (&compiled, &explainer) {
                    (Ok(validator), Ok(explainer)) => {
                        let decided = validator.is_valid(document.root());
                        assert_eq!(
                            decided,
                            explainer.is_valid(&case["data"]),
                            "{file} / {group_name} / {case_name}: the document and the Value disagree"
                        );
                        decided == expected
                    }
                    _ => false,
                };
                let tally = counts.entry(part).or_default();
                tally.0 += 1;
                tally.1 += usize::from(passed);
                let key = (file.clone(), group_name.clone(), case_name.clone());
                let listed = xfails.contains_key(&key);
                match (passed, listed) {
                    (true, true) => unexpected.push(format!("| {file} | {group_name} | {case_name} | passes now: remove it from the xfail list")),
                    (false, false) => {
                        let detail = match &compiled {
                            Ok(_) => format!("expected valid={expected}"),
                            Err(error) => format!("does not compile: {error}"),
                        };
                        unexpected.push(format!("| {file} | {} | {} | {detail}", group_name.replace('|', "\\|"), case_name.replace('|', "\\|")));
                    }
                    _ => {}
                }
                seen.insert(key);
            }
        }
    }
    for key in xfails.keys().filter(|key| !seen.contains(*key)) {
        unexpected.push(format!(
            "| {} | {} | {} | listed, but no such case exists",
            key.0, key.1, key.2
        ));
    }
    let line = |part: &str| {
        let (total, passed) = counts.get(part).copied().unwrap_or_default();
        format!("{part} {passed}/{total}")
    };
    // Straight to stderr, past libtest's capture: the counts belong in every `cargo test` log.
    let _ = writeln!(
        std::io::stderr(),
        "JSON-Schema-Test-Suite 2020-12 (formats asserted): {}, {}, {}; {} listed in the xfail file",
        line("required"),
        line("optional"),
        line("optional/format"),
        xfails.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} cases disagree with json-schema-test-suite.xfail.md:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        counts
            .get("required")
            .is_some_and(|(total, _)| *total > 1000),
        "the vendored suite is complete"
    );
}
