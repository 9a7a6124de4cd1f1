//! G5 semantic rules: what a schema cannot say, checked against trusted context and the clock.
//!
//! Rules address agent-visible fields by name, so one rule covers every shape (a legacy shape maps
//! its own members onto the same fields). The comparison values come from the request's trusted
//! context or from the contract, never from the response being checked. Each rule carries its own
//! retryable flag: stale evidence may be fetched again, a wrong project will not fix itself.
//!
//! A rule kind is one file here: its part of `contract.yaml` (a `*Spec`), its compiled form, and
//! its [`Check`]. Adding one touches that file, its field in [`RuleSpec`] and its line in
//! [`RuleSpec::declared`] (see ARCHITECTURE.md, "Where to start").

mod binding;
mod freshness;
mod lookup;
mod membership;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::document::Node;
use crate::error::{CompileError, error_at};
use crate::fault::Fault;
use crate::outcome::Layer;
use crate::request::Request;

/// One rule as `contract.yaml` writes it: a name, its retryable flag, and exactly one kind.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleSpec {
    pub name: Spanned<String>,
    pub retryable: bool,
    #[serde(default)]
    pub binding: Option<binding::BindingSpec>,
    #[serde(default)]
    pub freshness: Option<freshness::FreshnessSpec>,
    #[serde(default)]
    pub membership: Option<membership::MembershipSpec>,
    #[serde(default)]
    pub lookup: Option<lookup::LookupSpec>,
}

/// A rule kind's spec: which field it checks, and how it compiles.
trait KindSpec {
    fn field(&self) -> &Spanned<String>;
    fn compile(&self, rule_name: &Spanned<String>) -> Result<CompiledKind, CompileError>;
}

/// A compiled rule kind: checks one field's value against trusted context and the clock.
pub(crate) trait Check: Debug + Send + Sync {
    fn check(
        &self,
        value: Node<'_>,
        field: &str,
        request: &Request,
        now: SystemTime,
    ) -> Result<(), Violation>;

    /// The trusted context keys the check reads.
    fn context_keys(&self) -> Vec<&str>;
}

/// For the rule kinds' unit tests: a check on a `Value`.
#[cfg(test)]
trait CheckValue: Check {
    fn check_value(
        &self,
        value: &Value,
        field: &str,
        request: &Request,
        now: SystemTime,
    ) -> Result<(), Violation> {
        let document = crate::document::Document::from_value(value);
        self.check(document.root(), field, request, now)
    }
}

#[cfg(test)]
impl<C: Check> CheckValue for C {}

impl RuleSpec {
    /// Every kind this rule declares (exactly one is valid).
    fn declared(&self) -> Vec<&dyn KindSpec> {
        let kinds: [Option<&dyn KindSpec>; 4] = [
            self.binding.as_ref().map(|kind| kind as &dyn KindSpec),
            self.freshness.as_ref().map(|kind| kind as &dyn KindSpec),
            self.membership.as_ref().map(|kind| kind as &dyn KindSpec),
            self.lookup.as_ref().map(|kind| kind as &dyn KindSpec),
        ];
        kinds.into_iter().flatten().collect()
    }
}

/// The names of the rule kinds, as `contract.yaml` spells them.
const KIND_NAMES: &str = "binding, freshness, membership, lookup";

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct Rule {
    pub name: Arc<str>,
    pub retryable: bool,
    /// Index into the contract's agent-visible fields.
    pub field: usize,
    /// Whether it is a freshness rule (its field is a timestamp the clock judges).
    pub freshness: bool,
    /// Whether its context must come from the operator: a membership list or a lookup table the
    /// model supplied would make the rule vacuous (the model lists what it wants admitted).
    pub operator_context: bool,
    check: CompiledKind,
}

/// A compiled rule kind. An enum rather than a `Box<dyn Check>`: every admission runs each rule,
/// and a `match` the compiler can inline costs no indirect call (a mispredicted one costs more
/// than the check itself).
#[derive(Debug)]
pub(crate) enum CompiledKind {
    Binding(binding::Binding),
    Freshness(freshness::Freshness),
    Membership(membership::Membership),
    Lookup(lookup::Lookup),
}

impl Check for CompiledKind {
    fn check(
        &self,
        value: Node<'_>,
        field: &str,
        request: &Request,
        now: SystemTime,
    ) -> Result<(), Violation> {
        match self {
            CompiledKind::Binding(kind) => kind.check(value, field, request, now),
            CompiledKind::Freshness(kind) => kind.check(value, field, request, now),
            CompiledKind::Membership(kind) => kind.check(value, field, request, now),
            CompiledKind::Lookup(kind) => kind.check(value, field, request, now),
        }
    }

    fn context_keys(&self) -> Vec<&str> {
        match self {
            CompiledKind::Binding(kind) => kind.context_keys(),
            CompiledKind::Freshness(kind) => kind.context_keys(),
            CompiledKind::Membership(kind) => kind.context_keys(),
            CompiledKind::Lookup(kind) => kind.context_keys(),
        }
    }
}

/// Why a value broke a rule, for the operator.
pub(crate) struct Violation {
    pub message: String,
    pub hint: &'static str,
}

impl Violation {
    pub(crate) fn new(message: impl Into<String>, hint: &'static str) -> Violation {
        Violation {
            message: message.into(),
            hint,
        }
    }
}

impl Rule {
    /// Compiles one rule; `field_index` resolves a field name to its position.
    pub(crate) fn compile(
        spec: &RuleSpec,
        field_index: impl Fn(&Spanned<String>) -> Result<usize, CompileError>,
    ) -> Result<Rule, CompileError> {
        let [kind] = spec.declared()[..] else {
            return Err(error_at(
                &spec.name,
                format!(
                    "rule `{}` must declare exactly one of {KIND_NAMES}",
                    spec.name.value
                ),
            ));
        };
        Ok(Rule {
            name: Arc::from(spec.name.value.as_str()),
            retryable: spec.retryable,
            field: field_index(kind.field())?,
            freshness: spec.freshness.is_some(),
            operator_context: spec.membership.is_some() || spec.lookup.is_some(),
            check: kind.compile(&spec.name)?,
        })
    }

    /// Checks the value of the rule's field. `field` and `pointer` name it for the operator.
    pub(crate) fn evaluate(
        &self,
        value: Option<Node<'_>>,
        field: &str,
        pointer: &str,
        request: &Request,
        now: SystemTime,
    ) -> Result<(), Fault> {
        let outcome = match value {
            None => Err(absent(field)),
            Some(value) => self.check.check(value, field, request, now),
        };
        outcome.map_err(|violation| self.fault(violation, pointer))
    }

    /// A broken rule's fault: off the admission path, so its code stays out of the hot loop's
    /// instruction cache.
    #[cold]
    #[inline(never)]
    fn fault(&self, violation: Violation, pointer: &str) -> Fault {
        Fault::new(
            Layer::Semantic,
            self.name.to_string(),
            violation.message,
            violation.hint,
        )
        .at(pointer)
        .retryable(self.retryable)
    }

    /// The trusted context keys this rule reads.
    pub(crate) fn context_keys(&self) -> Vec<&str> {
        self.check.context_keys()
    }
}

#[cold]
#[inline(never)]
fn absent(field: &str) -> Violation {
    Violation::new(
        format!("field `{field}` is absent, so the rule cannot hold"),
        "make the schema require the field, or drop the rule",
    )
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
