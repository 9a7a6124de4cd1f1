//! The author's edits to a scaffold, carried onto the next scaffold: a three-way merge of JSON
//! documents. `base` is what `toolgate new` wrote, `ours` is what the author committed, `theirs`
//! is the scaffold of a newer description. Every place the author changed (a value set, a member
//! added or removed, an item added to or removed from a set-like list: `required`, `enum`,
//! `type`) is replayed onto `theirs` where the newer description left that place as the older one
//! had it; where it changed the same place, or no longer has it, the edit is a decision for a
//! person, never guessed.

use serde_json::Value;
use toolgate_gate::internals::escape_hidden;

/// One change the author made, at a JSON pointer of the document.
#[derive(Debug, Clone, PartialEq)]
enum Edit {
    /// The value at `at` went from `before` to `after` (`None`: absent).
    Change {
        at: String,
        before: Option<Value>,
        after: Option<Value>,
    },
    /// `item` was added to (or removed from) the set-like list at `at`.
    Item {
        at: String,
        item: Value,
        added: bool,
    },
}

/// An edit that could not be replayed, for a person to decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Where, as a JSON pointer.
    pub at: String,
    /// What the author did and what the newer scaffold has there, in words.
    pub why: String,
}

/// `theirs` with the author's edits replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// The merged document.
    pub document: Value,
    /// How many edits were replayed (or were already there).
    pub kept: usize,
    /// The edits left for a person.
    pub conflicts: Vec<Conflict>,
}

/// Replays onto `theirs` what turned `base` into `ours`.
pub fn merge(base: &Value, ours: &Value, theirs: &Value) -> Merged {
    let mut edits = Vec::new();
    collect(base, ours, &mut String::new(), None, &mut edits);
    let mut document = theirs.clone();
    let mut kept = 0;
    let mut conflicts = Vec::new();
    for edit in edits {
        match replay(&mut document, &edit) {
            Ok(()) => kept += 1,
            Err(why) => conflicts.push(Conflict {
                at: match &edit {
                    Edit::Change { at, .. } | Edit::Item { at, .. } => at.clone(),
                },
                why,
            }),
        }
    }
    Merged {
        document,
        kept,
        conflicts,
    }
}

/// Lists whose order means nothing, so an item added or removed is the edit (not the list).
fn is_set_like(key: Option<&str>, base: &[Value], ours: &[Value]) -> bool {
    matches!(key, Some("required" | "enum" | "type"))
        && base
            .iter()
            .chain(ours)
            .all(|item| !item.is_array() && !item.is_object())
}

fn collect(base: &Value, ours: &Value, at: &mut String, key: Option<&str>, edits: &mut Vec<Edit>) {
    match (base, ours) {
        (Value::Object(old), Value::Object(new)) => {
            for (name, old_member) in old {
                let length = at.len();
                push_token(at, name);
                match new.get(name) {
                    Some(new_member) => collect(old_member, new_member, at, Some(name), edits),
                    None => edits.push(Edit::Change {
                        at: at.clone(),
                        before: Some(old_member.clone()),
                        after: None,
                    }),
                }
                at.truncate(length);
            }
            for (name, new_member) in new.iter().filter(|(name, _)| !old.contains_key(*name)) {
                let length = at.len();
                push_token(at, name);
                edits.push(Edit::Change {
                    at: at.clone(),
                    before: None,
                    after: Some(new_member.clone()),
                });
                at.truncate(length);
            }
        }
        (Value::Array(old), Value::Array(new)) if is_set_like(key, old, new) => {
            for item in new.iter().filter(|item| !old.contains(item)) {
                edits.push(Edit::Item {
                    at: at.clone(),
                    item: item.clone(),
                    added: true,
                });
            }
            for item in old.iter().filter(|item| !new.contains(item)) {
                edits.push(Edit::Item {
                    at: at.clone(),
                    item: item.clone(),
                    added: false,
                });
            }
        }
        // Lists of schemas (`allOf`, `prefixItems`) edited in place, item by item.
        (Value::Array(old), Value::Array(new)) if old.len() == new.len() => {
            for (index, (old_item, new_item)) in old.iter().zip(new).enumerate() {
                let length = at.len();
                at.push('/');
                at.push_str(&index.to_string());
                collect(old_item, new_item, at, None, edits);
                at.truncate(length);
            }
        }
        _ if base != ours => edits.push(Edit::Change {
            at: at.clone(),
            before: Some(base.clone()),
            after: Some(ours.clone()),
        }),
        _ => {}
    }
}

fn replay(document: &mut Value, edit: &Edit) -> Result<(), String> {
    match edit {
        Edit::Change { at, before, after } => {
            let current = document.pointer(at);
            if current == after.as_ref() {
                return Ok(());
            }
            if current != before.as_ref() {
                return Err(match (current, after) {
                    (None, _) => format!(
                        "the author {}; the newer description no longer has this place",
                        did(before.as_ref(), after.as_ref())
                    ),
                    (Some(now), _) => format!(
                        "the author {}; the newer description changed it too, to {}",
                        did(before.as_ref(), after.as_ref()),
                        shown(now)
                    ),
                });
            }
            match after {
                Some(value) => set(document, at, value.clone()),
                None => {
                    remove(document, at);
                    Ok(())
                }
            }
            .map_err(|()| {
                format!(
                    "the author {}; the newer description no longer has the object it was in",
                    did(before.as_ref(), after.as_ref())
                )
            })
        }
        Edit::Item { at, item, added } => {
            let verb = if *added { "added" } else { "removed" };
            let Some(Value::Array(items)) = document.pointer_mut(at) else {
                return Err(format!(
                    "the author {verb} {} here; the newer description no longer has this list",
                    shown(item)
                ));
            };
            match (added, items.iter().position(|present| present == item)) {
                (true, None) => items.push(item.clone()),
                (false, Some(index)) => {
                    items.remove(index);
                }
                _ => {}
            }
            Ok(())
        }
    }
}

