//! A shape: one way an upstream may write its answer (the current shape, or a legacy one), with
//! everything needed to read it: its schema, where its outcome, correlation members, failure code
//! and promised fields are. And, for a document no shape accepts, the explanation of why.

use std::sync::Arc;

use serde_json::Value;

use crate::correlation::Correlation;
use crate::document::Node;
use crate::fault::{Fault, Finding};
use crate::outcome::{ErrorCode, Layer};
use crate::pointer::JsonPointer;
use crate::projection::Fields;
use crate::schema::CompiledSchema;
use crate::text::TextPattern;
use crate::tolerate::Tolerated;

/// The name audit events give the current (non-legacy) shape.
pub const CURRENT_SHAPE: &str = "current";

/// One shape a contract admits: the current one, or a legacy one.
#[derive(Debug)]
pub(crate) struct Shape {
    pub name: Arc<str>,
    pub schema: CompiledSchema,
    pub text: Option<TextPattern>,
    pub outcome: Option<OutcomeSelector>,
    pub correlation: Correlation,
    pub error_code: Option<JsonPointer>,
    /// Aligned with the contract's field names.
    pub fields: Fields,
    /// Places where upstream additions are tolerated.
    pub tolerated: Vec<Tolerated>,
}

/// Where a result envelope says whether it is a success or a failure.
#[derive(Debug)]
pub(crate) struct OutcomeSelector {
    pub pointer: JsonPointer,
    pub success: String,
    pub failure: String,
}

/// A schema rejection's raw bytes, kept with the shapes that refused them so the explanation
/// can be built on demand: the document is parsed again then, as a `Value`.
#[derive(Clone)]
pub(crate) struct PendingExplanation {
    pub shapes: Arc<[Shape]>,
    pub raw: Arc<[u8]>,
    pub max_depth: usize,
}

impl PendingExplanation {
    pub(crate) fn explain(&self) -> Fault {
        match crate::parse::parse_value(&self.raw, self.max_depth) {
            Ok(document) => closest_shape_fault(&self.shapes, &document),
            // The same bytes parsed once already; the parser is deterministic.
            Err(fault) => fault,
        }
    }
}

impl std::fmt::Debug for PendingExplanation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingExplanation").finish_non_exhaustive()
    }
}

/// Explains a document no shape accepts by the shape it came closest to (fewest problems,
/// the current shape on a tie), and says in one line why each other shape did not match.
fn closest_shape_fault(shapes: &[Shape], document: &Value) -> Fault {
    let mut faults: Vec<(&Shape, Fault)> = shapes
        .iter()
        .map(|shape| (shape, shape.schema.fault(document)))
        .collect();
    if faults.len() == 1 {
        return faults.remove(0).1;
    }
    let closest = (0..faults.len())
        .min_by_key(|index| faults[*index].1.findings.len())
        .unwrap_or_default();
    let (shape, mut fault) = faults.remove(closest);
    fault.message = format!("closest to shape `{}`: {}", shape.name, fault.message);
    for (other, other_fault) in faults {
        fault.findings.push(Finding::new(
            "",
            &format!("shape `{}`", other.name),
            &format!(
                "does not match shape `{}` either: {}",
                other.name, other_fault.message
            ),
        ));
    }
    fault
}

impl OutcomeSelector {
    pub(crate) fn is_failure(&self, document: Node<'_>) -> Result<bool, Fault> {
        match self.pointer.resolve(document).and_then(|node| node.as_str()) {
            Some(value) if value == self.success => Ok(false),
            Some(value) if value == self.failure => Ok(true),
            other => Err(Fault::new(
                Layer::Projection,
                "outcome",
                format!(
                    "the schema admitted outcome {other:?} at {}, which the contract maps to neither success ({:?}) nor failure ({:?})",
                    self.pointer.as_str(), self.success, self.failure
                ),
                "a contract bug: constrain the outcome member in the schema (const/enum) to the two values the contract names",
            )
            .at(self.pointer.as_str())),
        }
    }
}

impl Shape {
    pub(crate) fn error_code_of(&self, document: Node<'_>) -> Result<ErrorCode, Fault> {
        let pointer = self.error_code.as_ref().map_or("", JsonPointer::as_str);
        let found = self
            .error_code
            .as_ref()
            .and_then(|code| code.resolve(document))
            .and_then(|node| node.as_str());
        found.and_then(ErrorCode::from_wire).ok_or_else(|| {
            Fault::new(
                Layer::Projection,
                "error_code",
                format!("the failure's code {found:?} at {pointer} is not one of the agent-visible codes"),
                "constrain the failure's code in the schema to NOT_FOUND, UPSTREAM_UNAVAILABLE, INVALID_RESPONSE",
            )
            .at(pointer)
        })
    }
}
