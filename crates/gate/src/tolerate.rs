//! Tolerated upstream additions: places of a shape where the contract declares, with a reason,
//! that members it does not name are admitted (real APIs add members without notice). The gate
//! itself only holds the declaration; the schema decides what is admitted. What the declaration
//! promises, that nothing there reaches the agent, is kept by the compiler (no promised field may
//! read a tolerated object whole) and proven by the harness (the `extra_property` mutant there is
//! admitted, and its canary never reaches the agent).

/// One declared place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tolerated {
    at: String,
    tokens: Vec<String>,
    reason: String,
}

impl Tolerated {
    /// A place written as a JSON pointer in which a `*` token stands for any array index or
    /// member name (`/items/*/labels`). The error says what is wrong.
    pub(crate) fn new(at: &str, reason: &str) -> Result<Tolerated, String> {
        crate::pointer::JsonPointer::parse(at)?;
        if reason.trim().is_empty() {
            return Err(format!(
                "tolerate at {at}: give a reason (why the upstream may add members here)"
            ));
        }
        Ok(Tolerated {
            at: at.to_owned(),
            tokens: tokens(at),
            reason: reason.to_owned(),
        })
    }

    /// The place as written.
    pub fn at(&self) -> &str {
        &self.at
    }

    /// Why it is tolerated.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Whether the object at `pointer` (a concrete JSON pointer into a document) is this place.
    pub fn covers(&self, pointer: &str) -> bool {
        let concrete = tokens(pointer);
        concrete.len() == self.tokens.len()
            && self
                .tokens
                .iter()
                .zip(&concrete)
                .all(|(pattern, token)| pattern == "*" || pattern == token)
    }

    /// Whether `pointer` (where a promised field is read from) is this place or one of its
    /// ancestors: reading it copies the tolerated members too.
    pub(crate) fn is_within(&self, pointer: &str) -> bool {
        let concrete = tokens(pointer);
        concrete.len() <= self.tokens.len()
            && concrete
                .iter()
                .zip(&self.tokens)
                .all(|(token, pattern)| pattern == "*" || pattern == token)
    }
}

/// The unescaped tokens of a pointer (`~1` → `/`, `~0` → `~`).
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_covers_its_instances_and_its_ancestors_read_it_whole() {
        let head = Tolerated::new("/head", "GitHub adds members").unwrap();
        assert!(head.covers("/head"));
        assert!(!head.covers("/head/repo") && !head.covers("/base"));
        let labels = Tolerated::new("/labels/*", "labels grow").unwrap();
        assert!(labels.covers("/labels/0") && labels.covers("/labels/17"));
        assert!(!labels.covers("/labels") && !labels.covers("/labels/0/name"));
        // A field read from the place or above copies the tolerated members.
        assert!(
            labels.is_within("/labels") && labels.is_within("") && labels.is_within("/labels/3")
        );
        assert!(!labels.is_within("/labels/3/name") && !labels.is_within("/title"));
        let escaped = Tolerated::new("/a~1b", "r").unwrap();
        assert!(escaped.covers("/a~1b"));
        assert!(Tolerated::new("x", "r").is_err());
        assert!(Tolerated::new("/x", "  ").is_err());
    }
}
