//! The document every stage after G2 reads: an arena the strict parser fills directly.
//!
//! A gate never needs a `serde_json::Value` tree: it asks the schema whether the document is
//! valid, reads a handful of members by pointer, and writes a few of them out. Building a `Value`
//! costs an allocation per string and a B-tree node per object member, and dropping it costs as
//! much again. A [`Document`] instead keeps every string borrowed from the input (only strings
//! with escapes are unescaped into their own allocation), every array's elements side by side in
//! one vector and every object's members side by side in another, in the order the input wrote
//! them. A small object is scanned, not hashed: with the handful of members a tool answer has,
//! a scan is faster than any map.
//!
//! The document is read through [`Node`], a copyable handle. The schema layer reads the same
//! nodes through jsonschema's representation traits (`document/validation.rs`), so the validator
//! walks the arena without a conversion.

mod validation;

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Map, Number, Value};

pub use validation::DocumentJson;

/// A parsed JSON document whose strings borrow from the input text `'a`.
#[derive(Debug)]
pub struct Document<'a> {
    root: Element<'a>,
    /// Array elements: each array's elements are one contiguous run.
    elements: Vec<Element<'a>>,
    /// Object members, in input order: each object's members are one contiguous run.
    members: Vec<Member<'a>>,
}

/// One value. Containers name their run of children in the document's vectors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Element<'a> {
    Null,
    Bool(bool),
    Number(Number),
    /// A string as the input wrote it between its quotes, with no escape in it. JSON text cannot
    /// hold a quote, a backslash or a control character in a string except as an escape, so this
    /// one holds none of them, and is written back out as it is, unscanned. Only the parser
    /// makes these, and only from the input itself.
    Verbatim(&'a str),
    /// Any other string: unescaped by the parser, or taken from elsewhere.
    String(Cow<'a, str>),
    Array(Run),
    Object(Run),
}

/// A contiguous run of children: `start..start + len` of the vector the container kind names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    start: usize,
    len: usize,
}

impl Run {
    fn range(self) -> std::ops::Range<usize> {
        self.start..self.start + self.len
    }
}

/// One object member: its name (unescaped) and its value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member<'a> {
    name: Cow<'a, str>,
    value: Element<'a>,
}

/// An object may hold at most this many members before a duplicate check hashes its names
/// instead of scanning them: scanning is quadratic, and an attacker chooses the member count.
const SCANNED_MEMBERS: usize = 16;

impl<'a> Document<'a> {
    /// The root value.
    pub fn root(&self) -> Node<'_> {
        // A document is covariant in its input's lifetime, so a borrow of it names the shorter one.
        Node {
            document: self,
            element: &self.root,
        }
    }

    /// The document of a `serde_json::Value`, its strings borrowed. Members keep the value's
    /// iteration order. For callers that already hold a `Value` (tests, the harness's own files).
    pub fn from_value(value: &'a Value) -> Document<'a> {
        let mut builder = Builder::default();
        let root = builder.copy(value);
        builder.finish(root)
    }
}

/// Reads a value of a [`Document`]. Cheap to copy; every accessor borrows from the document.
#[derive(Clone, Copy)]
pub struct Node<'d> {
    document: &'d Document<'d>,
    element: &'d Element<'d>,
}

impl std::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({})", self.to_value())
    }
}

/// Compact JSON, exactly as `serde_json::Value` displays the same value (for operator messages).
impl std::fmt::Display for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.to_value(), f)
    }
}

