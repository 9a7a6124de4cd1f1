//! SARIF 2.1.0 logs (`--format sarif` of `toolgate test`, `lint` and `diff`), so findings land in
//! GitHub code scanning (and any other SARIF viewer) beside the other scanners a team runs.
//!
//! Each verb maps its own findings to [`Finding`]s and its checks to [`Rule`]s; this module owns
//! everything SARIF itself asks: the log's shape (serde-sarif's types, generated from the OASIS
//! schema), a file's URI, the line a JSON pointer is written on, a fingerprint that survives
//! unrelated edits, and what is escaped. Every string that came from the repository (file names,
//! schema values quoted in a message) is serialized as JSON data, never interpreted, and hidden
//! characters are made visible as everywhere else toolgate prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_sarif::sarif;
use sha2::{Digest, Sha256};
use toolgate_gate::internals::escape_hidden;

/// The schema a log names, as GitHub and the OASIS tooling expect it.
const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The most characters of one message: a snapshot diff or a witness is detail, not an essay.
const MAX_MESSAGE_CHARS: usize = 4_000;

/// How serious a finding is, as SARIF names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// It fails the run.
    Error,
    /// Someone should look; it does not fail the run.
    Warning,
    /// For information.
    Note,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }

    fn result_level(self) -> sarif::ResultLevel {
        match self {
            Level::Error => sarif::ResultLevel::Error,
            Level::Warning => sarif::ResultLevel::Warning,
            Level::Note => sarif::ResultLevel::Note,
        }
    }
}

/// One check a verb runs: a SARIF rule (`reportingDescriptor`).
#[derive(Debug, Clone)]
pub struct Rule {
    /// The stable id results name (`upstream-breaking`, `open-object`, `snapshot`).
    pub id: &'static str,
    /// One line: what the rule finds.
    pub summary: String,
    /// What it means and what to do about it.
    pub help: String,
    /// Its level when nothing else decides.
    pub level: Level,
}

/// Where a finding is: a file of the repository, and inside it a line and a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file, relative to the repository root.
    pub file: PathBuf,
    /// The line, 1-based, when known (line 1 otherwise: code scanning needs one).
    pub line: Option<usize>,
    /// The JSON pointer inside the file, when the finding is about one value.
    pub pointer: Option<String>,
}

impl Place {
    /// `file` at its top.
    pub fn file(file: impl Into<PathBuf>) -> Place {
        Place {
            file: file.into(),
            line: None,
            pointer: None,
        }
    }

    /// The value at `pointer` in `file`, whose text is `text`: its line is found where the
    /// pointer's last member name (or array element) is written.
    pub fn pointer(file: impl Into<PathBuf>, text: &str, pointer: &str) -> Place {
        Place {
            file: file.into(),
            line: line_of(text, pointer),
            pointer: Some(pointer.to_owned()),
        }
    }
}

/// One result.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The [`Rule::id`] it is an instance of.
    pub rule: &'static str,
    /// Its level.
    pub level: Level,
    /// What is wrong, and what to do; capped at a few thousand characters.
    pub message: String,
    /// Where, when it is about a file.
    pub place: Option<Place>,
    /// Why the finding is accepted, when an acceptance list accepts it (a SARIF suppression:
    /// viewers show it as dismissed, and it does not fail the run).
    pub accepted: Option<String>,
    /// What makes this finding the same one in the next run (a case name, a change's kind):
    /// with the rule and the place, it is hashed into the finding's fingerprint, so an
    /// unrelated edit that moves lines does not open a new alert.
    pub identity: String,
}

/// A whole run of one verb.
#[derive(Debug, Clone)]
pub struct Log {
    /// The verb and what it ran on, as the run's category: `toolgate/lint`,
    /// `toolgate/diff/job_status`. Code scanning keeps one set of alerts per category.
    pub category: String,
    /// The repository root the places are relative to, as given on the command line.
    pub root: PathBuf,
    /// Every rule the verb can report, whether or not it did.
    pub rules: Vec<Rule>,
    /// Every finding.
    pub findings: Vec<Finding>,
    /// Where a finding about no file is shown: code scanning refuses a result without a
    /// location.
    pub fallback: Place,
    /// What stopped the verb from doing all it was asked (a contract that does not compile):
    /// the run is marked unsuccessful and each is a notification.
    pub errors: Vec<String>,
}

impl Log {
    /// The log as pretty-printed JSON, with a trailing newline.
    pub fn render(&self) -> String {
        Log::render_all(std::slice::from_ref(self))
    }

