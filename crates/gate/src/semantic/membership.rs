//! Membership: a field's value must be one of a trusted list (a run of this project).

use std::time::SystemTime;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{Check, CompiledKind, KindSpec, Violation, context_value};
use crate::document::Node;
use crate::error::CompileError;
use crate::request::Request;

/// `membership: { field, context }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MembershipSpec {
    pub field: Spanned<String>,
    pub context: String,
}

impl KindSpec for MembershipSpec {
    fn field(&self) -> &Spanned<String> {
        &self.field
    }

    fn compile(&self, _rule_name: &Spanned<String>) -> Result<CompiledKind, CompileError> {
        Ok(CompiledKind::Membership(Membership {
            context: self.context.clone(),
        }))
    }
}

#[derive(Debug)]
pub(crate) struct Membership {
    context: String,
}

impl Check for Membership {
    fn context_keys(&self) -> Vec<&str> {
        vec![self.context.as_str()]
    }

    fn check(
        &self,
        value: Node<'_>,
        field: &str,
        request: &Request,
        _now: SystemTime,
    ) -> Result<(), Violation> {
        let Some(members) = context_value(request, &self.context)?.as_array() else {
            return Err(Violation::new(
                format!("the trusted context `{}` is not a list", self.context),
                "the adapter must supply a JSON array for this context key",
            ));
        };
        // Lists of ids are the common case: compare those as strings, without the general match.
        let listed = match value.as_str() {
            Some(text) => members.iter().any(|member| member.as_str() == Some(text)),
            None => members.iter().any(|member| value.equals(member)),
        };
        if listed {
            return Ok(());
        }
        Err(Violation::new(
            format!(
                "`{field}` is {value}, which is not among the {} values of context `{}`",
                members.len(),
                self.context
            ),
            "the upstream answered about something that does not belong to the requested scope; do not act on it",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::CheckValue;
    use serde_json::Value;
    use serde_json::json;

    #[test]
    fn listed_values_pass_and_others_fail() {
        let membership = Membership {
            context: "runs".into(),
        };
        let request = Request::new("r").with_context("runs", json!(["run_a", "run_b"]));
        assert!(
            membership
                .check_value(&json!("run_b"), "run_id", &request, SystemTime::UNIX_EPOCH)
                .is_ok()
        );
        assert!(
            membership
                .check_value(&json!("run_c"), "run_id", &request, SystemTime::UNIX_EPOCH)
                .is_err()
        );
    }

    #[test]
    fn any_json_value_can_be_listed_and_nothing_is_coerced() {
        let membership = Membership {
            context: "ids".into(),
        };
        let request = Request::new("r").with_context("ids", json!([7, "8", {"k": [1]}, null, "x"]));
        let check = |value: Value| {
            membership
                .check_value(&value, "id", &request, SystemTime::UNIX_EPOCH)
                .is_ok()
        };
        for listed in [
            json!(7),
            json!("8"),
            json!({"k": [1]}),
            json!(null),
            json!("x"),
        ] {
            assert!(check(listed.clone()), "{listed}");
        }
        for unlisted in [
            json!("7"),
            json!(7.0),
            json!(8),
            json!({"k": [2]}),
            json!(false),
            json!("X"),
        ] {
            assert!(!check(unlisted.clone()), "{unlisted}");
        }
    }

    #[test]
    fn a_context_that_is_not_a_list_fails_closed() {
        let membership = Membership {
            context: "runs".into(),
        };
        let request = Request::new("r").with_context("runs", "run_a");
        assert!(
            membership
                .check_value(&json!("run_a"), "run_id", &request, SystemTime::UNIX_EPOCH)
                .is_err()
        );
    }
}
