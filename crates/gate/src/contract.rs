//! A compiled contract, and `admit`: the pipeline G1–G6 in its fixed order.

mod agent_schema;

#[cfg_attr(not(feature = "_internals"), allow(unused_imports))]
pub use agent_schema::DERIVED_AGENT_SCHEMA;
pub(crate) mod compile;

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use serde_json::Value;

use crate::correlation;
use crate::decision::{Decision, Detail, Explanation};
use crate::document::{Document, Node};
use crate::error::CompileErrors;
use crate::facts::{ContractIdentity, Facts, RawEvidence, Sha256Digest};
use crate::fault::Fault;
use crate::outcome::{ErrorCode, Layer, Outcome, Rejection};
use crate::parse;
use crate::projection::Output;
use crate::request::Request;
use crate::retry::RetryPolicy;
use crate::schema::CompiledSchema;
use crate::semantic::Rule;
use crate::shape::{PendingExplanation, Shape};
use crate::source::ContractSource;
use crate::spec::Direction;
use crate::text;
use crate::tolerate::Tolerated;
use crate::transport::{self, Limits, Response};
use crate::upstream::UpstreamErrors;
use crate::wire::{self, AgentBytes};

/// Bodies at least this large are hashed on a second thread while they are parsed.
const HASH_ALONGSIDE_FROM: usize = 1 << 20;

/// One contract version, compiled once and shared by every thread that admits responses.
///
/// Compile it with [`Contract::compile`], then call [`Contract::admit`] for each response. A
/// compiled contract is immutable, `Send` and `Sync`.
#[derive(Debug)]
pub struct Contract {
    identity: Arc<ContractIdentity>,
    description: Option<String>,
    limits: Limits,
    text_input: bool,
    /// The current shape first, then legacy shapes in the order the contract lists them.
    shapes: Arc<[Shape]>,
    /// The direction, and the field names the agent sees, in output order.
    output: Output,
    agent_schema: CompiledSchema,
    rules: Vec<Rule>,
    retry: RetryPolicy,
    /// Upstream failures in the API's own words, mapped to codes.
    upstream_errors: UpstreamErrors,
    /// The agent schema derived from the promised fields, when the contract names none.
    derived_agent_schema: Option<Value>,
    /// The agent schema derived from the promised fields, declared one or not: every output
    /// projection can build is one it accepts.
    projection_schema: Value,
    /// The context keys a caller's arguments may supply (see `context_from_arguments`).
    from_arguments: BTreeSet<String>,
}

const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<Contract>();
};

/// What an admitted document turned out to be.
enum Admitted {
    Success { shape: Arc<str>, output: AgentBytes },
    Failure { shape: Arc<str>, code: ErrorCode },
}

impl Contract {
    /// Compiles a contract: reads `contract.yaml`, compiles every schema once, resolves every
    /// field, pointer and rule. Every problem found is reported, each naming its file and line or
    /// JSON pointer.
    pub fn compile(source: &ContractSource) -> Result<Contract, CompileErrors> {
        let compiled = compile::compile(source);
        match source.folder() {
            Some(folder) => compiled.map_err(|errors| errors.under(folder)),
            None => compiled,
        }
    }

    /// Decides on the raw bytes a tool returned (or a model proposed), for the outstanding
    /// `request`, at time `now`.
    pub fn admit(&self, raw: &[u8], request: &Request, now: SystemTime) -> Decision {
        self.admit_response(Response::body(raw), request, now)
    }

    /// Like [`admit`](Self::admit), with what the adapter knows about the call itself: an
    /// upstream status, or a failure before any bytes arrived.
    pub fn admit_response(
        &self,
        response: Response<'_>,
        request: &Request,
        now: SystemTime,
    ) -> Decision {
        if response.body.len() < HASH_ALONGSIDE_FROM {
            let verdict = self.evaluate(&response, request, now);
            return self.decide(
                &response,
                request,
                now,
                verdict,
                RawEvidence::new(response.body),
            );
        }
        // A large body's digest takes as long as a good part of its parse: compute it on a second
        // core meanwhile. If no thread can be had, hash in line; the answer is the same.
        std::thread::scope(|scope| {
            let hasher =
                std::thread::Builder::new().spawn_scoped(scope, || Sha256Digest::of(response.body));
            let verdict = self.evaluate(&response, request, now);
            let digest = match hasher.map(|hasher| hasher.join()) {
                Ok(Ok(digest)) => digest,
                _ => Sha256Digest::of(response.body),
            };
            self.decide(
                &response,
                request,
                now,
                verdict,
                RawEvidence::hashed(response.body.len(), digest),
            )
        })
    }

