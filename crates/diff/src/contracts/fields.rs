//! The promised fields compared: added, removed, or read from another place in the response (an
//! optional field's absence allowed for).

use super::*;

pub(super) fn compare_fields(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let (old, new) = (from.field_order(), to.field_order());
    let current = toolgate_gate::CURRENT_SHAPE;
    let optional = |version: &Version, field: &str| {
        version.shapes()[0]
            .fields
            .get(field)
            .is_some_and(|(_, optional)| *optional)
    };
    // A kept accepted fixture shows each field effect; the witness search finds it.
    let keep = || Effect::Yes(Probe::keep(Some(current)));
    for field in new.iter().filter(|field| !old.contains(field)) {
        let narrowed = if optional(to, field) {
            Effect::Unknown(format!(
                "`{field}` is optional in {}: outputs without it may still be possible",
                to.name
            ))
        } else {
            keep()
        };
        out.push(
            Change::new(
                "field_added",
                if optional(to, field) {
                    format!("the agent is now promised `{field}` (optional)")
                } else {
                    format!(
                        "the agent is now promised `{field}`: every successful output now carries `{field}`"
                    )
                },
                CONTRACT_FILE,
                "/shape/fields",
            )
            .with(BumpVerdict::AgentWidened, keep())
            .with(BumpVerdict::AgentNarrowed, narrowed),
        );
    }
    for field in old.iter().filter(|field| !new.contains(field)) {
        let widened = if optional(from, field) {
            Effect::Unknown(format!(
                "`{field}` was optional in {}: outputs without it were already possible",
                from.name
            ))
        } else {
            keep()
        };
        out.push(
            Change::new(
                "field_removed",
                format!(
                    "the agent is no longer promised `{field}`: no successful output carries `{field}` any more"
                ),
                CONTRACT_FILE,
                "/shape/fields",
            )
            .with(BumpVerdict::AgentNarrowed, keep())
            .with(BumpVerdict::AgentWidened, widened),
        );
    }
    let common_old: Vec<&String> = old.iter().filter(|field| new.contains(field)).collect();
    let common_new: Vec<&String> = new.iter().filter(|field| old.contains(field)).collect();
    if common_old != common_new {
        out.push(
            Change::new(
                "fields_reordered",
                format!(
                    "the promised fields are written in another order: {} → {}",
                    common_old
                        .iter()
                        .map(|field| field.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    common_new
                        .iter()
                        .map(|field| field.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                CONTRACT_FILE,
                "/shape/fields",
            )
            .with(BumpVerdict::AgentWidened, keep())
            .with(BumpVerdict::AgentNarrowed, keep()),
        );
    }
    for shape in from.shapes() {
        let Some(other) = to
            .shapes()
            .into_iter()
            .find(|other| other.name == shape.name)
        else {
            continue;
        };
        for (field, (pointer, was_optional)) in &shape.fields {
            let Some((new_pointer, is_optional)) = other.fields.get(field) else {
                continue;
            };
            if new_pointer != pointer {
                let why = format!(
                    "`{field}` is now read from {new_pointer} instead of {pointer}; the values there may differ"
                );
                let mut change = Change::new(
                    "field_source_changed",
                    format!(
                        "shape `{}`: `{field}` is read from {new_pointer} instead of {pointer}",
                        shape.name
                    ),
                    CONTRACT_FILE,
                    "/shape/fields",
                )
                .with(BumpVerdict::AgentWidened, Effect::Unknown(why.clone()))
                .with(BumpVerdict::AgentNarrowed, Effect::Unknown(why));
                change.shape = Some(shape.name.clone());
                out.push(change);
            }
            if was_optional != is_optional {
                let mut change = Change::new(
                    if *is_optional {
                        "field_optional"
                    } else {
                        "field_required"
                    },
                    format!(
                        "shape `{}`: `{field}` is now {}",
                        shape.name,
                        if *is_optional {
                            "optional: outputs may lack it"
                        } else {
                            "always promised"
                        }
                    ),
                    CONTRACT_FILE,
                    "/shape/fields",
                );
                let absent = Effect::Yes(Probe {
                    path: new_pointer.clone(),
                    edit: Edit::Remove,
                    adapt_context: true,
                    shape: Some(shape.name.clone()),
                });
                change = if *is_optional {
                    change.with(BumpVerdict::AgentWidened, absent).with(
                        BumpVerdict::UpstreamLoosened,
                        Effect::Yes(Probe {
                            path: new_pointer.clone(),
                            edit: Edit::Remove,
                            adapt_context: true,
                            shape: Some(shape.name.clone()),
                        }),
                    )
                } else {
                    change
                        .with(BumpVerdict::AgentNarrowed, absent.clone())
                        .with(BumpVerdict::UpstreamBreaking, absent)
                };
                change.shape = Some(shape.name.clone());
                out.push(change);
            }
        }
    }
}
