//! The repository's one YAML dialect: strict. Unknown keys (with `deny_unknown_fields`) and
//! duplicate keys are errors, only `true`/`false` are booleans, and every error says where.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use serde_saphyr::Spanned;

/// Why a YAML document could not be read: what is wrong, and where, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// 1-based line and column.
    pub line: Option<(u64, u64)>,
    /// What is wrong, in one line.
    pub message: String,
}

impl fmt::Display for YamlError {
    /// `line:column: message`, ready to follow a file name and a colon.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some((line, column)) => write!(f, "{line}:{column}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Reads YAML as strictly as contracts are read: unknown keys (with `deny_unknown_fields`) and
/// duplicate keys are errors, only `true`/`false` are booleans. Harnesses use it for their own
/// files (fixture sidecars) so that every YAML file of a repository follows one dialect.
pub fn read_strict_yaml<T: de::DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|error| {
        // serde-saphyr appends the location in prose (kept here as numbers) and, for duplicate
        // keys, advice meant for the Rust programmer rather than the author.
        let message = error.to_string();
        let line = message.lines().next().unwrap_or_default();
        let line = line.rfind(" at line ").map_or(line, |cut| &line[..cut]);
        let message = match line.split_once(", set DuplicateKeyPolicy") {
            Some((before, _)) => format!("{before} (each key may appear once)"),
            None => line.to_owned(),
        };
        YamlError {
            line: error
                .location()
                .map(|location| (location.line(), location.column())),
            message,
        }
    })
}

/// A YAML document as the JSON value it denotes, with the line and column every node was written
/// at, so a JSON Schema error (which names a JSON pointer) can be reported where it was written.
///
/// Scalars keep the type their spelling gives them: `"4096"` stays a string and `4096` is a
/// number, so a schema that wants an integer refuses the quoted one instead of a deserializer
/// quietly converting it. A float written for a whole number (`4096.0`) is refused outright:
/// nothing in a contract is a whole float, and JSON Schema would call it an integer.
#[derive(Debug)]
pub(crate) struct YamlTree {
    pub value: Value,
    locations: HashMap<String, (u64, u64)>,
    /// Where each member's name was written (an unknown member is reported at its name).
    names: HashMap<String, (u64, u64)>,
}

impl YamlTree {
    /// Where the node at `pointer` was written; for a node that does not exist (a missing
    /// member), where its nearest existing ancestor was.
    pub(crate) fn location(&self, pointer: &str) -> Option<(u64, u64)> {
        let mut pointer = pointer;
        loop {
            if let Some(location) = self.locations.get(pointer) {
                return Some(*location);
            }
            pointer = &pointer[..pointer.rfind('/')?];
        }
    }

    /// Where the name of the member at `pointer` was written, falling back to its value.
    pub(crate) fn name_location(&self, pointer: &str) -> Option<(u64, u64)> {
        self.names
            .get(pointer)
            .copied()
            .or_else(|| self.location(pointer))
    }
}

/// Reads YAML, strictly, into a [`YamlTree`].
pub(crate) fn read_yaml_tree(text: &str) -> Result<YamlTree, YamlError> {
    let located: Located = read_strict_yaml(text)?;
    let mut locations = HashMap::new();
    let mut names = HashMap::new();
    for (pointer, location) in located.locations {
        match pointer.strip_suffix(NAME_SUFFIX) {
            Some(member) => names.entry(member.to_owned()).or_insert(location),
            None => locations.entry(pointer).or_insert(location),
        };
    }
    Ok(YamlTree {
        value: located.value,
        locations,
        names,
    })
}

/// Marks a location as that of a member's name rather than its value (a JSON pointer token
/// cannot contain a newline, so no real pointer ends like this).
const NAME_SUFFIX: &str = "\n(name)";

/// A node and the locations of it and everything below it, pointers relative to it.
struct Located {
    value: Value,
    locations: Vec<(String, (u64, u64))>,
}

impl<'de> Deserialize<'de> for Located {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Located, D::Error> {
        let spanned = Spanned::<Bare>::deserialize(deserializer)?;
        let at = (spanned.referenced.line(), spanned.referenced.column());
        let mut locations = spanned.value.locations;
        locations.push((String::new(), at));
        Ok(Located {
            value: spanned.value.value,
            locations,
        })
    }
}