    /// The tool this contract is for.
    pub fn tool(&self) -> &str {
        &self.identity.tool
    }

    /// The version, e.g. `v1`.
    pub fn version(&self) -> &str {
        &self.identity.version
    }

    /// The digest of the contract's own bytes (see [`ContractSource::digest`]), which every
    /// audit event and operator record names.
    pub fn digest(&self) -> Sha256Digest {
        self.identity.digest
    }

    /// Whether this contract gates a tool's result or a model's proposed action.
    pub fn direction(&self) -> Direction {
        self.output.direction()
    }

    /// The contract's own description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Whether this contract gates text (an anchored pattern over the whole output) rather than JSON.
    pub fn is_text(&self) -> bool {
        self.text_input
    }

    /// The byte limit: an adapter should read at most one byte more than this
    /// (see [`read_capped`](crate::read_capped)).
    pub fn max_bytes(&self) -> usize {
        self.limits.max_bytes
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The nesting limit.
    pub fn max_depth(&self) -> usize {
        self.limits.max_depth
    }

    /// The retry policy the adapter must follow.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The agent-visible field names, in output order.
    pub(crate) fn fields(&self) -> &[String] {
        self.output.names()
    }

    /// The names of the shapes this contract admits: `current`, then its legacy shapes.
    pub(crate) fn shape_names(&self) -> impl Iterator<Item = &str> {
        self.shapes.iter().map(|shape| &*shape.name)
    }

    /// For a shape, where each promised field is read from: `(field, JSON pointer)` pairs.
    pub(crate) fn promised_pointers(&self, shape: &str) -> Option<Vec<(&str, &str)>> {
        let shape = self
            .shapes
            .iter()
            .find(|candidate| &*candidate.name == shape)?;
        Some(
            self.output
                .names()
                .iter()
                .zip(shape.fields.sources())
                .map(|(name, source)| (name.as_str(), source.pointer.as_str()))
                .collect(),
        )
    }

    /// The agent schema derived from the promised fields, when the contract names no
    /// `agent_schema` file (its `$ref`s point into the contract's files).
    pub fn derived_agent_schema(&self) -> Option<&Value> {
        self.derived_agent_schema.as_ref()
    }

    /// For a shape, where the fields a freshness rule judges are read from: the timestamps whose
    /// age matters (a year-old date elsewhere is just a date).
    pub(crate) fn freshness_pointers(&self, shape: &str) -> Vec<&str> {
        let Some(shape) = self
            .shapes
            .iter()
            .find(|candidate| &*candidate.name == shape)
        else {
            return Vec::new();
        };
        self.rules
            .iter()
            .filter(|rule| rule.freshness)
            .map(|rule| shape.fields.sources()[rule.field].pointer.as_str())
            .collect()
    }

    /// For a shape, the places where it tolerates members nobody declared (empty for an unknown
    /// shape).
    pub(crate) fn tolerated(&self, shape: &str) -> &[Tolerated] {
        self.shapes
            .iter()
            .find(|candidate| &*candidate.name == shape)
            .map_or(&[], |shape| &shape.tolerated)
    }

    /// For a shape's list field, each item member's name, where it is read from in an item, and
    /// whether it is optional; `None` when the field is not a list field (or the shape or field
    /// is unknown).
    pub(crate) fn promised_items(
        &self,
        shape: &str,
        field: &str,
    ) -> Option<Vec<(&str, &str, bool)>> {
        let shape = self
            .shapes
            .iter()
            .find(|candidate| &*candidate.name == shape)?;
        let index = self.output.names().iter().position(|name| name == field)?;
        let each = shape.fields.sources()[index].each.as_ref()?;
        Some(
            each.names
                .iter()
                .zip(&each.sources)
                .map(|(name, (pointer, optional))| (name.as_str(), pointer.as_str(), *optional))
                .collect(),
        )
    }

    /// For a shape, where it carries the tool name and the request id (`None` where it carries
    /// neither, as a legacy bare object may not).
    pub(crate) fn correlation_pointers(&self, shape: &str) -> Option<(Option<&str>, Option<&str>)> {
        let shape = self
            .shapes
            .iter()
            .find(|candidate| &*candidate.name == shape)?;
        let correlation = &shape.correlation;
        Some((
            correlation.tool.as_ref().map(|pointer| pointer.as_str()),
            correlation
                .request_id
                .as_ref()
                .map(|pointer| pointer.as_str()),
        ))
    }

    /// The projection schema (see the field) compiled over the contract's files.
    pub(crate) fn projection_validator(&self) -> Option<jsonschema::Validator> {
        self.shapes
            .first()?
            .schema
            .sibling_validator(DERIVED_AGENT_SCHEMA, &self.projection_schema)
    }

    /// The validator that explains `shape`'s schema over `Value`s (every error, with where and
    /// why), as the gate compiles it: see `internals::shape_validator`.
    pub(crate) fn shape_validator(&self, shape: &str) -> Option<&jsonschema::Validator> {
        self.shapes
            .iter()
            .find(|candidate| &*candidate.name == shape)?
            .schema
            .explaining_validator()
    }

    /// The trusted context keys the contract's rules read, sorted and deduplicated.
    pub fn required_context(&self) -> Vec<&str> {
        let keys: BTreeSet<&str> = self.rules.iter().flat_map(Rule::context_keys).collect();
        keys.into_iter().collect()
    }

    /// The context keys a caller's arguments may supply (`context: from_arguments`, or the keys
    /// only binding rules read), sorted. Every other key in [`Contract::required_context`] comes
    /// from the operator only: an adapter must never fill it from what the model sent.
    pub fn context_from_arguments(&self) -> Vec<&str> {
        self.from_arguments.iter().map(String::as_str).collect()
    }

    /// The context keys only the operator may supply, sorted.
    pub fn context_from_operator(&self) -> Vec<&str> {
        self.required_context()
            .into_iter()
            .filter(|key| !self.from_arguments.contains(*key))
            .collect()
    }

    /// The names of the contract's semantic rules, in evaluation order.
    pub(crate) fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|rule| &*rule.name)
    }

    /// For a document one of this contract's shapes accepts: that shape's name and the assertion
    /// keywords its schema applied (see `internals::applied_keywords`).
    pub(crate) fn applied_keywords(
        &self,
        document: &Value,
    ) -> Option<(&str, Vec<crate::schema::AppliedKeyword>)> {
        let shape = self
            .shapes
            .iter()
            .find(|shape| shape.schema.accepts_value(document))?;
        Some((&shape.name, shape.schema.applied_keywords(document)))
    }

    /// Whether `agent_bytes` is a success this contract's agent-visible schema accepts.
    /// Harnesses use it to prove every admitted output has the promised shape.
    pub(crate) fn agent_view_accepts(&self, agent_bytes: &[u8]) -> bool {
        parse::parse_document(agent_bytes, Limits::MAX_DEPTH_CEILING)
            .is_ok_and(|document| self.agent_schema.is_valid(document.root()))
    }

    fn evaluate(
        &self,
        response: &Response<'_>,
        request: &Request,
        now: SystemTime,
    ) -> Result<Admitted, Refusal> {
        transport::check(&self.limits, &self.upstream_errors, response)?;
        if self.text_input {
            if response.tool_error {
                // A text contract maps a tool error without reading it (by_tool_error).
                return Err(UpstreamErrors::unmapped_tool_error().into());
            }
            self.unmapped_error_status(response)?;
            let text = parse::utf8(response.body)?;
            let (shape, document) = self.match_text(text)?;
            return Ok(self.conclude(shape, document.root(), request, now)?);
        }
        let document = parse::parse_document(response.body, self.limits.max_depth)?;
        let root = document.root();
        self.upstream_errors
            .by_body(response.status, response.tool_error, root)?;
        if response.tool_error {
            // No entry matched the error's body: it is still an error, never a result.
            return Err(UpstreamErrors::unmapped_tool_error().into());
        }
        self.unmapped_error_status(response)?;
        // G3: the first shape whose schema accepts the document (the current shape first).
        // `is_valid` decides; the validator's detailed errors wait until someone asks.
        match self.shapes.iter().find(|shape| shape.schema.is_valid(root)) {
            Some(shape) => Ok(self.conclude(shape, root, request, now)?),
            None => Err(Refusal::Schema),
        }
    }

    /// An error status no `upstream_errors` entry mapped, where no shape has a failure branch
    /// to read the body as: refused by its status (see [`UpstreamErrors::unmapped_status`]).
    fn unmapped_error_status(&self, response: &Response<'_>) -> Result<(), Fault> {
        match response.status {
            Some(status)
                if status >= 400 && self.shapes.iter().all(|shape| shape.outcome.is_none()) =>
            {
                Err(UpstreamErrors::unmapped_status(status))
            }
            _ => Ok(()),
        }
    }

    /// G2 + G3 for text: the first shape whose pattern matches the whole output and whose schema
    /// accepts the captures.
    fn match_text<'a>(&'a self, text: &'a str) -> Result<(&'a Shape, Document<'a>), Fault> {
        let mut schema_fault = None;
        for shape in self.shapes.iter() {
            let Some(document) = shape
                .text
                .as_ref()
                .and_then(|pattern| pattern.captures(text))
            else {
                continue;
            };
            if shape.schema.is_valid(document.root()) {
                return Ok((shape, document));
            }
            schema_fault.get_or_insert_with(|| shape.schema.fault(&document.root().to_value()));
        }
        Err(schema_fault.unwrap_or_else(|| text::mismatch(text)))
    }

    /// G4–G6 on a document a shape's schema accepted.
    fn conclude(
        &self,
        shape: &Shape,
        document: Node<'_>,
        request: &Request,
        now: SystemTime,
    ) -> Result<Admitted, Fault> {
        let is_failure = match &shape.outcome {
            None => false,
            Some(selector) => selector.is_failure(document)?,
        };
        correlation::check(&shape.correlation, document, &self.identity.tool, request)?;
        if is_failure {
            let code = shape.error_code_of(document)?;
            return Ok(Admitted::Failure {
                shape: Arc::clone(&shape.name),
                code,
            });
        }
        let output = shape.fields.read(document, |values| {
            self.check_rules(shape, values, request, now)?;
            self.output.write(request, &shape.fields, values)
        })?;
        Ok(Admitted::Success {
            shape: Arc::clone(&shape.name),
            output,
        })
    }

    /// G5: every semantic rule, in contract order, on the shape's field values.
    fn check_rules(
        &self,
        shape: &Shape,
        values: &[Option<Node<'_>>],
        request: &Request,
        now: SystemTime,
    ) -> Result<(), Fault> {
        for rule in &self.rules {
            rule.evaluate(
                values[rule.field],
                &self.output.names()[rule.field],
                shape.fields.sources()[rule.field].pointer.as_str(),
                request,
                now,
            )?;
        }
        Ok(())
    }

    fn decide(
        &self,
        response: &Response<'_>,
        request: &Request,
        now: SystemTime,
        verdict: Result<Admitted, Refusal>,
        raw: RawEvidence,
    ) -> Decision {
        let mut facts = Facts {
            time: now,
            request_id: request.shared_id(),
            contract: Arc::clone(&self.identity),
            upstream: request.shared_upstream(),
            caller: request.shared_caller(),
            upstream_status: response.status,
            shape: None,
            raw,
            marks: None,
        };
        let (outcome, agent_bytes, detail) = match verdict {
            Ok(Admitted::Success { shape, output }) => {
                facts.shape = Some(shape);
                (Outcome::Admitted, output, None)
            }
            Ok(Admitted::Failure { shape, code }) => {
                facts.shape = Some(shape);
                let retryable = self.retry.is_retryable(code);
                let bytes = wire::failure(&self.identity.tool, request.id(), code, retryable);
                (Outcome::AdmittedFailure { code, retryable }, bytes, None)
            }
            Err(refusal) => self.refused(refusal, response, request, &facts.raw),
        };
        Decision {
            outcome,
            agent_bytes,
            facts,
            detail,
            audit: OnceLock::new(),
            agent_digest: OnceLock::new(),
        }
    }

    /// A refusal's outcome, failure envelope and detail. Out of line and cold, so the admission
    /// path's code stays together in the instruction cache.
    #[cold]
    #[inline(never)]
    fn refused(
        &self,
        refusal: Refusal,
        response: &Response<'_>,
        request: &Request,
        raw: &RawEvidence,
    ) -> (Outcome, AgentBytes, Option<Detail>) {
        match refusal {
            Refusal::Fault(fault) => {
                let retryable = fault
                    .retryable
                    .unwrap_or_else(|| self.retry.is_retryable(fault.code));
                let rejection = Rejection {
                    layer: fault.layer,
                    code: fault.code,
                    retryable,
                };
                self.rejected(rejection, request, Detail::new(Explanation::Fault(fault)))
            }
            Refusal::Schema => {
                let code = ErrorCode::InvalidResponse;
                let rejection = Rejection {
                    layer: Layer::Schema,
                    code,
                    retryable: self.retry.is_retryable(code),
                };
                // The explanation parses the bytes again when the record is read: a copy now
                // (shared with the audit evidence when that keeps them) costs less than keeping
                // the document, whose strings borrow from the caller's buffer.
                let explanation = PendingExplanation {
                    shapes: Arc::clone(&self.shapes),
                    raw: raw.kept().unwrap_or_else(|| Arc::from(response.body)),
                    max_depth: self.limits.max_depth,
                };
                self.rejected(
                    rejection,
                    request,
                    Detail::new(Explanation::Schema(explanation)),
                )
            }
        }
    }

    fn rejected(
        &self,
        rejection: Rejection,
        request: &Request,
        detail: Detail,
    ) -> (Outcome, AgentBytes, Option<Detail>) {
        let bytes = wire::failure(
            &self.identity.tool,
            request.id(),
            rejection.code,
            rejection.retryable,
        );
        (Outcome::Rejected(rejection), bytes, Some(detail))
    }
}