    /// Several logs as one, a run each (one verb over several tools), in the order given.
    pub fn render_all(logs: &[Log]) -> String {
        let log = sarif::Sarif::builder()
            .schema(SCHEMA_URI)
            .version(serde_json::json!("2.1.0"))
            .runs(logs.iter().map(Log::run).collect::<Vec<_>>())
            .build();
        let mut text = serde_json::to_string_pretty(&log)
            .expect("a SARIF log of strings and numbers always serializes");
        text.push('\n');
        text
    }

    /// This log's run.
    fn run(&self) -> sarif::Run {
        let rule_index: BTreeMap<&str, usize> = self
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| (rule.id, index))
            .collect();
        let results: Vec<sarif::Result> = self
            .findings
            .iter()
            .map(|finding| self.result(finding, rule_index.get(finding.rule).copied()))
            .collect();
        let invocation = sarif::Invocation::builder()
            .execution_successful(self.errors.is_empty())
            .tool_execution_notifications(
                self.errors
                    .iter()
                    .map(|error| {
                        sarif::Notification::builder()
                            .level(serde_json::json!("error"))
                            .message(message(error))
                            .build()
                    })
                    .collect::<Vec<_>>(),
            )
            .build();
        let driver = sarif::ToolComponent::builder()
            .name("toolgate")
            .version(env!("CARGO_PKG_VERSION"))
            .semantic_version(env!("CARGO_PKG_VERSION"))
            .information_uri(env!("CARGO_PKG_REPOSITORY"))
            .rules(self.rules.iter().map(descriptor).collect::<Vec<_>>())
            .build();
        sarif::Run::builder()
            .tool(sarif::Tool::builder().driver(driver).build())
            .automation_details(
                sarif::RunAutomationDetails::builder()
                    .id(format!("{}/", self.category))
                    .build(),
            )
            .invocations(vec![invocation])
            .column_kind(serde_json::json!("unicodeCodePoints"))
            .results(results)
            .build()
    }

    fn result(&self, finding: &Finding, rule_index: Option<usize>) -> sarif::Result {
        let mut fingerprint = Sha256::new();
        for part in [
            finding.rule,
            &finding
                .place
                .as_ref()
                .map(|place| portable(&place.file))
                .unwrap_or_default(),
            finding
                .place
                .as_ref()
                .and_then(|place| place.pointer.as_deref())
                .unwrap_or_default(),
            &finding.identity,
        ] {
            // Length-prefixed, so no two different lists of parts hash alike.
            fingerprint.update((part.len() as u64).to_be_bytes());
            fingerprint.update(part.as_bytes());
        }
        let fingerprint: String = fingerprint
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let result = sarif::Result::builder()
            .rule_id(finding.rule)
            .level(finding.level.result_level())
            .message(message(&finding.message))
            .partial_fingerprints(BTreeMap::from([("toolgate/v1".to_owned(), fingerprint)]))
            .locations(vec![
                self.location(finding.place.as_ref().unwrap_or(&self.fallback)),
            ]);
        let result = result.rule_index(rule_index.map_or(-1, |index| index as i64));
        match &finding.accepted {
            Some(reason) => result
                .suppressions(vec![
                    sarif::Suppression::builder()
                        .kind(serde_json::json!("external"))
                        .status(serde_json::json!("accepted"))
                        .justification(capped(reason))
                        .build(),
                ])
                .build(),
            None => result.build(),
        }
    }

    fn location(&self, place: &Place) -> sarif::Location {
        let path = self.root.join(&place.file);
        // Places are relative to the checkout code scanning reads them in; `./` adds nothing.
        let path = path.strip_prefix(".").unwrap_or(&path);
        let artifact = if path.is_absolute() {
            sarif::ArtifactLocation::builder()
                .uri(format!("file://{}", uri_path(path)))
                .build()
        } else {
            sarif::ArtifactLocation::builder()
                .uri(uri_path(path))
                .uri_base_id("%SRCROOT%")
                .build()
        };
        let region = sarif::Region::builder()
            .start_line(place.line.unwrap_or(1) as i64)
            .build();
        let physical = sarif::PhysicalLocation::builder()
            .artifact_location(artifact)
            .region(region)
            .build();
        let location = sarif::Location::builder().physical_location(physical);
        match &place.pointer {
            Some(pointer) if !pointer.is_empty() => location
                .logical_locations(vec![
                    sarif::LogicalLocation::builder()
                        .fully_qualified_name(format!("{}#{}", portable(&place.file), pointer))
                        .kind("member")
                        .build(),
                ])
                .build(),
            _ => location.build(),
        }
    }
}

