//! Writing the plan: `contract.yaml` (its header listing every assumption), each fixture's
//! sidecar, `survivors.yaml`, all rendered by a serializer and read back before anything is
//! written, and written only where nothing exists yet.

use super::*;

/// `fixtures/<tool>/survivors.yaml`: every survivor where no promised field reads accepted, and
/// each of `free_text` (a mutation family and a pointer the gate showed it surviving at, where
/// the agent reads free text) with [`FREE_TEXT_REASON`], for a person to confirm.
pub fn survivors_file(free_text: &[(String, String)]) -> Result<Rendered, String> {
    let mut entries = vec![json!({"pointer": "/**", "reason": UNPROJECTED_REASON})];
    for (family, pointer) in free_text {
        entries.push(json!({"mutation": family, "pointer": pointer, "reason": FREE_TEXT_REASON}));
    }
    render::yaml(
        &[
            "Survivors the agent cannot see: every place no promised field reads is the upstream's to"
                .to_owned(),
            "change (the leak check still holds them). Survivors where the agent looks are accepted only"
                .to_owned(),
            "by an entry of their own, with its reason.".to_owned(),
        ],
        &entries,
    )
}

/// Why `toolgate new` accepts every survivor where no promised field reads.
pub(super) const UNPROJECTED_REASON: &str = "The agent sees only the promised fields (`toolgate new` left every other member unprojected), so a survivor elsewhere is upstream drift, not something the agent reads.";

/// `contract.yaml` as the serializer writes it.
#[derive(Serialize)]
pub(super) struct ContractFile<'a> {
    tool: &'a str,
    version: u32,
    direction: &'static str,
    limits: Limits,
    shape: ShapeFile<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rules: Vec<RuleFile<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    upstream_errors: Vec<ErrorFile<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retention: Option<RetentionFile<'a>>,
}

#[derive(Serialize)]
pub(super) struct RuleFile<'a> {
    name: String,
    binding: &'a Binding,
    retryable: bool,
}

#[derive(Serialize)]
pub(super) struct RetentionFile<'a> {
    redact: &'a [String],
}

/// What a contract decides beyond its header: the promised fields, the places where upstream
/// additions are tolerated, the error mappings, the binding rules and the places retention
/// redacts.
pub(super) struct Body<'a> {
    pub fields: &'a [Field],
    pub tolerated: &'a [(String, String)],
    pub errors: &'a [ErrorMapping],
    pub bindings: &'a [Binding],
    pub redact: &'a [String],
}

#[derive(Serialize)]
pub(super) struct Limits {
    max_bytes: usize,
    max_depth: u32,
}

#[derive(Serialize)]
pub(super) struct ShapeFile<'a> {
    schema: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text_pattern: Option<&'static str>,
    fields: Vec<FieldFile<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tolerate: Vec<TolerateFile<'a>>,
}

#[derive(Serialize)]
pub(super) struct FieldFile<'a> {
    name: &'a str,
    from: &'a str,
    #[serde(skip_serializing_if = "is_false")]
    optional: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    each: Option<Vec<FieldFile<'a>>>,
}

#[derive(Serialize)]
pub(super) struct TolerateFile<'a> {
    at: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
pub(super) struct ErrorFile<'a> {
    name: &'a str,
    status: &'a [u16],
    code: &'static str,
}

pub(super) fn is_false(flag: &bool) -> bool {
    !flag
}

