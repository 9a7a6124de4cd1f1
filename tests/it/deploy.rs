//! `deploy/`: the container image's and the Kubernetes Deployment's command lines are ones the
//! binary accepts (run here, each stops at the one thing it lacks: the credential's variable),
//! and the probes ask for the endpoints the listener serves.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `toolgate` with `args` (the contracts folder pointed at the test contracts, the
/// address at a free port, the auth file at the ConfigMap's with its JWKS from a file: the one
/// change, since the example authorization server is not reachable) without the credential's
/// variable: it must get as far as reading it.
fn accepted_up_to_the_credential(args: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let map: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/kubernetes/auth.yaml")).unwrap(),
    )
    .unwrap();
    let shipped = map["data"]["auth.yaml"].as_str().unwrap();
    let jwks_url = shipped
        .lines()
        .find_map(|line| line.trim().strip_prefix("jwks: "))
        .unwrap();
    let auth = dir.path().join("auth.yaml");
    std::fs::write(&auth, shipped.replace(jwks_url, "jwks.json")).unwrap();
    // The test contracts, bundled as the manifests' comments say.
    let bundle = crate::common::bundled_mcp_contracts(dir.path());
    std::fs::write(
        dir.path().join("jwks.json"),
        r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
    )
    .unwrap();
    let args: Vec<String> = args
        .iter()
        .map(|arg| match arg.as_str() {
            "/contracts/contracts.tar.gz" => bundle.display().to_string(),
            "0.0.0.0:8080" | "0.0.0.0:9464" => "127.0.0.1:0".to_owned(),
            "/etc/toolgate/auth.yaml" => auth.display().to_string(),
            _ => arg.clone(),
        })
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(&args)
        .env_remove("MCP_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}\n{stderr}");
    assert!(
        stderr.contains("\"MCP_TOKEN\" is not set"),
        "{args:?} must fail only for the missing credential:\n{stderr}"
    );
}

#[test]
fn the_kubernetes_deployment_runs_the_proxy_with_probes_it_serves() {
    let text = std::fs::read_to_string(root().join("deploy/kubernetes/deployment.yaml")).unwrap();
    let deployment: Value = serde_saphyr::from_str(&text).unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect();
    accepted_up_to_the_credential(&args);
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    // Stopping: the preStop sleep, then SIGTERM with the drain's deadline inside what is left
    // of the grace period.
    let grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds");
    let pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .expect("a preStop sleep");
    let left: u64 = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|variable| variable["name"] == "TERMINATION_GRACE_PERIOD_SECONDS")
        .and_then(|variable| variable["value"].as_str())
        .expect("TERMINATION_GRACE_PERIOD_SECONDS")
        .parse()
        .unwrap();
    assert_eq!(
        left + pre_stop,
        grace,
        "the drain's period is what SIGTERM leaves"
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(
        container["env"][0]["name"], "MCP_TOKEN",
        "the credential comes from a Secret, through the environment"
    );
    let service: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/kubernetes/service.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        service["spec"]["selector"]["app"],
        deployment["spec"]["selector"]["matchLabels"]["app"]
    );
}

/// The Deployment listens on 0.0.0.0 with the upstream's credential, so every caller is
/// authenticated (`--auth`, never `--insecure-no-auth`) against the auth.yaml its ConfigMap
/// mounts, each held to a rate; a NetworkPolicy that admits only the labelled client pods, on
/// the MCP port, stands beside it.
#[test]
fn the_public_listener_authenticates_every_caller_and_ships_with_a_network_policy() {
    let deployment: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/kubernetes/deployment.yaml")).unwrap(),
    )
    .unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert!(!args.contains(&"--insecure-no-auth"), "{args:?}");
    let after = |flag: &str| {
        args.iter()
            .position(|arg| *arg == flag)
            .map(|at| args[at + 1])
    };
    assert_eq!(after("--auth"), Some("/etc/toolgate/auth.yaml"));
    assert!(after("--caller-rate").is_some());
    // The file the flag names is the ConfigMap's, mounted where it says.
    let mounts = container["volumeMounts"].as_array().unwrap();
    let mount = mounts
        .iter()
        .find(|mount| mount["mountPath"] == "/etc/toolgate")
        .expect("auth.yaml's folder is mounted");
    let volume = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == mount["name"])
        .unwrap();
    let map: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/kubernetes/auth.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(map["kind"], "ConfigMap");
    assert_eq!(volume["configMap"]["name"], map["metadata"]["name"]);
    let auth: Value = serde_saphyr::from_str(map["data"]["auth.yaml"].as_str().unwrap()).unwrap();
    for field in [
        "resource",
        "authorization_servers",
        "jwks",
        "scopes",
        "other_tools",
    ] {
        assert!(!auth[field].is_null(), "auth.yaml names {field}");
    }
    assert!(auth["jwks"].as_str().unwrap().starts_with("https://"));
    let text =
        std::fs::read_to_string(root().join("deploy/kubernetes/networkpolicy.yaml")).unwrap();
    assert!(
        text.contains("What it protects") && text.contains("What it does not protect"),
        "the policy says what it protects and what it does not"
    );
    let policy: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(policy["kind"], "NetworkPolicy");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        deployment["spec"]["template"]["metadata"]["labels"],
        "it selects the proxy's pods"
    );
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress"])
    );
    let rules = policy["spec"]["ingress"].as_array().unwrap();
    assert_eq!(rules.len(), 2);
    // Admitted: the labelled pods, on the MCP port, and nothing wider (no empty `from`, no
    // namespace or IP block).
    let from = rules[0]["from"].as_array().unwrap();
    assert_eq!(
        from,
        &[serde_json::json!({"podSelector": {"matchLabels": {"toolgate-mcp-client": "true"}}})]
    );
    assert_eq!(
        rules[0]["ports"],
        serde_json::json!([{"port": "mcp", "protocol": "TCP"}])
    );
    // And the monitoring namespace, on the metrics port alone: a scraper reaches no tool.
    assert_eq!(
        rules[1],
        serde_json::json!({"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}], "ports": [{"port": "metrics", "protocol": "TCP"}]})
    );
    let ports = container["ports"].as_array().unwrap();
    assert!(ports.contains(&serde_json::json!({"name": "metrics", "containerPort": 9464})));
    let after_metrics = args
        .iter()
        .position(|arg| *arg == "--metrics")
        .map(|at| args[at + 1]);
    assert_eq!(after_metrics, Some("0.0.0.0:9464"));
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
        "9464"
    );
}

