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

/// The schema file a scaffolded contract's shape reads.
pub const SCHEMA_FILE: &str = "response.schema.json";

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
    for (name, example) in &examples {
        match repair(&mut schema, example, &mut assumptions, &mut tolerated) {
            Ok(()) => admitted.push((name.clone(), example.clone())),
            Err(why) => todo.push(format!(
                "example `{name}` is refused by the description's own schema ({why}); it is not a fixture: fix the schema in {SCHEMA_FILE} if the example is right"
            )),
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
        let (chosen, left, free_text) =
            choose_fields(&schema, admitted.first().map(|(_, example)| example));
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
        fields
            .into_iter()
            .map(|(name, from)| Field {
                optional: !required_at(&schema, &from),
                name,
                from,
                each: None,
            })
            .collect()
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
    // What the agent sees, place by place (`*` for each item of a list): the values the
    // examples hold there. A number there is not negative, and a string not empty, where no
    // example's is: assumptions, listed.
    let promised: Vec<(String, Vec<&Value>)> = fields
        .iter()
        .flat_map(|field| match &field.each {
            None => {
                let values: Vec<&Value> = admitted
                    .iter()
                    .filter_map(|(_, example)| example.pointer(&field.from))
                    .collect();
                // A whole list of values (`from` an array of scalars): each item is seen.
                if !values.is_empty() && values.iter().all(|value| value.is_array()) {
                    let items = values
                        .into_iter()
                        .flat_map(|value| value.as_array().into_iter().flatten())
                        .collect();
                    vec![(format!("{}/*", field.from), items)]
                } else {
                    vec![(field.from.clone(), values)]
                }
            }
            Some(members) => members
                .iter()
                .map(|(_, from, _)| {
                    let values = admitted
                        .iter()
                        .filter_map(|(_, example)| example.pointer(&field.from))
                        .filter_map(Value::as_array)
                        .flatten()
                        .filter_map(|item| item.pointer(from))
                        .collect();
                    (format!("{}/*{from}", field.from), values)
                })
                .collect(),
        })
        .collect();
    for (pointer, values) in promised {
        let texts: Vec<&str> = values.iter().filter_map(|value| value.as_str()).collect();
        let locations = locate_all(&schema, &pointer);
        if !texts.is_empty() && texts.iter().all(|text| !text.is_empty()) {
            for location in &locations {
                if let Some(object) = schema.pointer_mut(location).and_then(Value::as_object_mut)
                    && !object.contains_key("minLength")
                    && !object.contains_key("enum")
                    && !object.contains_key("const")
                {
                    object.insert("minLength".to_owned(), json!(1));
                    assumptions.push(Assumption {
                        pointer: location.clone(),
                        what: format!(
                            "minLength 1: the agent sees {pointer}, and no example has it empty"
                        ),
                    });
                }
            }
        }
        let non_negative = values
            .iter()
            .filter(|value| !value.is_null())
            .all(|value| value.as_f64().is_some_and(|number| number >= 0.0))
            && values.iter().any(|value| value.is_number());
        if !non_negative {
            continue;
        }
        for location in locations {
            // A minimum the scaffold itself assumed (an int32's) may be raised; the
            // description's own stays.
            let assumed_minimum = assumed(&assumptions, &location, "minimum");
            if let Some(object) = schema.pointer_mut(&location).and_then(Value::as_object_mut)
                && (!object.contains_key("minimum")
                    || (assumed_minimum
                        && object["minimum"]
                            .as_f64()
                            .is_some_and(|minimum| minimum < 0.0)))
                && !object.contains_key("exclusiveMinimum")
            {
                object.insert("minimum".to_owned(), json!(0));
                assumptions.push(Assumption {
                    pointer: location,
                    what: format!("minimum 0: the agent sees {pointer}, and no example holds a negative number there"),
                });
            }
        }
    }

    let request = json!({
        "request_id": format!("req.{}", "0".repeat(8)),
        "now": NOW,
        "upstream": origin.upstream.clone().unwrap_or_else(|| origin.source.clone()),
        "context": context,
    });
    let mut fixtures = Vec::new();
    let mut names = BTreeSet::new();
    for (name, example) in &admitted {
        let case = unique_case(&case_name(name), &mut names);
        fixtures.push(Fixture {
            class: "accepted",
            sidecar: sidecar(
                &if name == SYNTHESIZED_CASE {
                    format!(
                        "A response built from the schema of {}, not one the upstream sent: replace it with a real one.",
                        origin.source
                    )
                } else {
                    format!("The documented example `{name}` ({}).", origin.source)
                },
                None,
                Expectation::admitted(),
            )
            .synthesized(name == SYNTHESIZED_CASE)?,
            case,
            body: render::json(example),
        });
    }
    // The near-misses every tool needs, derived from the first example: the first promised
    // value replaced by an object, and its first member written twice.
    if let Some((name, example)) = admitted.first() {
        let present = fields.iter().find_map(|field| {
            let broken = with_value(example, &field.from, json!({"toolgate": "near-miss"}))?;
            Some((
                broken,
                format!(
                    "The example `{name}` with an object where field `{}` ({}) belongs.",
                    field.name,
                    shown(&field.from)
                ),
            ))
        });
        // No promised value in the example: the whole response in the wrong container.
        let (broken, description) = present.unwrap_or_else(|| match example {
            Value::Array(_) => (
                json!({ "items": example }),
                format!("The example `{name}` wrapped in an object."),
            ),
            _ => (
                json!([example]),
                format!("The example `{name}` wrapped in an array."),
            ),
        });
        fixtures.push(Fixture {
            class: "near-miss",
            case: unique_case("near_miss", &mut names),
            body: render::json(&broken),
            sidecar: sidecar(
                &description,
                None,
                Expectation::rejected("schema", None, "INVALID_RESPONSE", false),
            )
            .rendered()?,
        });
        // A response with no object in it (a list of scalars) has no member to write twice: the
        // duplicate is then an object around it, which the parser refuses all the same.
        let (case, bytes, words) = match with_duplicate(example) {
            Some(bytes) => (
                "first_member_twice",
                bytes,
                format!("The example `{name}` with its first member written twice."),
            ),
            None => (
                "wrapped_member_twice",
                format!(r#"{{"toolgate-duplicate":1,"toolgate-duplicate":{example}}}"#)
                    .into_bytes(),
                format!("The example `{name}` as the second of two members with one name."),
            ),
        };
        fixtures.push(Fixture {
            class: "duplicate-key",
            case: unique_case(case, &mut names),
            body: render::raw_json(&String::from_utf8_lossy(&bytes)),
            sidecar: sidecar(
                &words,
                None,
                Expectation::rejected("parse", None, "INVALID_RESPONSE", false),
            )
            .rendered()?,
        });
    }
    for (status, body) in &error_examples {
        let Some(mapping) = errors
            .iter()
            .find(|mapping| mapping.statuses.contains(status))
        else {
            continue;
        };
        let case = unique_case(&format!("status_{status}"), &mut names);
        let rule = format!("upstream_errors.{}", mapping.name);
        fixtures.push(Fixture {
            class: "near-miss",
            sidecar: sidecar(
                &format!(
                    "The documented {status} answer: the agent sees {} and nothing of the body.",
                    mapping.code
                ),
                Some(*status),
                Expectation::rejected(
                    "transport",
                    Some(&rule),
                    mapping.code,
                    mapping.code == "UPSTREAM_UNAVAILABLE",
                ),
            )
            .rendered()?,
            case,
            body: render::json(body),
        });
    }

    let contract = contract_yaml(
        &tool,
        &origin,
        &fields,
        &tolerated,
        &errors,
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

/// `fixtures/<tool>/survivors.yaml`: every survivor where no promised field reads accepted, and
/// each of `free_text` (a mutation family and a pointer the gate showed it surviving at, where
/// the agent reads free text) with [`FREE_TEXT_REASON`], for a person to confirm.
pub fn survivors_file(free_text: &[(String, String)]) -> Result<Rendered, String> {
    let mut entries = vec![json!({"pointer": "/**", "reason": UNPROJECTED_REASON})];
    for (family, pointer) in free_text {
        entries.push(json!({"mutation": family, "pointer": pointer, "reason": FREE_TEXT_REASON}));
    }
    render::yaml(
        &[
            "Survivors the agent cannot see: every place no promised field reads is the upstream's to"
                .to_owned(),
            "change (the leak check still holds them). Survivors where the agent looks are accepted only"
                .to_owned(),
            "by an entry of their own, with its reason.".to_owned(),
        ],
        &entries,
    )
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

/// Why `toolgate new` accepts every survivor where no promised field reads.
const UNPROJECTED_REASON: &str = "The agent sees only the promised fields (`toolgate new` left every other member unprojected), so a survivor elsewhere is upstream drift, not something the agent reads.";

/// The case name of a response `toolgate new` built from the schema.
pub const SYNTHESIZED_CASE: &str = "synthesized_from_schema";

/// A response `schema` admits, built by the contract model (its bounds, patterns, enums and
/// required members), and checked by the validator the gate compiles: `None` when the model
/// cannot build one.
fn synthesized_example(schema: &Value) -> Option<Value> {
    let root = toolgate_model::Schemas::standalone(SCHEMA_FILE, schema);
    let example = toolgate_model::example(&root, None)?;
    validator(schema)
        .ok()?
        .is_valid(&example)
        .then_some(example)
}

/// A compiled validator for `schema`, as the gate compiles contract schemas.
fn validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    toolgate_gate::internals::standalone_validator(schema)
}

/// Makes `schema` admit `example` where it refuses it for a reason the scaffold owns: a member
/// the description does not declare (the upstream adds members: tolerated there, with the
/// reason), a bound the scaffold assumed, a `null` the description forgot. Anything else is the
/// description's own disagreement with its example: `Err` says what.
fn repair(
    schema: &mut Value,
    example: &Value,
    assumptions: &mut Vec<Assumption>,
    tolerated: &mut Vec<(String, String)>,
) -> Result<(), String> {
    for _ in 0..64 {
        let validator = validator(schema)?;
        let Some(error) = validator.iter_errors(example).next() else {
            return Ok(());
        };
        let instance = error.instance_path().to_string();
        let keyword = error
            .absolute_keyword_location()
            .and_then(|uri| uri.fragment().map(|fragment| fragment.as_str().to_owned()))
            .unwrap_or_else(|| error.schema_path().to_string())
            .replace("%24", "$")
            .replace("%25", "%");
        let (owner, name) = keyword.rsplit_once('/').unwrap_or(("", ""));
        let owner = owner.to_owned();
        let described = error.to_string();
        let changed = match error.kind() {
            ValidationErrorKind::UnevaluatedProperties { unexpected }
            | ValidationErrorKind::AdditionalProperties { unexpected }
                if !has_hidden(&instance) =>
            {
                let place = wildcard(&instance);
                let members = unexpected.join(", ");
                if let Some(object) = schema.pointer_mut(&owner).and_then(Value::as_object_mut) {
                    object.remove(name);
                }
                if !tolerated.iter().any(|(at, _)| *at == place) {
                    tolerated.push((
                        place.clone(),
                        format!("the upstream's own example has members the description does not declare here ({members})"),
                    ));
                }
                assumptions.push(Assumption {
                    pointer: owner.clone(),
                    what: format!("open: tolerated at {place} (the example carries {members})"),
                });
                true
            }
            ValidationErrorKind::MaxLength { .. }
            | ValidationErrorKind::MaxItems { .. }
            | ValidationErrorKind::MaxProperties { .. } => {
                let seen = match example.pointer(&instance) {
                    Some(Value::String(text)) => text.chars().count(),
                    Some(Value::Array(items)) => items.len(),
                    Some(Value::Object(members)) => members.len(),
                    _ => 0,
                } as u64;
                let bound = seen * 2;
                let place = schema.pointer_mut(&owner).and_then(Value::as_object_mut);
                match place {
                    Some(object) if assumed(assumptions, &owner, name) => {
                        object.insert(name.to_owned(), json!(bound));
                        assumptions.push(Assumption {
                            pointer: owner.clone(),
                            what: format!("{name} {bound}: twice what the example holds ({seen})"),
                        });
                        true
                    }
                    _ => false,
                }
            }
            ValidationErrorKind::Minimum { .. } if assumed(assumptions, &owner, "minimum") => {
                if let Some(object) = schema.pointer_mut(&owner).and_then(Value::as_object_mut) {
                    object.remove("minimum");
                }
                true
            }
            ValidationErrorKind::Format { .. } if assumed(assumptions, &owner, "format") => {
                if let Some(object) = schema.pointer_mut(&owner).and_then(Value::as_object_mut) {
                    object.remove("format");
                }
                assumptions.push(Assumption {
                    pointer: owner.clone(),
                    what: "no format: the example is not a date-time after all".to_owned(),
                });
                true
            }
            ValidationErrorKind::Type { .. }
                if example.pointer(&instance) == Some(&Value::Null) =>
            {
                let types = schema.pointer_mut(&keyword);
                match types {
                    Some(Value::String(kind)) => {
                        let kind = kind.clone();
                        *schema.pointer_mut(&keyword).unwrap_or(&mut Value::Null) =
                            json!([kind, "null"]);
                    }
                    Some(Value::Array(kinds)) => kinds.push(json!("null")),
                    _ => return Err(format!("{described} at {}", shown(&instance))),
                }
                assumptions.push(Assumption {
                    pointer: owner.clone(),
                    what: "null admitted: the example has null here though the description does not say so".to_owned(),
                });
                true
            }
            _ => false,
        };
        if !changed {
            let mut described = described;
            if described.chars().count() > 160 {
                described = described.chars().take(160).collect::<String>() + "…";
            }
            return Err(format!("{described} at {}", shown(&instance)));
        }
    }
    Err("it still fails after 64 repairs".to_owned())
}

/// Where the description says nothing of a value (`{}`, a bare description), it allows anything
/// there, and so does the contract: typing it from an example would refuse the next response
/// that differs, and refusing it would refuse what the description admits. Such a value is never
/// promised, so nothing unchecked reaches the agent; each place is a decision for the author,
/// returned by location.
fn anything_left(schema: &Value, assumptions: &mut Vec<Assumption>) -> Vec<String> {
    let silent = |schema: &Value| {
        schema.as_object().is_some_and(|members| {
            ![
                "type",
                "enum",
                "const",
                "$ref",
                "allOf",
                "anyOf",
                "oneOf",
                "not",
                "properties",
                "items",
                "additionalProperties",
            ]
            .iter()
            .any(|keyword| members.contains_key(*keyword))
        })
    };
    let mut places = Vec::new();
    collect_silent(schema, String::new(), &silent, &mut places);
    for location in &places {
        assumptions.push(Assumption {
            pointer: location.clone(),
            what: "anything: the description says nothing of this value, so it is admitted as it comes and never promised".to_owned(),
        });
    }
    places
}

/// Every silent value schema (a property's, an array's items) in `schema`, by location.
fn collect_silent(
    schema: &Value,
    at: String,
    silent: &impl Fn(&Value) -> bool,
    out: &mut Vec<String>,
) {
    let Value::Object(members) = schema else {
        return;
    };
    for (keyword, value) in members {
        let here = format!("{at}/{}", crate::convert::escape(keyword));
        match keyword.as_str() {
            "properties" | "$defs" => {
                for (name, inner) in value.as_object().into_iter().flatten() {
                    let inner_at = format!("{here}/{}", crate::convert::escape(name));
                    if keyword == "properties" && silent(inner) {
                        out.push(inner_at.clone());
                    }
                    collect_silent(inner, inner_at, silent, out);
                }
            }
            "items" => {
                if silent(value) {
                    out.push(here.clone());
                }
                collect_silent(value, here, silent, out);
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (index, inner) in value.as_array().into_iter().flatten().enumerate() {
                    collect_silent(inner, format!("{here}/{index}"), silent, out);
                }
            }
            "additionalProperties" => {
                if silent(value) {
                    out.push(here.clone());
                }
                collect_silent(value, here, silent, out);
            }
            _ => {}
        }
    }
}

/// The formats a top-level string (or a list item's) has in every example, written where the
/// description left it a bare string: it is then a value the agent may see checked.
fn formats_from_examples(
    schema: &mut Value,
    examples: &[(String, Value)],
    assumptions: &mut Vec<Assumption>,
) {
    let Some((_, first)) = examples.first() else {
        return;
    };
    let members: Vec<String> = match first {
        Value::Object(members) => members
            .keys()
            .map(|name| format!("/{}", crate::convert::escape(name)))
            .collect(),
        Value::Array(items) => items
            .first()
            .and_then(Value::as_object)
            .map(|members| {
                members
                    .keys()
                    .map(|name| format!("/0/{}", crate::convert::escape(name)))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    for pointer in members {
        let texts: Vec<&str> = examples
            .iter()
            .filter_map(|(_, example)| example.pointer(&pointer))
            .filter_map(Value::as_str)
            .collect();
        if texts.is_empty() {
            continue;
        }
        let format = ["date-time", "date", "uuid", "email", "uri"]
            .into_iter()
            .find(|format| {
                texts.iter().all(|text| {
                    toolgate_gate::internals::format_accepts(format, text) == Some(true)
                        && (*format != "uri"
                            || text.starts_with("https://")
                            || text.starts_with("http://"))
                })
            });
        let (Some(format), Some(location)) = (format, locate(schema, &pointer)) else {
            continue;
        };
        let Some(object) = schema.pointer_mut(&location).and_then(Value::as_object_mut) else {
            continue;
        };
        let bare = object.get("type") == Some(&json!("string"))
            && !["format", "pattern", "enum", "const"]
                .iter()
                .any(|keyword| object.contains_key(*keyword));
        if bare {
            object.insert("format".to_owned(), json!(format));
            assumptions.push(Assumption {
                pointer: location,
                what: format!("format {format}: every example has one at {pointer}"),
            });
        }
    }
}

/// `document` with the value at `pointer` replaced (the whole document for `""`).
fn with_value(document: &Value, pointer: &str, value: Value) -> Option<Value> {
    let mut out = document.clone();
    *out.pointer_mut(pointer)? = value;
    Some(out)
}

/// `document` written compactly with the first member of its first object written twice (the
/// same name, another value): bytes only a parser that keeps the last duplicate would accept.
fn with_duplicate(document: &Value) -> Option<Vec<u8>> {
    fn write(value: &Value, done: &mut bool, out: &mut String) {
        match value {
            Value::Object(members) => {
                out.push('{');
                for (index, (name, member)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    if !*done {
                        *done = true;
                        out.push_str(&format!(
                            "{}:{},",
                            Value::from(name.as_str()),
                            json!("toolgate-duplicate")
                        ));
                    }
                    out.push_str(&Value::from(name.as_str()).to_string());
                    out.push(':');
                    write(member, done, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write(item, done, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut done = false;
    let mut out = String::new();
    write(document, &mut done, &mut out);
    done.then(|| out.into_bytes())
}

/// Whether the scaffold itself assumed `keyword` at `owner` (so it may move the bound).
fn assumed(assumptions: &[Assumption], owner: &str, keyword: &str) -> bool {
    assumptions
        .iter()
        .any(|assumption| assumption.pointer == owner && assumption.what.starts_with(keyword))
}

/// A concrete pointer with array indices as `*`, the way `tolerate:` names every item.
fn wildcard(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|token| {
            if !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit()) {
                "*"
            } else {
                token
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn shown(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the whole response"
    } else {
        pointer
    }
}

/// The fields a contract promises when none are named: the response's own top-level values
/// whose form the schema pins (numbers, booleans, enums, formatted or patterned strings), or
/// for a list, each item's; and the free-text ones left out, by pointer.
/// The fields to promise by default, the free-text members left unpromised, and whether the
/// fields are free text themselves (nothing pinned anywhere).
pub fn choose_fields(schema: &Value, example: Option<&Value>) -> (Vec<Field>, Vec<String>, bool) {
    let whole = resolve(schema, schema);
    let (root, in_union) = object_branch(schema, whole);
    let in_all = |pointer: &str| {
        let name = pointer[1..].replace("~1", "/").replace("~0", "~");
        declared_in_every_branch(schema, whole, &name)
    };
    let mut left = Vec::new();
    if let Some(items) = root.get("items").filter(|_| is_type(schema, root, "array")) {
        let (item, _) = object_branch(schema, resolve(schema, items));
        // A list of scalars: a list field whose items are rebuilt as `{"value": item}` (a list
        // of free text promised as such, with its near-misses accepted once the gate has shown
        // them).
        let scalar = !["object", "array"]
            .iter()
            .any(|kind| is_type(schema, item, kind))
            && item.get("properties").is_none();
        if scalar && (pinned(schema, item) || is_type(schema, item, "string")) {
            let free_text = !pinned(schema, item);
            return (
                vec![Field {
                    name: "items".to_owned(),
                    from: String::new(),
                    optional: false,
                    each: Some(vec![("value".to_owned(), String::new(), false)]),
                }],
                Vec::new(),
                free_text,
            );
        }
        let whole_item = resolve(schema, items);
        let mut members = in_every_item(
            schema,
            whole_item,
            pinned_members(schema, item, &mut left, "/*"),
        );
        let free_text = members.is_empty();
        if free_text {
            // Items of free text only: their members are what the agent is for.
            members = in_every_item(schema, whole_item, free_text_members(schema, item));
            left.clear();
        }
        if members.is_empty() {
            return (Vec::new(), left, false);
        }
        return (
            vec![Field {
                name: "items".to_owned(),
                from: String::new(),
                optional: false,
                each: Some(members.into_iter().collect()),
            }],
            left,
            free_text,
        );
    }
    // The root's members as fields: only those every branch of a union declares, and optional
    // there (a member of one branch is absent from responses of the others).
    let root_fields = |members: Vec<(String, String, bool)>| -> Vec<Field> {
        members
            .into_iter()
            .filter(|(_, from, _)| in_all(from))
            .map(|(name, from, optional)| Field {
                name,
                from,
                optional: optional || in_union,
                each: None,
            })
            .collect()
    };
    let mut chosen = root_fields(pinned_members(schema, root, &mut left, ""));
    if chosen.is_empty() {
        // One level down, under the first object member (`{"data": {…}}` wrappers): those the
        // example holds first, then the schema's others (an example may leave them out).
        let mut names: Vec<String> = match example {
            Some(Value::Object(members)) => members.keys().cloned().collect(),
            _ => Vec::new(),
        };
        for (name, _) in properties(schema, root) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let required = required_names(schema, root);
        for name in &names {
            let Some(inner) = property(schema, root, name) else {
                continue;
            };
            let inner = resolve(schema, inner);
            let nested = pinned_members(
                schema,
                inner,
                &mut Vec::new(),
                &format!("/{}", crate::convert::escape(name)),
            );
            if !nested.is_empty() {
                chosen = nested
                    .into_iter()
                    .map(|(member, from, optional)| Field {
                        name: field_name(&format!("{name}_{member}")),
                        from: format!("/{}{from}", crate::convert::escape(name)),
                        optional: optional || !required.contains(name),
                        each: None,
                    })
                    .collect();
                break;
            }
        }
    }
    // A list one level down (`{"results": [{…}]}` wrappers): a list field over it, its items'
    // pinned members (or, where none is pinned, their text) read from each item.
    let mut listed_text = false;
    if chosen.is_empty() {
        let required = required_names(schema, root);
        for (name, property) in properties(schema, root) {
            let property = resolve(schema, property);
            let Some(items) = property
                .get("items")
                .filter(|_| is_type(schema, property, "array"))
            else {
                continue;
            };
            let whole_item = resolve(schema, items);
            let (item, _) = object_branch(schema, whole_item);
            let mut members = in_every_item(
                schema,
                whole_item,
                pinned_members(schema, item, &mut Vec::new(), ""),
            );
            if members.is_empty() {
                members = in_every_item(schema, whole_item, free_text_members(schema, item));
                listed_text = !members.is_empty();
            }
            if !members.is_empty() {
                chosen = vec![Field {
                    name: field_name(&name),
                    from: format!("/{}", crate::convert::escape(&name)),
                    optional: !required.contains(&name),
                    each: Some(members),
                }];
                break;
            }
        }
    }
    let free_text = chosen.is_empty() || listed_text;
    if chosen.is_empty() {
        // Nothing pinned anywhere: the free text is all the response says. It is promised, and
        // `toolgate new` accepts exactly the near-misses the gate admits there (see
        // `FREE_TEXT_REASON`), saying so in the to-do list.
        chosen = root_fields(free_text_members(schema, root));
        left.clear();
    }
    (chosen, left, free_text)
}

/// The members the agent could be given where nothing is pinned: the root's scalar members and
/// those of its object members, ranked (identifiers, then pinned values, then numbers and
/// booleans, then text), each as the `--field` that promises it.
fn candidates(schema: &Value) -> Vec<String> {
    let whole = resolve(schema, schema);
    let (root, _) = object_branch(schema, whole);
    let mut found: Vec<(u8, String, String, &'static str)> = Vec::new();
    let visit = |object: &Value, prefix: &str, found: &mut Vec<_>| {
        for (name, member) in properties(schema, object) {
            let member = resolve(schema, member);
            let pointer = format!("{prefix}/{}", crate::convert::escape(&name));
            let identifier = name == "id"
                || name.ends_with("_id")
                || name.ends_with("Id")
                || name == "key"
                || name == "name";
            let (rank, kind) =
                if is_type(schema, member, "object") || is_type(schema, member, "array") {
                    continue;
                } else if identifier {
                    (0, "an identifier")
                } else if pinned(schema, member) && is_type(schema, member, "string") {
                    (1, "a pinned string")
                } else if pinned(schema, member) {
                    (2, "a number, boolean or listed value")
                } else if is_type(schema, member, "string") {
                    (3, "free text: accept its near-misses with a reason")
                } else {
                    continue;
                };
            let field = if prefix.is_empty() {
                field_name(&name)
            } else {
                field_name(&format!("{}_{name}", &prefix[1..]))
            };
            found.push((rank, field, pointer, kind));
        }
    };
    visit(root, "", &mut found);
    for (name, member) in properties(schema, root) {
        let member = resolve(schema, member);
        if is_type(schema, member, "object") {
            let (inner, _) = object_branch(schema, member);
            visit(
                inner,
                &format!("/{}", crate::convert::escape(&name)),
                &mut found,
            );
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.len().cmp(&b.2.len())));
    found
        .into_iter()
        .take(MOST_FIELDS)
        .map(|(_, field, pointer, kind)| format!("--field {field}={pointer}   ({kind})"))
        .collect()
}

/// Why `toolgate new` accepted a near-miss in free text it promised: the words written into
/// `survivors.yaml` beside each entry, for a person to confirm or replace.
pub const FREE_TEXT_REASON: &str = "Free text: the response has no member whose values its schema pins, so `toolgate new` promised its text and accepted the near-misses the gate admits here. Confirm the agent may read any text in bounds at this place (it reaches the agent only as this field's value), or bound it in the schema and remove this entry.";

/// Where each field reads in a response: its pointer, or each member's under `/*` for a list.
fn promised_places(fields: &[Field]) -> Vec<String> {
    let mut places = Vec::new();
    for field in fields {
        match &field.each {
            Some(members) => {
                for (_, pointer, _) in members {
                    places.push(format!("{}/*{pointer}", field.from));
                }
            }
            None => places.push(field.from.clone()),
        }
    }
    places
}

/// The members of a list's items worth promising, kept only where every branch of the items'
/// union declares them (another branch's closed object would refuse the field), and optional
/// when the items are a union (an item of another branch may lack it).
fn in_every_item(
    document: &Value,
    items: &Value,
    members: Vec<(String, String, bool)>,
) -> Vec<(String, String, bool)> {
    let union = ["oneOf", "anyOf"]
        .iter()
        .any(|keyword| items.get(*keyword).is_some())
        && items.get("properties").is_none();
    members
        .into_iter()
        .filter(|(_, from, _)| {
            let name = from[1..].replace("~1", "/").replace("~0", "~");
            declared_in_every_branch(document, items, &name)
        })
        .map(|(name, from, optional)| (name, from, optional || union))
        .collect()
}

/// The object a schema describes: itself, or (for a `oneOf`/`anyOf` of objects, as descriptions
/// write a user that is either private or public) its first branch with properties, and whether it
/// was a branch.
fn object_branch<'v>(document: &'v Value, schema: &'v Value) -> (&'v Value, bool) {
    if schema.get("properties").is_some() || schema.get("items").is_some() {
        return (schema, false);
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
            for branch in branches {
                let branch = resolve(document, branch);
                if branch.get("properties").is_some() {
                    return (branch, branches.len() > 1);
                }
            }
        }
    }
    (schema, false)
}

/// Whether every `oneOf`/`anyOf` branch of `schema` (the response's root, or a list's items)
/// declares member `name`: a field read from one branch only would be refused by the others'
/// closed objects, so only members all branches declare are promised.
fn declared_in_every_branch(document: &Value, schema: &Value, name: &str) -> bool {
    ["oneOf", "anyOf"].iter().all(|keyword| {
        schema
            .get(*keyword)
            .and_then(Value::as_array)
            .is_none_or(|branches| {
                branches.iter().all(|branch| {
                    resolve(document, branch)
                        .pointer(&format!("/properties/{}", crate::convert::escape(name)))
                        .is_some()
                })
            })
    })
}

/// The string members of an object schema, as `(field name, pointer, optional)`: promised only
/// when nothing else is.
fn free_text_members(document: &Value, object: &Value) -> Vec<(String, String, bool)> {
    let required = required_names(document, object);
    properties(document, object)
        .into_iter()
        .filter(|(_, schema)| is_type(document, resolve(document, schema), "string"))
        .take(MOST_FIELDS)
        .map(|(name, _)| {
            (
                field_name(&name),
                format!("/{}", crate::convert::escape(&name)),
                !required.contains(&name),
            )
        })
        .collect()
}

/// The members of an object schema whose values the schema pins, as `(field name, pointer,
/// optional)`; the others' pointers go to `left` (under `prefix`, as the to-do list shows them).
fn pinned_members(
    document: &Value,
    object: &Value,
    left: &mut Vec<String>,
    prefix: &str,
) -> Vec<(String, String, bool)> {
    let mut found = Vec::new();
    let required = required_names(document, object);
    for (name, schema) in properties(document, object) {
        let schema = resolve(document, schema);
        let pointer = format!("/{}", crate::convert::escape(&name));
        if pinned(document, schema) {
            if found.len() < MOST_FIELDS {
                found.push((field_name(&name), pointer, !required.contains(&name)));
            }
        } else if is_type(document, schema, "string") {
            left.push(format!("{prefix}{pointer}"));
        }
    }
    // Field names must differ after sanitizing.
    let mut seen = BTreeSet::new();
    found.retain(|(name, _, _)| seen.insert(name.clone()));
    found
}

/// Whether a value's schema pins its form: a number, a boolean, an enum or const, a string with
/// a format or a pattern.
fn pinned(document: &Value, schema: &Value) -> bool {
    let scalar = ["integer", "number", "boolean"]
        .iter()
        .any(|kind| is_type(document, schema, kind))
        && !is_type(document, schema, "string")
        && !is_type(document, schema, "object")
        && !is_type(document, schema, "array");
    let listed = schema.get("enum").is_some() || schema.get("const").is_some();
    let formed = is_type(document, schema, "string")
        && (schema.get("pattern").is_some()
            || schema
                .get("format")
                .and_then(Value::as_str)
                // A format the gate asserts, except those whose values are free text.
                .is_some_and(|format| {
                    JSON_SCHEMA_FORMATS.contains(&format)
                        && !matches!(format, "regex" | "relative-json-pointer")
                }));
    scalar || listed || formed
}

fn is_type(_document: &Value, schema: &Value, kind: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(name)) => name == kind,
        Some(Value::Array(names)) => names.iter().any(|name| name == kind),
        _ => false,
    }
}

/// `schema`, or what its `$ref` into the document's `$defs` points to.
fn resolve<'v>(document: &'v Value, schema: &'v Value) -> &'v Value {
    let mut current = schema;
    for _ in 0..16 {
        match current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|pointer| document.pointer(pointer))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// An object schema's properties, its `allOf` parts' included.
fn properties<'v>(document: &'v Value, object: &'v Value) -> Vec<(String, &'v Value)> {
    let mut found: Vec<(String, &Value)> = object
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, schema)| (name.clone(), schema))
        .collect();
    for part in object
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (name, schema) in properties(document, resolve(document, part)) {
            if !found.iter().any(|(known, _)| *known == name) {
                found.push((name, schema));
            }
        }
    }
    found
}

fn property<'v>(document: &'v Value, object: &'v Value, name: &str) -> Option<&'v Value> {
    properties(document, object)
        .into_iter()
        .find(|(known, _)| known == name)
        .map(|(_, schema)| schema)
}

fn required_names(document: &Value, object: &Value) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    for part in object
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        names.extend(required_names(document, resolve(document, part)));
    }
    names
}

/// Whether every object on the way to `pointer` requires the next member.
fn required_at(schema: &Value, pointer: &str) -> bool {
    let mut current = resolve(schema, schema);
    for token in pointer.split('/').skip(1) {
        let name = token.replace("~1", "/").replace("~0", "~");
        if !required_names(schema, current).contains(&name) {
            return false;
        }
        match property(schema, current, &name) {
            Some(next) => current = resolve(schema, next),
            None => return false,
        }
    }
    true
}

/// Where the schema at `pointer` in a response is written: the first of [`locate_all`].
pub(crate) fn locate(document: &Value, pointer: &str) -> Option<String> {
    locate_all(document, pointer).into_iter().next()
}

/// Every place the schema for `pointer` in a response is written, through `$ref`s, `items`,
/// `allOf` parts and each `oneOf`/`anyOf` branch that declares the member (a bound assumed for
/// what the agent sees must hold in every branch a response may take).
fn locate_all(document: &Value, pointer: &str) -> Vec<String> {
    let step_ref = |at: &mut String| {
        for _ in 0..16 {
            let Some(reference) = document
                .pointer(at)
                .and_then(|schema| schema.get("$ref"))
                .and_then(Value::as_str)
                .and_then(|reference| reference.strip_prefix('#'))
                .filter(|reference| document.pointer(reference).is_some())
            else {
                return;
            };
            *at = reference.to_owned();
        }
    };
    let mut current = vec![String::new()];
    for token in pointer.split('/').skip(1) {
        let name = token.replace("~1", "/").replace("~0", "~");
        let member = format!("/properties/{}", crate::convert::escape(&name));
        let mut next: Vec<String> = Vec::new();
        let mut pending: Vec<String> = current;
        let mut visited = 0;
        while let Some(mut at) = pending.pop() {
            visited += 1;
            if visited > 64 {
                break;
            }
            step_ref(&mut at);
            let Some(schema) = document.pointer(&at) else {
                continue;
            };
            if schema.pointer(&member).is_some() {
                next.push(format!("{at}{member}"));
            } else if (name == "*" || name.parse::<usize>().is_ok())
                && schema.get("items").is_some_and(Value::is_object)
            {
                next.push(format!("{at}/items"));
            }
            for keyword in ["allOf", "oneOf", "anyOf"] {
                if let Some(parts) = schema.get(keyword).and_then(Value::as_array) {
                    for index in 0..parts.len() {
                        pending.push(format!("{at}/{keyword}/{index}"));
                    }
                }
            }
        }
        next.dedup();
        current = next;
    }
    current
        .into_iter()
        .map(|mut at| {
            step_ref(&mut at);
            at
        })
        .collect()
}

/// A member name as a field name: letters, digits and `_`, starting with a letter.
fn field_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
        .collect();
    if !out.starts_with(|ch: char| ch.is_ascii_alphabetic()) {
        out.insert_str(0, "f_");
    }
    out
}

/// An example's name as a fixture case name.
fn case_name(name: &str) -> String {
    let mut case: String = name
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '-' {
                ch.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    if !case.starts_with(|ch: char| ch.is_ascii_alphanumeric()) {
        case.insert_str(0, "example");
    }
    case
}

fn unique_case(base: &str, taken: &mut BTreeSet<String>) -> String {
    let mut case = base.to_owned();
    let mut counter = 2;
    while !taken.insert(case.clone()) || !is_case_name(&case) {
        case = format!("{base}_{counter}");
        counter += 1;
    }
    case
}

/// `contract.yaml` as the serializer writes it.
#[derive(Serialize)]
struct ContractFile<'a> {
    tool: &'a str,
    version: u32,
    direction: &'static str,
    limits: Limits,
    shape: ShapeFile<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    upstream_errors: Vec<ErrorFile<'a>>,
}

#[derive(Serialize)]
struct Limits {
    max_bytes: usize,
    max_depth: u32,
}

#[derive(Serialize)]
struct ShapeFile<'a> {
    schema: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text_pattern: Option<&'static str>,
    fields: Vec<FieldFile<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tolerate: Vec<TolerateFile<'a>>,
}

#[derive(Serialize)]
struct FieldFile<'a> {
    name: &'a str,
    from: &'a str,
    #[serde(skip_serializing_if = "is_false")]
    optional: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    each: Option<Vec<FieldFile<'a>>>,
}

#[derive(Serialize)]
struct TolerateFile<'a> {
    at: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
struct ErrorFile<'a> {
    name: &'a str,
    status: &'a [u16],
    code: &'static str,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

/// `contract.yaml`: a header of comments (where it comes from, every assumption, and the
/// upstream's own description of the tool, which is never the contract's: the proxy serves a
/// contract's `description:` to the model, so only its author writes one), then the contract.
#[allow(clippy::too_many_arguments)]
fn contract_yaml(
    tool: &str,
    origin: &Origin,
    fields: &[Field],
    tolerated: &[(String, String)],
    errors: &[ErrorMapping],
    assumptions: &[Assumption],
    admitted: &[(String, Value)],
    text: bool,
) -> Result<Rendered, String> {
    let mut header = vec![
        render::comment(&format!(
            "Scaffolded by `toolgate new` from {}.",
            origin.source
        )),
        "Review it (every assumption below is a decision the description did not make), then"
            .to_owned(),
        format!("`toolgate test --accept {tool}` and `CI=true toolgate test {tool}`."),
    ];
    if !admitted.is_empty() && admitted.iter().all(|(name, _)| name == SYNTHESIZED_CASE) {
        header.push(String::new());
        header.push(
            "UNPROVEN: written without a real response (the description documents none), so its"
                .to_owned(),
        );
        header.push(
            "only accepted fixture is built from this schema; `toolgate test` says so until a real"
                .to_owned(),
        );
        header.push("response is saved beside it.".to_owned());
    }
    if let Some(summary) = &origin.summary {
        header.push(String::new());
        header.push(
            "The upstream describes the tool as follows (its words, unchecked, never served as this"
                .to_owned(),
        );
        header.push(
            "contract's: write a `description:` of your own for the proxy to show the model):"
                .to_owned(),
        );
        header.push(format!("  {}", render::comment(summary)));
    }
    if origin
        .upstream
        .as_deref()
        .is_some_and(|upstream| upstream.starts_with("MCP "))
    {
        header.push(String::new());
        header.push(
            "description: <yours: what the model should know to call this tool; move this line"
                .to_owned(),
        );
        header.push("  below the comments and out of them>".to_owned());
    }
    if !assumptions.is_empty() {
        header.push(String::new());
        header.push(format!("Assumed in {SCHEMA_FILE}:"));
        for assumption in assumptions {
            let pointer = if assumption.pointer.is_empty() {
                "(root)"
            } else {
                &assumption.pointer
            };
            header.push(format!(
                "  {}",
                render::comment(&format!("{pointer}: {}", assumption.what))
            ));
        }
    }
    // Room for the largest example four times over, at least the default 64 KiB.
    let largest = admitted
        .iter()
        .map(|(_, example)| example.to_string().len())
        .max()
        .unwrap_or(0);
    fn field_file(field: &Field) -> FieldFile<'_> {
        FieldFile {
            name: &field.name,
            from: &field.from,
            optional: field.optional,
            each: None,
        }
    }
    let contract = ContractFile {
        tool,
        version: 1,
        direction: "result",
        limits: Limits {
            max_bytes: (largest * 4).clamp(64 * 1024, 64 * 1024 * 1024),
            max_depth: 64,
        },
        shape: ShapeFile {
            schema: SCHEMA_FILE,
            text_pattern: text.then_some(TEXT_PATTERN),
            fields: fields
                .iter()
                .map(|field| match &field.each {
                    None => field_file(field),
                    Some(members) => FieldFile {
                        each: Some(
                            members
                                .iter()
                                .map(|(name, from, optional)| FieldFile {
                                    name,
                                    from,
                                    optional: *optional,
                                    each: None,
                                })
                                .collect(),
                        ),
                        optional: field.optional,
                        ..field_file(field)
                    },
                })
                .collect(),
            tolerate: tolerated
                .iter()
                .map(|(at, reason)| TolerateFile { at, reason })
                .collect(),
        },
        upstream_errors: errors
            .iter()
            .map(|mapping| ErrorFile {
                name: &mapping.name,
                status: &mapping.statuses,
                code: mapping.code,
            })
            .collect(),
    };
    render::yaml(&header, &contract)
}

/// A text contract's pattern: the whole output, one fact.
const TEXT_PATTERN: &str = "^(?s)(?P<text>.+)$";

/// A fixture's sidecar as the serializer writes it.
#[derive(Serialize)]
struct SidecarFile<'a> {
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    upstream_status: Option<u16>,
    expect: Expectation<'a>,
    /// A response built from the schema: the tool is unproven until a real one joins it.
    #[serde(skip_serializing_if = "is_false")]
    synthesized: bool,
}

#[derive(Serialize)]
struct Expectation<'a> {
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    layer: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retryable: Option<bool>,
}