/// What an edit did, in words.
fn did(before: Option<&Value>, after: Option<&Value>) -> String {
    match (before, after) {
        (None, Some(after)) => format!("added {}", shown(after)),
        (Some(before), None) => format!("removed {}", shown(before)),
        (Some(before), Some(after)) => {
            format!("changed {} to {}", shown(before), shown(after))
        }
        (None, None) => "changed nothing".to_owned(),
    }
}

/// A value as a to-do line shows it: compact, escaped, at most 80 characters.
pub(crate) fn shown(value: &Value) -> String {
    const MAX: usize = 80;
    let text = escape_hidden(&value.to_string()).into_owned();
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// The parent's pointer and the last reference token, unescaped.
fn split(at: &str) -> Option<(&str, String)> {
    let (parent, last) = at.rsplit_once('/')?;
    Some((parent, last.replace("~1", "/").replace("~0", "~")))
}

fn set(document: &mut Value, at: &str, value: Value) -> Result<(), ()> {
    if at.is_empty() {
        *document = value;
        return Ok(());
    }
    let (parent, last) = split(at).ok_or(())?;
    match document.pointer_mut(parent) {
        Some(Value::Object(members)) => {
            members.insert(last, value);
            Ok(())
        }
        Some(Value::Array(items)) => match last.parse::<usize>() {
            Ok(index) if index < items.len() => {
                items[index] = value;
                Ok(())
            }
            _ => Err(()),
        },
        _ => Err(()),
    }
}

fn remove(document: &mut Value, at: &str) {
    if let Some((parent, last)) = split(at)
        && let Some(Value::Object(members)) = document.pointer_mut(parent)
    {
        members.remove(&last);
    }
}

/// Appends `/` and `name` as a JSON Pointer reference token.
fn push_token(pointer: &mut String, name: &str) {
    pointer.push('/');
    pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn edits_are_replayed_where_the_newer_scaffold_left_the_place_alone() {
        let base = json!({
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "string", "maxLength": 256},
                "note": {"type": "string", "maxLength": 256},
                "a/b": {"type": "integer"}
            }
        });
        // The author bounded and patterned id, dropped note, required a/b and gave it a floor.
        let ours = json!({
            "type": "object",
            "required": ["id", "a/b"],
            "properties": {
                "id": {"type": "string", "maxLength": 64, "pattern": "^[a-z]+$"},
                "a/b": {"type": "integer", "minimum": 0}
            }
        });
        // The newer description added a member and changed nothing the author touched.
        let mut theirs = base.clone();
        theirs["properties"]["created"] = json!({"type": "string", "format": "date-time"});
        theirs["required"] = json!(["created", "id"]);
        let merged = merge(&base, &ours, &theirs);
        assert_eq!(merged.conflicts, []);
        assert_eq!(
            merged.document,
            json!({
                "type": "object",
                "required": ["created", "id", "a/b"],
                "properties": {
                    "id": {"type": "string", "maxLength": 64, "pattern": "^[a-z]+$"},
                    "a/b": {"type": "integer", "minimum": 0},
                    "created": {"type": "string", "format": "date-time"}
                }
            })
        );
        // Nothing changed upstream: the merge is what the author committed.
        assert_eq!(merge(&base, &ours, &base).document, ours);
    }

    #[test]
    fn a_place_both_changed_or_one_removed_is_a_conflict() {
        let base = json!({"properties": {"id": {"type": "string", "maxLength": 256}, "n": {"type": "integer"}}});
        let ours = json!({"properties": {"id": {"type": "string", "maxLength": 64}, "n": {"type": "integer", "maximum": 9}}});
        let theirs = json!({"properties": {"id": {"type": "string", "maxLength": 32}}});
        let merged = merge(&base, &ours, &theirs);
        assert_eq!(merged.document, theirs);
        let whys: Vec<String> = merged
            .conflicts
            .iter()
            .map(|conflict| format!("{} {}", conflict.at, conflict.why))
            .collect();
        assert_eq!(
            whys,
            [
                "/properties/id/maxLength the author changed 256 to 64; the newer description changed it too, to 32",
                "/properties/n/maximum the author added 9; the newer description no longer has the object it was in",
            ]
        );
    }

    #[test]
    fn lists_of_schemas_are_edited_item_by_item_and_values_are_shown_escaped() {
        let base = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
        let ours = json!({"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]});
        let theirs = json!({"anyOf": [{"type": "string"}, {"type": "null"}], "title": "t"});
        assert_eq!(
            merge(&base, &ours, &theirs).document,
            json!({"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}], "title": "t"})
        );
        let long = "\u{1b}[31m".to_owned() + &"x".repeat(200);
        assert!(!shown(&json!(long)).contains('\u{1b}'));
        assert!(shown(&json!(long)).chars().count() <= 81);
    }
}