/// Every series the full exposition can hold: a metrics registry that has seen every kind of
/// event a front records (decisions of every outcome with a shadow, upstream answers and each
/// failure, each refused caller, a call in flight, a loaded contract, a retainer, an upstream).
fn full_exposition() -> Vec<toolgate_telemetry::Sample> {
    use toolgate_telemetry::{CallerRefusal, Metrics, UpstreamFailure};
    let metrics = Metrics::new();
    let repository = toolgate_repo::Repository::open(root()).unwrap();
    let v1 = repository.load("job_status", Some("v1")).unwrap();
    let v2 = repository.load("job_status", Some("v2")).unwrap();
    let request = toolgate_gate::Request::new("req.J7q94MkP");
    for raw in [&b"{}"[..], b"not json"] {
        let response = toolgate_gate::Response::body(raw);
        let decision = v1
            .admit_response(response, &request, std::time::SystemTime::now())
            .with_shadow(&v2.admit_response(response, &request, std::time::SystemTime::now()));
        metrics.decided(&v1, &decision, std::time::Duration::from_micros(20));
    }
    let resolved = metrics.contract(&v1);
    for failure in UpstreamFailure::ALL {
        resolved.upstream_failed(failure);
    }
    resolved.upstream_answered(std::time::Duration::from_millis(3));
    for refusal in [
        CallerRefusal::Missing,
        CallerRefusal::Invalid,
        CallerRefusal::Insufficient,
        CallerRefusal::Rate,
        CallerRefusal::Origin,
        CallerRefusal::RateStoreUnavailable,
    ] {
        metrics.caller_refused(refusal);
    }
    let _in_flight = resolved.call_started();
    metrics.contract_set("sha256:00", [&v1].into_iter());
    metrics.reloaded(true);
    metrics.reloaded(false);
    metrics.watch_upstream(|| true);
    metrics.watch_withheld(|| 1);
    let store = tempfile::tempdir().unwrap();
    let retainer = toolgate_store::RetentionConfig::new(store.path().display().to_string())
        .start(std::sync::Arc::new(|_: &str| {}))
        .unwrap();
    metrics.watch_retainer(&retainer);
    metrics.samples()
}

