//! The `--auth` file read: the authorization servers, the keys and where they come from, which
//! scopes may call which tool, each checked before the listener serves anything.

use super::*;

/// The `--auth` file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthFile {
    pub(super) resource: String,
    pub(super) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(super) issuer: Option<String>,
    pub(super) jwks: String,
    #[serde(default)]
    pub(super) algorithms: Option<Vec<String>>,
    #[serde(default)]
    pub(super) leeway: Option<String>,
    #[serde(default)]
    pub(super) jwks_refresh: Option<String>,
    #[serde(default)]
    pub(super) identity_claim: Option<String>,
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    #[serde(default)]
    pub(super) tools: BTreeMap<String, ToolRule>,
    #[serde(default)]
    pub(super) other_tools: Option<ToolRule>,
    #[serde(default)]
    pub(super) resource_name: Option<String>,
    #[serde(default)]
    pub(super) resource_documentation: Option<String>,
}

/// Who may call one tool: a caller holding every scope, and every claim with its value.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolRule {
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    #[serde(default)]
    pub(super) claims: BTreeMap<String, String>,
}

/// `--auth FILE: message`.
pub(super) fn config_error(path: &Path, message: impl std::fmt::Display) -> UsageError {
    UsageError::new(format!("--auth {}: {message}", path.display()))
}

/// Whether `url` is `https`, or `http` on a loopback host (a development authorization server,
/// as the MCP specification allows).
pub(super) fn secure_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|error| format!("{text:?} is not a URL: {error}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(domain)) => domain == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => {
            return Err(format!(
                "{text:?}: write an https URL (http is for a loopback host only)"
            ));
        }
    }
    if url.fragment().is_some() {
        return Err(format!(
            "{text:?}: a URL with a fragment (#…) names no resource"
        ));
    }
    Ok(url)
}

pub(super) fn duration_field(
    path: &Path,
    field: &str,
    text: Option<&str>,
    default: Duration,
) -> Result<Duration, UsageError> {
    match text {
        None => Ok(default),
        Some(text) => parse_duration(text).map_err(|why| {
            config_error(
                path,
                format!("{field}: {text:?} is not a duration ({why}): write 30s or 5m"),
            )
        }),
    }
}

/// A file the operator named, read to at most [`MAX_DOCUMENT_BYTES`].
pub(super) fn read_capped_file(path: &Path, doing: &str) -> Result<Vec<u8>, UsageError> {
    let file = std::fs::File::open(path).map_err(|error| UsageError::io(path, doing, &error))?;
    toolgate_gate::read_capped(file, MAX_DOCUMENT_BYTES)
        .map_err(|error| UsageError::io(path, doing, &error))
}

