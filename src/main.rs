//! The `toolgate` command: see the README, or `toolgate --help`.

use std::process::ExitCode;

// The harness allocates and frees a parsed tree per fixture; mimalloc makes that measurably
// cheaper than the system allocator (BENCHMARKS.md). The gate library leaves the choice to its user.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    toolgate::cli::main()
}
