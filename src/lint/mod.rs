//! `toolgate lint`: what a contract version admits and promises, read from its schemas
//! (normalized by `model::schema`, so `$ref`, `allOf`, `oneOf`/`anyOf` and
//! `unevaluatedProperties` are understood) rather than from its fixtures.
//!
//! Each rule names a way a contract is looser than a gate should be: an object that admits
//! members nobody declared, a string or array with no bound, an identifier number with no range,
//! a timestamp without a format, an unbounded request id, a promised field that is missing from a
//! shape or that can carry a whole open object to the agent. A finding names the file, the JSON
//! pointer in it, the rule and the fix; `contracts/<tool>/lint.yaml` accepts one with a reason.

pub mod command;

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;

use crate::acceptance::{self, Acceptances, Checked, EntryFile, check_pointer};
use crate::confine::RepoRoot;
use crate::model::schema::{self, JsonType, Kind, Node, admits, alternatives};
use crate::model::strings::{self, Strings};
use crate::model::{ShapeDoc, Version};
use crate::repo::{CONTRACTS_DIR, LINT_FILE, Repository};

macro_rules! rules {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal; )*) => {
        /// One lint rule.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Rule {
            /// Every rule, in report order.
            pub const ALL: &'static [Rule] = &[ $( Rule::$variant, )* ];

            /// The name reports and `lint.yaml` use.
            pub fn name(self) -> &'static str {
                match self { $( Rule::$variant => $name, )* }
            }

            /// What it checks, in one line (its doc comment).
            pub fn describe(self) -> &'static str {
                match self { $( Rule::$variant => concat!($($doc),*).trim_ascii(), )* }
            }
        }
    };
}

rules! {
    /// Every object is closed: `additionalProperties: false`, or `unevaluatedProperties: false` where it is composed.
    ObjectOpen = "object_open";
    /// Every value has a type (or an `enum`/`const`): an untyped schema admits any JSON value.
    ValueUntyped = "value_untyped";
    /// Every string is bounded by `maxLength`, `pattern`, `enum` or `const`.
    StringUnbounded = "string_unbounded";
    /// Every array is bounded by `maxItems`.
    ArrayUnbounded = "array_unbounded";
    /// A number that is an identifier (`id`, `…_id`) has a `minimum` and a `maximum`.
    IdentifierUnbounded = "identifier_unbounded";
    /// A date-like string (`…_at`, `…_time`, `…_date`, or one a freshness rule reads) carries a `format`.
    TimestampWithoutFormat = "timestamp_without_format";
    /// The request id is bounded: `maxLength`, a `pattern` whose strings have a longest one, or an `enum`/`const`.
    RequestIdUnbounded = "request_id_unbounded";
    /// Every promised field exists, required, in every shape that can be admitted as a success.
    FieldMissing = "field_missing";
    /// A promised field is a scalar or a closed object, so projection never forwards what the upstream invents.
    PromisedFieldOpen = "promised_field_open";
    /// The agent schema is closed: every object in it has `additionalProperties: false`.
    AgentSchemaOpen = "agent_schema_open";
    /// A schema uses a keyword the lint does not model: it cannot vouch for that part; review it by hand.
    NotModelled = "not_modelled";
}

