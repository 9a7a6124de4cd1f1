//! Normalization: `$ref` resolved between a version's files, `allOf` merged, unions kept as one
//! `oneOf`/`anyOf` per node, `unevaluatedProperties` closed over the branch that matched.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_gate::Sha256Digest;

use super::algebra::{close_unevaluated, intersect, tidy, tighter};
use super::evaluation::kept_keyword_evaluates_members;
use super::references::{
    Reference, anchor_pointer, dynamic_anchors, escape, nested_id, references,
};
use super::{
    ANNOTATIONS, Bound, CLOSES_RECURSION, CLOSING_TYPES, CONJUNCTS, Conjunct, Facts, JsonType,
    Kind, Location, Node, Union, Values,
};

/// A contract version's schema files, for resolving `$ref` between them.
#[derive(Debug, Clone)]
pub struct Schemas {
    files: BTreeMap<String, Value>,
    /// Absolute `$id`s (without a fragment) to file names.
    ids: BTreeMap<String, String>,
}

/// How deep `$ref`s may nest before the model stops following them: a recursive schema is
/// modelled this many levels down, which decides every document that nests less deeply.
const MAX_REF_DEPTH: usize = 24;

/// How many schema objects reading a closing target's types may visit before it gives up (and
/// says any type): the reading follows `$ref`s, which a large contract has many of.
const TYPE_READING_BUDGET: usize = 256;

/// The shallower depths tried, in order, when following `$ref`s that deep builds more nodes than
/// [`NODE_BUDGET`] allows (a binary tree `{"left": {"$ref": "#"}, "right": {"$ref": "#"}}`
/// doubles at every level). Depth 0 models the file as written, every `$ref` left unfollowed.
const SHALLOWER_REF_DEPTHS: [usize; 4] = [8, 3, 1, 0];

/// How many nodes one schema file's model may hold, counting a shared expansion once per place
/// it is used: the comparisons and walks over the model are linear in it, and so is its memory
/// (a few kilobytes a node). Real schemas, fully expanded, stay in the low thousands.
pub const NODE_BUDGET: usize = 20_000;

impl Schemas {
    /// The files of one version, parsed.
    pub fn new(files: BTreeMap<String, Value>) -> Schemas {
        let ids = files
            .iter()
            .filter_map(|(file, document)| {
                let id = document.get("$id")?.as_str()?;
                Some((id.trim_end_matches('#').to_owned(), file.clone()))
            })
            .collect();
        Schemas { files, ids }
    }

    /// The normalized root of a schema written on its own, with no file beside it (`file`
    /// names it in locations).
    pub fn standalone(file: &str, schema: &Value) -> Node {
        Schemas::new(BTreeMap::from([(file.to_owned(), schema.clone())])).root(file)
    }

    /// The schema files, by name.
    pub fn files(&self) -> &BTreeMap<String, Value> {
        &self.files
    }

    /// The normalized root of `file`: `$ref`s followed 24 deep, or less deep
    /// when that would build more than [`NODE_BUDGET`] nodes, and the whole file an unknown
    /// node ("not modelled") when even its own nodes are more than that.
    pub fn root(&self, file: &str) -> Node {
        let at = Location {
            file: file.to_owned(),
            pointer: String::new(),
        };
        let Some(document) = self.files.get(file) else {
            return Node::unknown(&at, format!("no schema file `{file}`"), &Value::Null);
        };
        // Each shallower depth is tried first with plain definitions followed past it (only
        // the recursion cut), then, where those double up past the budget, with every `$ref`
        // cut at it.
        let attempts = std::iter::once((MAX_REF_DEPTH, true)).chain(
            SHALLOWER_REF_DEPTHS
                .into_iter()
                .flat_map(|depth| [(depth, true), (depth, false)]),
        );
        for (max_depth, follow_plain) in attempts {
            let mut normalizer = Normalizer {
                schemas: self,
                entry: file,
                max_depth,
                follow_plain,
                expanded: HashMap::new(),
                digests: HashMap::new(),
                built: 0,
                // The file's root is being expanded too: a `$ref` back to it closes a
                // recursion, compared co-inductively like any other.
                following: vec![at.clone()],
                relied_on: usize::MAX,
            };
            let root = normalizer.normalize(&at, document, 0);
            if normalizer.built <= NODE_BUDGET {
                return root;
            }
        }
        Node::unknown(
            &at,
            format!(
                "more than {NODE_BUDGET} schema nodes, which is more than the model holds (not modelled)"
            ),
            &json!({"sha256": self.digest(&at, document)}),
        )
    }

