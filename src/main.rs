//! The `toolgate` command: see the user guide (doc/guide/), or `toolgate --help`.
//!
//! Architecture invariant: this crate is the command line and nothing else. It parses arguments
//! with clap, hands plain configurations to the library crates, and turns the [`Status`] a verb
//! returns into the process exit code. Only `check`, `reproduce`, `schema` and `serve` are verbs of
//! its own (glue over the repository and store crates).
//!
//! [`Status`]: toolgate_repo::Status

mod args;
mod audit;
mod check;
mod cli;
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
