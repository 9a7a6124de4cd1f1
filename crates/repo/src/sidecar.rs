//! The sidecar `<case>.expect.yaml`: the request a fixture runs under, the contract versions it
//! runs against, and what the gate must decide, parsed once into types, every error at its line.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::sync::LazyLock;

use serde::Deserialize;
use serde_saphyr::Spanned;
use toolgate_gate::internals::{
    SchemaValidator, YamlError, read_strict_yaml, standalone_validator, yaml_schema_errors,
};
use toolgate_gate::{Decision, ErrorCode, Layer, Outcome};

/// The sidecar's JSON Schema, published by `toolgate schema sidecar`: the reader holds every
/// sidecar to it, so the schema an editor validates with is the one toolgate reads by.
pub const SCHEMA: &str = include_str!("../schemas/sidecar.schema.json");

/// [`SCHEMA`], compiled once.
static SIDECAR_SCHEMA: LazyLock<SchemaValidator> = LazyLock::new(|| {
    let schema: serde_json::Value =
        serde_json::from_str(SCHEMA).expect("the bundled sidecar schema is JSON");
    standalone_validator(&schema).expect("the bundled sidecar schema compiles")
});

/// What the gate must decide about a fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectation {
    /// A success (or, for an action, a call).
    Admitted,
    /// A contract-valid upstream failure, with the code and retryable flag the agent sees.
    AdmittedFailure {
        /// The agent-visible code.
        code: ErrorCode,
        /// The agent-visible retryable flag.
        retryable: bool,
    },
    /// A rejection at a named layer: a schema test cannot silently pass at the parse layer.
    Rejected {
        /// The layer that rejects.
        layer: Layer,
        /// The rule within the layer; always named for the semantic layer.
        rule: Option<String>,
        /// The agent-visible code.
        code: ErrorCode,
        /// The agent-visible retryable flag.
        retryable: bool,
    },
}

impl Expectation {
    /// Whether `decision` is what this expects.
    pub fn is_met_by(&self, decision: &Decision) -> bool {
        match (self, decision.outcome()) {
            (Expectation::Admitted, Outcome::Admitted) => true,
            (
                Expectation::AdmittedFailure { code, retryable },
                Outcome::AdmittedFailure {
                    code: decided,
                    retryable: decided_retryable,
                },
            ) => code == decided && retryable == decided_retryable,
            (
                Expectation::Rejected {
                    layer,
                    rule,
                    code,
                    retryable,
                },
                Outcome::Rejected(rejection),
            ) => {
                *layer == rejection.layer()
                    && *code == rejection.code()
                    && *retryable == rejection.retryable()
                    && rule
                        .as_deref()
                        .is_none_or(|rule| Some(rule) == decision.rule())
            }
            _ => false,
        }
    }

    /// What `decision` is, as a sidecar expects it: the rule named for a semantic rejection (where
    /// a sidecar must name it), left open elsewhere.
    pub fn observed(decision: &Decision) -> Expectation {
        match decision.outcome() {
            Outcome::Admitted => Expectation::Admitted,
            Outcome::AdmittedFailure { code, retryable } => Expectation::AdmittedFailure {
                code: *code,
                retryable: *retryable,
            },
            Outcome::Rejected(rejection) => Expectation::Rejected {
                layer: rejection.layer(),
                rule: (rejection.layer() == Layer::Semantic)
                    .then(|| decision.rule().unwrap_or_default().to_owned()),
                code: rejection.code(),
                retryable: rejection.retryable(),
            },
        }
    }

    /// The expectation as a sidecar writes it, a YAML flow mapping.
    pub fn to_yaml(&self) -> String {
        match self {
            Expectation::Admitted => "{ outcome: admitted }".to_owned(),
            Expectation::AdmittedFailure { code, retryable } => {
                format!("{{ outcome: admitted_failure, code: {code}, retryable: {retryable} }}")
            }
            Expectation::Rejected {
                layer,
                rule,
                code,
                retryable,
            } => {
                let rule = rule
                    .as_ref()
                    .map(|rule| format!(", rule: {}", yaml_string(rule)))
                    .unwrap_or_default();
                format!(
                    "{{ outcome: rejected, layer: {layer}, code: {code}, retryable: {retryable}{rule} }}"
                )
            }
        }
    }

