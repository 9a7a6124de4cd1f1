//! What one node says (`Facts`, each keyword in its own field), the keywords the model merges as
//! conjuncts, and the questions about members no schema declared.

use super::*;

/// Everything one node says, each keyword in its own field.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// `type`; `None` when any type is allowed.
    pub types: Option<BTreeSet<JsonType>>,
    /// `enum`, or `const` as a one-value enum.
    pub values: Option<Values>,
    /// `minLength`, `maxLength`, `pattern`.
    pub strings: Strings,
    /// `format`.
    pub format: Option<String>,
    /// `minimum` / `exclusiveMinimum`.
    pub minimum: Option<Bound>,
    /// `maximum` / `exclusiveMaximum`.
    pub maximum: Option<Bound>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `properties`.
    pub properties: BTreeMap<String, Node>,
    /// `required`.
    pub required: BTreeSet<String>,
    /// `patternProperties`: what a member whose name a pattern matches (searched, as
    /// `pattern` is) must be, declared in `properties` or not.
    pub pattern_properties: BTreeMap<String, Node>,
    /// What members not in `properties` and matched by no pattern must be
    /// (`additionalProperties`, or `unevaluatedProperties` where it means the same).
    pub additional: Box<Node>,
    /// `propertyNames`: what every member name must be (any string when not stated). With
    /// `additionalProperties` a schema and `maxProperties`, it bounds a map.
    pub property_names: Box<Node>,
    /// `minProperties`, `maxProperties`.
    pub min_properties: u64,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `items`.
    pub items: Box<Node>,
    /// `minItems`.
    pub min_items: u64,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `oneOf` or `anyOf`.
    pub union: Option<Union>,
    /// Keywords the model does not decide but keeps, as written, by name: each a constraint on
    /// this value alone (see [`CONJUNCTS`]). The model's view of the node is then wider than the
    /// node: what it admits is checked by the gate, never by [`admits`], and two nodes compare
    /// by inclusion only where every conjunct of the including one is one of the other's.
    pub conjuncts: BTreeMap<String, Conjunct>,
}

// The raw form of a recursion closing (a `$ref` cut at the model's depth), written by
// `normalize` and read by `algebra` and the walks here.

/// The member of a cut-off `$ref`'s raw form that says the recursion closes there (see
/// [`Node::recursion_closed`]).
pub(crate) const CLOSES_RECURSION: &str = "closes_recursion";

/// The member of a recursion closing's raw form that digests the facts it was intersected with
/// (a `$ref` beside other keywords): two closings compare co-inductively only where it is equal.
pub(crate) const BESIDE: &str = "beside";

/// The member of a recursion closing's raw form that lists the JSON types its target can take
/// (`"number"` standing for integers too), when that is not every type.
pub(crate) const CLOSING_TYPES: &str = "types";

/// Keywords that say nothing about which instances are valid.
pub(crate) const ANNOTATIONS: [&str; 17] = [
    "$schema",
    "$id",
    // A name for a place: what refers to it is modelled where the reference is (a `$ref` to an
    // anchor is followed, a `$dynamicRef` where the dynamic scope cannot change its target).
    "$anchor",
    "$dynamicAnchor",
    "$defs",
    "definitions",
    "$comment",
    "title",
    "description",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    // In 2020-12, which the gate compiles every schema as, the content vocabulary only
    // annotates: jsonschema decodes and checks nothing, so these never decide a response.
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
];

/// The keywords the model keeps as [`Facts::conjuncts`] rather than giving up on their node: each
/// constrains the value it sits on and nothing else (no sibling reads what it evaluates, unless
/// `unevaluated*` sits beside it, which the model then does not take), so an identical one on
/// both sides of an inclusion cannot break it. Kept only when written without a reference
/// (`$ref`, `$dynamicRef`), so that as written means as meant. An `items` beside `prefixItems`
/// applies past the prefix alone: it is kept too (under `items`), and the two read together;
/// one that refers elsewhere is kept with its schema modelled ([`Conjunct::node`]).
pub const CONJUNCTS: [&str; 10] = [
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "not",
];

/// One kept keyword: its value as written, and where (not part of equality, like a node's).
#[derive(Debug, Clone)]
pub struct Conjunct {
    /// The keyword's value.
    pub value: Value,
    /// Where the keyword is written.
    pub at: Location,
    /// Its schema as modelled in the contract's files, where it refers elsewhere (an `items`
    /// beside `prefixItems`): part of equality, so that an edit behind the reference changes it.
    pub node: Option<Node>,
}

impl PartialEq for Conjunct {
    fn eq(&self, other: &Conjunct) -> bool {
        self.value == other.value && self.node == other.node
    }
}

impl Facts {
    /// The first conjunct of `self` that `other` does not have as well, by name: what keeps
    /// an inclusion of `other` in `self` from being decided. The counts of `contains` are read
    /// with it: a `minContains: 0` only `other` has widens `other`'s `contains` (no match
    /// needed), so where `self` keeps `contains`, `other` must count its matches alike.
    pub fn conjunct_missing_from(&self, other: &Facts) -> Option<(&str, &Conjunct)> {
        self.conjuncts
            .iter()
            .find(|(name, conjunct)| other.conjuncts.get(*name) != Some(*conjunct))
            .map(|(name, conjunct)| (name.as_str(), conjunct))
            .or_else(|| {
                let contains = self.conjuncts.get("contains")?;
                ["minContains", "maxContains"]
                    .into_iter()
                    .find(|count| self.conjuncts.get(*count) != other.conjuncts.get(*count))
                    .map(|_| ("contains", contains))
            })
    }
}

