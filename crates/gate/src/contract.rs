//! A compiled contract, and `admit`: the pipeline G1–G6 in its fixed order.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use serde_saphyr::Spanned;

use crate::audit::Sha256Digest;
use crate::correlation::{self, Correlation};
use crate::decision::{
    Decision, Detail, ErrorCode, Explanation, Facts, Layer, Outcome, RawEvidence, Rejection,
};
use crate::error::{CompileError, CompileErrors};
use crate::fault::Fault;
use crate::operator::Finding;
use crate::parse;
use crate::pointer::JsonPointer;
use crate::projection::{self, FieldSource};
use crate::request::Request;
use crate::retry::RetryPolicy;
use crate::schema::{CompiledSchema, SchemaFiles};
use crate::semantic::Rule;
use crate::source::{ContractSource, SchemaText};
use crate::spec::{self, ContractFile, Direction, ShapeSpec, error_at};
use crate::text::{self, TextPattern};
use crate::transport::{self, Limits, Response};
use crate::wire;

/// The version of this gate, recorded in every audit event and operator record.
pub const GATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Bodies at least this large are hashed on a second thread while they are parsed.
const HASH_ALONGSIDE_FROM: usize = 1 << 20;

/// The name audit events give the current (non-legacy) shape.
pub const CURRENT_SHAPE: &str = "current";

/// One contract version, compiled once and shared by every thread that admits responses.
///
/// Compile it with [`Contract::compile`], then call [`Contract::admit`] for each response. A
/// compiled contract is immutable, `Send` and `Sync`.
#[derive(Debug)]
pub struct Contract {
    tool: Arc<str>,
    version: Arc<str>,
    direction: Direction,
    description: Option<String>,
    limits: Limits,
    text_input: bool,
    /// The current shape first, then legacy shapes in the order the contract lists them.
    shapes: Arc<[Shape]>,
    field_names: Vec<String>,
    agent_schema: CompiledSchema,
    rules: Vec<Rule>,
    retry: RetryPolicy,
}

const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<Contract>();
};

#[derive(Debug)]
struct Shape {
    name: Arc<str>,
    schema: CompiledSchema,
    text: Option<TextPattern>,
    outcome: Option<OutcomeSelector>,
    correlation: Correlation,
    error_code: Option<JsonPointer>,
    /// Aligned with `Contract::field_names`.
    fields: Vec<FieldSource>,
}

#[derive(Debug)]
struct OutcomeSelector {
    pointer: JsonPointer,
    success: String,
    failure: String,
}

/// What an admitted document turned out to be.
enum Admitted {
    Success { shape: Arc<str>, output: Vec<u8> },
    Failure { shape: Arc<str>, code: ErrorCode },
}

impl Contract {
    /// Compiles a contract: reads `contract.yaml`, compiles every schema once, resolves every
    /// field, pointer and rule. Every problem found is reported, each naming its file and line or
    /// JSON pointer.
    pub fn compile(source: &ContractSource) -> Result<Contract, CompileErrors> {
        let compiled = compile(source);
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
        &self.tool
    }