impl Rule {
    /// The rule called `name`.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|rule| rule.name() == name)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The tool.
    pub tool: String,
    /// The contract version.
    pub version: String,
    /// The file in the version folder (`contract.yaml` or a schema file).
    pub file: String,
    /// The JSON pointer in that file.
    pub pointer: String,
    /// The rule.
    pub rule: Rule,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Strings longer than this make a pattern unbounded: a request id is an opaque token, never a
/// paragraph.
const LONGEST_BOUNDED_PATTERN: u64 = 256;

/// How deep the lint follows a schema before it stops (schemas nest far less).
const DEPTH_BUDGET: usize = 48;

/// Every finding of one contract version, in file and pointer order.
pub fn lint(tool: &str, version: &Version) -> Vec<Finding> {
    let mut linter = Linter {
        tool,
        version,
        findings: Vec::new(),
        seen: BTreeSet::new(),
    };
    let freshness: Vec<String> = version
        .rules()
        .into_iter()
        .filter(|rule| rule.kind == "freshness")
        .map(|rule| rule.field().to_owned())
        .collect();
    for shape in version.shapes() {
        let root = version.schemas.root(&shape.schema);
        let timestamps: Vec<String> = shape
            .fields
            .iter()
            .filter(|(field, _)| freshness.contains(field))
            .map(|(_, (pointer, _))| pointer.clone())
            .collect();
        linter.walk(&root, "", None, &Mode::Upstream(&timestamps), DEPTH_BUDGET);
        linter.request_id(&shape, &root);
        linter.fields(&shape, &root);
    }
    if let Some(agent) = version.document["agent_schema"].as_str() {
        let root = version.schemas.root(agent);
        linter.walk(&root, "", None, &Mode::Agent, DEPTH_BUDGET);
    }
    let mut findings = linter.findings;
    findings.sort_by(|a, b| (&a.file, &a.pointer, a.rule).cmp(&(&b.file, &b.pointer, b.rule)));
    findings
}

/// What a walk checks.
enum Mode<'a> {
    /// A shape's schema: every rule; these response pointers are read by freshness rules.
    Upstream(&'a [String]),
    /// The agent schema: closed objects only.
    Agent,
    /// Below a promised field: anything but scalars and closed objects is a finding.
    Promised(&'a str),
}

struct Linter<'a> {
    tool: &'a str,
    version: &'a Version,
    findings: Vec<Finding>,
    seen: BTreeSet<(String, String, Rule)>,
}

impl Linter<'_> {
    fn report(&mut self, node: &Node, rule: Rule, message: String) {
        let key = (node.at.file.clone(), node.at.pointer.clone(), rule);
        if self.seen.insert(key) {
            self.findings.push(Finding {
                tool: self.tool.to_owned(),
                version: self.version.name.clone(),
                file: node.at.file.clone(),
                pointer: node.at.pointer.clone(),
                rule,
                message,
            });
        }
    }