/// `contract.yaml`: a header of comments (where it comes from, every assumption, and the
/// upstream's own description of the tool, which is never the contract's: the proxy serves a
/// contract's `description:` to the model, so only its author writes one), then the contract.
pub(super) fn contract_yaml(
    tool: &str,
    origin: &Origin,
    body: &Body<'_>,
    assumptions: &[Assumption],
    admitted: &[(String, Value)],
    text: bool,
) -> Result<Rendered, String> {
    let mut header = vec![
        render::comment(&format!(
            "Scaffolded by `toolgate new` from {}.",
            origin.source
        )),
        "Review it (every assumption below is a decision the description did not make), then"
            .to_owned(),
        format!("`toolgate test --accept {tool}` and `CI=true toolgate test {tool}`."),
    ];
    if !admitted.is_empty() && admitted.iter().all(|(name, _)| name == SYNTHESIZED_CASE) {
        header.push(String::new());
        header.push(
            "UNPROVEN: written without a real response (the description documents none), so its"
                .to_owned(),
        );
        header.push(
            "only accepted fixture is built from this schema; `toolgate test` says so until a real"
                .to_owned(),
        );
        header.push("response is saved beside it.".to_owned());
    }
    if let Some(summary) = &origin.summary {
        header.push(String::new());
        header.push(
            "The upstream describes the tool as follows (its words, unchecked, never served as this"
                .to_owned(),
        );
        header.push(
            "contract's: write a `description:` of your own for the proxy to show the model):"
                .to_owned(),
        );
        header.push(format!("  {}", render::comment(summary)));
    }
    if origin
        .upstream
        .as_deref()
        .is_some_and(|upstream| upstream.starts_with("MCP "))
    {
        header.push(String::new());
        header.push(
            "description: <yours: what the model should know to call this tool; move this line"
                .to_owned(),
        );
        header.push("  below the comments and out of them>".to_owned());
    }
    if !assumptions.is_empty() {
        header.push(String::new());
        header.push(format!("Assumed in {SCHEMA_FILE}:"));
        for assumption in assumptions {
            let pointer = if assumption.pointer.is_empty() {
                "(root)"
            } else {
                &assumption.pointer
            };
            header.push(format!(
                "  {}",
                render::comment(&format!("{pointer}: {}", assumption.what))
            ));
        }
    }
    // Room for the largest example four times over, at least the default 64 KiB.
    let largest = admitted
        .iter()
        .map(|(_, example)| example.to_string().len())
        .max()
        .unwrap_or(0);
    pub(super) fn field_file(field: &Field) -> FieldFile<'_> {
        FieldFile {
            name: &field.name,
            from: &field.from,
            optional: field.optional,
            each: None,
        }
    }
    let contract = ContractFile {
        tool,
        version: 1,
        direction: "result",
        limits: Limits {
            max_bytes: (largest * 4).clamp(64 * 1024, 64 * 1024 * 1024),
            max_depth: 64,
        },
        shape: ShapeFile {
            schema: SCHEMA_FILE,
            text_pattern: text.then_some(TEXT_PATTERN),
            fields: body
                .fields
                .iter()
                .map(|field| match &field.each {
                    None => field_file(field),
                    Some(members) => FieldFile {
                        each: Some(
                            members
                                .iter()
                                .map(|(name, from, optional)| FieldFile {
                                    name,
                                    from,
                                    optional: *optional,
                                    each: None,
                                })
                                .collect(),
                        ),
                        optional: field.optional,
                        ..field_file(field)
                    },
                })
                .collect(),
            tolerate: body
                .tolerated
                .iter()
                .map(|(at, reason)| TolerateFile { at, reason })
                .collect(),
        },
        rules: body
            .bindings
            .iter()
            .map(|binding| RuleFile {
                name: format!("{}_binding", binding.field),
                binding,
                // A response about another resource will not fix itself.
                retryable: false,
            })
            .collect(),
        retention: (!body.redact.is_empty()).then_some(RetentionFile {
            redact: body.redact,
        }),
        upstream_errors: body
            .errors
            .iter()
            .map(|mapping| ErrorFile {
                name: &mapping.name,
                status: &mapping.statuses,
                code: mapping.code,
            })
            .collect(),
    };
    render::yaml(&header, &contract)
}

/// A text contract's pattern: the whole output, one fact.
pub(super) const TEXT_PATTERN: &str = "^(?s)(?P<text>.+)$";