fn descriptor(rule: &Rule) -> sarif::ReportingDescriptor {
    sarif::ReportingDescriptor::builder()
        .id(rule.id)
        .name(pascal_case(rule.id))
        .short_description(multiformat(&rule.summary))
        .full_description(multiformat(&rule.summary))
        .help(multiformat(&rule.help))
        .default_configuration(
            sarif::ReportingConfiguration::builder()
                .level(serde_json::json!(rule.level.name()))
                .build(),
        )
        .build()
}

fn multiformat(text: &str) -> sarif::MultiformatMessageString {
    sarif::MultiformatMessageString::builder()
        .text(capped(text))
        .build()
}

fn message(text: &str) -> sarif::Message {
    sarif::Message::builder().text(capped(text)).build()
}

/// Hidden characters made visible (line breaks kept: viewers show them), and the text cut at
/// [`MAX_MESSAGE_CHARS`].
fn capped(text: &str) -> String {
    let text = text
        .trim_end()
        .split('\n')
        .map(|line| escape_hidden(line.strip_suffix('\r').unwrap_or(line)))
        .collect::<Vec<_>>()
        .join("\n");
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((end, _)) => format!("{}… (cut)", &text[..end]),
        None => text,
    }
}

/// `upstream-breaking` as `UpstreamBreaking`, the rule name SARIF viewers show.
fn pascal_case(id: &str) -> String {
    id.split(['-', '_'])
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// A path written with `/`, lossily decoded (a hostile name never fails a report).
fn portable(path: &Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
        .replace("//", "/")
}

/// A path as a URI path: every byte outside RFC 3986's unreserved set and `/` percent-encoded,
/// so a file name with spaces, `#`, `%` or control characters is still one valid URI.
fn uri_path(path: &Path) -> String {
    let text = portable(path);
    let mut uri = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The 1-based line on which the value at `pointer` is written in `text` (YAML, or JSON, which
/// the same parser reads): where its member name is, for an object member; where the value
/// starts, for an array element. `None` when the text does not parse that far or has no such
/// value.
pub fn line_of(text: &str, pointer: &str) -> Option<usize> {
    use serde_saphyr::granit_parser::{Event, Parser};

    let target: Vec<String> = match pointer.strip_prefix('/') {
        Some(rest) => rest
            .split('/')
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect(),
        None if pointer.is_empty() => Vec::new(),
        None => return None,
    };
    // Where the parser is: one frame per open collection, with the segment that led to it.
    enum Frame {
        Mapping {
            /// The member name just read and its line, while its value is awaited.
            key: Option<(String, usize)>,
            /// A collection used as a member name: its value can never be the target.
            complex_key: bool,
        },
        Sequence {
            index: usize,
        },
    }
    let mut frames: Vec<Frame> = Vec::new();
    // The member names and indices that lead to the innermost open collection (the root
    // collection has none).
    let mut path: Vec<String> = Vec::new();
    // Inside a collection that cannot lead to the target (or that is a member name): how many
    // collections deep, and whether the parent moves on when it closes (a member name's value
    // is still to come).
    let mut skipping = 0usize;
    let mut skipped_is_a_value = true;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.ok()?;
        let line = span.start.line();
        let opens = matches!(event, Event::MappingStart(..) | Event::SequenceStart(..));
        let closes = matches!(event, Event::MappingEnd | Event::SequenceEnd);
        if skipping > 0 {
            skipping += usize::from(opens);
            skipping -= usize::from(closes);
            if skipping == 0 && skipped_is_a_value {
                advance(&mut frames);
            }
            continue;
        }
        if closes {
            frames.pop();
            if !frames.is_empty() {
                path.pop();
            }
            advance(&mut frames);
            continue;
        }
        if !opens && !matches!(event, Event::Scalar(..) | Event::Alias(..)) {
            continue;
        }
        // A node: a member name, or a value reached by `segment`.
        let segment = match frames.last_mut() {
            None => None,
            Some(Frame::Mapping { key, complex_key }) if key.is_none() && !*complex_key => {
                if let Event::Scalar(name, ..) = &event {
                    *key = Some((name.to_string(), line));
                } else {
                    *complex_key = true;
                    if opens {
                        skipping = 1;
                        skipped_is_a_value = false;
                    }
                }
                continue;
            }
            Some(Frame::Mapping { key, .. }) => key.clone(),
            Some(Frame::Sequence { index }) => Some((index.to_string(), line)),
        };
        let is_root = frames.is_empty();
        let on_the_way = path.len() < target.len() + usize::from(is_root)
            && path.iter().zip(&target).all(|(have, want)| have == want)
            && (is_root
                || segment
                    .as_ref()
                    .is_some_and(|(name, _)| target.get(path.len()) == Some(name)));
        let length = if is_root { 0 } else { path.len() + 1 };
        if on_the_way && length == target.len() {
            return Some(segment.map_or(line, |(_, line)| line));
        }
        if !opens {
            advance(&mut frames);
        } else if on_the_way {
            if let Some((name, _)) = segment {
                path.push(name);
            }
            frames.push(if matches!(event, Event::MappingStart(..)) {
                Frame::Mapping {
                    key: None,
                    complex_key: false,
                }
            } else {
                Frame::Sequence { index: 0 }
            });
        } else {
            skipping = 1;
            skipped_is_a_value = true;
        }
    }

    /// After a value: a mapping awaits its next member name, a sequence its next element.
    fn advance(frames: &mut [Frame]) {
        match frames.last_mut() {
            Some(Frame::Mapping { key, complex_key }) => {
                *key = None;
                *complex_key = false;
            }
            Some(Frame::Sequence { index }) => *index += 1,
            None => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "\
tool: job_status
schemas:
  upstream:
    file: envelope.schema.json
promise:
  - path: /data/state
    as: state
  - path: /data/run_id
    as: 'run:id'
";

    #[test]
    fn a_pointer_is_found_on_the_line_its_member_name_is_written() {
        assert_eq!(line_of(YAML, ""), Some(1));
        assert_eq!(line_of(YAML, "/tool"), Some(1));
        assert_eq!(line_of(YAML, "/schemas"), Some(2));
        assert_eq!(line_of(YAML, "/schemas/upstream/file"), Some(4));
        assert_eq!(line_of(YAML, "/promise/1"), Some(8));
        assert_eq!(line_of(YAML, "/promise/1/as"), Some(9));
        assert_eq!(line_of(YAML, "/promise/2"), None);
        assert_eq!(line_of(YAML, "/nothing"), None);
        assert_eq!(line_of(YAML, "no slash"), None);
    }

    #[test]
    fn json_is_read_by_the_same_parser_and_escaped_names_match() {
        let json = "{\n  \"$defs\": {\n    \"a/b\": {\"type\": \"string\"},\n    \"~x\": {\n      \"enum\": [1,\n 2]\n    }\n  }\n}\n";
        assert_eq!(line_of(json, "/$defs/a~1b"), Some(3));
        assert_eq!(line_of(json, "/$defs/a~1b/type"), Some(3));
        assert_eq!(line_of(json, "/$defs/~0x/enum"), Some(5));
        assert_eq!(line_of(json, "/$defs/~0x/enum/1"), Some(6));
    }

    #[test]
    fn text_that_does_not_parse_has_no_line_and_a_complex_key_is_skipped() {
        assert_eq!(line_of("a: [1, 2\nb: 3\n", "/b"), None);
        assert_eq!(line_of("? [x]\n: 1\nb: 2\n", "/b"), Some(3));
    }

    #[test]
    fn a_log_escapes_names_and_fingerprints_what_stays_the_same() {
        let log = |line| Log {
            category: "toolgate/lint".to_owned(),
            root: PathBuf::from("."),
            rules: vec![Rule {
                id: "open-object",
                summary: "An object admits members it does not name.".to_owned(),
                help: "Close it.".to_owned(),
                level: Level::Error,
            }],
            findings: vec![Finding {
                rule: "open-object",
                level: Level::Error,
                message: "open \u{202e}object".to_owned(),
                place: Some(Place {
                    file: PathBuf::from("contracts/a b#c/v1/contract.yaml"),
                    line: Some(line),
                    pointer: Some("/schemas".to_owned()),
                }),
                accepted: None,
                identity: String::new(),
            }],
            errors: Vec::new(),
            fallback: Place::file("contracts"),
        };
        let first: serde_json::Value = serde_json::from_str(&log(3).render()).unwrap();
        let result = &first["runs"][0]["results"][0];
        assert_eq!(
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "contracts/a%20b%23c/v1/contract.yaml"
        );
        assert!(
            !result["message"]["text"]
                .as_str()
                .unwrap()
                .contains('\u{202e}')
        );
        assert_eq!(first["runs"][0]["results"][0]["ruleIndex"], 0);
        let moved: serde_json::Value = serde_json::from_str(&log(9).render()).unwrap();
        assert_eq!(
            result["partialFingerprints"],
            moved["runs"][0]["results"][0]["partialFingerprints"]
        );
    }
}
