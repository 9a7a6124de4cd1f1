//! A contract version, its fixtures and its request file, planned before anything is written:
//! the schema checked against every example (each example that the schema refuses is repaired
//! where the refusal is the scaffold's own assumption or an upstream addition, else set aside
//! with its reason), the promised fields chosen, and what is left to decide listed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value, json};
use toolgate_gate::internals::{JSON_SCHEMA_FORMATS, escape_hidden, is_hidden};
use toolgate_repo::{RepoRoot, is_case_name};

use serde::Serialize;

use crate::convert::Assumption;
use crate::render::{self, Rendered};

use emit::contract_yaml;
pub use emit::{survivors_file, write};
use examples::{
    anything_left, assume_seen_bounds, formats_from_examples, repair, synthesized_example,
    validator,
};
pub use fields::choose_fields;
use fields::{candidates, named_fields, no_whole_read_of_tolerated, promised_places};
use fixtures::fixtures;
pub(crate) use reading::locate;
use reading::open_places;

mod bindings;
mod emit;
mod examples;
mod fields;
mod fixtures;
mod names;
mod reading;

/// The schema file a scaffolded contract's shape reads.
pub const SCHEMA_FILE: &str = "response.schema.json";

/// The folder of a version, beside its files, that holds its response schema exactly as
/// `toolgate new` scaffolded it: what the author changed is the difference between the two, and
/// `--next-version` replays that difference onto the newer description's scaffold. Not part of
/// the contract (the gate never reads it) nor of its lock.
pub const SCAFFOLD_DIR: &str = "scaffolded";

/// The decision time scaffolded request files name.
const NOW: &str = "2026-11-29T12:00:00Z";

/// How many fields are promised when none are named.
const MOST_FIELDS: usize = 12;

/// Where the contract comes from, for its header.
#[derive(Debug, Clone)]
pub struct Origin {
    /// E.g. `api.github.com.json, operation pulls/get`.
    pub source: String,
    /// A one-line description of the tool.
    pub summary: Option<String>,
    /// `GET https://…/pulls/{pull_number}`, for the request file.
    pub upstream: Option<String>,
}

/// A promised field: a name and a pointer, or a list field with its item members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The agent-visible name.
    pub name: String,
    /// Where it is read from.
    pub from: String,
    /// Whether a response may lack it.
    pub optional: bool,
    /// For a list field: each item's members (name, pointer in the item, optional).
    pub each: Option<Vec<(String, String, bool)>>,
}

/// A binding rule: a promised field that must equal the trusted context value of the path
/// parameter the request names (the pull request asked about, not another).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Binding {
    /// The promised field.
    pub field: String,
    /// The context key (the path parameter's name).
    pub context: String,
}

/// An upstream error mapping.
#[derive(Debug, Clone)]
pub struct ErrorMapping {
    /// Its name.
    pub name: String,
    /// The statuses it maps.
    pub statuses: Vec<u16>,
    /// `NOT_FOUND` or `UPSTREAM_UNAVAILABLE`.
    pub code: &'static str,
}

/// One fixture to write.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// `accepted` or `near-miss`.
    pub class: &'static str,
    /// Its case name.
    pub case: String,
    /// The raw bytes.
    pub body: Rendered,
    /// Its sidecar.
    pub sidecar: Rendered,
}

/// Everything `toolgate new` writes for one tool.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The tool's name.
    pub tool: String,
    /// `contracts/<tool>/v1/contract.yaml`.
    pub contract: Rendered,
    /// `contracts/<tool>/v1/response.schema.json`.
    pub schema: Value,
    /// `fixtures/<tool>/request.json`.
    pub request: Value,
    /// The fixtures.
    pub fixtures: Vec<Fixture>,
    /// `fixtures/<tool>/survivors.yaml`.
    pub survivors: Rendered,
    /// What the scaffold assumed where the description was silent.
    pub assumptions: Vec<Assumption>,
    /// What is left for a person to decide, one line each.
    pub todo: Vec<String>,
    /// The places of promised free text (`/name`, `/*/name` for each item of a list), whose
    /// surviving near-misses `toolgate new` accepts once the gate has shown them.
    pub free_text: Vec<String>,
}

