//! `toolgate new`: a contract in one command, from an OpenAPI description, JSON samples of a
//! tool's output, or an MCP server's tools.
//!
//! Each source yields a schema (converted, or inferred) and real responses where the source has
//! them; [`plan()`] turns them into a contract version that is closed and bounded, with every
//! assumption written into `contract.yaml`'s header, a request file, fixtures with sidecars, and
//! a list of what is left to decide. [`plan::write`] writes it, never over an existing contract.

pub mod bump;
pub mod bundle;
pub mod convert;
pub mod infer;
pub mod merge;
pub mod openapi;
pub mod plan;
pub mod render;
pub mod sources;

pub use convert::{Assumption, Converter, Dialect};
pub use plan::{ErrorMapping, Field, Origin, Parts, Plan, plan, write};
