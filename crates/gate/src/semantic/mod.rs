//! G5 semantic rules: what a schema cannot say, checked against trusted context and the clock.
//!
//! Rules address agent-visible fields by name, so one rule covers every shape (a legacy shape maps
//! its own members onto the same fields). The comparison values come from the request's trusted
//! context or from the contract, never from the response being checked. Each rule carries its own
//! retryable flag: stale evidence may be fetched again, a wrong project will not fix itself.

mod binding;
mod freshness;
mod lookup;
mod membership;

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;
use serde_saphyr::Spanned;

use crate::decision::Layer;
use crate::error::CompileError;
use crate::fault::Fault;
use crate::request::Request;
use crate::spec::{RuleSpec, error_at};

pub(crate) use binding::Binding;
pub(crate) use freshness::Freshness;
pub use freshness::parse_timestamp;
pub(crate) use lookup::Lookup;
pub(crate) use membership::Membership;

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct Rule {
    pub name: Arc<str>,
    pub retryable: bool,
    /// Index into the contract's agent-visible fields.
    pub field: usize,
    pub check: Check,
}

#[derive(Debug)]
pub(crate) enum Check {
    Binding(Binding),
    Freshness(Freshness),
    Membership(Membership),
    Lookup(Lookup),
}

/// Why a value broke a rule, for the operator.
pub(crate) struct Violation {
    pub message: String,
    pub hint: &'static str,
}

impl Violation {
    pub fn new(message: impl Into<String>, hint: &'static str) -> Violation {
        Violation {
            message: message.into(),
            hint,
        }
    }
}

impl Rule {
    /// Compiles one rule; `field_index` resolves a field name to its position.
    pub fn compile(
        spec: &RuleSpec,
        field_index: impl Fn(&Spanned<String>) -> Result<usize, CompileError>,
    ) -> Result<Rule, CompileError> {
        let kinds = [
            spec.binding.is_some(),
            spec.freshness.is_some(),
            spec.membership.is_some(),
            spec.lookup.is_some(),
        ];
        if kinds.iter().filter(|declared| **declared).count() != 1 {
            return Err(error_at(
                &spec.name,
                format!(
                    "rule `{}` must declare exactly one of binding, freshness, membership, lookup",
                    spec.name.value
                ),
            ));
        }
        let (field, check) = if let Some(binding) = &spec.binding {
            (
                field_index(&binding.field)?,
                Check::Binding(Binding::compile(binding)),
            )
        } else if let Some(freshness) = &spec.freshness {
            (
                field_index(&freshness.field)?,
                Check::Freshness(Freshness::compile(freshness)?),
            )
        } else if let Some(membership) = &spec.membership {
            (
                field_index(&membership.field)?,
                Check::Membership(Membership::compile(membership)),
            )
        } else if let Some(lookup) = &spec.lookup {
            (
                field_index(&lookup.field)?,
                Check::Lookup(Lookup::compile(lookup, &spec.name)?),
            )
        } else {
            unreachable!("exactly one kind was checked above")
        };
        Ok(Rule {
            name: Arc::from(spec.name.value.as_str()),
            retryable: spec.retryable,
            field,
            check,
        })
    }

    /// Checks the value of the rule's field. `field` and `pointer` name it for the operator.
    pub fn evaluate(
        &self,
        value: Option<&Value>,
        field: &str,
        pointer: &str,
        request: &Request,
        now: SystemTime,
    ) -> Result<(), Fault> {
        let outcome = match value {
            None => Err(Violation::new(
                format!("field `{field}` is absent, so the rule cannot hold"),
                "make the schema require the field, or drop the rule",
            )),
            Some(value) => match &self.check {
                Check::Binding(binding) => binding.check(value, field, request),
                Check::Freshness(freshness) => freshness.check(value, field, now),
                Check::Membership(membership) => membership.check(value, field, request),
                Check::Lookup(lookup) => lookup.check(value, field, request),
            },
        };
        outcome.map_err(|violation| {
            Fault::new(
                Layer::Semantic,
                self.name.to_string(),
                violation.message,
                violation.hint,
            )
            .at(pointer)
            .retryable(self.retryable)
        })
    }

    /// The trusted context keys this rule reads.
    pub fn context_keys(&self) -> Vec<&str> {
        match &self.check {
            Check::Binding(binding) => vec![binding.context.as_str()],
            Check::Freshness(_) => Vec::new(),
            Check::Membership(membership) => vec![membership.context.as_str()],
            Check::Lookup(lookup) => lookup.context_keys(),
        }
    }
}

/// A trusted context value, or the violation of not having one (fail closed: a rule that cannot
/// be checked does not pass).
pub(crate) fn context_value<'r>(request: &'r Request, key: &str) -> Result<&'r Value, Violation> {
    request.context().get(key).ok_or_else(|| {
        Violation::new(
            format!("the request's trusted context has no `{key}`, so the rule cannot be checked"),
            "the adapter must put this value into the request context; it is a configuration problem, not the upstream's",
        )
    })
}
