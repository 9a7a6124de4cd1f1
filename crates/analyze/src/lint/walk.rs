//! The walk: each shape's schema and the agent schema, normalized, visited node by node for what
//! the rules look for; promised fields resolved through the schema to the nodes they read.

use std::collections::BTreeSet;

use toolgate_gate::Tolerated;
use toolgate_model::strings::{self, Strings};
use toolgate_model::{Facts, JsonType, Kind, Node, ShapeDoc, Version, admits, alternatives};

use super::rules::{LintFinding, Rule};

use toolgate_model::strings::LONGEST_BOUNDED_PATTERN;

/// Whether the patterns of `strings` bound its length ([`strings::patterns_bound`]).
fn pattern_bounds(strings: &Strings) -> bool {
    strings::patterns_bound(&strings.patterns, LONGEST_BOUNDED_PATTERN)
}

/// How deep the lint follows a schema before it stops (schemas nest far less).
const DEPTH_BUDGET: usize = 48;

/// Every finding of one contract version, in file and pointer order.
pub fn lint(tool: &str, version: &Version) -> Vec<LintFinding> {
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
        let tolerated = toolgate_gate::internals::tolerated(&version.contract, &shape.name);
        let upstream = Mode::Upstream {
            timestamps: &timestamps,
            tolerated,
        };
        linter.walk(&root, "", None, &upstream, DEPTH_BUDGET);
        linter.request_id(&shape, &root);
        linter.fields(&shape, &root);
    }
    // A derived agent schema is closed by construction; a written one is checked.
    if let Some(agent) = version.document["agent_schema"].as_str() {
        let root = version.schemas.root(agent);
        linter.walk(&root, "", None, &Mode::Agent, DEPTH_BUDGET);
    }
    let mut findings = linter.findings;
    findings.sort_by(|a, b| {
        (&a.file, &a.pointer, a.rule, &a.field).cmp(&(&b.file, &b.pointer, b.rule, &b.field))
    });
    findings
}

/// What a walk checks.
enum Mode<'a> {
    /// A shape's schema: every rule. `timestamps` are the response pointers freshness rules
    /// read; `tolerated` the places the shape declares open to upstream additions.
    Upstream {
        timestamps: &'a [String],
        tolerated: &'a [Tolerated],
    },
    /// The agent schema: closed objects only.
    Agent,
    /// Below a promised field: anything but scalars and closed objects is a finding.
    Promised(&'a str),
}

struct Linter<'a> {
    tool: &'a str,
    version: &'a Version,
    findings: Vec<LintFinding>,
    seen: BTreeSet<(String, String, Rule, Option<String>)>,
}

