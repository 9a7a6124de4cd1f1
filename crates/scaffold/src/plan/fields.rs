//! Which fields the agent is promised: identifiers, enums, timestamps and bounded scalars the
//! examples hold, never free text unless asked for; and the names fields and cases are given.

use super::names::{field_name, is_secret};
use super::reading::{
    declared_in_every_branch, free_text_members, is_type, object_branch, pinned, pinned_members,
    properties, property, required_at, required_names, resolve,
};
use super::*;

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
        if is_scalar(schema, item) && (pinned(schema, item) || is_type(schema, item, "string")) {
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
            if is_secret(name, inner) {
                continue;
            }
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
            if is_secret(&name, property) {
                continue;
            }
            let Some(items) = property
                .get("items")
                .filter(|_| is_type(schema, property, "array"))
            else {
                continue;
            };
            let whole_item = resolve(schema, items);
            let (item, _) = object_branch(schema, whole_item);
            // A list of scalars (`{"names": ["a", "b"]}`): each item rebuilt as
            // `{"value": item}`, as a list at the root is.
            if is_scalar(schema, item) && (pinned(schema, item) || is_type(schema, item, "string"))
            {
                listed_text = !pinned(schema, item);
                chosen = vec![Field {
                    name: field_name(&name),
                    from: format!("/{}", crate::convert::escape(&name)),
                    optional: !required.contains(&name),
                    each: Some(vec![("value".to_owned(), String::new(), false)]),
                }];
                break;
            }
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

/// Whether `item` describes values that are neither objects nor arrays.
fn is_scalar(schema: &Value, item: &Value) -> bool {
    !["object", "array"]
        .iter()
        .any(|kind| is_type(schema, item, kind))
        && item.get("properties").is_none()
}

/// A field that reads whole a place the shape tolerates undeclared members at would hand the
/// agent whatever the upstream adds there: the gate refuses to compile it, so it is refused
/// here, before anything is written, naming the members of `example` there to promise instead.
pub(super) fn no_whole_read_of_tolerated(
    fields: &[Field],
    tolerated: &[(String, String)],
    example: Option<&Value>,
) -> Result<(), String> {
    let shown = |pointer: &str| {
        if pointer.is_empty() {
            "the whole response".to_owned()
        } else {
            pointer.to_owned()
        }
    };
    for field in fields {
        let within =
            |place: &str| place == field.from || place.starts_with(&format!("{}/", field.from));
        let Some((place, _)) = tolerated.iter().find(|(place, _)| within(place)) else {
            continue;
        };
        let members: Vec<String> = example
            .and_then(|example| example.pointer(place))
            .and_then(Value::as_object)
            .map(|members| {
                members
                    .keys()
                    .map(|name| {
                        let token = crate::convert::escape(name);
                        format!("--field {}={place}/{token}", field_name(name))
                    })
                    .collect()
            })
            .unwrap_or_default();
        return Err(format!(
            "--field {}={}: reads {} as a whole, where the description leaves members undeclared (its example has some it does not describe, at {}): they would reach the agent unchecked; promise the members one by one instead{}",
            field.name,
            field.from,
            shown(&field.from),
            shown(place),
            if members.is_empty() {
                String::new()
            } else {
                format!(", e.g. {}", members.join(" "))
            }
        ));
    }
    Ok(())
}

/// The members the agent could be given where nothing is pinned: the root's scalar members and
/// those of its object members, ranked (identifiers, then pinned values, then numbers and
/// booleans, then text), each as the `--field` that promises it.
pub(super) fn candidates(schema: &Value) -> Vec<String> {
    let whole = resolve(schema, schema);
    let (root, _) = object_branch(schema, whole);
    let mut found: Vec<(u8, String, String, &'static str)> = Vec::new();
    let visit = |object: &Value, prefix: &str, found: &mut Vec<_>| {
        for (name, member) in properties(schema, object) {
            let member = resolve(schema, member);
            if is_secret(&name, member) {
                continue;
            }
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
        if is_type(schema, member, "object") && !is_secret(&name, member) {
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

/// Where each field reads in a response: its pointer, or each member's under `/*` for a list.
pub(super) fn promised_places(fields: &[Field]) -> Vec<String> {
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
pub(super) fn in_every_item(
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

/// The fields `--field` names, as the contract writes them. `NAME=POINTER` is one value;
/// `NAME=LIST/*` a list of values (each item as `value`); `NAME.MEMBER=LIST/*/IN_ITEM` one member
/// of each item of the list field `NAME` (several `NAME.…` build one list field). A pointer that
/// lands on a list without `/*` is refused with the spelling that promises it.
pub(super) fn named_fields(
    schema: &Value,
    asked: Vec<(String, String)>,
) -> Result<Vec<Field>, String> {
    let mut fields: Vec<Field> = Vec::new();
    for (name, from) in asked {
        let Some((list, in_item)) = from.split_once("/*") else {
            if name.contains('.') {
                return Err(format!(
                    "--field {name}={from}: a dotted name promises a member of each item of a list; write the list's pointer with /* (e.g. --field {name}=/items/*/id), or drop the dot"
                ));
            }
            if let Some(at) = locate(schema, &from)
                && schema
                    .pointer(&at)
                    .is_some_and(|here| is_type(schema, resolve(schema, here), "array"))
            {
                let stem = field_name(from.rsplit('/').next().unwrap_or("items"));
                return Err(format!(
                    "--field {name}={from}: {from} is a list; promise its items with --field {name}={from}/* (a list of values), or each item's members with --field {name}.MEMBER={from}/*/POINTER (e.g. --field {stem}.id={from}/*/id; repeat it for each member)"
                ));
            }
            fields.push(Field {
                optional: !required_at(schema, &from),
                name,
                from,
                each: None,
            });
            continue;
        };
        if (!in_item.is_empty() && !in_item.starts_with('/')) || in_item.contains("/*") {
            return Err(format!(
                "--field {name}={from}: one list per field, and /* must end a pointer token (LIST/*/MEMBER); a list inside an item is promised as its own field"
            ));
        }
        let (field, member) = match name.split_once('.') {
            Some((field, member)) => (field.to_owned(), member.to_owned()),
            None => (name.clone(), "value".to_owned()),
        };
        let optional = !required_at(schema, &format!("{list}/*{in_item}"));
        let entry = (member, in_item.to_owned(), optional);
        match fields.iter_mut().find(|known| known.name == field) {
            Some(known) if known.from == list && known.each.is_some() => {
                known.each.get_or_insert_default().push(entry);
            }
            Some(known) => {
                return Err(format!(
                    "--field {name}={from}: the field {field} is already read from {}; each list field reads one list",
                    shown(&known.from)
                ));
            }
            None => fields.push(Field {
                optional: !required_at(schema, list),
                name: field,
                from: list.to_owned(),
                each: Some(vec![entry]),
            }),
        }
    }
    Ok(fields)
}
