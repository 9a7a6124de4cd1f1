//! The freshness rule's fast RFC 3339 parser against the `time` crate: wherever the fast path
//! answers, it must give the reference's instant; it may only step aside, never disagree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_gate::internals::stages::{timestamp_fast, timestamp_reference};

fuzz_target!(|text: &str| {
    if let Some(fast) = timestamp_fast(text) {
        assert_eq!(Some(fast), timestamp_reference(text), "{text:?}");
    }
});