/// How far the gate's fast paths reach on one contract: the root `oneOf` decided by the outcome
/// member (`schema/branches.rs`) and `pattern`s matched by a table per position
/// (`schema/pattern.rs`). Counted over every shape; a schema file two shapes share counts twice.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FastPaths {
    /// Shapes (the current one and each legacy one).
    pub shapes: usize,
    /// Shapes whose root schema is a `oneOf`.
    pub one_of_envelopes: usize,
    /// Of those, the shapes whose `oneOf` is decided by the outcome member.
    pub narrowed: usize,
    /// Of those, why each of the others is not (the first thing found that could tell the
    /// difference, with its file and pointer), decided when the contract was compiled.
    pub declined: Vec<String>,
    /// `pattern` keywords the positional matcher reads.
    pub positional: usize,
    /// `pattern` keywords left to jsonschema's own matcher.
    pub other_patterns: Vec<String>,
}

/// The stages one at a time, for `crate::stages` (benchmarks).
impl Contract {
    /// How far the gate's fast paths reach on this contract (`internals::fast_paths`).
    pub(crate) fn fast_paths(&self) -> FastPaths {
        let mut census = FastPaths::default();
        for shape in self.shapes.iter() {
            census.shapes += 1;
            census.one_of_envelopes += usize::from(shape.schema.has_root_one_of());
            census.narrowed += usize::from(shape.schema.is_narrowed());
            if shape.schema.has_root_one_of()
                && let Some(reason) = shape.schema.narrowing_declined()
            {
                census.declined.push(reason.to_owned());
            }
            for (pattern, positional) in shape.schema.patterns() {
                if positional {
                    census.positional += 1;
                } else {
                    census.other_patterns.push(pattern);
                }
            }
        }
        census
    }

