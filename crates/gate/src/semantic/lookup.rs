//! Lookup: a field's value keys a trusted table whose record must exist and match: the ticket
//! exists, belongs to the signed-in tenant, and is resolved.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::{Check, CompiledKind, KindSpec, Violation, context_value};
use crate::document::Node;
use crate::error::{CompileError, error_at};
use crate::request::Request;

/// `lookup: { field, context, require: { member: { context | equals } } }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LookupSpec {
    pub field: Spanned<String>,
    pub context: String,
    #[serde(default)]
    pub require: BTreeMap<String, ExpectSpec>,
}

/// What one member of a looked-up record must equal: a context value, or a constant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExpectSpec {
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default)]
    pub equals: Option<Value>,
}

impl KindSpec for LookupSpec {
    fn field(&self) -> &Spanned<String> {
        &self.field
    }

    fn compile(&self, rule_name: &Spanned<String>) -> Result<CompiledKind, CompileError> {
        let mut require = BTreeMap::new();
        for (member, expected) in &self.require {
            let expected = match (&expected.context, &expected.equals) {
                (Some(key), None) => Expected::Context(key.clone()),
                (None, Some(value)) => Expected::Constant(value.clone()),
                _ => {
                    return Err(error_at(
                        rule_name,
                        format!(
                            "lookup requirement `{member}` must give exactly one of `context` or `equals`"
                        ),
                    ));
                }
            };
            require.insert(member.clone(), expected);
        }
        Ok(CompiledKind::Lookup(Lookup {
            context: self.context.clone(),
            require,
        }))
    }
}

#[derive(Debug)]
pub(crate) struct Lookup {
    context: String,
    require: BTreeMap<String, Expected>,
}

#[derive(Debug)]
enum Expected {
    Context(String),
    Constant(Value),
}

impl Check for Lookup {
    fn context_keys(&self) -> Vec<&str> {
        let mut keys = vec![self.context.as_str()];
        keys.extend(self.require.values().filter_map(|expected| match expected {
            Expected::Context(key) => Some(key.as_str()),
            Expected::Constant(_) => None,
        }));
        keys
    }

    fn check(
        &self,
        value: Node<'_>,
        field: &str,
        request: &Request,
        _now: SystemTime,
    ) -> Result<(), Violation> {
        let Some(table) = context_value(request, &self.context)?.as_object() else {
            return Err(Violation::new(
                format!(
                    "the trusted context `{}` is not a table (JSON object)",
                    self.context
                ),
                "the adapter must supply a JSON object keyed by id for this context key",
            ));
        };
        // Keys are strings; an integer id looks up its decimal spelling. Nothing else is converted:
        // a float or a string that merely looks like a number finds nothing.
        let key = match (value.as_str(), value.as_number()) {
            (Some(text), _) => text.to_owned(),
            (_, Some(number)) if number.is_i64() || number.is_u64() => number.to_string(),
            _ => {
                return Err(Violation::new(
                    format!(
                        "`{field}` is {value}, which cannot key the `{}` table",
                        self.context
                    ),
                    "make the schema constrain the field to a string or an integer",
                ));
            }
        };
        let Some(record) = table.get(&key) else {
            return Err(Violation::new(
                format!("`{field}` {value} is not in the `{}` table", self.context),
                "the proposal or response refers to something the application does not know; make zero calls",
            ));
        };
        for (member, expected) in &self.require {
            let wanted = match expected {
                Expected::Context(key) => context_value(request, key)?,
                Expected::Constant(value) => value,
            };
            let actual = record.get(member);
            if actual != Some(wanted) {
                let actual = actual.map_or_else(|| "absent".to_owned(), Value::to_string);
                return Err(Violation::new(
                    format!(
                        "record {key} of `{}` has {member} {actual}, but the rule requires {wanted}",
                        self.context
                    ),
                    "the record exists but does not satisfy the business rule (wrong owner or state); do not act on it",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::CheckValue;
    use serde_json::json;

    fn lookup() -> Lookup {
        let mut require = BTreeMap::new();
        require.insert("tenant".to_owned(), Expected::Context("tenant".to_owned()));
        require.insert("status".to_owned(), Expected::Constant(json!("resolved")));
        Lookup {
            context: "tickets".to_owned(),
            require,
        }
    }

    fn request() -> Request {
        Request::new("r")
            .with_context("tenant", "demo-a")
            .with_context(
                "tickets",
                json!({
                    "7": {"tenant": "demo-a", "status": "resolved"},
                    "8": {"tenant": "demo-b", "status": "resolved"},
                    "9": {"tenant": "demo-a", "status": "open"}
                }),
            )
    }

    #[test]
    fn a_resolved_ticket_of_the_tenant_passes() {
        assert!(
            lookup()
                .check_value(&json!(7), "ticket_id", &request(), SystemTime::UNIX_EPOCH)
                .is_ok()
        );
    }

    #[test]
    fn other_tenant_open_and_unknown_tickets_fail() {
        for id in [json!(8), json!(9), json!(10)] {
            assert!(
                lookup()
                    .check_value(&id, "ticket_id", &request(), SystemTime::UNIX_EPOCH)
                    .is_err(),
                "{id}"
            );
        }
    }

    #[test]
    fn no_coercion_from_floats() {
        assert!(
            lookup()
                .check_value(&json!(7.0), "ticket_id", &request(), SystemTime::UNIX_EPOCH)
                .is_err()
        );
    }

    /// A float keys nothing, even where the table has its spelling: the id must be what the
    /// schema promised (a string or an integer), not something that prints like a key.
    #[test]
    fn a_float_keys_nothing_even_where_its_spelling_is_a_key() {
        let record = json!({"tenant": "demo-a", "status": "resolved"});
        let request = Request::new("r")
            .with_context("tenant", "demo-a")
            .with_context("tickets", json!({"7.5": record}));
        let refused = lookup()
            .check_value(&json!(7.5), "ticket_id", &request, SystemTime::UNIX_EPOCH)
            .unwrap_err();
        assert_eq!(
            refused.message,
            "`ticket_id` is 7.5, which cannot key the `tickets` table"
        );
    }

    /// Every integer serde_json keeps keys its decimal spelling: negative ones (only `i64`) and
    /// those past `i64::MAX` (only `u64`) as much as small positive ones (both).
    #[test]
    fn integers_of_either_sign_and_any_width_key_their_decimal_spelling() {
        let record = json!({"tenant": "demo-a", "status": "resolved"});
        let request = Request::new("r")
            .with_context("tenant", "demo-a")
            .with_context(
                "tickets",
                json!({"-3": record.clone(), "18446744073709551615": record}),
            );
        for id in [json!(-3), json!(u64::MAX)] {
            assert!(
                lookup()
                    .check_value(&id, "ticket_id", &request, SystemTime::UNIX_EPOCH)
                    .is_ok(),
                "{id}"
            );
        }
        let unknown = lookup()
            .check_value(&json!("-4"), "ticket_id", &request, SystemTime::UNIX_EPOCH)
            .unwrap_err();
        assert_eq!(
            unknown.message,
            "`ticket_id` \"-4\" is not in the `tickets` table"
        );
    }
}