impl Facts {
    /// `dependentRequired` as written: each member's name and the members its presence
    /// requires (empty when not written); `None` when it is not that shape.
    pub fn dependent_required(&self) -> Option<BTreeMap<String, Vec<String>>> {
        let Some(kept) = self.conjuncts.get("dependentRequired") else {
            return Some(BTreeMap::new());
        };
        kept.value
            .as_object()?
            .iter()
            .map(|(name, needed)| {
                let needed = needed
                    .as_array()?
                    .iter()
                    .map(|name| name.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>()?;
                Some((name.clone(), needed))
            })
            .collect()
    }

    /// Facts at `at` that constrain nothing (every value), to add constraints to.
    pub fn new(at: &Location) -> Facts {
        Facts {
            types: None,
            values: None,
            strings: Strings::default(),
            format: None,
            minimum: None,
            maximum: None,
            multiple_of: None,
            properties: BTreeMap::new(),
            required: BTreeSet::new(),
            pattern_properties: BTreeMap::new(),
            additional: Box::new(Node::any(at)),
            property_names: Box::new(Node::any(at)),
            min_properties: 0,
            max_properties: None,
            items: Box::new(Node::any(at)),
            min_items: 0,
            max_items: None,
            unique_items: false,
            union: None,
            conjuncts: BTreeMap::new(),
        }
    }

    /// Whether `kind` of value is allowed at all.
    pub fn allows_type(&self, kind: JsonType) -> bool {
        self.types.as_ref().is_none_or(|types| {
            types.contains(&kind)
                || (kind == JsonType::Integer && types.contains(&JsonType::Number))
        })
    }

    /// What a member named `name` must be: its property schema, or the additional one, and
    /// the schema of every pattern its name matches (unknown where a match cannot be decided).
    pub fn member(&self, name: &str) -> Cow<'_, Node> {
        let declared = self.properties.get(name);
        if self.pattern_properties.is_empty() {
            return Cow::Borrowed(declared.unwrap_or(&self.additional));
        }
        let mut matched: Option<Cow<'_, Node>> = declared.map(Cow::Borrowed);
        for (pattern, node) in &self.pattern_properties {
            match name_matches(pattern, name) {
                Ok(false) => {}
                Ok(true) => {
                    matched = Some(match matched {
                        None => Cow::Borrowed(node),
                        Some(so_far) => Cow::Owned(intersect(&so_far, node)),
                    });
                }
                Err(why) => {
                    return Cow::Owned(Node::unknown(
                        &node.at,
                        why.to_string(),
                        &Value::from(pattern.as_str()),
                    ));
                }
            }
        }
        matched.unwrap_or(Cow::Borrowed(&self.additional))
    }
}

/// Most patterns two versions' `patternProperties` may hold at one object and still have every
/// combination of them searched for a name (2^n combinations).
const MOST_PATTERNS: usize = 4;

/// One member name per kind of undeclared member the objects `sides` tell apart: for every
/// combination of their `patternProperties` patterns, a name no side declares that matches
/// exactly those patterns, where there is one. Every undeclared name of a kind gets the same
/// schema on each side, so comparing one per kind compares them all. `None` when no side has
/// patterns (every undeclared name is then of one kind); `Err` when a kind cannot be decided.
pub fn undeclared_kinds(sides: &[&Facts]) -> Result<Option<Vec<String>>, Undecided> {
    let patterns: BTreeSet<&String> = sides
        .iter()
        .flat_map(|facts| facts.pattern_properties.keys())
        .collect();
    if patterns.is_empty() {
        return Ok(None);
    }
    let patterns: Vec<&String> = patterns.into_iter().collect();
    if patterns.len() > MOST_PATTERNS {
        return Err(Undecided::new(format!(
            "more than {MOST_PATTERNS} `patternProperties` patterns at one object"
        )));
    }
    let declared: BTreeSet<&String> = sides
        .iter()
        .flat_map(|facts| facts.properties.keys())
        .collect();
    let literal = |name: &str| -> String {
        name.chars()
            .flat_map(|c| {
                let syntax = "^$\\.*+?()[]{}|".contains(c);
                syntax.then_some('\\').into_iter().chain([c])
            })
            .collect()
    };
    let mut names = Vec::new();
    for combination in 0u32..(1 << patterns.len()) {
        let mut matched = Vec::new();
        let mut avoided = Vec::new();
        for (index, pattern) in patterns.iter().enumerate() {
            if combination & (1 << index) != 0 {
                matched.push((*pattern).clone());
            } else {
                avoided.push(format!("(?:{pattern})"));
            }
        }
        if !declared.is_empty() {
            let listed: Vec<String> = declared.iter().map(|name| literal(name)).collect();
            avoided.push(format!("^(?:{})$", listed.join("|")));
        }
        let wanted = Strings {
            min_length: 0,
            max_length: None,
            patterns: matched,
        };
        let found = if avoided.is_empty() {
            crate::strings::example(&wanted)?
        } else {
            let refused = Strings {
                min_length: 0,
                max_length: None,
                patterns: vec![avoided.join("|")],
            };
            crate::strings::difference(&wanted, &refused)?
        };
        names.extend(found);
    }
    Ok(Some(names))
}

/// Whether `pattern` (searched, as `patternProperties` searches) matches the member name `name`.
pub fn name_matches(pattern: &str, name: &str) -> Result<bool, Undecided> {
    crate::strings::admits(
        &Strings {
            min_length: 0,
            max_length: None,
            patterns: vec![pattern.to_owned()],
        },
        name,
    )
}
