//! Objects compared member by member: declared members, pattern members, the rest
//! (`additionalProperties`), and a member one version requires and the other does not.

use super::*;

/// A member name neither version declares and both versions' `propertyNames` admit, for the
/// probes of a change to `additionalProperties`: `toolgate_unpromised` where it fits, else one
/// the model draws from `propertyNames` (a map whose keys are bounded refused the fixed name,
/// and every verdict on a change to its values was left undecided).
pub(super) fn fresh_member(a: &Facts, b: &Facts) -> String {
    const PREFERRED: &str = "toolgate_unpromised";
    let fits = |name: &Value| {
        name.as_str().is_some_and(|text| {
            !a.properties.contains_key(text) && !b.properties.contains_key(text)
        }) && admits(&a.property_names, name) == Ok(true)
            && admits(&b.property_names, name) == Ok(true)
    };
    let preferred = Value::from(PREFERRED);
    if fits(&preferred) {
        return PREFERRED.to_owned();
    }
    let declared: Vec<Value> = a
        .properties
        .keys()
        .chain(b.properties.keys())
        .map(|name| Value::from(name.as_str()))
        .collect();
    [&a.property_names, &b.property_names]
        .into_iter()
        .filter_map(|names| example_avoiding(names, &declared))
        .find(|name| fits(name))
        .and_then(|name| name.as_str().map(str::to_owned))
        .unwrap_or_else(|| PREFERRED.to_owned())
}