    /// Checks `node`, the schema of the value at response pointer `instance` (reached through
    /// member `member`), and everything below it.
    fn walk(
        &mut self,
        node: &Node,
        instance: &str,
        member: Option<&str>,
        mode: &Mode<'_>,
        budget: usize,
    ) {
        let Some(budget) = budget.checked_sub(1) else {
            return;
        };
        let shown = if instance.is_empty() { "/" } else { instance };
        let facts = match &node.kind {
            Kind::Nothing => return,
            Kind::Any => {
                match mode {
                    Mode::Upstream(_) if member.is_some() => self.report(
                        node,
                        Rule::ValueUntyped,
                        format!("{shown}: the schema admits any JSON value here; give it a type and bounds"),
                    ),
                    Mode::Promised(field) => self.report(
                        node,
                        Rule::PromisedFieldOpen,
                        format!("{shown}: promised field `{field}` can be any JSON value, so whatever the upstream sends reaches the agent; give it a scalar type or a closed object"),
                    ),
                    _ => {}
                }
                return;
            }
            Kind::Unknown { reason, .. } => {
                self.report(
                    node,
                    Rule::NotModelled,
                    format!("{shown}: the schema uses {reason}; the lint cannot vouch for this part, so review it by hand (or express it with the keywords the lint models)"),
                );
                return;
            }
            Kind::Facts(facts) => facts,
        };
        if facts.union.is_some() {
            for alternative in alternatives(node) {
                self.walk(&alternative, instance, member, mode, budget);
            }
            return;
        }
        if facts.values.is_some() {
            return; // an enum or const admits exactly what it lists
        }
        let Some(types) = &facts.types else {
            match mode {
                Mode::Agent => {}
                Mode::Promised(field) => self.report(
                    node,
                    Rule::PromisedFieldOpen,
                    format!("{shown}: promised field `{field}` has no type, so any JSON value the upstream sends reaches the agent; give it a scalar type or a closed object"),
                ),
                Mode::Upstream(_) => self.report(
                    node,
                    Rule::ValueUntyped,
                    format!("{shown}: no `type`, so any JSON value is admitted here; add one"),
                ),
            }
            // Untyped is the finding; only an object it describes is walked further.
            if !facts.properties.is_empty() {
                self.object(node, facts, instance, mode, budget);
            }
            return;
        };
        if types.contains(&JsonType::Object) {
            self.object(node, facts, instance, mode, budget);
        }
        if let Mode::Promised(field) = mode
            && types.contains(&JsonType::Array)
        {
            self.report(
                node,
                Rule::PromisedFieldOpen,
                format!("{shown}: promised field `{field}` can be an array; promise scalars or a closed object, one field each"),
            );
        }
        let Mode::Upstream(timestamps) = mode else {
            return;
        };
        let name = member.unwrap_or_default();
        if types.contains(&JsonType::String) {
            if facts.strings.max_length.is_none() && facts.strings.patterns.is_empty() {
                self.report(
                    node,
                    Rule::StringUnbounded,
                    format!("{shown}: a string with no maxLength, pattern, enum or const, bounded only by the byte limit; add a maxLength (and a pattern where the value has a form)"),
                );
            }
            let date_like = ["_at", "_time", "_date"]
                .iter()
                .any(|suffix| name.ends_with(suffix))
                || ["date", "time", "timestamp"].contains(&name)
                || timestamps.iter().any(|pointer| pointer == instance);
            if date_like && facts.format.is_none() {
                self.report(
                    node,
                    Rule::TimestampWithoutFormat,
                    format!("{shown}: a date-like string without a format, so `2026-02-30` or a bare `yesterday` passes the schema; add \"format\": \"date-time\""),
                );
            }
        }
        if types.contains(&JsonType::Array) {
            if facts.max_items.is_none() {
                self.report(
                    node,
                    Rule::ArrayUnbounded,
                    format!("{shown}: an array with no maxItems; add one"),
                );
            }
            self.walk(&facts.items, &format!("{instance}/0"), None, mode, budget);
        }
        let numeric = types.contains(&JsonType::Integer) || types.contains(&JsonType::Number);
        let identifier = name == "id" || name.ends_with("_id");
        if numeric && identifier && (facts.minimum.is_none() || facts.maximum.is_none()) {
            self.report(
                node,
                Rule::IdentifierUnbounded,
                format!("{shown}: a numeric identifier without both a minimum and a maximum, so 0, -1 or 1e300 passes the schema; bound it"),
            );
        }
    }

    fn object(
        &mut self,
        node: &Node,
        facts: &schema::Facts,
        instance: &str,
        mode: &Mode<'_>,
        budget: usize,
    ) {
        let shown = if instance.is_empty() { "/" } else { instance };
        if !matches!(facts.additional.kind, Kind::Nothing) {
            let (rule, why) = match mode {
                Mode::Upstream(_) => (
                    Rule::ObjectOpen,
                    "admits members the contract does not declare",
                ),
                Mode::Agent => (
                    Rule::AgentSchemaOpen,
                    "lets the agent schema accept members projection never builds",
                ),
                Mode::Promised(_) => (
                    Rule::PromisedFieldOpen,
                    "is promised whole, so every member the upstream invents reaches the agent",
                ),
            };
            self.report(
                node,
                rule,
                format!("{shown}: an object that {why}; add \"additionalProperties\": false (or \"unevaluatedProperties\": false where it is composed with allOf, oneOf or anyOf)"),
            );
        }
        for (name, property) in &facts.properties {
            let below = format!("{instance}/{}", name.replace('~', "~0").replace('/', "~1"));
            self.walk(property, &below, Some(name), mode, budget);
        }
    }

    /// The request id a shape carries is bounded.
    fn request_id(&mut self, shape: &ShapeDoc, root: &Node) {
        let Some(pointer) = &shape.request_id else {
            return;
        };
        for resolution in resolve(root, pointer) {
            let Resolution::Found { node, .. } = resolution else {
                continue;
            };
            let Some(facts) = node.facts() else { continue };
            if facts.values.is_some() || facts.strings.max_length.is_some() {
                continue;
            }
            let bounded = !facts.strings.patterns.is_empty()
                && strings::example(&Strings {
                    min_length: LONGEST_BOUNDED_PATTERN + 1,
                    max_length: None,
                    patterns: facts.strings.patterns.clone(),
                }) == Ok(None);
            if !bounded {
                self.report(
                    &node,
                    Rule::RequestIdUnbounded,
                    format!("{pointer}: the request id admits strings longer than {LONGEST_BOUNDED_PATTERN} characters (its pattern has no longest match and there is no maxLength), so a paragraph can ride in it; bound it, e.g. \"pattern\": \"^req\\\\.[A-Za-z0-9]{{8}}$\""),
                );
            }
        }
    }