    /// The version, e.g. `v1`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether this contract gates a tool's result or a model's proposed action.
    pub fn direction(&self) -> Direction {
        self.direction
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

    /// The nesting limit.
    pub fn max_depth(&self) -> usize {
        self.limits.max_depth
    }

    /// The retry policy the adapter must follow.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The agent-visible field names, in output order.
    pub fn fields(&self) -> &[String] {
        &self.field_names
    }

    /// The names of the shapes this contract admits: `current`, then its legacy shapes.
    pub fn shape_names(&self) -> impl Iterator<Item = &str> {
        self.shapes.iter().map(|shape| &*shape.name)
    }

    /// For a shape, where each promised field is read from: `(field, JSON pointer)` pairs.
    pub fn promised_pointers(&self, shape: &str) -> Option<Vec<(&str, &str)>> {
        let shape = self
            .shapes
            .iter()
            .find(|candidate| &*candidate.name == shape)?;
        Some(
            self.field_names
                .iter()
                .zip(&shape.fields)
                .map(|(name, source)| (name.as_str(), source.pointer.as_str()))
                .collect(),
        )
    }

    /// The trusted context keys the contract's rules read, sorted and deduplicated.
    pub fn required_context(&self) -> Vec<&str> {
        let keys: BTreeSet<&str> = self.rules.iter().flat_map(Rule::context_keys).collect();
        keys.into_iter().collect()
    }

    /// The names of the contract's semantic rules, in evaluation order.
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|rule| &*rule.name)
    }

    /// Whether `agent_bytes` is a success this contract's agent-visible schema accepts.
    /// Harnesses use it to prove every admitted output has the promised shape.
    pub fn agent_view_accepts(&self, agent_bytes: &[u8]) -> bool {
        serde_json::from_slice::<Value>(agent_bytes)
            .is_ok_and(|value| self.agent_schema.is_valid(&value))
    }

    fn evaluate(
        &self,
        response: &Response<'_>,
        request: &Request,
        now: SystemTime,
    ) -> Result<Admitted, Refusal> {
        transport::check(&self.limits, response)?;
        if self.text_input {
            let text = parse::utf8(response.body)?;
            let (shape, document) = self.match_text(text)?;
            return Ok(self.conclude(shape, &document, request, now)?);
        }
        let document = parse::parse_json(response.body, self.limits.max_depth)?;
        // G3: the first shape whose schema accepts the document (the current shape first).
        // `is_valid` decides; the validator's detailed errors wait until someone asks.
        match self
            .shapes
            .iter()
            .find(|shape| shape.schema.is_valid(&document))
        {
            Some(shape) => Ok(self.conclude(shape, &document, request, now)?),
            None => Err(Refusal::Schema(document)),
        }
    }

    /// G2 + G3 for text: the first shape whose pattern matches the whole output and whose schema
    /// accepts the captures.
    fn match_text(&self, text: &str) -> Result<(&Shape, Value), Fault> {
        let mut schema_fault = None;
        for shape in self.shapes.iter() {
            let Some(document) = shape
                .text
                .as_ref()
                .and_then(|pattern| pattern.captures(text))
            else {
                continue;
            };
            if shape.schema.is_valid(&document) {
                return Ok((shape, document));
            }
            schema_fault.get_or_insert_with(|| shape.schema.fault(&document));
        }
        Err(schema_fault.unwrap_or_else(|| text::mismatch(text)))
    }

    /// G4–G6 on a document a shape's schema accepted.
    fn conclude(
        &self,
        shape: &Shape,
        document: &Value,
        request: &Request,
        now: SystemTime,
    ) -> Result<Admitted, Fault> {
        let is_failure = match &shape.outcome {
            None => false,
            Some(selector) => selector.is_failure(document)?,
        };
        correlation::check(&shape.correlation, document, &self.tool, request)?;
        if is_failure {
            let code = shape.error_code_of(document)?;
            return Ok(Admitted::Failure {
                shape: Arc::clone(&shape.name),
                code,
            });
        }
        self.check_rules(shape, document, request, now)?;
        let output = projection::project(
            self.direction,
            &self.tool,
            request,
            &self.field_names,
            &shape.fields,
            document,
        )?;
        Ok(Admitted::Success {
            shape: Arc::clone(&shape.name),
            output,
        })
    }

    /// G5: every semantic rule, in contract order, on the shape's fields.
    fn check_rules(
        &self,
        shape: &Shape,
        document: &Value,
        request: &Request,
        now: SystemTime,
    ) -> Result<(), Fault> {
        for rule in &self.rules {
            let source = &shape.fields[rule.field];
            let value = source.pointer.resolve(document);
            rule.evaluate(
                value,
                &self.field_names[rule.field],
                source.pointer.as_str(),
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
            tool: Arc::clone(&self.tool),
            contract_version: Arc::clone(&self.version),
            upstream: request.shared_upstream(),
            upstream_status: response.status,
            shape: None,
            raw,
        };
        let (outcome, agent_bytes, detail) = match verdict {
            Ok(Admitted::Success { shape, output }) => {
                facts.shape = Some(shape);
                (Outcome::Admitted, output, None)
            }
            Ok(Admitted::Failure { shape, code }) => {
                facts.shape = Some(shape);
                let retryable = self.retry.is_retryable(code);
                let bytes = wire::failure_envelope(&self.tool, request.id(), code, retryable);
                (Outcome::AdmittedFailure { code, retryable }, bytes, None)
            }
            Err(Refusal::Fault(fault)) => {
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
            Err(Refusal::Schema(document)) => {
                let code = ErrorCode::InvalidResponse;
                let rejection = Rejection {
                    layer: Layer::Schema,
                    code,
                    retryable: self.retry.is_retryable(code),
                };
                let explanation = PendingExplanation {
                    shapes: Arc::clone(&self.shapes),
                    document,
                };
                self.rejected(
                    rejection,
                    request,
                    Detail::new(Explanation::Schema(explanation)),
                )
            }
        };
        Decision {
            outcome,
            agent_bytes,
            facts,
            detail,
            audit: OnceLock::new(),
        }
    }

    fn rejected(
        &self,
        rejection: Rejection,
        request: &Request,
        detail: Detail,
    ) -> (Outcome, Vec<u8>, Option<Detail>) {
        let bytes = wire::failure_envelope(
            &self.tool,
            request.id(),
            rejection.code,
            rejection.retryable,
        );
        (Outcome::Rejected(rejection), bytes, Some(detail))
    }
}

/// The stages one at a time, for `crate::stages` (benchmarks).
impl Contract {
    pub(crate) fn stage_limits(&self, response: &Response<'_>) -> bool {
        transport::check(&self.limits, response).is_ok()
    }

    pub(crate) fn stage_parse(&self, raw: &[u8]) -> Option<Value> {
        parse::parse_json(raw, self.limits.max_depth).ok()
    }

    pub(crate) fn stage_schema(&self, document: &Value) -> bool {
        self.shapes[0].schema.is_valid(document)
    }

    pub(crate) fn stage_semantic(
        &self,
        document: &Value,
        request: &Request,
        now: SystemTime,
    ) -> bool {
        let shape = &self.shapes[0];
        correlation::check(&shape.correlation, document, &self.tool, request).is_ok()
            && self.check_rules(shape, document, request, now).is_ok()
    }

    pub(crate) fn stage_projection(&self, document: &Value, request: &Request) -> Option<Vec<u8>> {
        projection::project(
            self.direction,
            &self.tool,
            request,
            &self.field_names,
            &self.shapes[0].fields,
            document,
        )
        .ok()
    }
}

/// Why `evaluate` refused: a fault already explained, or a document no shape's schema accepts,
/// to be explained only when the operator record is read.
enum Refusal {
    Fault(Fault),
    Schema(Value),
}

impl From<Fault> for Refusal {
    fn from(fault: Fault) -> Refusal {
        Refusal::Fault(fault)
    }
}

/// A schema rejection's document, kept with the shapes that refused it so the explanation can
/// be built on demand.
#[derive(Clone)]
pub(crate) struct PendingExplanation {
    shapes: Arc<[Shape]>,
    document: Value,
}

impl PendingExplanation {
    pub(crate) fn explain(&self) -> Fault {
        closest_shape_fault(&self.shapes, &self.document)
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
    fn is_failure(&self, document: &Value) -> Result<bool, Fault> {
        match self.pointer.resolve(document).and_then(Value::as_str) {
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
    fn error_code_of(&self, document: &Value) -> Result<ErrorCode, Fault> {
        let pointer = self.error_code.as_ref().map_or("", JsonPointer::as_str);
        let found = self
            .error_code
            .as_ref()
            .and_then(|code| code.resolve(document))
            .and_then(Value::as_str);
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

// ---------------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------------

fn compile(source: &ContractSource) -> Result<Contract, CompileErrors> {
    let file = spec::read_contract_file(&source.contract)?;
    let mut errors = Vec::new();

    let tool = file.tool.value.clone();
    if !is_identifier(&tool, false) || tool.len() > 64 {
        errors.push(error_at(&file.tool, format!("tool name {tool:?} must be lowercase letters, digits and _, starting with a letter, at most 64 characters")));
    }
    if file.version.value == 0 {
        errors.push(error_at(&file.version, "version must be 1 or more"));
    }
    let version = format!("v{}", file.version.value);
    let limits = compile_limits(&file, &mut errors);

    let mut schema_files = SchemaFiles::new(format!("toolgate://contract/{tool}/{version}/"));
    for (name, text) in &source.schemas {
        let document = match text {
            SchemaText::Value(value) => value.clone(),
            SchemaText::Text(text) => {
                match parse::parse_json(text.as_bytes(), Limits::MAX_DEPTH_CEILING) {
                    Ok(value) => value,
                    Err(fault) => {
                        let error = CompileError::in_file(
                            name,
                            format!("not strict JSON ({}): {}", fault.rule, fault.message),
                        );
                        errors.push(match fault.instance_path.as_deref() {
                            Some(pointer) if !pointer.is_empty() => error.pointer(pointer),
                            _ => error,
                        });
                        continue;
                    }
                }
            }
        };
        if let Err(error) = schema_files.add(name, document) {
            errors.push(error);
        }
    }

    let mut shapes = Vec::new();
    let field_names = field_names(&file.shape, &mut errors);
    let text_input = file.shape.text_pattern.is_some();
    for (index, spec) in std::iter::once(&file.shape)
        .chain(&file.legacy_shapes)
        .enumerate()
    {
        let legacy = index > 0;
        if let Some(shape) = compile_shape(
            spec,
            legacy,
            &file,
            &field_names,
            text_input,
            &schema_files,
            &mut errors,
        ) {
            shapes.push(shape);
        }
    }
    let mut legacy_names = BTreeSet::new();
    for shape in &shapes[usize::from(!shapes.is_empty())..] {
        if !legacy_names.insert(Arc::clone(&shape.name)) {
            errors.push(CompileError::in_file(
                spec::CONTRACT_FILE,
                format!("two legacy shapes are named `{}`", shape.name),
            ));
        }
    }

    let agent_schema = collect(schema_files.compile(&file.agent_schema.value), &mut errors);
    if !source.schemas.contains_key(&file.agent_schema.value) {
        errors.push(error_at(
            &file.agent_schema,
            format!(
                "agent_schema names `{}`, which is not a file of this contract",
                file.agent_schema.value
            ),
        ));
    }

    let mut rules = Vec::new();
    let mut rule_names = BTreeSet::new();
    for spec in &file.rules {
        if !rule_names.insert(spec.name.value.clone()) {
            errors.push(error_at(
                &spec.name,
                format!("two rules are named `{}`", spec.name.value),
            ));
        }
        let resolve = |field: &Spanned<String>| {
            field_names
                .iter()
                .position(|name| *name == field.value)
                .ok_or_else(|| {
                    error_at(
                        field,
                        format!(
                            "rule field `{}` is not one of the agent-visible fields ({})",
                            field.value,
                            field_names.join(", ")
                        ),
                    )
                })
        };
        if let Some(rule) = collect(Rule::compile(spec, resolve), &mut errors) {
            rules.push(rule);
        }
    }

    let retry = compile_retry(&file, &mut errors);

    match (errors.is_empty(), agent_schema) {
        (true, Some(agent_schema)) if shapes.len() == 1 + file.legacy_shapes.len() => {
            Ok(Contract {
                tool: Arc::from(tool),
                version: Arc::from(version),
                direction: file.direction,
                description: file.description,
                limits,
                text_input,
                shapes: shapes.into(),
                field_names,
                agent_schema,
                rules,
                retry,
            })
        }
        _ => Err(CompileErrors(errors)),
    }
}

fn collect<T>(result: Result<T, CompileError>, errors: &mut Vec<CompileError>) -> Option<T> {
    result.map_err(|error| errors.push(error)).ok()
}

fn compile_limits(file: &ContractFile, errors: &mut Vec<CompileError>) -> Limits {
    let mut limits = Limits {
        max_bytes: Limits::DEFAULT_MAX_BYTES,
        max_depth: Limits::DEFAULT_MAX_DEPTH,
        unavailable_statuses: Limits::DEFAULT_UNAVAILABLE_STATUSES.to_vec(),
    };
    if let Some(max_bytes) = &file.limits.max_bytes {
        match usize::try_from(max_bytes.value) {
            Ok(bytes) if bytes > 0 => limits.max_bytes = bytes,
            _ => errors.push(error_at(
                max_bytes,
                "max_bytes must be a positive number of bytes",
            )),
        }
    }
    if let Some(max_depth) = &file.limits.max_depth {
        match usize::try_from(max_depth.value) {
            Ok(depth) if (1..=Limits::MAX_DEPTH_CEILING).contains(&depth) => {
                limits.max_depth = depth
            }
            _ => errors.push(error_at(
                max_depth,
                format!(
                    "max_depth must be between 1 and {}",
                    Limits::MAX_DEPTH_CEILING
                ),
            )),
        }
    }
    if let Some(statuses) = &file.limits.unavailable_statuses {
        limits.unavailable_statuses = statuses.clone();
    }
    limits
}

fn field_names(current: &ShapeSpec, errors: &mut Vec<CompileError>) -> Vec<String> {
    let mut names = Vec::new();
    for field in &current.fields {
        let name = &field.name.value;
        if !is_identifier(name, true) {
            errors.push(error_at(
                &field.name,
                format!(
                    "field name {name:?} must be letters, digits and _, starting with a letter"
                ),
            ));
        }
        if names.contains(name) {
            errors.push(error_at(
                &field.name,
                format!("field `{name}` is listed twice"),
            ));
        }
        names.push(name.clone());
    }
    if names.is_empty() {
        errors.push(error_at(
            &current.schema,
            "the shape promises no fields; an agent-visible result needs at least one",
        ));
    }
    names
}

fn compile_shape(
    spec: &ShapeSpec,
    legacy: bool,
    file: &ContractFile,
    field_names: &[String],
    text_input: bool,
    schema_files: &SchemaFiles,
    errors: &mut Vec<CompileError>,
) -> Option<Shape> {
    let before = errors.len();
    let name = match (&spec.name, legacy) {
        (None, false) => CURRENT_SHAPE.to_owned(),
        (Some(name), true) if is_identifier(&name.value, false) && name.value != CURRENT_SHAPE => {
            name.value.clone()
        }
        (Some(name), true) => {
            errors.push(error_at(
                name,
                format!(
                    "legacy shape name {:?} must be a lowercase identifier other than `current`",
                    name.value
                ),
            ));
            name.value.clone()
        }
        (Some(name), false) => {
            errors.push(error_at(
                name,
                "the current shape takes no name (legacy shapes do)",
            ));
            CURRENT_SHAPE.to_owned()
        }
        (None, true) => {
            errors.push(error_at(
                &spec.schema,
                "every legacy shape needs a `name` (it is recorded in audit events)",
            ));
            String::new()
        }
    };

    let schema = collect(schema_files.compile(&spec.schema.value), errors);
    let text = match &spec.text_pattern {
        Some(pattern) if text_input => collect(
            TextPattern::compile(&pattern.value).map_err(|error| {
                error_at(pattern, format!("text_pattern does not compile: {error}"))
            }),
            errors,
        ),
        Some(pattern) => {
            errors.push(error_at(
                pattern,
                "only text contracts (whose current shape has a text_pattern) may use text_pattern",
            ));
            None
        }
        None if text_input => {
            errors.push(error_at(
                &spec.schema,
                "every shape of a text contract needs a text_pattern",
            ));
            None
        }
        None => None,
    };

    let outcome = spec.outcome.as_ref().and_then(|outcome| {
        let pointer = collect(pointer(&outcome.pointer), errors)?;
        Some(OutcomeSelector {
            pointer,
            success: outcome.success.clone(),
            failure: outcome.failure.clone(),
        })
    });
    if file.direction == Direction::Action && spec.outcome.is_some() {
        errors.push(error_at(
            &spec.schema,
            "an action contract gates a proposal, which has no upstream outcome; remove `outcome`",
        ));
    }
    let error_code = match (&spec.outcome, &spec.error_code) {
        (Some(_), Some(code)) => collect(pointer(code), errors),
        (None, None) => None,
        (Some(outcome), None) => {
            errors.push(error_at(
                &outcome.pointer,
                "a shape with an `outcome` needs `error_code`: the pointer to a failure's code",
            ));
            None
        }
        (None, Some(code)) => {
            errors.push(error_at(
                code,
                "`error_code` only means something with an `outcome`",
            ));
            None
        }
    };
    let mut correlation = Correlation::default();
    if let Some(spec) = &spec.correlation {
        correlation.tool = spec
            .tool
            .as_ref()
            .and_then(|tool| collect(pointer(tool), errors));
        correlation.request_id = spec
            .request_id
            .as_ref()
            .and_then(|id| collect(pointer(id), errors));
    }

    let shape_name = &name;
    let mut fields = Vec::with_capacity(field_names.len());
    for name in field_names {
        match spec.fields.iter().find(|field| field.name.value == *name) {
            Some(field) => {
                if let Some(pointer) = collect(pointer(&field.from), errors) {
                    fields.push(FieldSource { pointer, optional: field.optional });
                }
            }
            None => errors.push(error_at(&spec.schema, format!("shape `{shape_name}` does not say where field `{name}` comes from; every shape must provide every agent-visible field"))),
        }
    }
    for field in &spec.fields {
        if !field_names.contains(&field.name.value) {
            errors.push(error_at(
                &field.name,
                format!(
                    "field `{}` is not an agent-visible field of the current shape ({})",
                    field.name.value,
                    field_names.join(", ")
                ),
            ));
        }
    }

    if errors.len() > before {
        return None;
    }
    Some(Shape {
        name: Arc::from(name),
        schema: schema?,
        text,
        outcome,
        correlation,
        error_code,
        fields,
    })
}

fn compile_retry(file: &ContractFile, errors: &mut Vec<CompileError>) -> RetryPolicy {
    let mut policy = RetryPolicy::default();
    if let Some(attempts) = file.retry.max_attempts {
        if attempts == 0 {
            errors.push(CompileError::in_file(
                spec::CONTRACT_FILE,
                "retry.max_attempts must be at least 1 (the first attempt counts)",
            ));
        } else {
            policy.max_attempts = attempts;
        }
    }
    if let Some(budget) = &file.retry.time_budget {
        match humantime::parse_duration(&budget.value) {
            Ok(duration) if duration > Duration::ZERO => policy.time_budget = duration,
            Ok(_) => errors.push(error_at(budget, "retry.time_budget must be more than zero")),
            Err(error) => errors.push(error_at(
                budget,
                format!(
                    "`{}` is not a duration ({error}); write e.g. 10s, 2m",
                    budget.value
                ),
            )),
        }
    }
    if let Some(codes) = &file.retry.retryable_codes {
        policy.retryable_codes = codes.clone();
    }
    policy
}

/// A JSON pointer as RFC 6901 writes it: empty, or `/`-separated with only `~0` and `~1` escapes.
fn pointer(spanned: &Spanned<String>) -> Result<JsonPointer, CompileError> {
    let text = &spanned.value;
    let well_formed = text.is_empty()
        || (text.starts_with('/') && {
            let mut chars = text.chars();
            let mut ok = true;
            while let Some(ch) = chars.next() {
                if ch == '~' && !matches!(chars.next(), Some('0' | '1')) {
                    ok = false;
                }
            }
            ok
        });
    if well_formed {
        Ok(JsonPointer::new(text))
    } else {
        Err(error_at(
            spanned,
            format!("{text:?} is not a JSON pointer (RFC 6901): write /data/project_id"),
        ))
    }
}

fn is_identifier(text: &str, allow_upper: bool) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|first| {
        first.is_ascii_lowercase() || (allow_upper && first.is_ascii_alphabetic())
    }) && chars.all(|ch| {
        ch == '_'
            || ch.is_ascii_digit()
            || ch.is_ascii_lowercase()
            || (allow_upper && ch.is_ascii_uppercase())
    })
}
