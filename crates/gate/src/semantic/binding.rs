//! Binding: a field must equal a trusted context value (the project asked about, not another).

use std::time::SystemTime;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{Check, CompiledKind, KindSpec, Violation, context_value};
use crate::document::Node;
use crate::error::CompileError;
use crate::request::Request;

/// `binding: { field, context }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BindingSpec {
    pub field: Spanned<String>,
    pub context: String,
}

impl KindSpec for BindingSpec {
    fn field(&self) -> &Spanned<String> {
        &self.field
    }

    fn compile(&self, _rule_name: &Spanned<String>) -> Result<CompiledKind, CompileError> {
        Ok(CompiledKind::Binding(Binding {
            context: self.context.clone(),
        }))
    }
}

#[derive(Debug)]
pub(crate) struct Binding {
    context: String,
}

impl Check for Binding {
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
        let expected = context_value(request, &self.context)?;
        if value.equals(expected) {
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
    use crate::semantic::CheckValue;
    use serde_json::json;

    #[test]
    fn equal_values_bind_and_others_do_not() {
        let binding = Binding {
            context: "project_id".into(),
        };
        let request = Request::new("r").with_context("project_id", "bluebird");
        assert!(
            binding
                .check_value(
                    &json!("bluebird"),
                    "project_id",
                    &request,
                    SystemTime::UNIX_EPOCH
                )
                .is_ok()
        );
        let violation = binding
            .check_value(
                &json!("copperhead"),
                "project_id",
                &request,
                SystemTime::UNIX_EPOCH,
            )
            .unwrap_err();
        assert!(violation.message.contains("copperhead") && violation.message.contains("bluebird"));
    }

    #[test]
    fn no_coercion_between_types() {
        let binding = Binding {
            context: "n".into(),
        };
        let request = Request::new("r").with_context("n", 7);
        assert!(
            binding
                .check_value(&json!("7"), "n", &request, SystemTime::UNIX_EPOCH)
                .is_err()
        );
    }

    #[test]
    fn missing_context_fails_closed() {
        let binding = Binding {
            context: "project_id".into(),
        };
        assert!(
            binding
                .check_value(
                    &json!("bluebird"),
                    "project_id",
                    &Request::new("r"),
                    SystemTime::UNIX_EPOCH
                )
                .is_err()
        );
    }
}
