//! A document's compact text with where each value sits in it, so an edit of one place is the
//! bytes before it, the new bytes, and the bytes after.
//!
//! The mutation families make hundreds of variants of each fixture, each different in one place.
//! Cloning the document, editing the clone and serializing all of it again costs the whole
//! document per variant, which on fixtures of a few kilobytes was most of `toolgate test`'s time.
//! A [`Layout`] serializes the document once; every edit then copies two slices around a small
//! serialized value. Its bytes are exactly what the [`crate::edit`] functions give after
//! `to_string()` (a test holds every kind of edit to them at every place of real fixtures), so a
//! mutant, its verdict and its emitted file are unchanged.

use std::collections::HashMap;

use serde_json::Value;

use crate::edit::{child, push_token};

/// A document serialized compactly, with the span of every value by JSON pointer.
#[derive(Debug, Clone)]
pub struct Layout {
    text: Vec<u8>,
    places: HashMap<String, Place>,
}

#[derive(Debug, Clone)]
struct Place {
    /// The value's bytes: `text[start..end]`.
    start: usize,
    end: usize,
    /// An object's members in the order they are written: `(name, where the member's name
    /// starts, where its value ends)`. Empty for anything else.
    members: Vec<(String, usize, usize)>,
}

impl Layout {
    /// Serializes `document` once, noting where each value is.
    pub fn new(document: &Value) -> Layout {
        let mut layout = Layout {
            text: Vec::with_capacity(256),
            places: HashMap::new(),
        };
        let mut pointer = String::new();
        layout.write(document, &mut pointer);
        layout
    }

    /// The document's compact text (`Value::to_string`'s bytes).
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    fn write(&mut self, value: &Value, pointer: &mut String) {
        let start = self.text.len();
        let mut members = Vec::new();
        match value {
            Value::Object(map) => {
                self.text.push(b'{');
                for (index, (name, member)) in map.iter().enumerate() {
                    if index > 0 {
                        self.text.push(b',');
                    }
                    let member_start = self.text.len();
                    write_value(&mut self.text, &Value::from(name.as_str()));
                    self.text.push(b':');
                    let parent = pointer.len();
                    push_token(pointer, name);
                    self.write(member, pointer);
                    pointer.truncate(parent);
                    members.push((name.clone(), member_start, self.text.len()));
                }
                self.text.push(b'}');
            }
            Value::Array(items) => {
                self.text.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        self.text.push(b',');
                    }
                    let parent = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&index.to_string());
                    self.write(item, pointer);
                    pointer.truncate(parent);
                }
                self.text.push(b']');
            }
            scalar => write_value(&mut self.text, scalar),
        }
        let end = self.text.len();
        self.places.insert(
            pointer.clone(),
            Place {
                start,
                end,
                members,
            },
        );
    }

    /// The compact text of the value at `pointer` (`to_string()` of it), if there is one.
    pub fn text_at(&self, pointer: &str) -> Option<&[u8]> {
        let place = self.places.get(pointer)?;
        Some(&self.text[place.start..place.end])
    }

    /// The text with `text[start..end]` replaced by `middle`.
    fn spliced(&self, start: usize, end: usize, middle: &[&[u8]]) -> Vec<u8> {
        let extra: usize = middle.iter().map(|part| part.len()).sum();
        let mut out = Vec::with_capacity(self.text.len() - (end - start) + extra);
        out.extend_from_slice(&self.text[..start]);
        for part in middle {
            out.extend_from_slice(part);
        }
        out.extend_from_slice(&self.text[end..]);
        out
    }

    /// The text with the value at `pointer` written as `raw`, byte for byte (what no JSON value
    /// can hold, too). `None` when there is no value there.
    pub fn with_raw_value(&self, pointer: &str, raw: &[u8]) -> Option<Vec<u8>> {
        let place = self.places.get(pointer)?;
        Some(self.spliced(place.start, place.end, &[raw]))
    }

    /// The text with the value at `pointer` replaced by `value`.
    pub fn with_value(&self, pointer: &str, value: &Value) -> Option<Vec<u8>> {
        self.with_raw_value(pointer, &compact(value))
    }

    /// The text with member `name: value` in the object at `pointer`: the member's value
    /// replaced when it has one, else the member added where the document's map puts a new name
    /// (name order). `None` when `pointer` is not an object.
    pub fn with_member(&self, pointer: &str, name: &str, value: &Value) -> Option<Vec<u8>> {
        let place = self.places.get(pointer)?;
        if self.text.get(place.start) != Some(&b'{') {
            return None;
        }
        if place.members.iter().any(|(member, ..)| member == name) {
            return self.with_value(&child(pointer, name), value);
        }
        // serde_json's map (without `preserve_order`) keeps its names in order.
        let next = place
            .members
            .iter()
            .find(|(member, ..)| member.as_str() > name)
            .map(|(_, member_start, _)| *member_start);
        let (name, value) = (compact(&Value::from(name)), compact(value));
        Some(match next {
            Some(at) => self.spliced(at, at, &[&name, b":", &value, b","]),
            None if place.members.is_empty() => {
                self.spliced(place.end - 1, place.end - 1, &[&name, b":", &value])
            }
            None => self.spliced(place.end - 1, place.end - 1, &[b",", &name, b":", &value]),
        })
    }

    /// The text without member `name` of the object at `pointer`. `None` when there is no such
    /// member.
    pub fn without_member(&self, pointer: &str, name: &str) -> Option<Vec<u8>> {
        let place = self.places.get(pointer)?;
        let index = place
            .members
            .iter()
            .position(|(member, ..)| member == name)?;
        let (_, start, end) = place.members[index];
        Some(if index > 0 {
            // The comma before it goes with it.
            self.spliced(place.members[index - 1].2, end, &[])
        } else if let Some((_, next, _)) = place.members.get(1) {
            self.spliced(start, *next, &[])
        } else {
            self.spliced(start, end, &[])
        })
    }

    /// The text in which the object at `pointer` carries one more member, spelled
    /// `spelled_name` (a JSON string literal, quotes included) with `value`, after its last: a
    /// duplicate name when the object has it. `None` when `pointer` is not an object.
    pub fn with_duplicate(
        &self,
        pointer: &str,
        spelled_name: &str,
        value: &Value,
    ) -> Option<Vec<u8>> {
        let place = self.places.get(pointer)?;
        if self.text.get(place.start) != Some(&b'{') {
            return None;
        }
        let value = compact(value);
        let comma: &[u8] = if place.members.is_empty() { b"" } else { b"," };
        Some(self.spliced(
            place.end - 1,
            place.end - 1,
            &[comma, spelled_name.as_bytes(), b":", &value],
        ))
    }
}

