//! Random contracts, generated from the fuzzer's bytes (its coverage steers every choice of the
//! generator), each with a dozen documents: the admission path's shortcuts (the gate's own
//! document, the narrowed `oneOf`, the positional patterns) must decide as the reference validator
//! over serde_json's `Value`, and the agent bytes must be what serde_json writes. A finding is
//! turned into a corpus case with `cargo run -p toolgate-contractgen --bin contractgen -- save
//! <crash file> crates/gate/tests/corpora/fast-path/<name>` (RELIABILITY.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_contractgen::{Bytes, disagreements, generate};
use toolgate_gate::Contract;

fuzz_target!(|data: &[u8]| {
    let generated = generate(&mut Bytes::new(data), 12);
    let Ok(contract) = Contract::compile(&generated.source()) else {
        return;
    };
    let now = toolgate_gate::internals::parse_timestamp("2026-11-29T12:00:00Z").unwrap();
    let problems = disagreements(&generated, &contract, now);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
});
