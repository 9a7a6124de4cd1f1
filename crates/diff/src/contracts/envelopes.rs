//! The failure envelopes each version can show the agent (code and retryable flag), and a
//! change to them.

use super::*;

/// Every failure envelope the agent can be shown: `(code, retryable)`.
pub(super) fn envelopes(version: &Version) -> Result<BTreeSet<(ErrorCode, bool)>, String> {
    let policy = version.contract.retry_policy();
    let mut set = BTreeSet::new();
    // Anything malformed, and an unreachable upstream, are always possible.
    set.insert((
        ErrorCode::InvalidResponse,
        policy.is_retryable(ErrorCode::InvalidResponse),
    ));
    set.insert((
        ErrorCode::UpstreamUnavailable,
        policy.is_retryable(ErrorCode::UpstreamUnavailable),
    ));
    for rule in version.rules() {
        set.insert((ErrorCode::InvalidResponse, rule.retryable));
    }
    for shape in version.shapes() {
        let Some(pointer) = &shape.error_code else {
            continue;
        };
        let root = version.schemas.root(&shape.schema);
        for code in error_codes(&root, pointer)? {
            set.insert((code, policy.is_retryable(code)));
        }
    }
    Ok(set)
}

/// The codes an admitted failure can carry: the values the schema allows at the code's pointer.
pub(super) fn error_codes(node: &Node, pointer: &str) -> Result<BTreeSet<ErrorCode>, String> {
    let tokens: Vec<&str> = pointer.split('/').skip(1).collect();
    let mut found = BTreeSet::new();
    fn walk(node: &Node, tokens: &[&str], found: &mut BTreeSet<ErrorCode>) -> Result<(), String> {
        let facts = match &node.kind {
            Kind::Nothing => return Ok(()),
            Kind::Facts(facts) => facts,
            _ => {
                return Err(format!(
                    "the failure code's schema at {} is not one the differ models",
                    node.at
                ));
            }
        };
        if facts.union.is_some() {
            for alternative in toolgate_model::alternatives(node) {
                walk(&alternative, tokens, found)?;
            }
            return Ok(());
        }
        match tokens.split_first() {
            Some((first, rest)) => walk(&facts.member(first), rest, found),
            None => {
                let values = facts.values.as_ref().ok_or_else(|| {
                    format!("the failure code at {} is not a closed set", node.at)
                })?;
                found.extend(
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .filter_map(ErrorCode::from_wire),
                );
                Ok(())
            }
        }
    }
    walk(node, &tokens, &mut found)?;
    Ok(found)
}

pub(super) fn compare_envelopes(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let (old, new) = match (envelopes(from), envelopes(to)) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(reason), _) | (_, Err(reason)) => {
            out.push(
                Change::new(
                    "failure_envelopes_unknown",
                    format!("the failure envelopes cannot be listed: {reason}"),
                    CONTRACT_FILE,
                    "",
                )
                .with(BumpVerdict::AgentWidened, Effect::Unknown(reason.clone()))
                .with(BumpVerdict::AgentNarrowed, Effect::Unknown(reason)),
            );
            return;
        }
    };
    let envelope =
        |(code, retryable): &(ErrorCode, bool)| format!("{code} (retryable: {retryable})");
    for pair in new.difference(&old) {
        out.push(
            Change::new(
                "failure_envelope_added",
                format!("the agent can now be told {}", envelope(pair)),
                CONTRACT_FILE,
                "",
            )
            .with(
                BumpVerdict::AgentWidened,
                Effect::Yes(Probe::envelope(pair.0, pair.1)),
            ),
        );
    }
    for pair in old.difference(&new) {
        out.push(
            Change::new(
                "failure_envelope_removed",
                format!("the agent can no longer be told {}", envelope(pair)),
                CONTRACT_FILE,
                "",
            )
            .with(
                BumpVerdict::AgentNarrowed,
                Effect::Yes(Probe::envelope(pair.0, pair.1)),
            ),
        );
    }
}
