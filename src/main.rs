//! The `toolgate` command: see the user guide (doc/guide/), or `toolgate --help`.
//!
//! Architecture invariant: this crate is the command line and nothing else. It parses arguments
//! with clap, hands plain configurations to the library crates, and turns the [`Status`] a verb
//! returns into the process exit code. Its own verbs are glue over the library crates: `check`,
//! `reproduce`, `schema`, `serve`, `audit`, `bundle` and `new` (one file each, `upstream.rs` the server
//! side of `diff --upstream`).
//!
//! [`Status`]: toolgate_repo::Status

mod args;
mod audit;
mod bundle;
mod check;
mod cli;
mod completion;
mod new;
mod reproduce;
mod schema;
mod serve;
mod upstream;

use std::process::ExitCode;

// The harness allocates and frees a parsed tree per fixture; mimalloc makes that measurably
// cheaper than the system allocator (BENCHMARKS.md). The gate library leaves the choice to its user.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}