    /// A digest of what the schema at `at` means: it, and every schema it can reach by a
    /// reference, so two unfollowed references are equal only when nothing they depend on
    /// differs. A reference is followed to the subschema it names, so an edit elsewhere in the
    /// same file leaves the digest as it is; where that cannot be said exactly (a file with a
    /// nested `$id`, which moves the base of what is written under it, or a reference the
    /// model cannot resolve), the whole file counts. A dynamic reference can reach any file
    /// (the dynamic scope is the document's), so it makes every file part of the digest.
    fn digest(&self, at: &Location, schema: &Value) -> String {
        let mut parts: BTreeSet<(String, String)> = BTreeSet::new();
        let mut whole: BTreeSet<String> = BTreeSet::new();
        let mut pending = vec![(at.file.clone(), schema)];
        if self.files.get(&at.file).is_some_and(nested_id) {
            whole.insert(at.file.clone());
        }
        while let Some((file, value)) = pending.pop() {
            for reference in references(value) {
                let files: Vec<String> = match reference {
                    Reference::Static(reference) => {
                        let exact = self.resolve(&file, reference).filter(|(target, _)| {
                            !self.files.get(&target.file).is_some_and(nested_id)
                        });
                        if let Some((target, resolved)) = exact {
                            if parts.insert((target.file.clone(), target.pointer.clone())) {
                                pending.push((target.file, resolved));
                            }
                            continue;
                        }
                        self.file_of(&file, reference).into_iter().collect()
                    }
                    Reference::Dynamic => self.files.keys().cloned().collect(),
                };
                for target in files {
                    if whole.insert(target.clone()) {
                        pending.push((target.clone(), &self.files[&target]));
                    }
                }
            }
        }
        let mut material = format!("{at}\n{schema}\n");
        for (file, pointer) in &parts {
            let value = self.files[file].pointer(pointer).unwrap_or(&Value::Null);
            material.push_str(&format!("{file}#{pointer}\n{value}\n"));
        }
        for file in whole {
            material.push_str(&format!("{file}\n{}\n", self.files[&file]));
        }
        Sha256Digest::of(material.as_bytes()).to_hex()
    }

    /// The file a reference written in `file` names, whatever its fragment says.
    fn file_of(&self, file: &str, reference: &str) -> Option<String> {
        let target = reference
            .split_once('#')
            .map_or(reference, |(target, _)| target);
        if target.is_empty() {
            Some(file.to_owned())
        } else if self.files.contains_key(target) {
            Some(target.to_owned())
        } else if let Some(file) = self.ids.get(target) {
            Some(file.clone())
        } else {
            let relative = target.rsplit('/').next().unwrap_or(target);
            self.files
                .contains_key(relative)
                .then(|| relative.to_owned())
        }
    }

    /// Resolves a `$ref` written in `file`: to the same file (`#/…`), another file of the
    /// contract (`other.json#/…`), or a document by its `$id`.
    fn resolve(&self, file: &str, reference: &str) -> Option<(Location, &Value)> {
        let fragment = reference
            .split_once('#')
            .map_or("", |(_, fragment)| fragment);
        let target_file = self.file_of(file, reference)?;
        let document = self.files.get(&target_file)?;
        let pointer = if fragment.is_empty() || fragment.starts_with('/') {
            fragment.replace("%24", "$").replace("%25", "%")
        } else {
            // A plain name: the `$anchor` of that name in the file (a nested resource's anchors
            // are its own, so the search does not enter a nested `$id`).
            anchor_pointer(document, "$anchor", fragment, String::new(), true)?
        };
        let value = document.pointer(&pointer)?;
        Some((
            Location {
                file: target_file,
                pointer,
            },
            value,
        ))
    }
}