fn compact(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    // Writing into a Vec cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::{
        bytes_with_raw_value, escaped_name, object_pointers, text_with_duplicate_spelled,
        value_pointers, with_member, with_value, without_member,
    };
    use serde_json::json;
    use std::path::{Path, PathBuf};

    /// Every JSON fixture of the bundled suite and the real-API corpus up to 4 KiB (the edits by
    /// value clone the whole document at each place, so larger ones only slow the test), and a
    /// few made here.
    fn documents() -> Vec<(String, Value)> {
        fn walk(folder: &Path, into: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(folder).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, into);
                } else if path
                    .extension()
                    .is_some_and(|extension| extension == "json")
                {
                    into.push(path);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut paths = Vec::new();
        walk(&root.join("fixtures"), &mut paths);
        walk(
            &root.join("tests/corpora/real-apis/repo/fixtures"),
            &mut paths,
        );
        let mut documents: Vec<(String, Value)> = paths
            .iter()
            .filter_map(|path| {
                let text = std::fs::read(path).ok().filter(|text| text.len() <= 4096)?;
                let value = serde_json::from_slice(&text).ok()?;
                Some((path.display().to_string(), value))
            })
            .collect();
        assert!(documents.len() > 20, "found {} fixtures", documents.len());
        documents.push((
            "made here".into(),
            json!({"": {"a/b": [1, {"~": "é\u{1}\"", "z": null}], "m": {}}, "x": [[], {}], "é": 1.5e300}),
        ));
        documents.push(("a scalar".into(), json!("text")));
        documents
    }

    fn bytes(value: Option<Value>) -> Option<Vec<u8>> {
        value.map(|value| value.to_string().into_bytes())
    }

    #[test]
    fn every_edit_gives_the_bytes_the_value_edit_serializes_to() {
        let replacements = [
            json!(null),
            json!(""),
            json!({"k": [1, "two"]}),
            json!(-0.5),
        ];
        for (name, document) in documents() {
            let layout = Layout::new(&document);
            assert_eq!(layout.text(), document.to_string().as_bytes(), "{name}");
            for pointer in value_pointers(&document) {
                let value = document.pointer(&pointer).unwrap();
                assert_eq!(
                    layout.text_at(&pointer),
                    Some(value.to_string().as_bytes()),
                    "{name}: {pointer}"
                );
                for value in &replacements {
                    assert_eq!(
                        layout.with_value(&pointer, value),
                        bytes(with_value(&document, &pointer, value.clone())),
                        "{name}: {pointer} := {value}"
                    );
                }
                assert_eq!(
                    layout.with_raw_value(&pointer, b"NaN"),
                    bytes_with_raw_value(&document, &pointer, b"NaN"),
                    "{name}: raw at {pointer}"
                );
            }
            for pointer in object_pointers(&document) {
                let object = document
                    .pointer(&pointer)
                    .and_then(Value::as_object)
                    .unwrap();
                let mut names: Vec<String> = object.keys().cloned().collect();
                // Before, between and after every name, and each name itself.
                names.extend(["", "\u{0}", "a", "m", "zzzz", "~/", "é"].map(str::to_owned));
                names.extend(object.keys().map(|name| format!("{name}0")));
                for member in &names {
                    assert_eq!(
                        layout.with_member(&pointer, member, &json!(true)),
                        bytes(with_member(&document, &pointer, member, json!(true))),
                        "{name}: {pointer} + {member:?}"
                    );
                    assert_eq!(
                        layout.without_member(&pointer, member),
                        bytes(without_member(&document, &pointer, member)),
                        "{name}: {pointer} - {member:?}"
                    );
                    let spelled = escaped_name(member);
                    assert_eq!(
                        layout.with_duplicate(&pointer, &spelled, &json!([1])),
                        Some(
                            text_with_duplicate_spelled(&document, &pointer, &spelled, &json!([1]))
                                .into_bytes()
                        ),
                        "{name}: {pointer} twice {member:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_place_that_is_not_there_or_not_an_object_is_none() {
        let layout = Layout::new(&json!({"a": [1], "s": "x"}));
        assert_eq!(layout.with_value("/b", &json!(1)), None);
        assert_eq!(layout.with_value("/a/01", &json!(1)), None);
        assert_eq!(layout.with_member("/a", "x", &json!(1)), None);
        assert_eq!(layout.with_member("/s", "x", &json!(1)), None);
        assert_eq!(layout.without_member("", "b"), None);
        assert_eq!(layout.with_duplicate("/a/0", "\"x\"", &json!(1)), None);
    }
}
