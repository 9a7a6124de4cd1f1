//! `toolgate reproduce`: a decision made in production, made again exactly. From an audit line
//! (or the raw bytes' digest it holds) and the store the front kept them in (`--retain`), the
//! same bytes are decided under the same contract (its digest checked against the repository's
//! version, loudly when it has changed), request and time; stdout holds exactly what the agent
//! saw then, and stderr says whether the agent bytes are the ones the audit line names.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use toolgate_gate::{Decision, Retained, Sha256Digest};
use toolgate_repo::{
    FixtureTarget, Observed, Repository, RequestSpec, UsageError, parse_target, save_fixture,
    write_output,
};
use toolgate_store::{Opener, Store, read_retained};

/// What `toolgate reproduce` was asked to do.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["audit", "digest"])))]
pub(crate) struct ReproduceOptions {
    /// The audit line of the decision: FILE:LINE (a line number from 1), or FILE alone for its
    /// last line.
    #[arg(long, value_name = "FILE[:LINE]")]
    audit: Option<String>,
    /// The raw bytes' SHA-256 (the audit line's `raw_sha256`); the newest decision kept of them.
    #[arg(long, value_name = "HEX")]
    digest: Option<String>,
    /// Where the front kept them: the folder, or s3://BUCKET/PREFIX, it was given with --retain.
    #[arg(long, value_name = "STORE")]
    store: String,
    /// The endpoint of an S3-compatible server (default: AWS_ENDPOINT_URL, or Amazon's).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The age identity file that opens a sealed store (--retain-recipient).
    #[arg(long, value_name = "FILE")]
    identity: Option<PathBuf>,
    /// The values of context keys kept as digests (--retain-secret): a request file whose
    /// "context" holds them; each is checked against the digest kept.
    #[arg(long, value_name = "FILE")]
    request: Option<PathBuf>,
    /// The key the front kept those digests under (its --retain-secret-key), to check the
    /// values --request supplies.
    #[arg(long, value_name = "FILE", requires = "request")]
    retain_secret_key: Option<PathBuf>,
    /// The contracts: a repository root holding contracts/, or a bundle `toolgate bundle`
    /// wrote (read whole and checked against its manifest and lock before anything is served).
    #[arg(
        long,
        visible_alias = "contracts",
        value_name = "DIR|BUNDLE",
        default_value = "."
    )]
    root: PathBuf,
    /// Explain the decision on stderr: layer, rule, where, the validator's message, the fix
    /// (`--explain=json`: the operator record as one JSON line, as the proxy logs it).
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "text", require_equals = true)]
    explain: Option<Explain>,
    /// Save the response as a regression fixture, fixtures/TOOL/CLASS/NAME, with a sidecar that
    /// expects what every version of the repository decides (`expect_by_version` where they
    /// differ) and the request it was decided under; then `toolgate test --accept`.
    #[arg(long, value_name = "CLASS/NAME", value_parser = parse_target)]
    save_fixture: Option<FixtureTarget>,
    /// Decide under this version of the repository instead of the one that decided in
    /// production (e.g. the bump that should admit a response production refused wrongly).
    #[arg(long, value_name = "vN")]
    contract_version: Option<String>,
    /// Write the kept raw bytes to stdout, exactly as the upstream sent them, instead of the
    /// agent bytes (stderr still says what the gate decides).
    #[arg(long)]
    raw: bool,
}

/// How `--explain` writes the operator record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Explain {
    /// As `toolgate check --explain` prints it.
    Text,
    /// One JSON line.
    Json,
}

/// What the audit line says of the decision to find.
struct Wanted {
    tool: Option<String>,
    raw_sha256: String,
    request_id: Option<String>,
    time: Option<String>,
    agent_sha256: Option<String>,
}