impl Schemas {
    /// The categories of JSON value (integers counted as numbers) the schema `schema`, written
    /// in `file`, can admit, read from its `type`, `const`, `enum`, `allOf`, `oneOf`, `anyOf`
    /// and `$ref`s; `None` when that may be any. A superset: a keyword it does not read only
    /// narrows further, and a `$ref` back to a target being read (in `seen`) is taken to admit
    /// anything.
    fn categories(
        &self,
        file: &str,
        schema: &Value,
        seen: &mut Vec<Location>,
        budget: &mut usize,
    ) -> Option<BTreeSet<JsonType>> {
        let category = |kind: JsonType| match kind {
            JsonType::Integer => JsonType::Number,
            other => other,
        };
        let of_value = |value: &Value| category(JsonType::of(value)[0]);
        let members = match schema {
            Value::Bool(false) => return Some(BTreeSet::new()),
            Value::Object(members) if *budget > 0 => members,
            _ => return None,
        };
        *budget -= 1;
        let mut kinds: BTreeSet<JsonType> = JsonType::CATEGORIES.into_iter().collect();
        let mut narrow = |found: Option<BTreeSet<JsonType>>| {
            if let Some(found) = found {
                kinds.retain(|kind| found.contains(kind));
            }
        };
        if let Some(written) = members.get("type") {
            let names: Vec<&Value> = match written {
                Value::Array(names) => names.iter().collect(),
                name => vec![name],
            };
            let named: Option<BTreeSet<JsonType>> = names
                .iter()
                .map(|name| name.as_str().and_then(JsonType::from_name).map(category))
                .collect();
            narrow(named);
        }
        if let Some(value) = members.get("const") {
            narrow(Some(BTreeSet::from([of_value(value)])));
        }
        if let Some(Value::Array(values)) = members.get("enum") {
            narrow(Some(values.iter().map(of_value).collect()));
        }
        if let Some(Value::Array(parts)) = members.get("allOf") {
            for part in parts {
                narrow(self.categories(file, part, seen, budget));
            }
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = members.get(keyword) {
                let mut union = Some(BTreeSet::new());
                for branch in branches {
                    union = match (union, self.categories(file, branch, seen, budget)) {
                        (Some(mut union), Some(found)) => {
                            union.extend(found);
                            Some(union)
                        }
                        _ => None,
                    };
                }
                narrow(union);
            }
        }
        if let Some(Value::String(reference)) = members.get("$ref")
            && let Some((target, resolved)) = self.resolve(file, reference)
            && !seen.contains(&target)
        {
            seen.push(target.clone());
            narrow(self.categories(&target.file, resolved, seen, budget));
            seen.pop();
        }
        (kinds.len() < JsonType::CATEGORIES.len()).then_some(kinds)
    }

