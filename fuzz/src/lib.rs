//! Shared setup for the fuzz targets: the bundled contracts, compiled once, with their fixtures'
//! requests and accepted documents, and the invariant every input must keep.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::SystemTime;

use serde_json::Value;
use toolgate_repo::{
    Repository, RequestSpec, agent_view_problems, parse_time, read_request_file,
    reference_disagreements,
};
use toolgate_gate::{Contract, Decision};

/// One bundled tool, ready to admit.
pub struct Tool {
    pub contract: Contract,
    pub request: RequestSpec,
    pub now: SystemTime,
    /// The tool's accepted fixtures, parsed: the starting points of structured mutation.
    pub accepted: Vec<Value>,
}

/// The four bundled tools, loaded from the repository once per process.
pub fn tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let repository = Repository::open(&root).expect("run from the repository");
        repository
            .tools()
            .expect("contracts/ lists")
            .into_iter()
            .map(|tool| {
                let fixtures = root.join("fixtures").join(&tool);
                let request = read_request_file(&fixtures.join("request.json")).expect("the tool's request file");
                let now = parse_time(request.now.as_deref().unwrap_or("2026-11-29T12:00:00Z")).expect("a valid now");
                let mut accepted: Vec<Value> = std::fs::read_dir(fixtures.join("accepted"))
                    .map(|entries| {
                        entries
                            .filter_map(Result::ok)
                            .map(|entry| entry.path())
                            .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
                            .filter_map(|path| serde_json::from_slice(&std::fs::read(path).ok()?).ok())
                            .collect()
                    })
                    .unwrap_or_default();
                accepted.sort_by_key(Value::to_string);
                Tool { contract: repository.load(&tool, None).expect("bundled contracts compile"), request, now, accepted }
            })
            .collect()
    })
}

/// Admits `raw` and panics (a fuzz finding) if the decision breaks an invariant.
pub fn admit_and_check(tool: &Tool, raw: &[u8]) -> Decision {
    let decision = tool.contract.admit(raw, &tool.request.to_request(), tool.now);
    let disagreements = reference_disagreements(&tool.contract, raw);
    if !disagreements.is_empty() {
        panic!("{}: {disagreements:?}\nraw: {:?}", tool.contract.tool(), String::from_utf8_lossy(raw));
    }
    let problems = agent_view_problems(&tool.contract, raw, &tool.request.request_id, &decision);
    if !problems.is_empty() {
        panic!(
            "{}: invariant broken: {problems:?}\nraw: {:?}\nagent: {}",
            tool.contract.tool(),
            String::from_utf8_lossy(raw),
            String::from_utf8_lossy(decision.agent_bytes())
        );
    }
    decision
}