/// The `toolgate_*` series an expression names, each with the label names its matchers and
/// its `by (…)` clauses use.
fn series_named(expression: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let grouped: Vec<String> = expression
        .match_indices("by (")
        .flat_map(|(at, _)| {
            let rest = &expression[at + 4..];
            rest[..rest.find(')').unwrap()]
                .split(',')
                .map(|label| label.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut rest = expression;
    while let Some(at) = rest.find("toolgate_") {
        let preceded = rest[..at].chars().last();
        let name_end = rest[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(rest.len(), |end| at + end);
        let name = rest[at..name_end].to_owned();
        let mut labels = Vec::new();
        if let Some(matchers) = rest[name_end..].strip_prefix('{') {
            let close = matchers.find('}').unwrap();
            for matcher in matchers[..close].split(',') {
                let label: String = matcher
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !label.is_empty() {
                    labels.push(label);
                }
            }
        }
        // A recording rule's own name (`tool:toolgate_…`) is not an exposed series.
        if preceded != Some(':') {
            found.push((name, labels));
        }
        rest = &rest[name_end..];
    }
    if let Some((_, labels)) = found.first_mut() {
        labels.extend(grouped.iter().filter(|label| *label != "le").cloned());
    }
    found
}

/// The dashboard and the alerting rules name only series the proxy exposes, with labels those
/// series carry: a renamed metric or label fails here, not on an operator's empty panel.
#[test]
fn the_dashboard_and_the_alerts_read_what_the_proxy_exposes() {
    let samples = full_exposition();
    let labels_of = |name: &str| -> Option<std::collections::BTreeSet<String>> {
        let matching: Vec<&toolgate_telemetry::Sample> = samples
            .iter()
            .filter(|sample| sample.name == name)
            .collect();
        (!matching.is_empty()).then(|| {
            matching
                .iter()
                .flat_map(|sample| sample.labels.iter().map(|(label, _)| label.clone()))
                .chain(["instance".to_owned(), "job".to_owned()])
                .collect()
        })
    };
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("deploy/grafana/toolgate.json")).unwrap(),
    )
    .unwrap();
    let mut expressions: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| panel["targets"].as_array().unwrap().iter())
        .map(|target| target["expr"].as_str().unwrap().to_owned())
        .collect();
    assert!(expressions.len() >= 10, "{expressions:?}");
    let rules: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/prometheus/alerts.yml")).unwrap(),
    )
    .unwrap();
    let rules = rules["groups"][0]["rules"].as_array().unwrap();
    let alerts: Vec<&str> = rules
        .iter()
        .filter_map(|rule| rule["alert"].as_str())
        .collect();
    for wanted in [
        "ToolgateRefusalSpike",
        "ToolgateUpstreamDown",
        "ToolgateUpstreamFailing",
        "ToolgateRetentionLosing",
        "ToolgateToolWithheld",
        "ToolgateShadowDisagrees",
        "ToolgateTargetDown",
    ] {
        assert!(alerts.contains(&wanted), "{alerts:?}");
    }
    expressions.extend(
        rules
            .iter()
            .map(|rule| rule["expr"].as_str().unwrap().to_owned()),
    );
    let tests: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/prometheus/alerts.test.yml")).unwrap(),
    )
    .unwrap();
    for test in tests["tests"].as_array().unwrap() {
        for series in test["input_series"].as_array().unwrap() {
            expressions.push(series["series"].as_str().unwrap().to_owned());
        }
    }
    let mut checked = 0;
    for expression in &expressions {
        for (name, labels) in series_named(expression) {
            let exposed = labels_of(&name)
                .unwrap_or_else(|| panic!("{name} is not exposed (in {expression})"));
            for label in labels {
                assert!(
                    exposed.contains(&label),
                    "{name} has no label {label:?} (in {expression}); it has {exposed:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} series checked");
}

#[test]
fn the_container_image_runs_the_proxy_with_arguments_it_accepts() {
    let text = std::fs::read_to_string(root().join("deploy/Dockerfile")).unwrap();
    // ENTRYPOINT and CMD in exec form, joined across their continuation lines.
    let instruction = |name: &str| -> Vec<String> {
        let start = text.find(&format!("\n{name} [")).unwrap() + name.len() + 2;
        let end = start + text[start..].find(']').unwrap() + 1;
        let json = text[start..end].replace("\\\n", " ");
        serde_json::from_str(&json).unwrap()
    };
    let mut args = instruction("ENTRYPOINT");
    assert_eq!(args.remove(0), "/usr/local/bin/toolgate");
    args.extend(instruction("CMD"));
    accepted_up_to_the_credential(&args);
}

#[test]
fn auditing_to_stdout_needs_the_http_listener() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["mcp-proxy", "--root"])
        .arg(root().join("tests/mcp"))
        .args(["--audit", "-", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("stdout carries the host's messages"));
}

/// A collector named wrongly is a configuration error before anything starts (exit 2, saying
/// what to write), whether on the command line or in OpenTelemetry's own variables.
#[test]
fn a_wrong_collector_is_a_configuration_error() {
    for (args, environment, says) in [
        (
            vec!["--otlp-endpoint", "collector:4318"],
            vec![],
            "write the collector's base URL",
        ),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:4318",
                "--otlp-protocol",
                "grpc",
            ],
            vec![],
            "use http/protobuf",
        ),
        (
            vec![],
            vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift"),
            ],
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:4318",
                "--trace-sample",
                "1.5",
            ],
            vec![],
            "is not between 0 and 1",
        ),
        (vec!["--metrics", "localhost"], vec![], "not an address"),
        (
            vec!["--audit", "audit.jsonl", "--audit-flush-interval", "5s"],
            vec![],
            "is not between 1ms and 1s",
        ),
        (
            vec!["--audit-flush-interval", "25ms"],
            vec![],
            "--audit <FILE>",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["mcp-proxy", "--root"])
            .arg(root().join("tests/mcp"))
            .args(&args)
            .args(["--", "true"])
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
            .envs(environment)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}\n{stderr}");
        assert!(
            stderr.contains(says),
            "{args:?} should say {says:?}:\n{stderr}"
        );
    }
}