impl Walk<'_> {
    pub(super) fn members(&mut self, path: &str, to: &Node, a: &Facts, b: &Facts) {
        // `required` may name members `properties` does not declare (they are then whatever
        // `additionalProperties` allows): every name either version mentions is compared.
        let names: BTreeSet<&String> = a
            .properties
            .keys()
            .chain(b.properties.keys())
            .chain(&a.required)
            .chain(&b.required)
            .collect();
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for name in names {
            let member = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
            match (a.properties.get(name), b.properties.get(name)) {
                (Some(x), Some(y)) => {
                    self.node(&member, x, y);
                    self.presence(&member, name, to, a, b);
                }
                (Some(_), None) => removed.push(name.clone()),
                (None, Some(_)) => added.push(name.clone()),
                // Undeclared in both: its schema is the additional one (compared below), and
                // only whether it is required can differ here.
                (None, None) => self.presence(&member, name, to, a, b),
            }
        }
        // A property removed and another added with the same schema and requiredness is a
        // rename; report it as one change.
        let mut renamed = Vec::new();
        for old in &removed {
            let twin = added.iter().find(|new| {
                !renamed
                    .iter()
                    .any(|(_, taken): &(String, String)| taken == *new)
                    && a.properties[old] == b.properties[*new]
                    && a.required.contains(old) == b.required.contains(*new)
            });
            if let Some(new) = twin {
                renamed.push((old.clone(), new.clone()));
            }
        }
        for name in &removed {
            let partner = renamed
                .iter()
                .find(|(old, _)| old == name)
                .map(|(_, new)| new.clone());
            self.property(path, name, a, b, false, partner.as_deref());
        }
        for name in &added {
            if renamed.iter().any(|(_, new)| new == name) {
                continue;
            }
            self.property(path, name, a, b, true, None);
        }
        if a.additional != b.additional {
            let fresh = fresh_member(a, b);
            let member = format!("{path}/{fresh}");
            let forward = value_effect(&member, &a.additional, &b.additional);
            let backward = value_effect(&member, &b.additional, &a.additional);
            let (kind, words) = match (&a.additional.kind, &b.additional.kind) {
                (_, Kind::Nothing) => (
                    "object_closed",
                    "the object no longer admits members it does not declare",
                ),
                (Kind::Nothing, _) => (
                    "object_opened",
                    "the object now admits members it does not declare",
                ),
                _ => (
                    "additional_properties_changed",
                    "what undeclared members must be changed",
                ),
            };
            let change = Change::new(
                kind,
                format!("{}: {words}", shown(path)),
                &b.additional.at.file,
                &b.additional.at.pointer,
            );
            let relation = self.additional_relation(path, &member, a, b);
            self.record_as(relation, change, &member, forward, backward);
        }
        if a.pattern_properties != b.pattern_properties {
            self.patterns(path, to, a, b);
        }
        // Both constrain every member at once: a version whose allowed names (member counts)
        // lie within the other's refuses nothing the other admits by them. The direction that
        // can refuse is left to review (and the search): showing it needs a whole object.
        let one_way = |within: bool, why: &str| match within {
            true => Effect::No,
            false => Effect::Unknown(why.to_owned()),
        };
        if a.property_names != b.property_names {
            let why = "a change to propertyNames (what a map's keys may be); review it by hand";
            // A member name `x`'s objects may hold and `y` refuses, given a value `x` admits,
            // shows it: a closed object holds only the names it declares, so they are all.
            let names_effect = |x: &Facts, y: &Facts| {
                let with = |name: &str| match toolgate_model::example(&x.member(name), None) {
                    Some(value) => Effect::Yes(Probe::replace(
                        &format!("{path}/{}", name.replace('~', "~0").replace('/', "~1")),
                        value,
                    )),
                    None => Effect::Unknown(why.to_owned()),
                };
                if x.additional.kind == Kind::Nothing {
                    for name in x.properties.keys() {
                        let key = Value::from(name.as_str());
                        match (
                            admits(&x.property_names, &key),
                            admits(&y.property_names, &key),
                        ) {
                            (Ok(true), Ok(false)) => return with(name),
                            (Ok(_), Ok(_)) => {}
                            _ => return Effect::Unknown(why.to_owned()),
                        }
                    }
                    return Effect::No;
                }
                let names = of_type(&x.property_names, JsonType::String);
                match difference::difference(&names, &y.property_names, &y.property_names) {
                    Ok(None) => Effect::No,
                    Ok(Some(Value::String(name))) => with(&name),
                    _ => Effect::Unknown(why.to_owned()),
                }
            };
            let change = Change::new(
                "property_names_changed",
                format!("{}: what member names are allowed changed", shown(path)),
                &b.property_names.at.file,
                &b.property_names.at.pointer,
            );
            let (forward, backward) = (names_effect(a, b), names_effect(b, a));
            self.record(change, path, forward, backward);
        }
        if (a.min_properties, a.max_properties) != (b.min_properties, b.max_properties) {
            let why = "a change to minProperties/maxProperties; review it by hand";
            let counts_within = |x: &Facts, y: &Facts| {
                x.min_properties >= y.min_properties
                    && y.max_properties
                        .is_none_or(|most| x.max_properties.is_some_and(|max| max <= most))
            };
            let change = Change::new(
                "member_count_changed",
                format!("{}: the number of members allowed changed", shown(path)),
                &to.at.file,
                &to.at.pointer,
            );
            let (forward, backward) = (
                one_way(counts_within(a, b), why),
                one_way(counts_within(b, a), why),
            );
            self.record(change, path, forward, backward);
        }
    }

    /// `patternProperties` changed: every member whose schema it changes, one name per kind
    /// (each name both versions declare, and one undeclared name per combination of patterns
    /// it matches), compared whole, as the member is what its property, patterns and the
    /// additional schema say together.
    pub(super) fn patterns(&mut self, path: &str, to: &Node, a: &Facts, b: &Facts) {
        let written = b
            .pattern_properties
            .values()
            .chain(a.pattern_properties.values())
            .next()
            .map_or(&to.at, |node| &node.at);
        let pointer = written
            .pointer
            .rsplit_once('/')
            .map_or(written.pointer.as_str(), |(parent, _)| parent);
        let change = Change::new(
            "pattern_properties_changed",
            format!(
                "{}: what members whose names match a pattern must be changed",
                shown(path)
            ),
            &written.file,
            pointer,
        );
        let undeclared = match toolgate_model::undeclared_kinds(&[a, b]) {
            Ok(names) => names.unwrap_or_default(),
            Err(why) => {
                self.record_undecided(change, path, why.to_string());
                return;
            }
        };
        let declared = a
            .properties
            .keys()
            .filter(|name| b.properties.contains_key(*name));
        let undeclared = undeclared.iter().map(|name| (name, true));
        for (name, fresh) in declared.map(|name| (name, false)).chain(undeclared) {
            let (x, y) = (a.member(name), b.member(name));
            if x == y {
                continue;
            }
            let member = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
            let forward = value_effect(&member, &x, &y);
            let backward = value_effect(&member, &y, &x);
            let relation = if fresh {
                self.additional_relation(path, &member, a, b)
            } else {
                self.relation(&member)
            };
            self.record_as(relation, change.clone(), &member, forward, backward);
        }
    }

    /// A property present in only one version's `properties` (`added`: only in TO's).
    pub(super) fn property(
        &mut self,
        path: &str,
        name: &str,
        a: &Facts,
        b: &Facts,
        added: bool,
        renamed_to: Option<&str>,
    ) {
        let member = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
        // What each version lets the member be: its property schema, or the additional one.
        let mut forward = value_effect(&member, &a.member(name), &b.member(name));
        let mut backward = value_effect(&member, &b.member(name), &a.member(name));
        let (from_required, to_required) = (a.required.contains(name), b.required.contains(name));
        if to_required && !from_required {
            forward = forward.or(self.absence(&member, Side::From));
        }
        if from_required && !to_required {
            backward = backward.or(self.absence(&member, Side::To));
        }
        let (kind, description, at) = match (added, renamed_to) {
            (_, Some(new)) => {
                let new_member = format!("{path}/{}", new.replace('~', "~0").replace('/', "~1"));
                // The new name, both ways: what FROM let an undeclared `new` be (anything, where
                // it left undeclared members open) against what TO declares it, which may
                // forbid it; and the reverse.
                forward = forward.or(value_effect(&new_member, &a.member(new), &b.member(new)));
                backward = backward.or(value_effect(&new_member, &b.member(new), &a.member(new)));
                if b.required.contains(new) && !a.required.contains(new) {
                    forward = forward.or(self.absence(&new_member, Side::From));
                }
                (
                    "property_renamed",
                    format!("{}: property `{name}` renamed to `{new}`", shown(path)),
                    &b.properties[new].at,
                )
            }
            (true, None) => (
                "property_added",
                format!(
                    "{}: property `{name}` added ({})",
                    shown(path),
                    if to_required { "required" } else { "optional" }
                ),
                &b.properties[name].at,
            ),
            (false, None) => (
                "property_removed",
                format!("{}: property `{name}` removed", shown(path)),
                &a.properties[name].at,
            ),
        };
        let change = Change::new(kind, description, &at.file, &at.pointer);
        self.record(change, &member, forward, backward);
    }

    /// `required` changed for a property both versions declare.
    pub(super) fn presence(&mut self, member: &str, name: &str, to: &Node, a: &Facts, b: &Facts) {
        let (was, is) = (a.required.contains(name), b.required.contains(name));
        if was == is {
            return;
        }
        let parent = member.rsplit_once('/').map_or("", |(parent, _)| parent);
        let (kind, words, forward, backward) = if is {
            (
                "property_required",
                "is now required",
                self.absence(member, Side::From),
                Effect::No,
            )
        } else {
            (
                "property_optional",
                "is now optional",
                Effect::No,
                self.absence(member, Side::To),
            )
        };
        let change = Change::new(
            kind,
            format!("{}: property `{name}` {words}", shown(parent)),
            &to.at.file,
            &format!("{}/required", to.at.pointer),
        );
        self.record(change, member, forward, backward);
    }
}

impl Walk<'_> {
    /// The witness for a member one version requires and the other (`side`, which must admit
    /// the witness) does not: a response without it. None when `side`'s projection requires
    /// the member anyway, so that a response without it is rejected there all the same.
    pub(super) fn absence(&self, member: &str, side: Side) -> Effect {
        let projected = match side {
            Side::From => &self.context.projected.0,
            Side::To => &self.context.projected.1,
        };
        if projected.iter().any(|pointer| pointer == member) {
            return Effect::No;
        }
        Effect::Yes(Probe {
            path: member.to_owned(),
            edit: Edit::Remove,
            adapt_context: true,
            shape: None,
        })
    }
}
