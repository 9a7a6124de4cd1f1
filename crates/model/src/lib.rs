//! What toolgate knows about a contract version beyond what the gate compiles: `contract.yaml` as
//! data, and its JSON Schemas normalized into facts that can be intersected, sampled and compared
//! (`schema/`), with pattern inclusion decided on automata (`strings`). `toolgate diff` compares
//! two versions on it, `toolgate lint` inspects one, and the response mutants read the correlation
//! members and rules from it; both edit documents by JSON pointer (`edit`).
//!
//! Architecture invariant: the model decides only what it models. A keyword it does not
//! understand makes its node `Unknown`, and every question about an unknown node is answered
//! "undecided" with the reason, never guessed.
//!
//! API boundary: the re-exports below, and two namespaces of free functions read by their
//! module's name (`edit::with_value`, `strings::difference`).

pub mod edit;
pub mod layout;
mod schema;
pub mod strings;
mod undecided;
mod version;

pub use schema::{
    Bound, CONJUNCTS, Conjunct, Facts, JsonType, Kind, Location, NODE_BUDGET, Node, Schemas, Union,
    Values, admits, alternatives, canonical, disjoint_formats, example, example_avoiding,
    format_examples, format_min_length, intersect, name_matches, no_type_in_common,
    number_candidates, of_type, same_value, string_examples, undeclared_kinds,
    without_impossible_objects,
};
pub use strings::Strings;
pub use undecided::Undecided;
pub use version::{RuleDoc, ShapeDoc, Version, load};
