//! Each pipeline stage on its own, for the per-stage benchmarks. Not part of the supported API:
//! adapters call [`Contract::admit`](crate::Contract::admit), which runs them all, in order.

use std::time::SystemTime;

use crate::contract::Contract;
use crate::document::Document;
use crate::request::Request;
use crate::transport::Response;

/// G1: the transport checks. `true` when they pass.
pub fn limits(contract: &Contract, raw: &[u8]) -> bool {
    contract.stage_limits(&Response::body(raw))
}

/// G2: the strict parse with the contract's depth limit.
pub fn parse<'a>(contract: &Contract, raw: &'a [u8]) -> Option<Document<'a>> {
    contract.stage_parse(raw)
}

/// G3: the current shape's schema, decided with `is_valid`.
pub fn schema(contract: &Contract, document: &Document<'_>) -> bool {
    contract.stage_schema(document.root())
}

/// Whether every shape's schema decides `document` as the reference validator (over
/// serde_json's `Value`, with no `oneOf` narrowing and jsonschema's own `pattern`) decides it:
/// the fuzz targets' check on the admission path's own document, branches and patterns.
pub fn schema_agrees_with_reference(contract: &Contract, document: &Document<'_>) -> bool {
    contract.schemas_agree_with_reference(document.root())
}

/// G4 + G5: correlation and every semantic rule, against the current shape.
pub fn semantic(
    contract: &Contract,
    document: &Document<'_>,
    request: &Request,
    now: SystemTime,
) -> bool {
    contract.stage_semantic(document.root(), request, now)
}

/// G6: the projection of the current shape's fields.
pub fn projection(
    contract: &Contract,
    document: &Document<'_>,
    request: &Request,
) -> Option<Vec<u8>> {
    contract.stage_projection(document.root(), request)
}

/// The freshness rule's fast RFC 3339 path: nanoseconds since the epoch, or `None` when it
/// defers to the `time` crate.
pub fn timestamp_fast(text: &str) -> Option<i128> {
    crate::timestamp::fast(text.as_bytes())
}

/// The reference RFC 3339 parse (the `time` crate), as nanoseconds since the epoch.
pub fn timestamp_reference(text: &str) -> Option<i128> {
    crate::timestamp::reference(text).ok()
}