    /// Resolves a `$dynamicRef` written in `file`, evaluated from the root of `entry`, where it
    /// does not depend on the path taken: as a `$ref`, unless it names a `$dynamicAnchor`; then
    /// the outermost resource of the dynamic scope declaring that anchor wins, which is the
    /// entry's own root resource when it declares it (every evaluation starts there), or the
    /// anchor named when no other resource declares one of that name. Otherwise which resource
    /// wins depends on the path a document takes, and the reason says so.
    fn resolve_dynamic(
        &self,
        entry: &str,
        file: &str,
        reference: &str,
    ) -> Result<(Location, &Value), &'static str> {
        const UNRESOLVED: &str = "cannot be resolved within the contract's files";
        let fragment = reference
            .split_once('#')
            .map_or("", |(_, fragment)| fragment);
        if fragment.is_empty() || fragment.starts_with('/') {
            return self.resolve(file, reference).ok_or(UNRESOLVED);
        }
        let target_file = self.file_of(file, reference).ok_or(UNRESOLVED)?;
        let document = self.files.get(&target_file).ok_or(UNRESOLVED)?;
        let found = |document: &Value, keyword: &str| {
            anchor_pointer(document, keyword, fragment, String::new(), true)
        };
        let at = |file: &str, pointer: String| {
            let value = self.files.get(file)?.pointer(&pointer)?;
            Some((
                Location {
                    file: file.to_owned(),
                    pointer,
                },
                value,
            ))
        };
        match (
            found(document, "$anchor"),
            found(document, "$dynamicAnchor"),
        ) {
            (None, None) => Err(UNRESOLVED),
            (Some(_), Some(_)) => {
                Err("names an anchor written both as `$anchor` and as `$dynamicAnchor`")
            }
            (Some(pointer), None) => at(&target_file, pointer).ok_or(UNRESOLVED),
            (None, Some(pointer)) => {
                let outermost = self
                    .files
                    .get(entry)
                    .and_then(|root| found(root, "$dynamicAnchor"));
                if let Some(outermost) = outermost {
                    return at(entry, outermost).ok_or(UNRESOLVED);
                }
                let declared: usize = self
                    .files
                    .values()
                    .map(|document| dynamic_anchors(document, fragment))
                    .sum();
                if declared == 1 {
                    at(&target_file, pointer).ok_or(UNRESOLVED)
                } else {
                    Err(
                        "names a `$dynamicAnchor` more than one resource declares, so the path a document takes decides which applies, which the differ does not model",
                    )
                }
            }
        }
    }
}

/// One attempt at modelling a file: follows `$ref`s `max_depth` deep, expanding each target once
/// per depth and counting every node it places.
struct Normalizer<'a> {
    schemas: &'a Schemas,
    /// The file being modelled, where evaluation starts: the outermost resource of every
    /// dynamic scope.
    entry: &'a str,
    max_depth: usize,
    /// Whether a `$ref` past `max_depth` whose target is not being expanded above (no
    /// recursion) is followed on, as far as [`MAX_REF_DEPTH`] again.
    follow_plain: bool,
    /// Each `$ref` target already expanded at a depth, with the nodes it holds. At a given depth
    /// a target always expands the same way, so the second use is a copy, not a second walk.
    expanded: HashMap<(Location, usize), (Node, usize)>,
    /// Each unfollowed target's content digest, so an unfollowed `$ref` still changes when
    /// what it refers to does.
    digests: HashMap<Location, String>,
    /// The nodes placed so far; past [`NODE_BUDGET`] the attempt stops building.
    built: usize,
    /// The `$ref` targets being expanded, outermost first: a target cut off at the depth that
    /// is one of them closes a recursion.
    following: Vec<Location>,
    /// The outermost index of `following` a cut-off node in the current expansion named as the
    /// recursion it closes: an expansion that relies on a target outside itself describes that
    /// place only, and is not copied elsewhere.
    relied_on: usize,
}

