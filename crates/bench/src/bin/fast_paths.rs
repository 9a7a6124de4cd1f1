//! How far the gate's fast paths reach on contracts it was not tuned for: for every
//! `contract.yaml` under the folders given, compiles the contract and counts the root `oneOf`s
//! decided by the outcome member and the `pattern`s matched by a table per position
//! (BENCHMARKS.md, "Fast paths on contracts written by others").
//!
//! ```sh
//! cargo run --release -p toolgate-bench --bin fast_paths -- contracts tests/corpora/real-apis
//! ```
//!
//! With `--patterns FILE` (JSON lines of `{"pattern": …, "count": N}`, as
//! `crates/bench/api_patterns.py` extracts them from a folder of API descriptions), it counts
//! instead which of those patterns the positional matcher reads, weighted by their uses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolgate_gate::internals::{FastPaths, fast_paths};
use toolgate_gate::{Contract, ContractSource};

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, file] = arguments.as_slice()
        && flag == "--patterns"
    {
        return pattern_census(Path::new(file));
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
        total.positional += census.positional;
        total.other_patterns.extend(census.other_patterns);
    }
    let patterns = total.positional + total.other_patterns.len();
    println!("contracts: {compiled} compiled ({failed} did not compile and are not counted)");
    println!(
        "shapes: {}; with a root oneOf: {}; decided by the outcome member: {}",
        total.shapes, total.one_of_envelopes, total.narrowed
    );
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

/// Which of the patterns listed in `file` the positional matcher reads, weighted by their uses.
fn pattern_census(file: &Path) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|error| {
        eprintln!("fast_paths: cannot read {}: {error}", file.display());
        std::process::exit(2);
    });
    let (mut distinct, mut uses, mut positional, mut positional_uses) = (0, 0, 0, 0);
    let (mut untranslatable, mut others) = (0, Vec::new());
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|error| {
            eprintln!("fast_paths: {}: not a JSON line: {error}", file.display());
            std::process::exit(2);
        });
        let (Some(pattern), Some(count)) = (entry["pattern"].as_str(), entry["count"].as_u64())
        else {
            eprintln!(
                "fast_paths: {}: a line without a pattern and a count",
                file.display()
            );
            std::process::exit(2);
        };
        let count = count as usize;
        distinct += 1;
        uses += count;
        if toolgate_gate::internals::pattern_as_regex(pattern).is_none() {
            untranslatable += count;
        } else if toolgate_gate::internals::is_positional_pattern(pattern) {
            positional += 1;
            positional_uses += count;
        } else {
            others.push((count, pattern.to_owned()));
        }
    }
    println!(
        "patterns: {distinct} distinct, {uses} uses; matched by position: {positional} distinct ({:.0} %), {positional_uses} uses ({:.0} %); not ECMA-262 the gate can translate: {untranslatable} uses",
        percent(positional, distinct),
        percent(positional_uses, uses)
    );
    others.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    println!("left to jsonschema's matcher, most used first:");
    for (count, pattern) in others.iter().take(40) {
        println!("  {count:5}  {}", pattern.escape_debug());
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