/// Runs it. `Ok(true)` when the gate admitted the bytes again.
pub(crate) fn run(
    options: &ReproduceOptions,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> Result<bool, UsageError> {
    let wanted = wanted(options)?;
    let (store, opener) = toolgate_store::open_kept(
        "--store",
        &options.store,
        options.endpoint.as_deref(),
        options.identity.as_deref(),
    )
    .map_err(UsageError::new)?;
    let retained = find(store.as_ref(), &wanted, opener.as_ref(), stderr)?;
    let repository = toolgate_repo::bundle::open_contracts(&options.root)?;
    let (contract, changed) = match &options.contract_version {
        Some(version) => (repository.load(&retained.tool, Some(version))?, None),
        None => contract_for(&repository, &retained)?,
    };
    let mut say = |line: &str| {
        let _ = writeln!(stderr, "{}", toolgate_gate::internals::escape_hidden(line));
    };
    if let Some(changed) = &changed {
        say(&format!("WARNING: {changed}"));
    }
    let secrets = match &options.request {
        Some(path) => toolgate_repo::read_request_file(path)?.context,
        None => Map::new(),
    };
    let key = options
        .retain_secret_key
        .as_deref()
        .map(crate::args::read_secret_key)
        .transpose()?;
    let request = retained.request(&secrets, key.as_deref()).map_err(|why| {
        UsageError::new(format!(
            "{why}{}",
            if options.request.is_none() {
                " with --request FILE (its \"context\")"
            } else {
                ""
            }
        ))
    })?;
    let now = retained
        .time()
        .map_err(|why| UsageError::new(format!("the kept decision's time: {why}")))?;
    if let Some(why) = &retained.withheld {
        return Err(UsageError::new(format!(
            "the kept decision holds no raw bytes to decide again: {why} (received: {} bytes, sha256 {})",
            retained.raw_len, retained.raw_sha256
        )));
    }
    let decision = contract.admit_response(retained.response(), &request, now);
    if options.raw {
        write_output(stdout, &retained.raw)?;
    } else {
        let mut line = decision.agent_bytes().to_vec();
        line.push(b'\n');
        write_output(stdout, &line)?;
    }
    let agent = Sha256Digest::of(decision.agent_bytes()).to_hex();
    let expected = wanted
        .agent_sha256
        .as_deref()
        .unwrap_or(&retained.agent_sha256);
    if options.contract_version.is_some() && contract.version() != retained.contract_version {
        say(&format!(
            "decided by {} {} (--contract-version): {}; production decided with {} and {} (the agent saw sha256 {expected})",
            contract.tool(),
            contract.version(),
            decision.outcome().as_str(),
            retained.contract_version,
            retained.outcome
        ));
    } else if agent == expected && changed.is_none() {
        say(&format!(
            "reproduced exactly: {} {} decided {} again, and the agent bytes are the ones it saw (sha256 {agent})",
            contract.tool(),
            contract.version(),
            decision.outcome().as_str()
        ));
    } else {
        say(&format!(
            "NOT the same decision: the agent saw sha256 {expected} then ({}), and sees sha256 {agent} now ({})",
            retained.outcome,
            decision.outcome().as_str()
        ));
    }
    if !retained.redacted.is_empty() {
        say(&format!(
            "decided on the bytes as kept: the contract's `retention: redact:` replaced {} by {} before they were stored, so a decision that read those values cannot be made again exactly",
            retained.redacted.join(", "),
            toolgate_gate::REDACTED
        ));
    }
    match (options.explain, decision.operator_record()) {
        // Line by line: the record's own lines stay lines, and each is escaped for the terminal.
        (Some(Explain::Text), Some(record)) => record.to_string().lines().for_each(&mut say),
        (Some(Explain::Json), Some(record)) => {
            let _ = writeln!(
                stderr,
                "{}",
                serde_json::to_string(record).unwrap_or_default()
            );
        }
        _ => {}
    }
    if let Some(target) = &options.save_fixture {
        save(&repository, target, &retained, &request, &decision, stderr)?;
    }
    Ok(decision.is_admitted())
}

/// The decision to find, from `--audit` or `--digest`.
fn wanted(options: &ReproduceOptions) -> Result<Wanted, UsageError> {
    if let Some(digest) = &options.digest {
        let digest = digest.trim().to_ascii_lowercase();
        if Sha256Digest::from_hex(&digest).is_none() {
            return Err(UsageError::new(format!(
                "--digest {digest:?}: a SHA-256 is 64 hex digits (the audit line's raw_sha256)"
            )));
        }
        return Ok(Wanted {
            tool: None,
            raw_sha256: digest,
            request_id: None,
            time: None,
            agent_sha256: None,
        });
    }
    let spec = options.audit.as_deref().unwrap_or_default();
    let (file, number) = match spec.rsplit_once(':') {
        Some((file, number)) if number.bytes().all(|byte| byte.is_ascii_digit()) => {
            let number: usize = number
                .parse()
                .ok()
                .filter(|number| *number > 0)
                .ok_or_else(|| UsageError::new(format!("--audit {spec}: lines count from 1")))?;
            (file, Some(number))
        }
        _ => (spec, None),
    };
    let path = Path::new(file);
    let text = read_audit_log(path)?;
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let line = match number {
        Some(number) => text.lines().nth(number - 1).ok_or_else(|| {
            UsageError::new(format!(
                "{file}: has {} lines, not {number}",
                text.lines().count()
            ))
        })?,
        None => lines
            .last()
            .copied()
            .ok_or_else(|| UsageError::new(format!("{file}: no audit line in it")))?,
    };
    let shown = |what: &str| match number {
        Some(number) => format!("{file}:{number}: {what}"),
        None => format!("{file} (its last line): {what}"),
    };
    let event = toolgate_gate::internals::parse_strict_json(line.as_bytes(), 16)
        .map_err(|why| UsageError::new(shown(&format!("not an audit line: {why}"))))?;
    let text = |name: &str| event.get(name).and_then(Value::as_str).map(str::to_owned);
    let raw_sha256 = text("raw_sha256")
        .ok_or_else(|| UsageError::new(shown("not an audit line: it has no raw_sha256")))?;
    Ok(Wanted {
        tool: text("tool"),
        raw_sha256,
        request_id: text("request_id"),
        time: text("time"),
        agent_sha256: text("agent_sha256"),
    })
}

/// An audit log's text: a regular file, read to at most 256 MiB.
fn read_audit_log(path: &Path) -> Result<String, UsageError> {
    use std::io::Read;
    let metadata = std::fs::metadata(path)
        .map_err(|error| UsageError::io(path, "read the audit log", &error))?;
    if !metadata.is_file() {
        return Err(UsageError::new(format!(
            "{}: not a regular file; pass the audit log (--audit FILE[:LINE])",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(256 << 20).read_to_end(&mut bytes))
        .map_err(|error| UsageError::io(path, "read the audit log", &error))?;
    String::from_utf8(bytes)
        .map_err(|_| UsageError::new(format!("{}: not UTF-8; not an audit log", path.display())))
}

/// The kept decision the audit line names: by its raw digest, then its request id and time;
/// of several with the digest alone, the newest (and the others are named).
fn find(
    store: &dyn Store,
    wanted: &Wanted,
    opener: Option<&Opener>,
    stderr: &mut impl Write,
) -> Result<Retained, UsageError> {
    let prefix = wanted
        .tool
        .as_ref()
        .map(|tool| format!("{tool}/{}-", wanted.raw_sha256))
        .unwrap_or_default();
    let entries = store.list(&prefix).map_err(|error| {
        UsageError::new(format!("{}: cannot list it: {error}", store.describe()))
    })?;
    let mut found: Vec<Retained> = Vec::new();
    for entry in entries {
        let Some((_, file)) = entry.name.split_once('/') else {
            continue;
        };
        if !file.starts_with(&format!("{}-", wanted.raw_sha256)) {
            continue;
        }
        let retained = read_retained(store, &entry.name, opener)
            .map_err(|error| UsageError::new(error.to_string()))?
            .ok_or_else(|| {
                UsageError::new(format!("{}: {} went away", store.describe(), entry.name))
            })?;
        let matches = wanted
            .request_id
            .as_ref()
            .is_none_or(|id| *id == retained.request_id)
            && wanted
                .time
                .as_ref()
                .is_none_or(|time| same_time(time, &retained.time));
        if matches {
            found.push(retained);
        }
    }
    found.sort_by(|a, b| a.time.cmp(&b.time));
    let Some(newest) = found.pop() else {
        return Err(UsageError::new(format!(
            "{} keeps no decision of the raw bytes sha256 {}{}: was the front run with --retain there, and was the decision one it keeps (every refusal; admissions at --retain-admitted)?",
            store.describe(),
            wanted.raw_sha256,
            wanted
                .request_id
                .as_ref()
                .map(|id| format!(" for request {id}"))
                .unwrap_or_default()
        )));
    };
    for other in &found {
        // Every field of a kept record is the store's to say: escaped whole.
        let note = format!(
            "note: the same bytes were also decided for request {} at {}; reproducing the newest ({})",
            other.request_id, other.time, newest.time
        );
        let _ = writeln!(stderr, "{}", toolgate_gate::internals::escape_hidden(&note));
    }
    Ok(newest)
}

/// Whether two RFC 3339 times name the same instant.
fn same_time(a: &str, b: &str) -> bool {
    match (
        toolgate_gate::internals::parse_timestamp(a),
        toolgate_gate::internals::parse_timestamp(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The repository's contract that decided: the kept version, or the version whose bytes have
/// the kept digest; with what changed, when the bytes that decided are not in the repository.
fn contract_for(
    repository: &Repository,
    retained: &Retained,
) -> Result<(toolgate_gate::Contract, Option<String>), UsageError> {
    let kept = repository.load(&retained.tool, Some(&retained.contract_version));
    if let Ok(contract) = &kept
        && contract.digest().to_hex() == retained.contract_digest
    {
        return Ok((kept.expect("loaded"), None));
    }
    // The same bytes under another version's name (a folder renamed, say).
    for version in repository.versions(&retained.tool).unwrap_or_default() {
        let name = format!("v{}", version.number);
        if let Ok(contract) = repository.load(&retained.tool, Some(&name))
            && contract.digest().to_hex() == retained.contract_digest
        {
            let note = format!(
                "{} {} decided in production; its bytes are {} here now, which decides instead",
                retained.tool,
                retained.contract_version,
                contract.version()
            );
            return Ok((contract, Some(note)));
        }
    }
    let contract = kept?;
    let note = format!(
        "the contract has changed since: {} {} decided with sha256 {}, and its files here have sha256 {}; this is today's contract's decision, not production's",
        retained.tool,
        retained.contract_version,
        retained.contract_digest,
        contract.digest().to_hex()
    );
    Ok((contract, Some(note)))
}

/// `--save-fixture`: the kept bytes as a regression fixture, its sidecar expecting what the gate
/// decided and the request it decided under.
fn save(
    repository: &Repository,
    target: &FixtureTarget,
    retained: &Retained,
    request: &toolgate_gate::Request,
    decision: &Decision,
    stderr: &mut impl Write,
) -> Result<(), UsageError> {
    if retained.unreachable.is_some() || retained.incomplete.is_some() {
        return Err(UsageError::new(
            "--save-fixture: the adapter reported no bytes for this call (the upstream was unreachable, or answered without a result); there is no response to save",
        ));
    }
    if retained.tool_error {
        return Err(UsageError::new(
            "--save-fixture: this call was the tool's own error (isError), not a result; a fixture holds a result, so there is nothing to save (`toolgate reproduce` decides the error again as it was)",
        ));
    }
    let spec = RequestSpec {
        request_id: retained.request_id.clone(),
        now: Some(retained.time.clone()),
        context: request.context().clone(),
        upstream: retained.upstream.clone(),
        upstream_status: retained.upstream_status,
    };
    let observed = Observed {
        tool: &retained.tool,
        raw: &retained.raw,
        raw_path: None,
        spec: &spec,
        request_file: None,
        save_request: true,
        command: "toolgate reproduce",
        overridden: (false, false, false),
        now: decision.time(),
        version: decision.audit_event().contract_version(),
        decision,
    };
    let message = save_fixture(&repository.clone().naming_relative(), target, &observed)?;
    for line in message.lines() {
        let _ = writeln!(stderr, "{}", toolgate_gate::internals::escape_hidden(line));
    }
    let secret = retained.secret_keys();
    if !secret.is_empty() {
        let note = format!(
            "note: its request holds the values you gave for the secret context keys {}; review it before committing",
            secret.join(", ")
        );
        let _ = writeln!(stderr, "{}", toolgate_gate::internals::escape_hidden(&note));
    }
    Ok(())
}