/// A fixture's sidecar as the serializer writes it.
#[derive(Serialize)]
pub(super) struct SidecarFile<'a> {
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    upstream_status: Option<u16>,
    expect: Expectation<'a>,
    /// A response built from the schema: the tool is unproven until a real one joins it.
    #[serde(skip_serializing_if = "is_false")]
    synthesized: bool,
}

#[derive(Serialize)]
pub(super) struct Expectation<'a> {
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    layer: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retryable: Option<bool>,
}

impl Expectation<'_> {
    pub(super) fn admitted() -> Expectation<'static> {
        Expectation {
            outcome: "admitted",
            layer: None,
            rule: None,
            code: None,
            retryable: None,
        }
    }

    pub(super) fn rejected<'a>(
        layer: &'static str,
        rule: Option<&'a str>,
        code: &'static str,
        retryable: bool,
    ) -> Expectation<'a> {
        Expectation {
            outcome: "rejected",
            layer: Some(layer),
            rule,
            code: Some(code),
            retryable: Some(retryable),
        }
    }
}

/// A sidecar, before it is rendered.
pub(super) fn sidecar<'a>(
    description: &'a str,
    upstream_status: Option<u16>,
    expect: Expectation<'a>,
) -> SidecarFile<'a> {
    SidecarFile {
        description,
        upstream_status,
        expect,
        synthesized: false,
    }
}

impl SidecarFile<'_> {
    /// Marked as a response built from the schema, when `synthesized`; rendered.
    pub(super) fn synthesized(mut self, synthesized: bool) -> Result<Rendered, String> {
        self.synthesized = synthesized;
        self.rendered()
    }

    pub(super) fn rendered(&self) -> Result<Rendered, String> {
        render::yaml(&[], self)
    }
}

/// Writes `plan` under `root`, refusing to touch an existing contract.
pub fn write(root: &RepoRoot, plan: &Plan) -> Result<Vec<PathBuf>, String> {
    let tool = Path::new("contracts").join(&plan.tool);
    if root.kind(&tool).map_err(|error| error.to_string())? != toolgate_repo::EntryKind::Missing {
        return Err(format!(
            "{}: already exists; `toolgate new` never overwrites a contract (a change is a new version folder)",
            root.shown(&tool).display()
        ));
    }
    let fixtures = Path::new("fixtures").join(&plan.tool);
    let mut files: Vec<(PathBuf, Rendered)> = vec![
        (tool.join("v1/contract.yaml"), plan.contract.clone()),
        (
            tool.join("v1").join(SCHEMA_FILE),
            render::json(&plan.schema),
        ),
        (
            tool.join("v1").join(SCAFFOLD_DIR).join(SCHEMA_FILE),
            render::json(&plan.schema),
        ),
        (fixtures.join("request.json"), render::json(&plan.request)),
        (fixtures.join("survivors.yaml"), plan.survivors.clone()),
    ];
    for fixture in &plan.fixtures {
        let folder = fixtures.join(fixture.class);
        files.push((
            folder.join(format!("{}.json", fixture.case)),
            fixture.body.clone(),
        ));
        files.push((
            folder.join(format!("{}.expect.yaml", fixture.case)),
            fixture.sidecar.clone(),
        ));
    }
    // Every file reads back as what it means, and nothing is there: before anything is written.
    for (path, rendered) in &files {
        render::check(&path.display().to_string(), rendered)?;
        if root.kind(path).map_err(|error| error.to_string())? != toolgate_repo::EntryKind::Missing
        {
            return Err(format!(
                "{}: already exists; `toolgate new` never overwrites a file",
                root.shown(path).display()
            ));
        }
    }
    for (path, rendered) in &files {
        root.write(path, &rendered.bytes)
            .map_err(|error| error.to_string())?;
    }
    Ok(files.into_iter().map(|(path, _)| path).collect())
}
