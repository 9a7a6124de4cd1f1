//! Arbitrary bytes into `admit`, for every bundled contract: never a panic, and every decision
//! keeps the invariants (exact failure envelope or a promised success; nothing unpromised).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_fuzz::{admit_and_check, tools};

fuzz_target!(|raw: &[u8]| {
    for tool in tools() {
        admit_and_check(tool, raw);
    }
});