    /// Every promised field is declared and required in every success alternative, and is a
    /// scalar or a closed object.
    fn fields(&mut self, shape: &ShapeDoc, root: &Node) {
        let successes: Vec<Node> = alternatives(root)
            .into_iter()
            .filter(|alternative| match &shape.outcome {
                Some((pointer, success)) => {
                    resolve(alternative, pointer).iter().any(|resolution| {
                        matches!(resolution, Resolution::Found { node, .. } if admits(node, success) != Ok(false))
                    })
                }
                None => true,
            })
            .collect();
        for (field, (pointer, optional)) in &shape.fields {
            for success in &successes {
                for resolution in resolve(success, pointer) {
                    match resolution {
                        Resolution::Undeclared { object } => self.report(
                            &object,
                            Rule::FieldMissing,
                            format!("shape `{}` promises field `{field}` from {pointer}, but this object does not declare that member: the field can never be projected; declare it (and require it)", shape.name),
                        ),
                        Resolution::Found { node, required } => {
                            if !required && !optional {
                                self.report(
                                    &node,
                                    Rule::FieldMissing,
                                    format!("shape `{}` promises field `{field}` from {pointer}, which its schema does not require: a response without it passes the schema and fails at projection; require it, or mark the field `optional: true`", shape.name),
                                );
                            }
                            self.walk(&node, pointer, None, &Mode::Promised(field), DEPTH_BUDGET);
                        }
                    }
                }
            }
        }
    }
}

/// Where a response pointer leads in a schema.
enum Resolution {
    /// To this node; `required` when every member on the way is required.
    Found { node: Node, required: bool },
    /// To a member this object node does not declare.
    Undeclared { object: Node },
}

/// The schema of the value at `pointer`, in each alternative of every union on the way.
fn resolve(root: &Node, pointer: &str) -> Vec<Resolution> {
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut out = Vec::new();
    step(root, &tokens, true, &mut out, DEPTH_BUDGET);
    out
}

fn step(node: &Node, tokens: &[String], required: bool, out: &mut Vec<Resolution>, budget: usize) {
    let Some(budget) = budget.checked_sub(1) else {
        return;
    };
    let Some((first, rest)) = tokens.split_first() else {
        out.push(Resolution::Found {
            node: node.clone(),
            required,
        });
        return;
    };
    let Some(facts) = node.facts() else {
        out.push(Resolution::Undeclared {
            object: node.clone(),
        });
        return;
    };
    if facts.union.is_some() {
        for alternative in alternatives(node) {
            step(&alternative, tokens, required, out, budget);
        }
        return;
    }
    match facts.properties.get(first) {
        Some(property) => step(
            property,
            rest,
            required && facts.required.contains(first),
            out,
            budget,
        ),
        None => out.push(Resolution::Undeclared {
            object: node.clone(),
        }),
    }
}

/// One accepted finding: a rule at a place in a version folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedFinding {
    /// The rule.
    pub rule: Rule,
    /// The file in the version folder.
    pub file: String,
    /// The JSON pointer in it.
    pub pointer: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LintEntry {
    rule: String,
    file: String,
    pointer: String,
    #[serde(default)]
    versions: Option<Vec<String>>,
    reason: String,
}

impl EntryFile for LintEntry {
    type What = AcceptedFinding;