    /// Whether this expects a rejection.
    pub fn is_rejection(&self) -> bool {
        matches!(self, Expectation::Rejected { .. })
    }

    /// The layer a rejection is expected at.
    pub fn layer(&self) -> Option<Layer> {
        match self {
            Expectation::Rejected { layer, .. } => Some(*layer),
            _ => None,
        }
    }
}

impl fmt::Display for Expectation {
    /// In the words the report uses for what the gate decided.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expectation::Admitted => f.write_str("admitted"),
            Expectation::AdmittedFailure { code, retryable } => {
                write!(f, "admitted failure {code}, {}", retry_words(*retryable))
            }
            Expectation::Rejected {
                layer,
                rule,
                code,
                retryable,
            } => {
                write!(f, "rejected at {layer}")?;
                if let Some(rule) = rule {
                    write!(f, ", rule {rule}")?;
                }
                write!(f, ": {code}, {}", retry_words(*retryable))
            }
        }
    }
}

/// A string as a YAML scalar that reads back as exactly this string: a JSON string literal,
/// which YAML reads as a double-quoted scalar.
pub fn yaml_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// `retryable` or `not retryable`.
pub fn retry_words(retryable: bool) -> &'static str {
    if retryable {
        "retryable"
    } else {
        "not retryable"
    }
}

/// What the gate must decide about a fixture: the same under every contract version, or one
/// expectation per version (`expect_by_version:`), as a contract bump changes what is admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectations {
    /// The same under every version it runs against.
    Every(Expectation),
    /// Per version, by version name (`v1`, `v2`, …).
    ByVersion(Vec<(String, Expectation)>),
}

impl Expectations {
    /// What the gate must decide under `version`.
    pub fn for_version(&self, version: &str) -> Option<&Expectation> {
        match self {
            Expectations::Every(expectation) => Some(expectation),
            Expectations::ByVersion(by_version) => by_version
                .iter()
                .find(|(name, _)| name == version)
                .map(|(_, expectation)| expectation),
        }
    }

    /// Every expectation it states.
    pub fn all(&self) -> Vec<&Expectation> {
        match self {
            Expectations::Every(expectation) => vec![expectation],
            Expectations::ByVersion(by_version) => by_version
                .iter()
                .map(|(_, expectation)| expectation)
                .collect(),
        }
    }
}

/// A parsed sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sidecar {
    /// What the fixture is, for people reading the report.
    pub description: Option<String>,
    /// A request file in `fixtures/<tool>/` (default `request.json`).
    pub request: Option<String>,
    /// Overrides the request file's id.
    pub request_id: Option<String>,
    /// Overrides the request file's decision time.
    pub now: Option<String>,
    /// The upstream status the adapter saw.
    pub upstream_status: Option<u16>,
    /// The contract versions it runs against (default: every published version; with
    /// per-version expectations, exactly the versions they name).
    pub versions: Option<Vec<String>>,
    /// What the gate must decide, for every version it runs against.
    pub expect: Expectations,
    /// Strings that must never reach the agent.
    pub canaries: Vec<String>,
    /// Legacy fixtures: the accepted fixture with the same facts in the current shape.
    pub twin: Option<String>,
    /// The raw file is a response built from the schema, not one the upstream sent.
    pub synthesized: bool,
    /// Why a tool resting only on synthesized responses is locked all the same.
    pub accepted_unproven: Option<String>,
}