impl<'d> Node<'d> {
    fn of(&self, element: &'d Element<'d>) -> Node<'d> {
        Node {
            document: self.document,
            element,
        }
    }

    pub(crate) fn element(&self) -> &'d Element<'d> {
        self.element
    }

    /// The string, if the value is one.
    pub fn as_str(&self) -> Option<&'d str> {
        match self.element {
            Element::Verbatim(text) => Some(text),
            Element::String(text) => Some(text),
            _ => None,
        }
    }

    /// The number, if the value is one.
    pub fn as_number(&self) -> Option<&'d Number> {
        match self.element {
            Element::Number(number) => Some(number),
            _ => None,
        }
    }

    /// The boolean, if the value is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self.element {
            Element::Bool(value) => Some(*value),
            _ => None,
        }
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self.element, Element::Null)
    }

    /// Whether the value is an object.
    pub fn is_object(&self) -> bool {
        matches!(self.element, Element::Object(_))
    }

    /// Whether the value is an array.
    pub fn is_array(&self) -> bool {
        matches!(self.element, Element::Array(_))
    }

    /// An object's members in input order; none for anything else.
    pub fn members(&self) -> Members<'d> {
        Members {
            node: *self,
            members: self.member_slice().iter(),
        }
    }

    /// An array's elements in order; none for anything else.
    pub fn elements(&self) -> Elements<'d> {
        Elements {
            node: *self,
            elements: self.element_slice().iter(),
        }
    }

    /// The member called `name`, if the value is an object that has one.
    pub fn get(&self, name: &str) -> Option<Node<'d>> {
        self.member_slice()
            .iter()
            .find(|member| member.name == name)
            .map(|member| self.of(&member.value))
    }

    /// The element at `index`, if the value is an array that long.
    pub fn index(&self, index: usize) -> Option<Node<'d>> {
        self.element_slice()
            .get(index)
            .map(|element| self.of(element))
    }

    pub(crate) fn member_slice(&self) -> &'d [Member<'d>] {
        match self.element {
            Element::Object(run) => &self.document.members[run.range()],
            _ => &[],
        }
    }

    pub(crate) fn element_slice(&self) -> &'d [Element<'d>] {
        match self.element {
            Element::Array(run) => &self.document.elements[run.range()],
            _ => &[],
        }
    }

    /// Whether this value equals `other` as serde_json's `==` decides: same type, same content,
    /// numbers equal only in the same representation (`1` is not `1.0`), members in any order.
    pub fn equals(&self, other: &Value) -> bool {
        match (self.element, other) {
            (Element::Null, Value::Null) => true,
            (Element::Bool(left), Value::Bool(right)) => left == right,
            (Element::Number(left), Value::Number(right)) => left == right,
            (Element::Verbatim(left), Value::String(right)) => left == right,
            (Element::String(left), Value::String(right)) => left == right,
            (Element::Array(_), Value::Array(right)) => {
                let left = self.element_slice();
                left.len() == right.len()
                    && left
                        .iter()
                        .zip(right)
                        .all(|(left, right)| self.of(left).equals(right))
            }
            (Element::Object(_), Value::Object(right)) => self.members_match(right, Node::equals),
            _ => false,
        }
    }

    /// Same member count, and every member has a counterpart `same` accepts. Member names are
    /// unique on both sides (the parser refuses duplicates), so this is equality of the sets.
    fn members_match(
        &self,
        right: &Map<String, Value>,
        same: fn(&Node<'d>, &Value) -> bool,
    ) -> bool {
        let left = self.member_slice();
        left.len() == right.len()
            && left.iter().all(|member| {
                right
                    .get(&*member.name)
                    .is_some_and(|other| same(&self.of(&member.value), other))
            })
    }

    /// The value as a `serde_json::Value`, for cold paths: operator messages, and callers that
    /// want a tree of their own.
    pub fn to_value(self) -> Value {
        match self.element {
            Element::Null => Value::Null,
            Element::Bool(value) => Value::Bool(*value),
            Element::Number(number) => Value::Number(number.clone()),
            Element::Verbatim(text) => Value::String((*text).to_owned()),
            Element::String(text) => Value::String(text.to_string()),
            Element::Array(_) => {
                Value::Array(self.elements().map(|item| item.to_value()).collect())
            }
            Element::Object(_) => Value::Object(
                self.members()
                    .map(|(name, value)| (name.to_owned(), value.to_value()))
                    .collect(),
            ),
        }
    }
}

/// The members of an object: name and value, in input order.
pub struct Members<'d> {
    node: Node<'d>,
    members: std::slice::Iter<'d, Member<'d>>,
}

impl<'d> Iterator for Members<'d> {
    type Item = (&'d str, Node<'d>);

    fn next(&mut self) -> Option<Self::Item> {
        let member = self.members.next()?;
        Some((&*member.name, self.node.of(&member.value)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.members.size_hint()
    }
}

impl ExactSizeIterator for Members<'_> {}

/// The elements of an array, in order.
pub struct Elements<'d> {
    node: Node<'d>,
    elements: std::slice::Iter<'d, Element<'d>>,
}

impl<'d> Iterator for Elements<'d> {
    type Item = Node<'d>;

    fn next(&mut self) -> Option<Node<'d>> {
        self.elements.next().map(|element| self.node.of(element))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.elements.size_hint()
    }
}

