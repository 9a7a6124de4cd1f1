//! The document as jsonschema reads it: its representation traits implemented over [`Node`], so
//! a `Validator<DocumentJson>` walks the arena itself, with no `serde_json::Value` in between.
//!
//! The traits' contract is checked by jsonschema's own conformance assertions (see the tests
//! below), and the JSON-Schema-Test-Suite runs through this representation.

use std::borrow::Cow;

use jsonschema::json::{Array, Json, Node as JsonNode, NodeIdentity, Object, cmp};
use jsonschema::types::JsonType;
use serde_json::{Number, Value};

use super::{Document, Element, Elements, Member, Members, Node};

/// The gate's document as a jsonschema representation.
pub struct DocumentJson;

/// Backs `propertyNames`' string nodes: a document with nothing in it, so a lone string element
/// can be read as a node of one.
static EMPTY: Document<'static> = Document {
    root: Element::Null,
    elements: Vec::new(),
    members: Vec::new(),
};

impl Json for DocumentJson {
    type Node<'a> = Node<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = ();

    // `get` scans the members, so one pass over them costs no more than a single lookup.
    const KEYS_PER_LOOKUP: usize = 64;
    // A document is a tree: no node is its own descendant.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(Node<'_>) -> T) -> T {
        let element = Element::String(Cow::Borrowed(string));
        f(Node {
            document: &EMPTY,
            element: &element,
        })
    }
}

impl<'a> JsonNode<'a, DocumentJson> for Node<'a> {
    type Object = MembersOf<'a>;
    type Array = ElementsOf<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<MembersOf<'a>> {
        self.is_object().then(|| MembersOf {
            node: *self,
            members: self.member_slice(),
        })
    }

    fn as_array(&self) -> Option<ElementsOf<'a>> {
        self.is_array().then(|| ElementsOf {
            node: *self,
            elements: self.element_slice(),
        })
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        self.as_str().map(Cow::Borrowed)
    }

    fn as_number(&self) -> Option<&'a Number> {
        Node::as_number(self)
    }

    fn as_boolean(&self) -> Option<bool> {
        self.as_bool()
    }

    fn is_null(&self) -> bool {
        Node::is_null(self)
    }

    fn is_number(&self) -> bool {
        matches!(self.element, Element::Number(_))
    }

    fn is_string(&self) -> bool {
        matches!(self.element, Element::Verbatim(_) | Element::String(_))
    }

    fn json_type(&self) -> JsonType {
        match self.element {
            Element::Null => JsonType::Null,
            Element::Bool(_) => JsonType::Boolean,
            Element::Number(_) => JsonType::Number,
            Element::Verbatim(_) | Element::String(_) => JsonType::String,
            Element::Array(_) => JsonType::Array,
            Element::Object(_) => JsonType::Object,
        }
    }

    fn string_length_within(&self, min: u64, max: u64) -> Option<bool> {
        let text = self.as_str()?;
        // A code point takes one to four bytes, so the count lies in `ceil(bytes / 4)..=bytes`:
        // most bounds are decided without counting.
        let bytes = text.len() as u64;
        let fewest = bytes.div_ceil(4);
        if bytes < min || fewest > max {
            return Some(false);
        }
        if min <= fewest && bytes <= max {
            return Some(true);
        }
        Some((min..=max).contains(&(text.chars().count() as u64)))
    }

    /// JSON Schema equality (`const`, `enum`): numbers compare mathematically, so `1` equals
    /// `1.0`; everything else compares by content, member order aside.
    fn equals_value(&self, expected: &Value) -> bool {
        match (self.element, expected) {
            (Element::Number(number), Value::Number(expected)) => {
                cmp::equal_numbers(&number, expected)
            }
            (Element::Array(_), Value::Array(expected)) => {
                let elements = self.element_slice();
                elements.len() == expected.len()
                    && elements
                        .iter()
                        .zip(expected)
                        .all(|(element, expected)| self.of(element).equals_value(expected))
            }
            (Element::Object(_), Value::Object(expected)) => {
                self.members_match(expected, |node, expected| node.equals_value(expected))
            }
            // Null, booleans and strings: JSON Schema equality is serde_json's.
            _ => self.equals(expected),
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(Node::to_value(*self))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        // Every element has its own slot in the arena (or, for a name node, on the stack while
        // it is alive), so its address tells it from every other live node.
        Some(NodeIdentity::new(std::ptr::from_ref(self.element) as usize))
    }
}

/// An object's members, as jsonschema reads them.
pub struct MembersOf<'a> {
    node: Node<'a>,
    members: &'a [Member<'a>],
}

impl<'a> Object<'a, DocumentJson> for MembersOf<'a> {
    type Node = Node<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.members.len()
    }

    fn get(&self, key: &Box<str>) -> Option<Node<'a>> {
        self.members
            .iter()
            .find(|member| *member.name == **key)
            .map(|member| self.node.of(&member.value))
    }

    fn members(&self) -> Members<'a> {
        self.node.members()
    }
}

/// An array's elements, as jsonschema reads them.
pub struct ElementsOf<'a> {
    node: Node<'a>,
    elements: &'a [Element<'a>],
}

impl<'a> Array<'a, DocumentJson> for ElementsOf<'a> {
    type Node = Node<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.elements.len()
    }

    fn elements(&self) -> Elements<'a> {
        self.node.elements()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_meets_jsonschemas_representation_contract() {
        let value = jsonschema::json::conformance::document();
        let document = Document::from_value(&value);
        jsonschema::json::conformance::assert_conformance::<DocumentJson>(&document.root());
    }
}