    pub(crate) fn stage_limits(&self, response: &Response<'_>) -> bool {
        transport::check(&self.limits, &self.upstream_errors, response).is_ok()
    }

    pub(crate) fn stage_parse<'a>(&self, raw: &'a [u8]) -> Option<Document<'a>> {
        parse::parse_document(raw, self.limits.max_depth).ok()
    }

    pub(crate) fn stage_schema(&self, document: Node<'_>) -> bool {
        self.shapes[0].schema.is_valid(document)
    }

    /// Every shape's schema decides `document` as its reference validator decides the same
    /// document read as a `Value`.
    pub(crate) fn schemas_agree_with_reference(&self, document: Node<'_>) -> bool {
        let value = document.to_value();
        self.shapes.iter().all(|shape| {
            shape.schema.reference_accepts(&value) == Some(shape.schema.is_valid(document))
        })
    }

    pub(crate) fn stage_semantic(
        &self,
        document: Node<'_>,
        request: &Request,
        now: SystemTime,
    ) -> bool {
        let shape = &self.shapes[0];
        correlation::check(&shape.correlation, document, &self.identity.tool, request).is_ok()
            && shape
                .fields
                .read(document, |values| {
                    self.check_rules(shape, values, request, now)
                })
                .is_ok()
    }

    pub(crate) fn stage_projection(
        &self,
        document: Node<'_>,
        request: &Request,
    ) -> Option<Vec<u8>> {
        let fields = &self.shapes[0].fields;
        fields
            .read(document, |values| {
                self.output.write(request, fields, values)
            })
            .ok()
            .map(AgentBytes::into_vec)
    }
}

/// Why `evaluate` refused: a fault already explained, or a document no shape's schema accepts,
/// to be explained only when the operator record is read.
enum Refusal {
    Fault(Fault),
    Schema,
}

impl From<Fault> for Refusal {
    fn from(fault: Fault) -> Refusal {
        Refusal::Fault(fault)
    }
}