impl Linter<'_> {
    fn report(&mut self, node: &Node, rule: Rule, message: String) {
        self.report_about(node, rule, None, message);
    }

    /// A finding about one promised `field`: its own, however many others share the place.
    fn report_about(&mut self, node: &Node, rule: Rule, field: Option<&str>, message: String) {
        let field = field.map(str::to_owned);
        let key = (
            node.at.file.clone(),
            node.at.pointer.clone(),
            rule,
            field.clone(),
        );
        if self.seen.insert(key) {
            self.findings.push(LintFinding {
                tool: self.tool.to_owned(),
                version: self.version.name.clone(),
                file: node.at.file.clone(),
                pointer: node.at.pointer.clone(),
                rule,
                field,
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
        let shown = toolgate_repo::text::pointer(instance);
        let facts = match &node.kind {
            Kind::Nothing => return,
            Kind::Any => {
                match mode {
                    Mode::Upstream { .. } if member.is_some() => self.report(
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
            // A recursion closing: the schema it refers to is walked where it is expanded, above.
            Kind::Unknown { .. } if node.recursion_closed().is_some() => return,
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
        // Keywords the model keeps without deciding them: each a part to review by hand, at
        // the place it is written; the rest of the node is modelled and walked on.
        for (name, kept) in &facts.conjuncts {
            let at = Node {
                at: kept.at.clone(),
                kind: Kind::Any,
            };
            self.report(
                &at,
                Rule::NotModelled,
                format!("{shown}: the schema uses `{name}`, which the differ does not model; the lint cannot vouch for this part, so review it by hand (or express it with the keywords the lint models)"),
            );
        }
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
                Mode::Upstream { .. } => self.report(
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
        let Mode::Upstream { timestamps, .. } = mode else {
            return;
        };
        let name = member.unwrap_or_default();
        if types.contains(&JsonType::String) {
            if facts.strings.max_length.is_none() && !pattern_bounds(&facts.strings) {
                let what = if facts.strings.patterns.is_empty() {
                    "a string with no maxLength, pattern, enum or const".to_owned()
                } else {
                    format!(
                        "a string whose pattern matches strings longer than {LONGEST_BOUNDED_PATTERN} characters (it has no longest match), with no maxLength"
                    )
                };
                self.report(
                    node,
                    Rule::StringUnbounded,
                    format!("{shown}: {what}, bounded only by the byte limit; add a maxLength (and a pattern where the value has a form)"),
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
        facts: &Facts,
        instance: &str,
        mode: &Mode<'_>,
        budget: usize,
    ) {
        let shown = toolgate_repo::text::pointer(instance);
        let tolerated = match mode {
            Mode::Upstream { tolerated, .. } => {
                tolerated.iter().any(|place| place.covers(instance))
            }
            _ => false,
        };
        // Members a pattern governs are a map too: keys that are data, values walked.
        for (pattern, schema) in &facts.pattern_properties {
            self.map(node, facts, instance, mode, Some(pattern));
            self.walk(schema, &format!("{instance}/*"), None, mode, budget);
        }
        // A schema for undeclared members, modelled or not (a recursion closing, a keyword the
        // model keeps whole), makes a map, never an open object.
        if matches!(facts.additional.kind, Kind::Facts(_) | Kind::Unknown { .. }) {
            // A map: its keys are data, bounded in number and in form; its values are walked.
            self.map(node, facts, instance, mode, None);
            self.walk(
                &facts.additional,
                &format!("{instance}/*"),
                None,
                mode,
                budget,
            );
        } else if !matches!(facts.additional.kind, Kind::Nothing) && !tolerated {
            let (rule, why) = match mode {
                Mode::Upstream { .. } => (
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

    /// A map (an object whose undeclared members must match a schema) is bounded: in how many
    /// members it has, and in what their names may be.
    /// `pattern`: the members whose names it matches (`patternProperties`), which it bounds
    /// in form where its matches have a longest one; else the undeclared members.
    fn map(
        &mut self,
        node: &Node,
        facts: &Facts,
        instance: &str,
        mode: &Mode<'_>,
        pattern: Option<&str>,
    ) {
        if matches!(mode, Mode::Agent) {
            return;
        }
        let names = facts.property_names.facts();
        let names_bounded = names.is_some_and(|names| {
            names.values.is_some()
                || names.strings.max_length.is_some()
                || pattern_bounds(&names.strings)
        }) || pattern.is_some_and(|pattern| {
            strings::patterns_bound(&[pattern.to_owned()], LONGEST_BOUNDED_PATTERN)
        });
        if facts.max_properties.is_none() || !names_bounded {
            let missing = match (facts.max_properties.is_none(), names_bounded) {
                (true, false) => "no maxProperties and no propertyNames bound",
                (true, true) => "no maxProperties",
                _ => "no bound on its names",
            };
            self.report(
                node,
                Rule::MapUnbounded,
                format!(
                    "{}: a map{} with {missing}, so the upstream decides how many keys, and how long, reach the next step; add \"maxProperties\" and \"propertyNames\": {{\"maxLength\": 64}} (or a pattern)",
                    toolgate_repo::text::pointer(instance),
                    pattern.map_or_else(String::new, |pattern| format!(
                        " (the members whose names match {pattern:?})"
                    ))
                ),
            );
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
            if !pattern_bounds(&facts.strings) {
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
            let members = toolgate_gate::internals::promised_items(
                &self.version.contract,
                &shape.name,
                field,
            );
            for success in &successes {
                for node in
                    self.promise(shape, field, success, pointer, *optional, members.is_none())
                {
                    // A list field: its items' promised members, each read from an item.
                    let Some(members) = &members else { continue };
                    let Some(facts) = node.facts() else { continue };
                    let items = &facts.items;
                    for (member, from, optional) in members {
                        let label = format!("{field}.{member}");
                        self.promise(shape, &label, items, from, *optional, true);
                    }
                }
            }
        }
    }

    /// Resolves promised `field` at `pointer` in `root`: reports where it is missing or not
    /// required, walks what it reads when `walk_value` (a list field's array is not promised
    /// whole: its members are), and returns the nodes it was found at.
    fn promise(
        &mut self,
        shape: &ShapeDoc,
        field: &str,
        root: &Node,
        pointer: &str,
        optional: bool,
        walk_value: bool,
    ) -> Vec<Node> {
        let mut found = Vec::new();
        for resolution in resolve(root, pointer) {
            match resolution {
                Resolution::Undeclared { object, member } => {
                    // What the object does with a member it does not declare decides what the
                    // missing declaration means.
                    let admitted = match &object.kind {
                        Kind::Facts(facts) => facts.additional.kind != Kind::Nothing,
                        Kind::Any => true,
                        Kind::Nothing => false,
                        Kind::Unknown { .. } => continue, // not_modelled says so
                    };
                    let consequence = if admitted {
                        format!(
                            "the object admits undeclared members, so whatever the upstream sends as `{member}` passes with no schema of its own and is projected to the agent"
                        )
                    } else {
                        "the object refuses undeclared members, so the field can never be projected"
                            .to_owned()
                    };
                    self.report_about(
                        &object,
                        Rule::FieldMissing,
                        Some(field),
                        format!("shape `{}` promises field `{field}` from {pointer}, but this object does not declare member `{member}`: {consequence}; declare it (and require it)", shape.name),
                    );
                }
                Resolution::Found { node, required } => {
                    if !required && !optional {
                        self.report_about(
                            &node,
                            Rule::FieldMissing,
                            Some(field),
                            format!("shape `{}` promises field `{field}` from {pointer}, which its schema does not require: a response without it passes the schema and fails at projection; require it, or mark the field `optional: true`", shape.name),
                        );
                    }
                    if walk_value {
                        self.walk(&node, pointer, None, &Mode::Promised(field), DEPTH_BUDGET);
                    }
                    found.push(node);
                }
            }
        }
        found
    }
}

/// Where a response pointer leads in a schema.
enum Resolution {
    /// To this node; `required` when every member on the way is required.
    Found { node: Node, required: bool },
    /// To `member`, which this object node does not declare.
    Undeclared { object: Node, member: String },
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
            member: first.clone(),
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
            member: first.clone(),
        }),
    }
}