impl ExactSizeIterator for Elements<'_> {}

/// Builds a document bottom-up. A container's children are collected on a pending stack while
/// it is open (its nested containers open and close above them), and moved into the document's
/// vectors as one run when it closes.
#[derive(Default)]
pub(crate) struct Builder<'a> {
    elements: Vec<Element<'a>>,
    members: Vec<Member<'a>>,
    pending_elements: Vec<Element<'a>>,
    pending_members: Vec<Member<'a>>,
}

/// An open array: where its elements start on the pending stack.
pub(crate) struct OpenArray(usize);

/// An open object: where its members start on the pending stack, and, once it is too large to
/// scan, the set of its names.
pub(crate) struct OpenObject<'a> {
    start: usize,
    names: Option<HashSet<Cow<'a, str>>>,
}

impl<'a> Builder<'a> {
    /// A builder sized for a document of `input_len` bytes, so a typical answer never regrows.
    /// Compact JSON-RPC messages hold a member every 11 to 22 bytes (a `tools/call` request of
    /// 104 bytes has 9, a 223-byte result 10): one guess per 16 bytes keeps the members'
    /// vector from growing once while they are read, at a few unused slots on larger values.
    pub(crate) fn for_input(input_len: usize) -> Builder<'a> {
        let guess = (input_len / 16).clamp(4, 4096);
        Builder {
            elements: Vec::new(),
            members: Vec::with_capacity(guess),
            pending_elements: Vec::new(),
            pending_members: Vec::with_capacity(guess.min(64)),
        }
    }

    pub(crate) fn open_array(&self) -> OpenArray {
        OpenArray(self.pending_elements.len())
    }

    pub(crate) fn push_element(&mut self, element: Element<'a>) {
        self.pending_elements.push(element);
    }

    /// How many elements the open array has so far.
    pub(crate) fn element_count(&self, array: &OpenArray) -> usize {
        self.pending_elements.len() - array.0
    }

    /// Drops what an array that failed to parse had collected, so the arrays around it count
    /// their own elements again (the error names the index in each, from its own start).
    pub(crate) fn abandon_array(&mut self, array: OpenArray) {
        self.pending_elements.truncate(array.0);
    }

    pub(crate) fn close_array(&mut self, array: OpenArray) -> Element<'a> {
        let run = Run {
            start: self.elements.len(),
            len: self.pending_elements.len() - array.0,
        };
        self.elements.extend(self.pending_elements.drain(array.0..));
        Element::Array(run)
    }

    pub(crate) fn open_object(&self) -> OpenObject<'a> {
        OpenObject {
            start: self.pending_members.len(),
            names: None,
        }
    }

    /// Adds a member to the open object, or, if it already has one of that name, gives the
    /// member back.
    pub(crate) fn push_member(
        &mut self,
        object: &mut OpenObject<'a>,
        name: Cow<'a, str>,
        value: Element<'a>,
    ) -> Result<(), Cow<'a, str>> {
        let open = &self.pending_members[object.start..];
        let duplicate = match &mut object.names {
            Some(names) => !names.insert(name.clone()),
            None => {
                let duplicate = open.iter().any(|member| member.name == name);
                if !duplicate && open.len() + 1 > SCANNED_MEMBERS {
                    let mut names: HashSet<Cow<'a, str>> =
                        open.iter().map(|member| member.name.clone()).collect();
                    names.insert(name.clone());
                    object.names = Some(names);
                }
                duplicate
            }
        };
        if duplicate {
            return Err(name);
        }
        self.pending_members.push(Member { name, value });
        Ok(())
    }

    pub(crate) fn close_object(&mut self, object: OpenObject<'a>) -> Element<'a> {
        let run = Run {
            start: self.members.len(),
            len: self.pending_members.len() - object.start,
        };
        self.members
            .extend(self.pending_members.drain(object.start..));
        Element::Object(run)
    }

    pub(crate) fn finish(self, root: Element<'a>) -> Document<'a> {
        Document {
            root,
            elements: self.elements,
            members: self.members,
        }
    }

    fn copy(&mut self, value: &'a Value) -> Element<'a> {
        match value {
            Value::Null => Element::Null,
            Value::Bool(value) => Element::Bool(*value),
            Value::Number(number) => Element::Number(number.clone()),
            Value::String(text) => Element::String(Cow::Borrowed(text)),
            Value::Array(items) => {
                let array = self.open_array();
                for item in items {
                    let element = self.copy(item);
                    self.push_element(element);
                }
                self.close_array(array)
            }
            Value::Object(members) => {
                let mut object = self.open_object();
                for (name, value) in members {
                    let element = self.copy(value);
                    // A map holds each name once; the check cannot fire.
                    let _ = self.push_member(&mut object, Cow::Borrowed(name), element);
                }
                self.close_object(object)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_round_trips_through_a_document() {
        let value = json!({"a": [1, -2, 3.5, true, null, "x"], "b": {"c": {}, "d": []}, "e": "é"});
        let document = Document::from_value(&value);
        assert_eq!(document.root().to_value(), value);
        assert!(document.root().equals(&value));
    }

    #[test]
    fn equality_is_serde_jsons() {
        let value = json!({"n": 1, "f": 1.0, "s": "x", "l": [1, 2], "o": {"k": null}});
        let document = Document::from_value(&value);
        let root = document.root();
        assert!(root.get("n").unwrap().equals(&json!(1)));
        assert!(!root.get("n").unwrap().equals(&json!(1.0)));
        assert!(!root.get("f").unwrap().equals(&json!(1)));
        assert!(!root.get("s").unwrap().equals(&json!(["x"])));
        assert!(!root.get("l").unwrap().equals(&json!([1, 2, 3])));
        assert!(!root.get("l").unwrap().equals(&json!([2, 1])));
        assert!(root.get("o").unwrap().equals(&json!({"k": null})));
        assert!(!root.get("o").unwrap().equals(&json!({"k": null, "j": 1})));
        assert!(!root.get("o").unwrap().equals(&json!({"j": null})));
    }

    #[test]
    fn accessors_read_members_and_elements() {
        let value = json!({"list": [10, "x"], "flag": false});
        let document = Document::from_value(&value);
        let root = document.root();
        let list = root.get("list").unwrap();
        assert!(list.is_array() && root.is_object());
        assert_eq!(list.index(0).unwrap().as_number(), Some(&Number::from(10)));
        assert_eq!(list.index(1).unwrap().as_str(), Some("x"));
        assert!(list.index(2).is_none());
        assert_eq!(root.get("flag").unwrap().as_bool(), Some(false));
        assert!(root.get("missing").is_none() && list.get("list").is_none());
        assert_eq!(root.members().len(), 2);
        assert_eq!(list.elements().len(), 2);
    }

    /// The hash of names is built once the object grows past the scan limit, and not before:
    /// scanning a large object for each member would be quadratic in its size.
    #[test]
    fn the_name_set_starts_exactly_past_the_scan_limit() {
        let mut builder = Builder::default();
        let mut object = builder.open_object();
        for count in 1..=SCANNED_MEMBERS + 3 {
            let name = Cow::Owned(format!("m{count}"));
            assert!(
                builder
                    .push_member(&mut object, name, Element::Null)
                    .is_ok()
            );
            assert_eq!(
                object.names.is_some(),
                count > SCANNED_MEMBERS,
                "{count} members"
            );
        }
    }

    /// A parse error inside an array names the element it is in, counted from that array's own
    /// start, not from the elements still pending for the arrays around it.
    #[test]
    fn an_error_in_a_nested_array_names_its_own_index() {
        let fault = crate::parse::parse_document(br#"[[1, 2], [3, 4, NaN]]"#, 32)
            .err()
            .unwrap();
        assert_eq!(fault.instance_path.as_deref(), Some("/1/2"));
    }

    #[test]
    fn duplicates_are_found_by_scan_and_past_the_scan_limit_by_hash() {
        for size in [
            1,
            SCANNED_MEMBERS - 1,
            SCANNED_MEMBERS,
            SCANNED_MEMBERS + 1,
            100,
        ] {
            let mut builder = Builder::default();
            let mut object = builder.open_object();
            for index in 0..size {
                let name = Cow::Owned(format!("m{index}"));
                assert!(
                    builder
                        .push_member(&mut object, name, Element::Null)
                        .is_ok()
                );
            }
            for index in [0, size / 2, size - 1] {
                let name = Cow::Owned(format!("m{index}"));
                let refused = builder.push_member(&mut object, name, Element::Null);
                assert!(refused.is_err(), "size {size}, member m{index}");
            }
            let root = builder.close_object(object);
            assert_eq!(builder.finish(root).root().members().len(), size);
        }
    }
}
