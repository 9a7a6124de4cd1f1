//! The gate's modules import each other without a cycle, so the crate reads in pipeline order:
//! vocabulary at the leaves, the stages above them, the contract at the top. A cycle is where
//! shared vocabulary has crept into a hub module; this test names it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Top-level module → the top-level modules its non-test code refers to through `crate::`.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![src.clone()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(
                fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
            continue;
        }
        let relative = path.strip_prefix(&src).unwrap();
        if relative == Path::new("lib.rs") {
            continue; // the crate root declares every module; it is not one of them
        }
        let module = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        let text = fs::read_to_string(&path).unwrap();
        // Unit tests sit at the bottom of a file and may reach anywhere.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let edges = graph.entry(module.clone()).or_default();
        for line in code.lines() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for (index, _) in line.match_indices("crate::") {
                let after = &line[index + "crate::".len()..];
                let target: String = after
                    .chars()
                    .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
                    .collect();
                if !target.is_empty() && target != module {
                    edges.insert(target);
                }
            }
        }
    }
    graph
}

/// A cycle in `graph`, as the path that closes it, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|on_path| on_path == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_gate_modules_import_each_other_without_a_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 20, "found only {:?}", graph.keys());
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the gate's modules import each other in a circle: {}; move the shared items into a leaf module",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&graph), None);
    graph.entry("c".into()).or_default().insert("b".into());
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["b".to_owned(), "c".to_owned(), "b".to_owned()])
    );
}

#[test]
fn the_vocabulary_modules_are_leaves() {
    let graph = module_graph();
    for leaf in ["outcome", "facts", "sanitize", "error", "timestamp", "yaml"] {
        assert_eq!(
            graph.get(leaf),
            Some(&BTreeSet::new()),
            "`{leaf}` should depend on no other module of the gate"
        );
    }
}
