//! The paired ratios alone (what `cargo bench -p toolgate-bench` prints after criterion's groups),
//! as a program of its own: quick to run, and buildable with other flags (a profile-guided build,
//! see `crates/bench/pgo.sh`) to compare builds by their medians per input.

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    toolgate_bench::paired::print_paired_ratios();
}