/// A node without its own location (its children's are known).
struct Bare {
    value: Value,
    locations: Vec<(String, (u64, u64))>,
}

impl<'de> Deserialize<'de> for Bare {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Bare, D::Error> {
        deserializer.deserialize_any(BareVisitor)
    }
}

struct BareVisitor;

impl BareVisitor {
    fn scalar(value: Value) -> Bare {
        Bare {
            value,
            locations: Vec::new(),
        }
    }
}

impl<'de> Visitor<'de> for BareVisitor {
    type Value = Bare;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a YAML value that JSON can express")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Bare, E> {
        Ok(BareVisitor::scalar(Value::Bool(value)))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Bare, E> {
        Ok(BareVisitor::scalar(Value::from(value)))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Bare, E> {
        Ok(BareVisitor::scalar(Value::from(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Bare, E> {
        if value.fract() == 0.0 && value.is_finite() {
            return Err(E::custom(format!(
                "{value} is a whole number written as a float; write it as an integer ({value:.0})"
            )));
        }
        serde_json::Number::from_f64(value)
            .map(|number| BareVisitor::scalar(Value::Number(number)))
            .ok_or_else(|| E::custom("NaN and infinities are not JSON numbers"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Bare, E> {
        Ok(BareVisitor::scalar(Value::String(value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Bare, E> {
        Ok(BareVisitor::scalar(Value::String(value)))
    }

    fn visit_unit<E>(self) -> Result<Bare, E> {
        Ok(BareVisitor::scalar(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Bare, E> {
        Ok(BareVisitor::scalar(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Bare, D::Error> {
        Bare::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bare, A::Error> {
        let mut items = Vec::new();
        let mut locations = Vec::new();
        while let Some(item) = seq.next_element::<Located>()? {
            let prefix = format!("/{}", items.len());
            locations.extend(
                item.locations
                    .into_iter()
                    .map(|(pointer, at)| (format!("{prefix}{pointer}"), at)),
            );
            items.push(item.value);
        }
        Ok(Bare {
            value: Value::Array(items),
            locations,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Bare, A::Error> {
        let mut members = Map::new();
        let mut locations = Vec::new();
        while let Some(name) = map.next_key::<Spanned<String>>()? {
            let member: Located = map.next_value()?;
            let prefix = format!("/{}", name.value.replace('~', "~0").replace('/', "~1"));
            locations.push((
                format!("{prefix}{NAME_SUFFIX}"),
                (name.referenced.line(), name.referenced.column()),
            ));
            let name = name.value;
            locations.extend(
                member
                    .locations
                    .into_iter()
                    .map(|(pointer, at)| (format!("{prefix}{pointer}"), at)),
            );
            members.insert(name, member.value);
        }
        Ok(Bare {
            value: Value::Object(members),
            locations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_is_located_and_scalars_keep_their_spelled_type() {
        let tree = read_yaml_tree(
            "tool: t\nlimits:\n  max_bytes: \"4096\"\n  max_depth: 4\nrules:\n  - { name: r, retryable: true }\n",
        )
        .unwrap();
        assert_eq!(tree.value["limits"]["max_bytes"], Value::from("4096"));
        assert_eq!(tree.value["limits"]["max_depth"], Value::from(4));
        assert_eq!(tree.value["rules"][0]["retryable"], Value::Bool(true));
        assert_eq!(tree.location("/limits/max_bytes"), Some((3, 14)));
        assert_eq!(tree.name_location("/limits/max_bytes"), Some((3, 3)));
        assert_eq!(tree.location("/rules/0/retryable"), Some((6, 27)));
        assert_eq!(
            tree.location("/limits/missing"),
            tree.location("/limits"),
            "a missing member is reported at its parent"
        );
    }

    #[test]
    fn whole_floats_duplicate_keys_and_yaml_1_1_booleans_are_refused() {
        let error = read_yaml_tree("a:\n  b: 4096.0\n").unwrap_err();
        assert_eq!(error.line.map(|(line, _)| line), Some(2), "{error:?}");
        assert!(error.message.contains("integer (4096)"), "{error:?}");
        assert!(read_yaml_tree("a: 1.5\n").is_ok());
        assert!(read_yaml_tree("a: 1\na: 2\n").is_err());
        assert_eq!(
            read_yaml_tree("a: yes\n").unwrap().value["a"],
            Value::from("yes"),
            "a YAML 1.1 boolean is only a string"
        );
    }
}
