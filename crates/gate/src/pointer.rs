//! JSON pointers (RFC 6901) parsed once, when the contract compiles, instead of on every lookup
//! (`serde_json::Value::pointer` unescapes every token of the pointer each time it is called).

use crate::document::Node;

/// A pointer into an admitted document, ready to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonPointer {
    text: String,
    tokens: Vec<Token>,
}

/// One token of a pointer: a member name, or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// The member name, unescaped (`~1` → `/`, `~0` → `~`).
    name: String,
    /// The array index the token denotes, when it is one (RFC 6901: no leading zeros).
    index: Option<usize>,
}

impl JsonPointer {
    /// Parses a pointer as RFC 6901 writes it: empty, or `/`-separated tokens in which `~` only
    /// starts the escapes `~0` and `~1`. The error says what is wrong, in one line.
    pub(crate) fn parse(text: &str) -> Result<JsonPointer, String> {
        let mut chars = text.chars();
        let mut well_formed = text.is_empty() || text.starts_with('/');
        while let Some(ch) = chars.next() {
            if ch == '~' && !matches!(chars.next(), Some('0' | '1')) {
                well_formed = false;
            }
        }
        if well_formed {
            Ok(JsonPointer::new(text))
        } else {
            Err(format!(
                "{text:?} is not a JSON pointer (RFC 6901): write /data/project_id"
            ))
        }
    }

    /// Parses a pointer whose syntax is known to be right (see [`JsonPointer::parse`]).
    pub(crate) fn new(text: &str) -> JsonPointer {
        let tokens = text
            .split('/')
            .skip(1)
            .map(|raw| {
                let name = raw.replace("~1", "/").replace("~0", "~");
                let canonical_index = !raw.is_empty() && (raw == "0" || !raw.starts_with('0'));
                let index = if canonical_index && raw.bytes().all(|byte| byte.is_ascii_digit()) {
                    raw.parse().ok()
                } else {
                    None
                };
                Token { name, index }
            })
            .collect();
        JsonPointer {
            text: text.to_owned(),
            tokens,
        }
    }

    /// The pointer as written in the contract.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The value the pointer names in `document`, if any.
    pub(crate) fn resolve<'d>(&self, document: Node<'d>) -> Option<Node<'d>> {
        self.tokens
            .iter()
            .try_fold(document, |node, token| token.step(node))
    }

    /// The member name, when the pointer names one member of the root (`/outcome`).
    pub(crate) fn single_member(&self) -> Option<&str> {
        match self.tokens.as_slice() {
            [token] => Some(&token.name),
            _ => None,
        }
    }

    /// The pointer to the parent of what this one names, and the last token; `None` for the
    /// whole document.
    pub(crate) fn split_last(&self) -> Option<(JsonPointer, Token)> {
        let (last, parents) = self.tokens.split_last()?;
        let cut = self.text.rfind('/').unwrap_or_default();
        Some((
            JsonPointer {
                text: self.text[..cut].to_owned(),
                tokens: parents.to_vec(),
            },
            last.clone(),
        ))
    }
}

impl Token {
    /// The member or element this token names in `node`, if any.
    pub(crate) fn step<'d>(&self, node: Node<'d>) -> Option<Node<'d>> {
        if node.is_object() {
            node.get(&self.name)
        } else {
            self.index.and_then(|index| node.index(index))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use serde_json::json;

    #[test]
    fn only_rfc_6901_pointers_parse() {
        for good in ["", "/", "/a~0b~1c", "/data/0", "//"] {
            assert!(JsonPointer::parse(good).is_ok(), "{good}");
        }
        for bad in ["data", "/a~2", "/a~", "~0"] {
            let error = JsonPointer::parse(bad).unwrap_err();
            assert!(error.contains("not a JSON pointer"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_pointer_splits_into_its_parent_and_last_token() {
        let value = json!({"data": {"a/b": [7]}});
        let document = Document::from_value(&value);
        for (pointer, parent) in [("/data/a~1b/0", "/data/a~1b"), ("/data", ""), ("/", "")] {
            let (parent_pointer, last) = JsonPointer::new(pointer).split_last().unwrap();
            assert_eq!(parent_pointer.as_str(), parent);
            assert_eq!(parent_pointer, JsonPointer::new(parent));
            let stepped = parent_pointer
                .resolve(document.root())
                .and_then(|node| last.step(node))
                .map(|node| node.to_value());
            assert_eq!(stepped, value.pointer(pointer).cloned(), "{pointer}");
        }
        assert!(JsonPointer::new("").split_last().is_none());
    }

    #[test]
    fn resolves_exactly_like_serde_json() {
        let value = json!({"a/b": {"~k": [10, {"01": "x", "1": "y"}]}, "": {"": 1}, "arr": [0, 1]});
        let document = Document::from_value(&value);
        for pointer in [
            "",
            "/a~1b",
            "/a~1b/~0k",
            "/a~1b/~0k/0",
            "/a~1b/~0k/1/01",
            "/a~1b/~0k/1/1",
            "/",
            "//",
            "/arr/01",
            "/arr/1",
            "/arr/-",
            "/missing",
            "/arr/9",
        ] {
            assert_eq!(
                JsonPointer::new(pointer)
                    .resolve(document.root())
                    .map(|node| node.to_value()),
                value.pointer(pointer).cloned(),
                "{pointer}"
            );
        }
    }
}