    fn split(self) -> Result<Checked<AcceptedFinding>, String> {
        let rule = Rule::from_name(&self.rule).ok_or_else(|| {
            let known: Vec<&str> = Rule::ALL.iter().map(|rule| rule.name()).collect();
            format!(
                "rule: {:?} is not a lint rule ({})",
                self.rule,
                known.join(", ")
            )
        })?;
        check_pointer(&self.pointer, "the whole file")?;
        Ok(Checked {
            what: AcceptedFinding {
                rule,
                file: self.file,
                pointer: self.pointer,
            },
            versions: self.versions,
            reason: self.reason,
        })
    }
}

/// The accepted findings of `tool` (none when it has no `lint.yaml`).
pub fn accepted(root: &RepoRoot, tool: &str) -> Result<Acceptances<AcceptedFinding>, String> {
    let path = std::path::Path::new(CONTRACTS_DIR)
        .join(tool)
        .join(LINT_FILE);
    acceptance::load::<LintEntry>(root, &path)
}

/// A finding and the entry accepting it, if any.
pub struct Judged<'f> {
    /// The finding.
    pub finding: &'f Finding,
    /// Why it is accepted, when it is.
    pub accepted: Option<String>,
}

/// Every finding with its acceptance, and the entries (by line) that accept nothing in
/// `versions`: stale.
pub fn judge<'f>(
    findings: &'f [Finding],
    accepted: &Acceptances<AcceptedFinding>,
    versions: &[String],
) -> (Vec<Judged<'f>>, Vec<u64>) {
    let mut used = vec![false; accepted.entries.len()];
    let judged = findings
        .iter()
        .map(|finding| {
            let entry = accepted.find(&finding.version, |what| {
                what.rule == finding.rule
                    && what.file == finding.file
                    && what.pointer == finding.pointer
            });
            if let Some((index, _)) = entry {
                used[index] = true;
            }
            Judged {
                finding,
                accepted: entry.map(|(_, entry)| entry.reason.clone()),
            }
        })
        .collect();
    let stale = accepted
        .entries
        .iter()
        .zip(used)
        .filter(|(entry, used)| !used && versions.iter().any(|version| entry.applies_to(version)))
        .map(|(entry, _)| entry.line)
        .collect();
    (judged, stale)
}

/// One tool's lint: each version's findings (or why it cannot be read), and its accepted
/// findings (or why `lint.yaml` cannot be read).
pub struct ToolLint {
    /// The tool.
    pub tool: String,
    /// Per version, in version order.
    pub versions: Vec<(String, Result<Vec<Finding>, String>)>,
    /// `contracts/<tool>/lint.yaml`.
    pub accepted: Result<Acceptances<AcceptedFinding>, String>,
}

/// Lints every version of `tool`.
pub fn lint_tool(repository: &Repository, tool: &str) -> ToolLint {
    let versions = match repository.versions(tool) {
        Ok(versions) => versions
            .iter()
            .map(|dir| {
                let findings = crate::model::load(repository, tool, dir)
                    .map(|version| lint(tool, &version))
                    .map_err(|error| error.to_string());
                (dir.name(), findings)
            })
            .collect(),
        Err(error) => vec![("(all)".to_owned(), Err(error.to_string()))],
    };
    ToolLint {
        tool: tool.to_owned(),
        versions,
        accepted: accepted(repository.root(), tool),
    }
}

impl ToolLint {
    /// Every finding of every version that could be read.
    pub fn findings(&self) -> Vec<Finding> {
        self.versions
            .iter()
            .filter_map(|(_, findings)| findings.as_ref().ok())
            .flatten()
            .cloned()
            .collect()
    }

    /// The versions that could be read.
    pub fn read_versions(&self) -> Vec<String> {
        self.versions
            .iter()
            .filter(|(_, findings)| findings.is_ok())
            .map(|(version, _)| version.clone())
            .collect()
    }

    /// Why a version or `lint.yaml` cannot be read, one line each.
    pub fn errors(&self) -> Vec<String> {
        let mut errors: Vec<String> = self
            .versions
            .iter()
            .filter_map(|(version, findings)| {
                findings
                    .as_ref()
                    .err()
                    .map(|error| format!("{} {version}: {error}", self.tool))
            })
            .collect();
        if let Err(error) = &self.accepted {
            errors.push(format!(
                "{error}; no finding is accepted until the file loads"
            ));
        }
        errors
    }
}
