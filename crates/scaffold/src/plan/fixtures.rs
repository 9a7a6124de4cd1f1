//! The fixtures a scaffold starts with: each admitted example as an accepted one, the near-misses
//! every tool needs (a promised value replaced by an object, a member written twice), and each
//! documented error answer, each with its sidecar.

use super::emit::{Expectation, sidecar};
use super::examples::with_duplicate;
use super::names::{case_name, unique_case};
use super::*;
use toolgate_model::edit::with_value;

/// The fixtures of `admitted` examples and documented `error_examples` (those an error mapping
/// covers).
pub(super) fn fixtures(
    origin: &Origin,
    admitted: &[(String, Value)],
    fields: &[Field],
    samples: &[&str],
    error_examples: &[(u16, Value)],
    errors: &[ErrorMapping],
) -> Result<Vec<Fixture>, String> {
    let mut fixtures = Vec::new();
    let mut names = BTreeSet::new();
    for (name, example) in admitted {
        let case = unique_case(&case_name(name), &mut names);
        fixtures.push(Fixture {
            class: "accepted",
            sidecar: sidecar(
                &if name == SYNTHESIZED_CASE {
                    format!(
                        "A response built from the schema of {}, not one the upstream sent: replace it with a real one.",
                        origin.source
                    )
                } else if samples.contains(&name.as_str()) {
                    format!("A real response, `{name}`, given with --sample.")
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
    for (status, body) in error_examples {
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
    Ok(fixtures)
}