/// The sidecar as written, before its expectation is checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SidecarFile {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    request: Option<Spanned<String>>,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    now: Option<String>,
    #[serde(default)]
    upstream_status: Option<u16>,
    #[serde(default)]
    versions: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    expect: Option<Spanned<ExpectationFile>>,
    #[serde(default)]
    expect_by_version: Option<Spanned<BTreeMap<String, Spanned<ExpectationFile>>>>,
    /// No longer read: refused with a message that says why.
    #[serde(default)]
    covers: Option<Spanned<serde::de::IgnoredAny>>,
    #[serde(default)]
    canaries: Vec<String>,
    #[serde(default)]
    twin: Option<String>,
    #[serde(default)]
    synthesized: bool,
    #[serde(default)]
    accepted_unproven: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectationFile {
    outcome: OutcomeName,
    #[serde(default)]
    layer: Option<Spanned<String>>,
    #[serde(default)]
    code: Option<Spanned<String>>,
    #[serde(default)]
    retryable: Option<bool>,
    #[serde(default)]
    rule: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutcomeName {
    Admitted,
    AdmittedFailure,
    Rejected,
}

impl Sidecar {
    /// Whether the fixture runs against contract version `version` (`v1`, ...).
    pub fn runs_against(&self, version: &str) -> bool {
        self.versions
            .as_ref()
            .is_none_or(|versions| versions.iter().any(|wanted| wanted == version))
    }

    /// Reads a sidecar's text, checking that its expectation is complete and consistent.
    /// Errors carry the line and column they are about.
    pub fn parse(text: &str) -> Result<Sidecar, YamlError> {
        // The repository's one YAML dialect, shared with contract.yaml.
        let file: SidecarFile = read_strict_yaml(text)?;
        let at = |location: serde_saphyr::Location, message: String| YamlError {
            line: Some((location.line(), location.column())),
            message,
        };
        let checked = |expect: Spanned<ExpectationFile>| {
            expect
                .value
                .check()
                .map_err(|(message, location)| at(location.unwrap_or(expect.referenced), message))
        };
        let (expect, versions) = match (file.expect, file.expect_by_version, file.versions) {
            (Some(expect), None, versions) => (
                Expectations::Every(checked(expect)?),
                versions
                    .map(|versions| {
                        check_versions(&versions.value)
                            .map_err(|message| at(versions.referenced, message))
                            .map(|()| versions.value)
                    })
                    .transpose()?,
            ),
            (None, Some(by_version), None) => {
                let names: Vec<String> = by_version.value.keys().cloned().collect();
                check_versions(&names).map_err(|message| {
                    at(
                        by_version.referenced,
                        message.replace("versions: ", "expect_by_version: "),
                    )
                })?;
                let mut expectations = Vec::new();
                for (name, expect) in by_version.value {
                    expectations.push((name, checked(expect)?));
                }
                (Expectations::ByVersion(expectations), Some(names))
            }
            (None, Some(by_version), Some(_)) => {
                return Err(at(
                    by_version.referenced,
                    "expect_by_version already says which versions the fixture runs against; remove `versions:`".to_owned(),
                ));
            }
            (Some(expect), Some(_), _) => {
                return Err(at(
                    expect.referenced,
                    "give either `expect:` (the same under every version) or `expect_by_version:`, not both".to_owned(),
                ));
            }
            (None, None, _) => {
                return Err(YamlError {
                    line: None,
                    message:
                        "no `expect:` (or `expect_by_version:`): say what the gate must decide"
                            .to_owned(),
                });
            }
        };
        if let Some(covers) = &file.covers {
            return Err(at(
                covers.referenced,
                "covers: is no longer read: the obvious cases are proven by mutants the coverage check derives from the accepted fixtures, not by a claim; remove it".to_owned(),
            ));
        }
        if let Some(request) = &file.request {
            check_request_name(&request.value)
                .map_err(|message| at(request.referenced, message))?;
        }
        // Last, the published schema (`toolgate schema sidecar`), as contracts are held to theirs:
        // what an editor validating with it accepts is what this reader accepts (a quoted
        // `upstream_status: "503"` is a string, not a status).
        if let Err(errors) = yaml_schema_errors(text, &SIDECAR_SCHEMA) {
            return Err(errors.into_iter().next().unwrap_or(YamlError {
                line: None,
                message: "does not match the sidecar schema".to_owned(),
            }));
        }
        Ok(Sidecar {
            description: file.description,
            request: file.request.map(|request| request.value),
            request_id: file.request_id,
            now: file.now,
            upstream_status: file.upstream_status,
            versions,
            expect,
            canaries: file.canaries,
            twin: file.twin,
            synthesized: file.synthesized,
            accepted_unproven: file.accepted_unproven,
        })
    }
}

type Located = (String, Option<serde_saphyr::Location>);

/// `request:` names a file beside the tool's other request files, nothing else: a path could
/// reach outside the repository.
fn check_request_name(name: &str) -> Result<(), String> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.starts_with('~');
    if plain {
        Ok(())
    } else {
        Err(format!(
            "request: {name:?} must be a plain file name in fixtures/<tool>/ (no folders, no `..`, no absolute path), e.g. request.json"
        ))
    }
}

