//! The end-to-end tests of the `toolgate` binary and its library crates, as one test binary
//! (ripgrep's layout): a change links one binary, not sixteen. `tests/fixtures.rs` (every fixture
//! as its own trial) and `tests/mcp.rs` (scripted MCP sessions) are libtest-mimic harnesses of
//! their own.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod attacks;
mod bundle;
mod check;
mod ci_example;
mod deploy;
mod diff;
mod diff_replay;
mod diff_soundness;
mod guide;
mod harness;
mod hostile;
mod insta;
mod lint;
mod mutants;
mod mutants_survivors;
mod pathological;
mod properties;
mod real_apis;
mod release;
mod render;
mod reports;
mod sarif;
mod save_fixture;
mod scaffold;
mod schemas;
mod serve;
mod shell;
mod workflow;