impl Expectation<'_> {
    fn admitted() -> Expectation<'static> {
        Expectation {
            outcome: "admitted",
            layer: None,
            rule: None,
            code: None,
            retryable: None,
        }
    }

    fn rejected<'a>(
        layer: &'static str,
        rule: Option<&'a str>,
        code: &'static str,
        retryable: bool,
    ) -> Expectation<'a> {
        Expectation {
            outcome: "rejected",
            layer: Some(layer),
            rule,
            code: Some(code),
            retryable: Some(retryable),
        }
    }
}

/// A sidecar, before it is rendered.
fn sidecar<'a>(
    description: &'a str,
    upstream_status: Option<u16>,
    expect: Expectation<'a>,
) -> SidecarFile<'a> {
    SidecarFile {
        description,
        upstream_status,
        expect,
        synthesized: false,
    }
}

impl SidecarFile<'_> {
    /// Marked as a response built from the schema, when `synthesized`; rendered.
    fn synthesized(mut self, synthesized: bool) -> Result<Rendered, String> {
        self.synthesized = synthesized;
        self.rendered()
    }

    fn rendered(&self) -> Result<Rendered, String> {
        render::yaml(&[], self)
    }
}

/// Writes `plan` under `root`, refusing to touch an existing contract.
pub fn write(root: &RepoRoot, plan: &Plan) -> Result<Vec<PathBuf>, String> {
    let tool = Path::new("contracts").join(&plan.tool);
    if root.kind(&tool).map_err(|error| error.to_string())? != toolgate_repo::EntryKind::Missing {
        return Err(format!(
            "{}: already exists; `toolgate new` never overwrites a contract (a change is a new version folder)",
            root.shown(&tool).display()
        ));
    }
    let fixtures = Path::new("fixtures").join(&plan.tool);
    let mut files: Vec<(PathBuf, Rendered)> = vec![
        (tool.join("v1/contract.yaml"), plan.contract.clone()),
        (
            tool.join("v1").join(SCHEMA_FILE),
            render::json(&plan.schema),
        ),
        (fixtures.join("request.json"), render::json(&plan.request)),
        (fixtures.join("survivors.yaml"), plan.survivors.clone()),
    ];
    for fixture in &plan.fixtures {
        let folder = fixtures.join(fixture.class);
        files.push((
            folder.join(format!("{}.json", fixture.case)),
            fixture.body.clone(),
        ));
        files.push((
            folder.join(format!("{}.expect.yaml", fixture.case)),
            fixture.sidecar.clone(),
        ));
    }
    // Every file reads back as what it means, and nothing is there: before anything is written.
    for (path, rendered) in &files {
        render::check(&path.display().to_string(), rendered)?;
        if root.kind(path).map_err(|error| error.to_string())? != toolgate_repo::EntryKind::Missing
        {
            return Err(format!(
                "{}: already exists; `toolgate new` never overwrites a file",
                root.shown(path).display()
            ));
        }
    }
    for (path, rendered) in &files {
        root.write(path, &rendered.bytes)
            .map_err(|error| error.to_string())?;
    }
    Ok(files.into_iter().map(|(path, _)| path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the plan's `contract.yaml` says, as the gate reads it.
    fn contract_of(plan: &Plan) -> Value {
        toolgate_gate::internals::read_strict_yaml(plan.contract.text()).unwrap()
    }

    fn parts(schema: Value, examples: Vec<(String, Value)>) -> Parts {
        Parts {
            tool: "pull".to_owned(),
            origin: Origin {
                source: "a test".to_owned(),
                summary: Some("Get a pull request".to_owned()),
                upstream: None,
            },
            schema,
            assumptions: Vec::new(),
            examples,
            error_examples: vec![(404, json!({"message": "Not Found"}))],
            fields: Vec::new(),
            context: Map::new(),
            errors: vec![ErrorMapping {
                name: "not_found".to_owned(),
                statuses: vec![404],
                code: "NOT_FOUND",
            }],
            text: false,
            decisions: Vec::new(),
        }
    }

    fn closed_pull() -> Value {
        json!({
            "type": "object",
            "required": ["number", "title", "head"],
            "properties": {
                "number": {"type": "integer"},
                "title": {"type": "string", "maxLength": 100},
                "state": {"type": "string", "enum": ["open", "closed"]},
                "url": {"type": "string", "maxLength": 200},
                "head": {"type": "object", "properties": {"sha": {"type": "string", "maxLength": 40}}, "unevaluatedProperties": false},
                "labels": {"type": "array", "items": {}}
            },
            "unevaluatedProperties": false
        })
    }

    #[test]
    fn an_upstream_addition_in_an_example_is_tolerated_where_it_is_and_said_why() {
        let example = json!({"number": 7, "title": "Gate", "state": "open", "url": "https://api.example.com/pulls/7", "head": {"sha": "abc", "repo": {"id": 1}}, "labels": []});
        let plan = plan(parts(closed_pull(), vec![("default".to_owned(), example)])).unwrap();
        let contract = contract_of(&plan);
        assert_eq!(
            contract["shape"]["tolerate"][0]["at"],
            "/head",
            "{}",
            plan.contract.text()
        );
        assert!(
            plan.contract.text().contains("(repo)"),
            "{}",
            plan.contract.text()
        );
        assert!(
            plan.schema
                .pointer("/properties/head/unevaluatedProperties")
                .is_none()
        );
        // The examples are real: every one is an accepted fixture, and the two near-misses
        // every tool needs are derived from the first.
        let classes: Vec<&str> = plan.fixtures.iter().map(|fixture| fixture.class).collect();
        assert_eq!(
            classes,
            ["accepted", "near-miss", "duplicate-key", "near-miss"]
        );
        assert_eq!(
            contract["upstream_errors"],
            json!([{"name": "not_found", "status": [404], "code": "NOT_FOUND"}])
        );
        // Pinned values are promised; free text is left for a person, by pointer.
        let fields = contract["shape"]["fields"].as_array().unwrap();
        assert!(
            fields.contains(&json!({"name": "number", "from": "/number"})),
            "{}",
            plan.contract.text()
        );
        assert!(fields.contains(&json!({"name": "state", "from": "/state", "optional": true})));
        assert!(
            fields.contains(&json!({"name": "url", "from": "/url", "optional": true})),
            "the URL got its format from the examples"
        );
        assert!(
            plan.todo.iter().any(|line| line.contains("/title")),
            "{:?}",
            plan.todo
        );
        // A value the description leaves silent is kept as it says (anything), never promised,
        // and left to the author to decide.
        assert_eq!(
            plan.schema.pointer("/properties/labels/items"),
            Some(&json!({}))
        );
        assert!(
            plan.contract
                .text()
                .contains("anything: the description says nothing of this value")
        );
        assert!(
            plan.todo.iter().any(|line| line.starts_with(
                "response.schema.json#/properties/labels/items: the description allows any value here"
            )),
            "{:?}",
            plan.todo
        );
        // The number the agent sees is not negative, as no example is.
        assert_eq!(
            plan.schema.pointer("/properties/number/minimum"),
            Some(&json!(0))
        );
    }

    /// Nothing at the top to promise: the refusal lists what lies below, identifiers first,
    /// each as the `--field` that promises it; a schema with no named member says so.
    #[test]
    fn no_field_to_promise_names_the_candidates() {
        let nested = json!({
            "type": "object",
            "properties": {"page": {"type": "object", "properties": {
                "title": {"type": "string", "maxLength": 10},
                "page_id": {"type": "string", "maxLength": 10},
                "meta": {"type": "object", "additionalProperties": {"type": "string"}}
            }}},
            "unevaluatedProperties": false
        });
        let Err(message) = plan(parts(nested, Vec::new())) else {
            panic!("nothing to promise at the top");
        };
        let lines: Vec<&str> = message.lines().skip(1).map(str::trim).collect();
        assert_eq!(
            lines,
            [
                "--field page_page_id=/page/page_id   (an identifier)",
                "--field page_title=/page/title   (free text: accept its near-misses with a reason)"
            ],
            "{message}"
        );
        let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        let Err(message) = plan(parts(map, Vec::new())) else {
            panic!("a map has no member to promise");
        };
        assert!(message.contains("names no member"), "{message}");
    }

    /// A list one level down that the schema does not require is an optional list field: a
    /// response without it passes the schema, so projection must not fail on it.
    #[test]
    fn a_list_the_schema_does_not_require_is_an_optional_field() {
        let schema = json!({
            "type": "object",
            "properties": {"clicks": {"type": "array", "maxItems": 5, "items": {
                "type": "object", "required": ["slug"],
                "properties": {"slug": {"type": "string", "enum": ["a", "b"]}},
                "unevaluatedProperties": false
            }}},
            "unevaluatedProperties": false
        });
        let plan = plan(parts(
            schema,
            vec![("a".to_owned(), json!({"clicks": [{"slug": "a"}]}))],
        ))
        .unwrap();
        let field = &contract_of(&plan)["shape"]["fields"][0];
        assert_eq!(field["from"], "/clicks", "{}", plan.contract.text());
        assert_eq!(field["optional"], true, "{}", plan.contract.text());
    }

    /// A field chosen for the author is a choice they confirm: the to-do list says, in one line,
    /// all the agent will see and what else it could be given.
    #[test]
    fn the_to_do_list_says_what_the_agent_will_see() {
        let schema = json!({
            "type": "object",
            "required": ["ok"],
            "properties": {"ok": {"type": "boolean"}, "zone_id": {"type": "string", "maxLength": 40}},
            "unevaluatedProperties": false
        });
        let plan = plan(parts(
            schema,
            vec![("a".to_owned(), json!({"ok": true, "zone_id": "z1"}))],
        ))
        .unwrap();
        let line = plan
            .todo
            .iter()
            .find(|line| line.starts_with("the agent will see only ok (/ok), and nothing else"))
            .unwrap_or_else(|| panic!("{:?}", plan.todo));
        assert!(line.contains("--field zone_id=/zone_id"), "{line}");
    }

    #[test]
    fn an_example_the_description_refuses_for_its_own_reasons_is_set_aside() {
        let wrong = json!({"number": "seven", "title": "x", "head": {"sha": "a"}});
        let right = json!({"number": 7, "title": "x", "head": {"sha": "a"}});
        let plan = plan(parts(
            closed_pull(),
            vec![("wrong".to_owned(), wrong), ("right".to_owned(), right)],
        ))
        .unwrap();
        assert_eq!(
            plan.fixtures
                .iter()
                .filter(|fixture| fixture.class == "accepted")
                .count(),
            1
        );
        assert!(
            plan.todo
                .iter()
                .any(|line| line.contains("example `wrong` is refused")),
            "{:?}",
            plan.todo
        );
    }

    #[test]
    fn a_list_is_promised_item_by_item() {
        let schema = json!({"type": "array", "maxItems": 30, "items": closed_pull()});
        let example = json!([{"number": 1, "title": "a", "head": {"sha": "x"}}, {"number": 2, "title": "b", "head": {"sha": "y"}}]);
        let plan = plan(parts(schema, vec![("list".to_owned(), example)])).unwrap();
        let contract = contract_of(&plan);
        let items = &contract["shape"]["fields"][0];
        assert_eq!(
            (&items["name"], &items["from"]),
            (&json!("items"), &json!(""))
        );
        assert_eq!(
            items["each"][0],
            json!({"name": "number", "from": "/number"}),
            "{}",
            plan.contract.text()
        );
        assert_eq!(contract["limits"]["max_bytes"], 65536);
    }

    #[test]
    fn a_union_of_objects_promises_what_every_branch_declares_and_bounds_it_in_each() {
        let branch = |extra: &str| json!({"type": "object", "required": ["id", "kind"], "properties": {"id": {"type": "integer"}, "kind": {"enum": ["user", "bot"]}, extra: {"type": "boolean"}}, "additionalProperties": false});
        let schema = json!({"oneOf": [branch("private"), branch("public")]});
        let example = json!({"id": 7, "kind": "user", "private": true});
        let plan = plan(parts(schema, vec![("default".to_owned(), example)])).unwrap();
        let contract = contract_of(&plan);
        let promised = contract["shape"]["fields"].as_array().unwrap();
        assert_eq!(promised.len(), 2, "{}", plan.contract.text());
        assert!(
            promised.iter().all(|field| field["optional"] == true),
            "{promised:?}"
        );
        assert!(
            !plan.contract.text().contains("/private"),
            "{}",
            plan.contract.text()
        );
        // The bound assumed for what the agent sees holds in both branches.
        assert_eq!(
            plan.schema.pointer("/oneOf/0/properties/id/minimum"),
            Some(&json!(0))
        );
        assert_eq!(
            plan.schema.pointer("/oneOf/1/properties/id/minimum"),
            Some(&json!(0))
        );
    }

    #[test]
    fn without_an_admitted_example_a_response_is_built_from_the_schema_and_said_so() {
        let wrong = json!({"number": "seven", "title": "x", "head": {"sha": "a"}});
        let plan = plan(parts(closed_pull(), vec![("documented".to_owned(), wrong)])).unwrap();
        let synthesized = plan
            .fixtures
            .iter()
            .find(|fixture| fixture.case == SYNTHESIZED_CASE)
            .expect("a synthesized accepted fixture");
        assert_eq!(synthesized.class, "accepted");
        let body: Value = serde_json::from_slice(&synthesized.body.bytes).unwrap();
        assert!(validator(&plan.schema).unwrap().is_valid(&body), "{body}");
        assert!(
            plan.todo
                .iter()
                .any(|line| line.contains("not one the upstream sent")),
            "{:?}",
            plan.todo
        );
    }

    #[test]
    fn a_list_of_scalars_is_a_list_field_of_values_and_its_duplicate_wraps_it() {
        let schema = json!({"type": "array", "items": {"type": "integer"}});
        let plan = plan(parts(schema, vec![("counts".to_owned(), json!([3, 1, 2]))])).unwrap();
        assert_eq!(
            contract_of(&plan)["shape"]["fields"][0],
            json!({"name": "items", "from": "", "each": [{"name": "value", "from": ""}]}),
            "{}",
            plan.contract.text()
        );
        // Every count seen is non-negative: so is every item the agent is shown.
        assert_eq!(plan.schema.pointer("/items/minimum"), Some(&json!(0)));
        let duplicate = plan
            .fixtures
            .iter()
            .find(|fixture| fixture.class == "duplicate-key")
            .unwrap();
        assert_eq!(
            duplicate.body.text(),
            r#"{"toolgate-duplicate":1,"toolgate-duplicate":[3,1,2]}"#
        );
    }

    #[test]
    fn a_list_one_level_down_is_a_list_field() {
        let schema = json!({"type": "object", "required": ["results"], "properties": {"results": {"type": "array", "items": {"type": "object", "required": ["mac", "seen"], "properties": {"mac": {"type": "string"}, "seen": {"type": "integer"}}, "additionalProperties": false}}}, "additionalProperties": false});
        let example = json!({"results": [{"mac": "5c5b35000001", "seen": 3}]});
        let plan = plan(parts(schema, vec![("list".to_owned(), example)])).unwrap();
        let results = &contract_of(&plan)["shape"]["fields"][0];
        assert_eq!(
            (&results["name"], &results["from"]),
            (&json!("results"), &json!("/results"))
        );
        assert_eq!(
            results["each"][0],
            json!({"name": "seen", "from": "/seen"}),
            "{}",
            plan.contract.text()
        );
        assert_eq!(
            plan.schema
                .pointer("/properties/results/items/properties/seen/minimum"),
            Some(&json!(0))
        );
    }

    #[test]
    fn a_list_of_union_items_promises_what_every_branch_declares() {
        let branch = |kind: &str, extra: &str| json!({"type": "object", "required": ["id", "event"], "properties": {"id": {"type": "integer"}, "event": {"const": kind}, extra: {"type": "boolean"}}, "additionalProperties": false});
        let schema = json!({"type": "array", "items": {"anyOf": [branch("a", "only_a"), branch("b", "only_b")]}});
        let example = json!([{"id": 1, "event": "a", "only_a": true}, {"id": 2, "event": "b"}]);
        let plan = plan(parts(schema, vec![("events".to_owned(), example)])).unwrap();
        let each = &contract_of(&plan)["shape"]["fields"][0]["each"];
        assert!(
            each.as_array()
                .unwrap()
                .contains(&json!({"name": "id", "from": "/id", "optional": true})),
            "{}",
            plan.contract.text()
        );
        assert!(
            !plan.contract.text().contains("only_a"),
            "{}",
            plan.contract.text()
        );
    }

    #[test]
    fn duplicates_and_wildcards() {
        assert_eq!(
            String::from_utf8(with_duplicate(&json!({"a": 1, "b": [2]})).unwrap()).unwrap(),
            r#"{"a":"toolgate-duplicate","a":1,"b":[2]}"#
        );
        assert_eq!(
            String::from_utf8(with_duplicate(&json!([1, {"x": {"y": 2}}])).unwrap()).unwrap(),
            r#"[1,{"x":"toolgate-duplicate","x":{"y":2}}]"#
        );
        assert!(with_duplicate(&json!([1, 2])).is_none());
        assert_eq!(wildcard("/items/12/labels/0"), "/items/*/labels/*");
        assert_eq!(field_name("html-url"), "html_url");
        assert_eq!(field_name("2fa"), "f_2fa");
    }
}