/// `versions:` lists each version once, as `vN`; an empty list would run the fixture nowhere.
pub fn check_versions(versions: &[String]) -> Result<(), String> {
    if versions.is_empty() {
        return Err(
            "versions: [] runs this fixture against no contract version, so it would silently test nothing; list the versions (e.g. [v1]) or remove the key to run against all"
                .to_owned(),
        );
    }
    for (index, version) in versions.iter().enumerate() {
        if crate::repository::parse_version(version).is_none() {
            return Err(format!(
                "versions: {version:?} is not a version folder name such as v1"
            ));
        }
        if versions[..index].contains(version) {
            return Err(format!("versions: {version} is listed twice"));
        }
    }
    Ok(())
}

/// A sidecar's text made to expect `expectation` under `version` as well, as a contract bump
/// records what its new version decides: an `expect:` that holds under every version becomes
/// `expect_by_version:`, its expectation under each of `earlier` and `expectation` under
/// `version`; an `expect_by_version:` gains a line. Every other line, comments included, is kept.
/// `None` when the text is not laid out so (no top-level `expect:` or `expect_by_version:` whose
/// block can be told, a `versions:` list), or the result would not read back as intended: for a
/// person to edit.
pub fn with_version_expectation(
    text: &str,
    earlier: &[String],
    version: &str,
    expectation: &Expectation,
) -> Option<String> {
    let before = Sidecar::parse(text).ok()?;
    let decided = match &before.expect {
        Expectations::Every(_) => earlier.iter().any(|name| name == version),
        Expectations::ByVersion(by_version) => by_version.iter().any(|(name, _)| name == version),
    };
    if decided {
        return None;
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|line| line.starts_with("expect:") || line.starts_with("expect_by_version:"))?;
    // The key's block: the lines after it that are indented, blank or comments.
    let mut end = start + 1;
    while end < lines.len()
        && (lines[end].starts_with([' ', '\t'])
            || lines[end].trim().is_empty()
            || lines[end].starts_with('#'))
    {
        end += 1;
    }
    // Trailing blank lines and comments belong to what follows.
    while end > start + 1 && (lines[end - 1].trim().is_empty() || lines[end - 1].starts_with('#')) {
        end -= 1;
    }
    let added = format!("  {version}: {}\n", expectation.to_yaml());
    let block = match &before.expect {
        Expectations::Every(every) if before.versions.is_none() => {
            let mut block = "expect_by_version:\n".to_owned();
            for name in earlier {
                let _ = writeln!(block, "  {name}: {}", every.to_yaml());
            }
            block + &added
        }
        Expectations::ByVersion(_) => {
            let mut block: String = lines[start..end].concat();
            if !block.ends_with('\n') {
                block.push('\n');
            }
            block + &added
        }
        Expectations::Every(_) => return None,
    };
    let rewritten = format!(
        "{}{block}{}",
        lines[..start].concat(),
        lines[end..].concat()
    );
    let after = Sidecar::parse(&rewritten).ok()?;
    let kept = match &before.expect {
        Expectations::Every(every) => earlier
            .iter()
            .all(|name| after.expect.for_version(name) == Some(every)),
        Expectations::ByVersion(by_version) => by_version
            .iter()
            .all(|(name, old)| after.expect.for_version(name) == Some(old)),
    };
    (kept && after.expect.for_version(version) == Some(expectation)).then_some(rewritten)
}

