//! Binding: a field must equal a trusted context value (the project asked about, not another).

use serde_json::Value;

use super::{Violation, context_value};
use crate::request::Request;
use crate::spec::BindingSpec;

#[derive(Debug)]
pub(crate) struct Binding {
    pub context: String,
}

impl Binding {
    pub fn compile(spec: &BindingSpec) -> Binding {
        Binding {
            context: spec.context.clone(),
        }
    }

    pub fn check(&self, value: &Value, field: &str, request: &Request) -> Result<(), Violation> {
        let expected = context_value(request, &self.context)?;
        if value == expected {
            return Ok(());
        }
        Err(Violation::new(
            format!(
                "`{field}` is {value}, but the request is bound to {expected} (context `{}`)",
                self.context
            ),
            "a structurally valid answer about something the agent did not ask about; do not retry, find out why the upstream answered for another resource",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_bind_and_others_do_not() {
        let binding = Binding {
            context: "project_id".into(),
        };
        let request = Request::new("r").with_context("project_id", "bluebird");
        assert!(
            binding
                .check(&json!("bluebird"), "project_id", &request)
                .is_ok()
        );
        let violation = binding
            .check(&json!("copperhead"), "project_id", &request)
            .unwrap_err();
        assert!(violation.message.contains("copperhead") && violation.message.contains("bluebird"));
    }

    #[test]
    fn no_coercion_between_types() {
        let binding = Binding {
            context: "n".into(),
        };
        let request = Request::new("r").with_context("n", 7);
        assert!(binding.check(&json!("7"), "n", &request).is_err());
    }

    #[test]
    fn missing_context_fails_closed() {
        let binding = Binding {
            context: "project_id".into(),
        };
        assert!(
            binding
                .check(&json!("bluebird"), "project_id", &Request::new("r"))
                .is_err()
        );
    }
}
