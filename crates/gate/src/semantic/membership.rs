//! Membership: a field's value must be one of a trusted list (a run of this project).

use serde_json::Value;

use super::{Violation, context_value};
use crate::request::Request;
use crate::spec::MembershipSpec;

#[derive(Debug)]
pub(crate) struct Membership {
    pub context: String,
}

impl Membership {
    pub fn compile(spec: &MembershipSpec) -> Membership {
        Membership {
            context: spec.context.clone(),
        }
    }

    pub fn check(&self, value: &Value, field: &str, request: &Request) -> Result<(), Violation> {
        let Some(members) = context_value(request, &self.context)?.as_array() else {
            return Err(Violation::new(
                format!("the trusted context `{}` is not a list", self.context),
                "the adapter must supply a JSON array for this context key",
            ));
        };
        if members.contains(value) {
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
    use serde_json::json;

    #[test]
    fn listed_values_pass_and_others_fail() {
        let membership = Membership {
            context: "runs".into(),
        };
        let request = Request::new("r").with_context("runs", json!(["run_a", "run_b"]));
        assert!(
            membership
                .check(&json!("run_b"), "run_id", &request)
                .is_ok()
        );
        assert!(
            membership
                .check(&json!("run_c"), "run_id", &request)
                .is_err()
        );
    }

    #[test]
    fn a_context_that_is_not_a_list_fails_closed() {
        let membership = Membership {
            context: "runs".into(),
        };
        let request = Request::new("r").with_context("runs", "run_a");
        assert!(
            membership
                .check(&json!("run_a"), "run_id", &request)
                .is_err()
        );
    }
}
