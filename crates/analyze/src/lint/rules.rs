//! The lint's rules, one line each in the `rules!` table (its doc comment is the description the
//! report and the user guide print), and the finding a rule makes.

use std::fmt;

macro_rules! rules {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal; )*) => {
        /// One lint rule.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Rule {
            /// Every rule, in report order.
            pub const ALL: &'static [Rule] = &[ $( Rule::$variant, )* ];

            /// The name reports and `lint.yaml` use.
            pub fn name(self) -> &'static str {
                match self { $( Rule::$variant => $name, )* }
            }

            /// What it checks, in one line (its doc comment).
            pub fn describe(self) -> &'static str {
                match self { $( Rule::$variant => concat!($($doc),*).trim_ascii(), )* }
            }
        }
    };
}

rules! {
    /// Every object is closed: `additionalProperties: false`, or `unevaluatedProperties: false` where it is composed.
    ObjectOpen = "object_open";
    /// Every value has a type (or an `enum`/`const`): an untyped schema admits any JSON value.
    ValueUntyped = "value_untyped";
    /// Every string is bounded by `maxLength`, `pattern`, `enum` or `const`.
    StringUnbounded = "string_unbounded";
    /// Every array is bounded by `maxItems`.
    ArrayUnbounded = "array_unbounded";
    /// A map (an object whose `additionalProperties` is a schema) is bounded: `maxProperties`, and `propertyNames` with a `maxLength`, `pattern` or `enum`.
    MapUnbounded = "map_unbounded";
    /// A number that is an identifier (`id`, `…_id`) has a `minimum` and a `maximum`.
    IdentifierUnbounded = "identifier_unbounded";
    /// A date-like string (`…_at`, `…_time`, `…_date`, or one a freshness rule reads) carries a `format`.
    TimestampWithoutFormat = "timestamp_without_format";
    /// The request id is bounded: `maxLength`, a `pattern` whose strings have a longest one, or an `enum`/`const`.
    RequestIdUnbounded = "request_id_unbounded";
    /// Every promised field exists, required, in every shape that can be admitted as a success.
    FieldMissing = "field_missing";
    /// A promised field is a scalar or a closed object, so projection never forwards what the upstream invents.
    PromisedFieldOpen = "promised_field_open";
    /// The agent schema is closed: every object in it has `additionalProperties: false`.
    AgentSchemaOpen = "agent_schema_open";
    /// A schema uses a keyword the lint does not model: it cannot vouch for that part; review it by hand.
    NotModelled = "not_modelled";
}

impl Rule {
    /// The rule called `name`.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|rule| rule.name() == name)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintFinding {
    /// The tool.
    pub tool: String,
    /// The contract version.
    pub version: String,
    /// The file in the version folder (`contract.yaml` or a schema file).
    pub file: String,
    /// The JSON pointer in that file.
    pub pointer: String,
    /// The rule.
    pub rule: Rule,
    /// The promised field it is about (`field_missing`: one finding, and one acceptance, per
    /// field, however many are missing from the same object).
    pub field: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}