/// What a plan is made from.
pub struct Parts {
    /// The tool's name (a lowercase identifier).
    pub tool: String,
    /// Where it comes from.
    pub origin: Origin,
    /// The contract schema (2020-12, self-contained).
    pub schema: Value,
    /// The assumptions made writing it.
    pub assumptions: Vec<Assumption>,
    /// Real responses, by name.
    pub examples: Vec<(String, Value)>,
    /// Responses the upstream really sent (`--sample`), by name: they outrank the description,
    /// whose claims are corrected to admit them before anything is written.
    pub samples: Vec<(String, Value)>,
    /// Error examples: status and body.
    pub error_examples: Vec<(u16, Value)>,
    /// The fields asked for (`--field`); empty: chosen here.
    pub fields: Vec<(String, String)>,
    /// Trusted context the request carries (path parameters).
    pub context: Map<String, Value>,
    /// Upstream error mappings.
    pub errors: Vec<ErrorMapping>,
    /// Whether the contract is for a text tool (an MCP tool without an output schema).
    pub text: bool,
    /// Decisions the source leaves to a person, first on the to-do list.
    pub decisions: Vec<String>,
}

/// Plans a contract from its parts.
pub fn plan(parts: Parts) -> Result<Plan, String> {
    let Parts {
        tool,
        origin,
        mut schema,
        mut assumptions,
        examples,
        samples,
        error_examples,
        fields,
        context,
        errors,
        text,
        decisions,
    } = parts;
    if !toolgate_gate::internals::is_tool_name(&tool) {
        return Err(format!(
            "tool name {tool:?} must be 1 to 128 ASCII letters, digits, `_`, `-` and `.` (a name MCP allows), not starting with `.` or `-`"
        ));
    }
    let mut todo = decisions;
    // Every example is checked against the schema; refusals the scaffold itself caused (its
    // bounds, its closing of an object the upstream adds members to) are repaired.
    let mut tolerated: Vec<(String, String)> = Vec::new();
    let mut admitted = Vec::new();
    for (name, sample) in &samples {
        repair(&mut schema, sample, &mut assumptions, &mut tolerated, Some(name)).map_err(|why| {
            format!(
                "the sample `{name}` is refused however the description's schema is corrected ({why}): is it a response of this operation?"
            )
        })?;
        admitted.push((name.clone(), sample.clone()));
    }
    for (name, example) in &examples {
        match repair(&mut schema, example, &mut assumptions, &mut tolerated, None) {
            Ok(()) => admitted.push((name.clone(), example.clone())),
            Err(why) => todo.push(format!(
                "example `{name}` is refused by the description's own schema ({why}); it is not a fixture: fix the schema in {SCHEMA_FILE} if the example is right"
            )),
        }
    }
    // An object the description declares no member of is open as it says: its members are
    // tolerated, never promised.
    for place in open_places(&schema) {
        if !tolerated.iter().any(|(at, _)| *at == place) {
            tolerated.push((
                place,
                "the description declares no member of this object: anything, as it says, never promised".to_owned(),
            ));
        }
    }
    // Repairs may have changed what earlier examples meet: check them all once more.
    admitted.retain(|(name, example)| {
        let fits = validator(&schema).is_ok_and(|validator| validator.is_valid(example));
        if !fits {
            todo.push(format!("example `{name}` is refused once the schema admits the others; decide which is right"));
        }
        fits
    });
    if admitted.is_empty() && !text {
        match synthesized_example(&schema) {
            // A response the schema describes, so the suite runs (its near-misses derived, its
            // snapshots written) until a real one replaces it.
            Some(example) => {
                todo.push(format!(
                    "unproven: no documented example is admitted, so fixtures/{tool}/accepted/{SYNTHESIZED_CASE}.json is a response built from the schema, not one the upstream sent; `toolgate test` reports the tool unproven and `--accept` does not lock it until a real response is saved (`toolgate check {tool} RESPONSE.json --save-fixture accepted/CASE`) and the synthesized one deleted"
                ));
                admitted.push((SYNTHESIZED_CASE.to_owned(), example));
            }
            None => todo.push(format!(
                "no admitted example: add a real response as fixtures/{tool}/accepted/<case>.json (`toolgate check {tool} RESPONSE.json --save-fixture accepted/CASE` saves one), or the suite has nothing to mutate"
            )),
        }
    }

    for place in anything_left(&schema, &mut assumptions) {
        todo.push(format!(
            "{SCHEMA_FILE}#{place}: the description allows any value here, so the contract admits it unchecked and the agent never sees it; describe it if the agent should, or write `false` to refuse it"
        ));
    }
    let mut free_text_places = Vec::new();
    let chosen_here = fields.is_empty() && !text;
    let fields = if fields.is_empty() {
        formats_from_examples(&mut schema, &admitted, &mut assumptions);
        let (mut chosen, left, free_text) =
            choose_fields(&schema, admitted.first().map(|(_, example)| example));
        if !free_text {
            bindings::promote_bound_members(&schema, &mut chosen, origin.upstream.as_deref());
        }
        if free_text && !chosen.is_empty() {
            todo.push(format!(
                "promised free text, because the response has no member whose values its schema pins ({}): the near-misses the gate admits there are accepted in fixtures/{tool}/survivors.yaml; confirm each, or bound the text in the schema",
                chosen
                    .iter()
                    .map(|field| field.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            free_text_places = promised_places(&chosen);
        }
        if !left.is_empty() {
            todo.push(format!(
                "not promised, because the agent would see free text nobody checks: {}; promise one with --field NAME=POINTER (then accept its survivors with a reason in fixtures/{tool}/survivors.yaml)",
                left.join(", ")
            ));
        }
        chosen
    } else {
        named_fields(&schema, fields)?
    };
    // Nothing invisible or bidirectional is ever written: a member whose name holds such a
    // character is not promised (a reviewer could not read what the contract says).
    let (fields, hidden): (Vec<Field>, Vec<Field>) = fields
        .into_iter()
        .partition(|field| !field_has_hidden(field));
    if !hidden.is_empty() {
        todo.push(format!(
            "not promised, because a member name on the way holds an invisible or bidirectional character a reviewer cannot read: {}; rename it upstream, or promise another member",
            hidden
                .iter()
                .map(|field| escape_hidden(&field.from).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    no_whole_read_of_tolerated(
        &fields,
        &tolerated,
        admitted.first().map(|(_, example)| example),
    )?;
    if fields.is_empty() {
        let offered = candidates(&schema);
        return Err(if offered.is_empty() {
            "no field to promise: the response's schema names no member (a map, or an object of any members), so nothing says what the agent could be given; name what it needs with --field NAME=POINTER (e.g. --field total=/total), or give the schema named members".to_owned()
        } else {
            format!(
                "no field to promise: the response has no member at its top the scaffold could promise. Members below it the agent could be given, most useful first; promise each it needs:\n{}",
                offered
                    .iter()
                    .map(|line| format!("  {line}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
    }
    // What the agent will see, in one line, for the person to confirm: a chosen field is a
    // choice made for them.
    if chosen_here {
        let seen: Vec<String> = fields
            .iter()
            .map(|field| match &field.each {
                None => format!("{} ({})", field.name, shown(&field.from)),
                Some(members) => format!(
                    "{} (each item of {}: {})",
                    field.name,
                    shown(&field.from),
                    members
                        .iter()
                        .map(|(name, _, _)| name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect();
        let promised: Vec<&str> = fields.iter().map(|field| field.from.as_str()).collect();
        let others: Vec<String> = candidates(&schema)
            .into_iter()
            .filter(|line| {
                !promised
                    .iter()
                    .any(|from| line.contains(&format!("={from} ")))
            })
            .take(3)
            .collect();
        let others = if others.is_empty() {
            String::new()
        } else {
            format!(" (it could also be given: {})", others.join("; "))
        };
        todo.push(format!(
            "the agent will see only {}, and nothing else of the response: confirm that is what it needs, or name its fields with --field NAME=POINTER{others}",
            seen.join(", ")
        ));
    }
    assume_seen_bounds(&fields, &admitted, &mut schema, &mut assumptions);
    let secrets = reading::secret_places(&schema);
    secrets_to_do(&secrets, &fields, &mut todo);
    let mut context = context;
    let bindings = bindings::bindings(
        &fields,
        &admitted,
        origin.upstream.as_deref(),
        &mut context,
        &mut todo,
    );

    let request = json!({
        "request_id": format!("req.{}", "0".repeat(8)),
        "now": NOW,
        "upstream": origin.upstream.clone().unwrap_or_else(|| origin.source.clone()),
        "context": context,
    });
    let sample_names: Vec<&str> = samples.iter().map(|(name, _)| name.as_str()).collect();
    let mut fixtures = fixtures(
        &origin,
        &admitted,
        &fields,
        &sample_names,
        &error_examples,
        &errors,
    )?;
    let mut taken: BTreeSet<String> = fixtures
        .iter()
        .map(|fixture| fixture.case.clone())
        .collect();
    fixtures.extend(bindings::binding_near_misses(
        &bindings, &fields, &admitted, &schema, &mut taken,
    )?);

    let contract = contract_yaml(
        &tool,
        &origin,
        &emit::Body {
            fields: &fields,
            tolerated: &tolerated,
            errors: &errors,
            bindings: &bindings,
            redact: &secrets,
        },
        &assumptions,
        &admitted,
        text,
    )?;
    let survivors = survivors_file(&[])?;
    Ok(Plan {
        tool,
        contract,
        schema,
        request,
        fixtures,
        survivors,
        assumptions,
        todo,
        free_text: free_text_places,
    })
}

/// The to-do lines for the members that hold secrets: never offered, and redacted from what a
/// store keeps; and any promised on request all the same.
fn secrets_to_do(secrets: &[String], fields: &[Field], todo: &mut Vec<String>) {
    if secrets.is_empty() {
        return;
    }
    todo.push(format!(
        "not offered, because the name or the description says it holds a secret: {}; the contract's `retention: redact:` keeps them out of what a front stores too. Promise one with --field only if the agent must read it",
        secrets.join(", ")
    ));
    let promised: Vec<String> = promised_places(fields)
        .into_iter()
        .filter(|place| secrets.contains(place))
        .collect();
    if !promised.is_empty() {
        todo.push(format!(
            "promised as asked, though it holds a secret: {}; the agent reads it, and a store keeps it redacted (so `reproduce` cannot rebuild what the agent saw there)",
            promised.join(", ")
        ));
    }
}

/// Whether `text` holds a character a reader does not see as itself.
fn has_hidden(text: &str) -> bool {
    text.chars().any(is_hidden)
}

fn field_has_hidden(field: &Field) -> bool {
    has_hidden(&field.from)
        || has_hidden(&field.name)
        || field
            .each
            .iter()
            .flatten()
            .any(|(name, from, _)| has_hidden(name) || has_hidden(from))
}

/// The case name of a response `toolgate new` built from the schema.
pub const SYNTHESIZED_CASE: &str = "synthesized_from_schema";

/// Whether the scaffold itself assumed `keyword` at `owner` (so it may move the bound).
fn assumed(assumptions: &[Assumption], owner: &str, keyword: &str) -> bool {
    assumptions
        .iter()
        .any(|assumption| assumption.pointer == owner && assumption.what.starts_with(keyword))
}

fn shown(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the whole response"
    } else {
        pointer
    }
}

/// Why `toolgate new` accepted a near-miss in free text it promised: the words written into
/// `survivors.yaml` beside each entry, for a person to confirm or replace.
pub const FREE_TEXT_REASON: &str = "Free text: the response has no member whose values its schema pins, so `toolgate new` promised its text and accepted the near-misses the gate admits here. Confirm the agent may read any text in bounds at this place (it reaches the agent only as this field's value), or bound it in the schema and remove this entry.";

#[cfg(test)]
mod tests;