impl Normalizer<'_> {
    /// The node a `$ref` at nesting `depth` refers to: expanded once per depth, copied after.
    fn follow(&mut self, target: Location, schema: &Value, depth: usize) -> Node {
        let closing = self.following.iter().rposition(|above| *above == target);
        // Only a recursion is cut off at the depth: a target not being expanded above is
        // followed on (as far as the full depth again), so the cut falls where the recursion
        // closes, which the differ compares co-inductively, not on a plain definition inside
        // it. (A shallower depth, taken when the full one passes the node budget, bounds the
        // recursion, which is what usually costs nodes; definitions that double up without
        // recursion are cut too only when that is still past the budget.)
        let slack = if self.follow_plain && closing.is_none() {
            MAX_REF_DEPTH
        } else {
            0
        };
        if depth > self.max_depth + slack {
            self.built += 1;
            let reason = if self.max_depth == MAX_REF_DEPTH {
                format!(
                    "`$ref`s nested more than {MAX_REF_DEPTH} deep (a recursive schema is modelled that far)"
                )
            } else {
                format!(
                    "`$ref`s nested more than {} deep (followed further, the schema would pass the model's budget of {NODE_BUDGET} nodes)",
                    self.max_depth
                )
            };
            let raw = match closing {
                // The same target is being expanded above: the recursion closes here, and the
                // differ compares it co-inductively (the pair holds here if it holds there).
                // What the target says is modelled there, so no digest of it is kept: two
                // versions that differ only in what their unrolling cuts off are equal, as
                // they are where the target is expanded.
                // The JSON types the target can take are kept, read from it as written, so
                // that keywords beside the closing that no such value can have, and union
                // branches no value can share with it, are still seen for what they are.
                Some(index) => {
                    self.relied_on = self.relied_on.min(index);
                    let mut raw = json!({"$ref": target.to_string(), CLOSES_RECURSION: true});
                    let mut budget = TYPE_READING_BUDGET;
                    let mut seen = vec![target.clone()];
                    if let Some(kinds) =
                        self.schemas
                            .categories(&target.file, schema, &mut seen, &mut budget)
                    {
                        raw[CLOSING_TYPES] =
                            kinds.iter().map(|kind| Value::from(kind.name())).collect();
                    }
                    raw
                }
                None => {
                    let schemas = self.schemas;
                    let digest = self
                        .digests
                        .entry(target.clone())
                        .or_insert_with(|| schemas.digest(&target, schema));
                    json!({"$ref": target.to_string(), "sha256": digest.as_str()})
                }
            };
            return Node::unknown(&target, reason, &raw);
        }
        let key = (target, depth);
        if let Some((node, size)) = self.expanded.get(&key) {
            self.built += size;
            if self.built > NODE_BUDGET {
                return Node::unknown(
                    &key.0,
                    "a schema past the model's node budget",
                    &Value::Null,
                );
            }
            return node.clone();
        }
        let before = self.built;
        let index = self.following.len();
        self.following.push(key.0.clone());
        let outer = std::mem::replace(&mut self.relied_on, usize::MAX);
        let node = self.normalize(&key.0, schema, depth);
        self.following.pop();
        let relied_on = self.relied_on;
        self.relied_on = outer.min(relied_on);
        let size = self.built - before;
        // Copied elsewhere only when every recursion it closes is closed within it.
        if relied_on >= index {
            self.expanded.insert(key, (node.clone(), size));
        }
        node
    }

    fn normalize(&mut self, at: &Location, schema: &Value, depth: usize) -> Node {
        self.built += 1;
        if self.built > NODE_BUDGET {
            return Node::unknown(at, "a schema past the model's node budget", &Value::Null);
        }
        let members = match schema {
            Value::Bool(true) => return Node::any(at),
            Value::Bool(false) => {
                return Node {
                    at: at.clone(),
                    kind: Kind::Nothing,
                };
            }
            Value::Object(members) => members,
            other => {
                return Node::unknown(at, "a schema that is not an object or a boolean", other);
            }
        };
        let child = |keyword: &str| Location {
            file: at.file.clone(),
            pointer: format!("{}/{}", at.pointer, escape(keyword)),
        };
        let mut facts = Facts::new(at);
        let mut merged: Vec<Node> = Vec::new();
        let mut unevaluated: Option<Node> = None;
        // What an unknown node here holds: the schema as written and a digest of every file it
        // reaches, so that an edit behind a `$ref` beside an unmodelled keyword still changes it.
        let schemas = self.schemas;
        let opaque = || json!({"schema": schema, "sha256": schemas.digest(at, schema)});
        // `prefixItems` written without a reference: kept, with the `items` beside it.
        let plain_prefix = members
            .get("prefixItems")
            .is_some_and(|prefix| references(prefix).is_empty());
        // A `type` that takes no array: `unevaluatedItems` then constrains nothing.
        let takes_no_array = members.get("type").is_some_and(|written| match written {
            Value::String(kind) => kind != "array",
            Value::Array(kinds) => kinds.iter().all(|kind| kind != "array"),
            _ => false,
        });
        for (keyword, value) in members {
            let here = child(keyword);
            let bad = |what: &str| Node::unknown(&here, format!("`{keyword}` {what}"), &opaque());
            match keyword.as_str() {
                keyword if ANNOTATIONS.contains(&keyword) => {}
                "unevaluatedItems" if takes_no_array => {}
                "$ref" => {
                    let Some(reference) = value.as_str() else {
                        return bad("is not a string");
                    };
                    match self.schemas.resolve(&at.file, reference) {
                        Some((target, resolved)) => {
                            merged.push(self.follow(target, resolved, depth + 1));
                        }
                        None => return bad("cannot be resolved within the contract's files"),
                    }
                }
                "$dynamicRef" => {
                    let Some(reference) = value.as_str() else {
                        return bad("is not a string");
                    };
                    match self
                        .schemas
                        .resolve_dynamic(self.entry, &at.file, reference)
                    {
                        Ok((target, resolved)) => {
                            merged.push(self.follow(target, resolved, depth + 1));
                        }
                        Err(why) => return bad(why),
                    }
                }
                "allOf" => {
                    let Some(parts) = value.as_array() else {
                        return bad("is not an array");
                    };
                    for (index, part) in parts.iter().enumerate() {
                        let at = Location {
                            file: at.file.clone(),
                            pointer: format!("{}/{index}", here.pointer),
                        };
                        merged.push(self.normalize(&at, part, depth));
                    }
                }
                "oneOf" | "anyOf" => {
                    if facts.union.is_some() {
                        return bad("beside another oneOf/anyOf");
                    }
                    let Some(parts) = value.as_array() else {
                        return bad("is not an array");
                    };
                    let branches = parts
                        .iter()
                        .enumerate()
                        .map(|(index, part)| {
                            let at = Location {
                                file: at.file.clone(),
                                pointer: format!("{}/{index}", here.pointer),
                            };
                            self.normalize(&at, part, depth)
                        })
                        .collect();
                    facts.union = Some(Union {
                        exactly_one: keyword == "oneOf",
                        branches,
                    });
                }
                "type" => {
                    let names: Vec<&str> = match value {
                        Value::String(name) => vec![name.as_str()],
                        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
                        _ => return bad("is not a name or a list of names"),
                    };
                    let mut types = BTreeSet::new();
                    for name in names {
                        match JsonType::from_name(name) {
                            Some(kind) => types.insert(kind),
                            None => return bad("names an unknown type"),
                        };
                    }
                    if types.contains(&JsonType::Number) {
                        types.remove(&JsonType::Integer);
                    }
                    facts.types = Some(types);
                }
                "enum" => match value.as_array() {
                    Some(values) => facts.values = Some(Values::new(values.clone())),
                    None => return bad("is not an array"),
                },
                "const" => facts.values = Some(Values::new(vec![value.clone()])),
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
                | "maxProperties" => {
                    let Some(count) = value.as_u64() else {
                        return bad("is not a count");
                    };
                    match keyword.as_str() {
                        "minLength" => facts.strings.min_length = count,
                        "maxLength" => facts.strings.max_length = Some(count),
                        "minItems" => facts.min_items = count,
                        "maxItems" => facts.max_items = Some(count),
                        "minProperties" => facts.min_properties = count,
                        _ => facts.max_properties = Some(count),
                    }
                }
                "pattern" => match value.as_str() {
                    Some(pattern) => facts.strings.patterns.push(pattern.to_owned()),
                    None => return bad("is not a string"),
                },
                "format" => match value.as_str() {
                    Some(format) => facts.format = Some(format.to_owned()),
                    None => return bad("is not a string"),
                },
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                    let Some(number) = value.as_f64() else {
                        return bad("is not a number");
                    };
                    let exclusive = keyword.starts_with("exclusive");
                    let bound = Some(Bound {
                        value: number,
                        exclusive,
                    });
                    match keyword.as_str() {
                        "minimum" | "exclusiveMinimum" => {
                            facts.minimum = tighter(facts.minimum, bound, true);
                        }
                        "maximum" | "exclusiveMaximum" => {
                            facts.maximum = tighter(facts.maximum, bound, false);
                        }
                        _ => facts.multiple_of = Some(number),
                    }
                }
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        return bad("is not an object");
                    };
                    for (name, property) in properties {
                        let at = Location {
                            file: at.file.clone(),
                            pointer: format!("{}/{}", here.pointer, escape(name)),
                        };
                        facts
                            .properties
                            .insert(name.clone(), self.normalize(&at, property, depth));
                    }
                }
                "required" => {
                    let Some(names) = value.as_array() else {
                        return bad("is not an array");
                    };
                    facts
                        .required
                        .extend(names.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                "patternProperties" => {
                    let Some(patterns) = value.as_object() else {
                        return bad("is not an object");
                    };
                    for (pattern, schema) in patterns {
                        let at = Location {
                            file: at.file.clone(),
                            pointer: format!("{}/{}", here.pointer, escape(pattern)),
                        };
                        facts
                            .pattern_properties
                            .insert(pattern.clone(), self.normalize(&at, schema, depth));
                    }
                }
                "additionalProperties" => {
                    facts.additional = Box::new(self.normalize(&here, value, depth));
                }
                "propertyNames" => {
                    facts.property_names = Box::new(self.normalize(&here, value, depth));
                }
                "unevaluatedProperties" => {
                    unevaluated = Some(self.normalize(&here, value, depth));
                }
                // Beside `prefixItems`, `items` applies past the prefix only: both are kept
                // as written, and read together by the differ.
                "items" if members.contains_key("prefixItems") => {
                    if !plain_prefix {
                        return bad("beside a `prefixItems` with a reference");
                    }
                    // One that refers elsewhere is modelled here, in its contract's files.
                    let node = (!references(value).is_empty())
                        .then(|| self.normalize(&here, value, depth));
                    facts.conjuncts.insert(
                        "items".to_owned(),
                        Conjunct {
                            value: value.clone(),
                            at: here.clone(),
                            node,
                        },
                    );
                }
                "items" => facts.items = Box::new(self.normalize(&here, value, depth)),
                "uniqueItems" => facts.unique_items = value.as_bool().unwrap_or(false),
                // One dependent schema, on a node with no union of its own, is one: the member
                // absent, or present and the schema holding (whose members then count as
                // evaluated, as `unevaluatedProperties` reads them).
                "dependentSchemas"
                    if value.as_object().is_some_and(|schemas| schemas.len() == 1)
                        && !members.contains_key("oneOf")
                        && !members.contains_key("anyOf") =>
                {
                    let Some((name, dependent)) = value.as_object().and_then(|s| s.iter().next())
                    else {
                        return bad("is not an object");
                    };
                    let at = Location {
                        file: at.file.clone(),
                        pointer: format!("{}/{}", here.pointer, escape(name)),
                    };
                    let mut absent = Facts::new(&here);
                    absent.properties.insert(
                        name.clone(),
                        Node {
                            at: at.clone(),
                            kind: Kind::Nothing,
                        },
                    );
                    let mut present = Facts::new(&here);
                    present.required.insert(name.clone());
                    let present = Node {
                        at: here.clone(),
                        kind: Kind::Facts(Arc::new(present)),
                    };
                    facts.union = Some(Union {
                        exactly_one: false,
                        branches: vec![
                            Node {
                                at: here.clone(),
                                kind: Kind::Facts(Arc::new(absent)),
                            },
                            intersect(&present, &self.normalize(&at, dependent, depth)),
                        ],
                    });
                }
                kept if CONJUNCTS.contains(&kept)
                    && references(value).is_empty()
                    && (kept != "prefixItems" || plain_prefix) =>
                {
                    facts.conjuncts.insert(
                        kept.to_owned(),
                        Conjunct {
                            value: value.clone(),
                            at: here.clone(),
                            node: None,
                        },
                    );
                }
                other => {
                    return Node::unknown(
                        &here,
                        format!("`{other}`, which the differ does not model"),
                        &opaque(),
                    );
                }
            }
        }
        // A node that only refers elsewhere is the node it refers to, written there.
        if merged.len() == 1 && unevaluated.is_none() && facts == Facts::new(at) {
            return merged.remove(0);
        }
        tidy(&mut facts);
        let mut node = Node {
            at: at.clone(),
            kind: Kind::Facts(Arc::new(facts)),
        };
        for part in merged {
            node = intersect(&node, &part);
        }
        match unevaluated {
            // The members a kept keyword evaluates (`dependentSchemas`', `then`'s) count for
            // `unevaluatedProperties`, which the model cannot follow. (`contains` evaluates
            // items, and `not` and the counts evaluate nothing that counts.)
            Some(_) if kept_keyword_evaluates_members(&node) => Node::unknown(
                at,
                "`unevaluatedProperties` beside a keyword the differ does not model",
                &opaque(),
            ),
            Some(closing) => {
                // `additionalProperties` here, or any keyword of a part merged in that evaluates
                // every member, leaves `unevaluatedProperties` nothing to apply to; a union
                // branch that does leaves it nothing in that branch.
                let own = members
                    .contains_key("additionalProperties")
                    .then_some(true)
                    .or_else(|| {
                        members
                            .iter()
                            .filter(|(keyword, _)| {
                                ["allOf", "$ref", "$dynamicRef"].contains(&keyword.as_str())
                            })
                            .map(|(keyword, value)| {
                                self.evaluates_every_member(&at.file, keyword, value, 0)
                            })
                            .collect::<Option<Vec<bool>>>()
                            .map(|parts| parts.contains(&true))
                    });
                let branches = ["oneOf", "anyOf"]
                    .iter()
                    .filter_map(|keyword| members.get(*keyword))
                    .filter_map(Value::as_array)
                    .flatten()
                    .map(|branch| {
                        self.evaluates_every_member(&at.file, "allOf", &json!([branch]), 0)
                    })
                    .collect::<Option<Vec<bool>>>();
                match (own, branches) {
                    (Some(true), _) => node,
                    (Some(false), Some(settled)) => close_unevaluated(node, closing, &settled),
                    _ => Node::unknown(
                        at,
                        "`unevaluatedProperties` beside a reference whose members evaluated cannot be told",
                        &opaque(),
                    ),
                }
            }
            None => node,
        }
    }

    /// Whether `keyword: value`, written in `file`, evaluates every member of the object it
    /// applies to (an `additionalProperties` or an `unevaluatedProperties` somewhere it merges
    /// in), so that an `unevaluatedProperties` beside it applies to none; `None` when a reference
    /// cannot be followed or recurses too deep to tell.
    fn evaluates_every_member(
        &self,
        file: &str,
        keyword: &str,
        value: &Value,
        hops: usize,
    ) -> Option<bool> {
        if hops > MAX_REF_DEPTH {
            return None;
        }
        let schema_evaluates = |file: &str, schema: &Value| -> Option<bool> {
            let Value::Object(members) = schema else {
                return Some(false);
            };
            if members.contains_key("additionalProperties")
                || members.contains_key("unevaluatedProperties")
            {
                return Some(true);
            }
            let mut every = false;
            for (keyword, value) in members {
                if ["allOf", "$ref", "$dynamicRef"].contains(&keyword.as_str()) {
                    every |= self.evaluates_every_member(file, keyword, value, hops + 1)?;
                }
            }
            Some(every)
        };
        match (keyword, value) {
            ("allOf", Value::Array(parts)) => {
                let mut every = false;
                for part in parts {
                    every |= schema_evaluates(file, part)?;
                }
                Some(every)
            }
            ("$ref", Value::String(reference)) => {
                let (target, resolved) = self.schemas.resolve(file, reference)?;
                schema_evaluates(&target.file, resolved)
            }
            ("$dynamicRef", Value::String(reference)) => {
                let (target, resolved) = self
                    .schemas
                    .resolve_dynamic(self.entry, file, reference)
                    .ok()?;
                schema_evaluates(&target.file, resolved)
            }
            _ => None,
        }
    }
}