impl ExpectationFile {
    fn check(self) -> Result<Expectation, Located> {
        let layer = match &self.layer {
            None => None,
            Some(layer) => Some(Layer::from_name(&layer.value).ok_or_else(|| {
                let known: Vec<&str> = Layer::ALL.iter().map(|layer| layer.as_str()).collect();
                (
                    format!(
                        "expect.layer `{}` is not a layer ({})",
                        layer.value,
                        known.join(", ")
                    ),
                    Some(layer.referenced),
                )
            })?),
        };
        let code = match &self.code {
            None => None,
            Some(code) => Some(ErrorCode::from_wire(&code.value).ok_or_else(|| {
                let known: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
                (
                    format!(
                        "expect.code `{}` is not an agent-visible code ({})",
                        code.value,
                        known.join(", ")
                    ),
                    Some(code.referenced),
                )
            })?),
        };
        let whole = |message: &str| (message.to_owned(), None);
        match (self.outcome, layer, code, self.retryable, self.rule) {
            (OutcomeName::Admitted, None, None, None, None) => Ok(Expectation::Admitted),
            (OutcomeName::Admitted, ..) => Err(whole(
                "expect: an admitted outcome takes no layer, code, retryable or rule",
            )),
            (OutcomeName::AdmittedFailure, None, Some(code), Some(retryable), None) => {
                Ok(Expectation::AdmittedFailure { code, retryable })
            }
            (OutcomeName::AdmittedFailure, None, _, _, None) => Err(whole(
                "expect: `admitted_failure` needs `code` and `retryable`",
            )),
            (OutcomeName::AdmittedFailure, ..) => {
                Err(whole("expect: `admitted_failure` takes no layer or rule"))
            }
            (OutcomeName::Rejected, Some(Layer::Semantic), Some(_), Some(_), None) => Err(whole(
                "expect: a semantic rejection needs `rule`: the name of the contract rule that fires",
            )),
            (OutcomeName::Rejected, Some(layer), Some(code), Some(retryable), rule) => {
                Ok(Expectation::Rejected {
                    layer,
                    rule,
                    code,
                    retryable,
                })
            }
            (OutcomeName::Rejected, ..) => Err(whole(
                "expect: `rejected` needs `layer`, `code` and `retryable` (so a schema test cannot silently pass at the parse layer)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bump_writes_what_its_version_decides_keeping_every_other_line() {
        let rejected = Expectation::Rejected {
            layer: Layer::Schema,
            rule: None,
            code: ErrorCode::InvalidResponse,
            retryable: false,
        };
        let every = "# kept\ndescription: \"d\"\nexpect:\n  outcome: admitted\n\n# also kept\nnow: \"2026-01-01T00:00:00Z\"\n";
        let versions = ["v1".to_owned(), "v2".to_owned()];
        assert_eq!(
            with_version_expectation(every, &versions, "v3", &rejected).as_deref(),
            Some(
                "# kept\ndescription: \"d\"\nexpect_by_version:\n  v1: { outcome: admitted }\n  v2: { outcome: admitted }\n  v3: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n\n# also kept\nnow: \"2026-01-01T00:00:00Z\"\n"
            )
        );
        let by_version = "expect_by_version:\n  v1: { outcome: admitted }\n  # why v2 differs\n  v2: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n";
        assert_eq!(
            with_version_expectation(by_version, &versions, "v3", &Expectation::Admitted)
                .as_deref(),
            Some(format!("{by_version}  v3: {{ outcome: admitted }}\n").as_str())
        );
        // Already decided for v3, pinned to some versions, or not a sidecar: left for a person.
        let pinned = "versions: [v1]\nexpect: { outcome: admitted }\n";
        assert_eq!(
            with_version_expectation(pinned, &versions, "v3", &rejected),
            None
        );
        assert_eq!(
            with_version_expectation(every, &versions, "v2", &rejected),
            None
        );
        assert_eq!(
            with_version_expectation("expect: [", &versions, "v3", &rejected),
            None
        );
    }

    #[test]
    fn a_complete_rejection_parses_into_its_variant() {
        let sidecar = Sidecar::parse(
            "expect: { outcome: rejected, layer: semantic, rule: project_binding, code: INVALID_RESPONSE, retryable: false }\n",
        )
        .unwrap();
        assert_eq!(
            sidecar.expect,
            Expectations::Every(Expectation::Rejected {
                layer: Layer::Semantic,
                rule: Some("project_binding".to_owned()),
                code: ErrorCode::InvalidResponse,
                retryable: false,
            })
        );
        assert_eq!(
            sidecar.expect.all()[0].to_string(),
            "rejected at semantic, rule project_binding: INVALID_RESPONSE, not retryable"
        );
    }

    #[test]
    fn a_fixture_can_expect_another_outcome_under_each_version() {
        let sidecar = Sidecar::parse(
            "expect_by_version:\n  v1: { outcome: admitted }\n  v2: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n",
        )
        .unwrap();
        assert_eq!(
            sidecar.versions,
            Some(vec!["v1".to_owned(), "v2".to_owned()])
        );
        assert_eq!(
            sidecar.expect.for_version("v1"),
            Some(&Expectation::Admitted)
        );
        assert!(sidecar.expect.for_version("v2").unwrap().is_rejection());
        assert_eq!(sidecar.expect.for_version("v3"), None);
        for (text, expected) in [
            (
                "expect_by_version: {}",
                "1:20: expect_by_version: [] runs this fixture against no",
            ),
            (
                "expect: { outcome: admitted }\nexpect_by_version: { v1: { outcome: admitted } }",
                "not both",
            ),
            (
                "versions: [v1]\nexpect_by_version: { v1: { outcome: admitted } }",
                "remove `versions:`",
            ),
            (
                "expect_by_version: { v1: { outcome: rejected } }",
                "1:26: expect: `rejected` needs",
            ),
            ("description: x", "no `expect:`"),
        ] {
            let error = Sidecar::parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?} → {error}");
        }
    }

    #[test]
    fn incomplete_or_inconsistent_expectations_are_refused_at_their_line() {
        for (text, expected) in [
            (
                "expect: { outcome: rejected, layer: schema }",
                "1:9: expect: `rejected` needs `layer`, `code` and `retryable`",
            ),
            (
                "description: x\nexpect: { outcome: rejected, layer: semantic, code: INVALID_RESPONSE, retryable: true }",
                "2:9: expect: a semantic rejection needs `rule`",
            ),
            (
                "expect: { outcome: admitted, layer: schema }",
                "takes no layer",
            ),
            (
                "expect:\n  outcome: rejected\n  layer: shema\n  code: INVALID_RESPONSE\n  retryable: false",
                "3:10: expect.layer `shema` is not a layer",
            ),
            (
                "expect: { outcome: rejected, layer: schema, code: BAD, retryable: false }",
                "not an agent-visible code",
            ),
            (
                "expect: { outcome: admitted_failure, code: NOT_FOUND }",
                "needs `code` and `retryable`",
            ),
            (
                "expect: { outcome: admitted }\ncovers: [obvious]",
                "obvious",
            ),
            (
                "expect: { outcome: admitted }\nexpected: 1",
                "unknown field",
            ),
            (
                "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: no }",
                "boolean",
            ),
        ] {
            let error = Sidecar::parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?} → {error}");
        }
    }
}
