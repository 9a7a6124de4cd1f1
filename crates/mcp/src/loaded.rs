//! One contract set, as calls use it: the tools and their contracts, the operator's context they
//! need, the pins of the upstream's tools, and the digest that names the set. The proxy holds one
//! and swaps it on a reload (`proxy/reload.rs`); a door holds one for its life.

use std::collections::BTreeMap;
use std::path::Path;

use toolgate_front::ShadowPlan;
use toolgate_gate::Sha256Digest;
use toolgate_repo::{Repository, UsageError};

use crate::context::OperatorContext;
use crate::pins::{self, Pin};
use crate::tools::Registry;

/// One contract set, as calls use it: the tools and their contracts, the operator's context
/// they need, the pins of the upstream's tools, and what names it.
pub(crate) struct Loaded {
    pub(crate) registry: Registry,
    pub(crate) context: OperatorContext,
    pub(crate) pins: BTreeMap<String, Pin>,
    /// `sha256:…`: the bundle's digest, or (a folder) the digest of every contract's.
    pub(crate) digest: String,
}

impl Loaded {
    /// The set `repository` holds, under `plan`, with the context at `context`.
    pub(crate) fn of(
        repository: &Repository,
        plan: &ShadowPlan,
        context: Option<&Path>,
    ) -> Result<Loaded, UsageError> {
        Loaded::of_only(repository, plan, context, None)
    }

    /// As [`Loaded::of`], of the tool `only` names alone ([`Registry::load_only`]).
    pub(crate) fn of_only(
        repository: &Repository,
        plan: &ShadowPlan,
        context: Option<&Path>,
        only: Option<&str>,
    ) -> Result<Loaded, UsageError> {
        let registry = Registry::load_only(repository, plan, only)?;
        // A key only the operator may supply and nobody does is a configuration error, not a
        // rule that fails every call.
        let context = OperatorContext::load(context, &registry)?;
        let pins = pins::read_pins(repository, registry.iter().map(|(name, _)| name))?;
        let digest = match repository.root().bundle_digest() {
            Some(digest) => format!("sha256:{}", digest.to_hex()),
            None => set_digest(&registry),
        };
        Ok(Loaded {
            registry,
            context,
            pins,
            digest,
        })
    }
}

/// A folder's set named by its contracts: the SHA-256 of each one's tool, version and digest,
/// shadows and argument contracts among them.
fn set_digest(registry: &Registry) -> String {
    let mut lines = String::new();
    for (name, tool) in registry.iter() {
        let contracts = std::iter::once(&tool.contract)
            .chain(tool.shadow.as_ref())
            .chain(tool.arguments.as_ref().map(|arguments| &arguments.contract));
        for contract in contracts {
            lines.push_str(&format!(
                "{name} {} {}\n",
                contract.version(),
                contract.digest().to_hex()
            ));
        }
    }
    format!("sha256:{}", Sha256Digest::of(lines.as_bytes()).to_hex())
}