impl Authorizer {
    /// Reads and checks the `--auth` file, and the JWKS it names (a configuration error if it
    /// cannot be had: a proxy that starts unable to verify any token would refuse every call).
    /// `tools` are the tools with contracts: a rule for any other is a typo.
    pub(crate) async fn load(
        path: &Path,
        tools: &BTreeSet<String>,
    ) -> Result<Authorizer, UsageError> {
        let bytes = read_capped_file(path, "read the --auth file")?;
        let text = String::from_utf8(bytes)
            .map_err(|_| config_error(path, "not UTF-8 text: write YAML (or JSON)"))?;
        let file: AuthFile = read_strict_yaml(&text).map_err(|error| config_error(path, error))?;
        let resource = secure_url(&file.resource)
            .map_err(|why| config_error(path, format!("resource: {why}")))?;
        if file.authorization_servers.is_empty() {
            return Err(config_error(
                path,
                "authorization_servers: name at least one (the issuer of the tokens a caller brings)",
            ));
        }
        for server in &file.authorization_servers {
            secure_url(server)
                .map_err(|why| config_error(path, format!("authorization_servers: {why}")))?;
        }
        let issuer = match (&file.issuer, file.authorization_servers.as_slice()) {
            (Some(issuer), _) => issuer.clone(),
            (None, [only]) => only.clone(),
            (None, _) => {
                return Err(config_error(
                    path,
                    "issuer: name the tokens' issuer (`iss`): with several authorization servers it cannot be guessed",
                ));
            }
        };
        let algorithms = match &file.algorithms {
            None => DEFAULT_ALGORITHMS.to_vec(),
            Some(names) => names
                .iter()
                .map(|name| parse_algorithm(name).map_err(|why| config_error(path, why)))
                .collect::<Result<Vec<_>, _>>()?,
        };
        if algorithms.is_empty() {
            return Err(config_error(path, "algorithms: name at least one"));
        }
        let leeway = duration_field(
            path,
            "leeway",
            file.leeway.as_deref(),
            Duration::from_secs(60),
        )?;
        if leeway > MAX_LEEWAY {
            return Err(config_error(
                path,
                format!("leeway: at most {MAX_LEEWAY:?}; a wider skew keeps expired tokens alive"),
            ));
        }
        let refresh = duration_field(
            path,
            "jwks_refresh",
            file.jwks_refresh.as_deref(),
            Duration::from_secs(300),
        )?;
        if refresh < Duration::from_secs(10) {
            return Err(config_error(path, "jwks_refresh: at least 10s"));
        }
        for name in file.tools.keys() {
            if !tools.contains(name) {
                return Err(config_error(
                    path,
                    format!(
                        "tools: {name:?} has no contract in this repository (the tools are {}); fix the name or remove its rule",
                        tools.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        for tool in tools {
            if !file.tools.contains_key(tool) && file.other_tools.is_none() {
                log(&format!(
                    "--auth: tool {tool:?} has no rule in tools (and there is no other_tools), so no caller may call it"
                ));
            }
        }
        let source = if file.jwks.starts_with("https://") || file.jwks.starts_with("http://") {
            secure_url(&file.jwks).map_err(|why| config_error(path, format!("jwks: {why}")))?;
            KeySource::Url(file.jwks.clone())
        } else {
            let relative = Path::new(&file.jwks);
            KeySource::File(match path.parent() {
                Some(folder) if relative.is_relative() => folder.join(relative),
                _ => relative.to_path_buf(),
            })
        };
        let client = match &source {
            KeySource::Url(_) => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                Some(
                    reqwest::Client::builder()
                        .timeout(FETCH_TIMEOUT)
                        .redirect(reqwest::redirect::Policy::none())
                        .build()
                        .map_err(|error| {
                            config_error(path, format!("cannot make an HTTP client: {error}"))
                        })?,
                )
            }
            KeySource::File(_) => None,
        };
        let mut scopes_supported: BTreeSet<String> = file.scopes.iter().cloned().collect();
        for rule in file.tools.values().chain(file.other_tools.as_ref()) {
            scopes_supported.extend(rule.scopes.iter().cloned());
        }
        let metadata_path = format!(
            "/.well-known/oauth-protected-resource{}",
            resource.path().trim_end_matches('/')
        );
        let mut origin = resource.clone();
        origin.set_path(&metadata_path);
        origin.set_query(None);
        let mut metadata = json!({
            "resource": file.resource,
            "authorization_servers": file.authorization_servers,
            "scopes_supported": scopes_supported,
            "bearer_methods_supported": ["header"],
            "resource_signing_alg_values_supported": algorithms.iter().map(|alg| format!("{alg:?}")).collect::<Vec<_>>(),
            "resource_name": file.resource_name.clone().unwrap_or_else(|| "toolgate mcp-proxy".to_owned()),
        });
        if let Some(documentation) = &file.resource_documentation {
            metadata["resource_documentation"] = json!(documentation);
        }
        let mut authorizer = Authorizer {
            resource: file.resource.clone(),
            metadata,
            metadata_url: origin.to_string(),
            metadata_paths: [
                metadata_path,
                "/.well-known/oauth-protected-resource".to_owned(),
            ],
            issuer,
            algorithms,
            leeway,
            identity_claim: file
                .identity_claim
                .clone()
                .unwrap_or_else(|| "sub".to_owned()),
            scopes: file.scopes.clone(),
            scopes_supported: scopes_supported.iter().cloned().collect(),
            tools: file.tools,
            other_tools: file.other_tools,
            source,
            refresh,
            keys: RwLock::new(Arc::new(KeySet {
                keys: Vec::new(),
                digest: [0; 32],
                modified: None,
            })),
            last_fetch: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
            cache: Mutex::new(HashMap::new()),
            client,
        };
        let keys = authorizer
            .read_keys()
            .await
            .map_err(|why| config_error(path, format!("jwks: {why}")))?;
        authorizer.keys = RwLock::new(Arc::new(keys));
        Ok(authorizer)
    }
}
