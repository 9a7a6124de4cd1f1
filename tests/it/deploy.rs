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
/// address at a free port) without the credential's variable: it must get as far as reading it.
fn accepted_up_to_the_credential(args: &[String]) {
    let args: Vec<String> = args
        .iter()
        .map(|arg| match arg.as_str() {
            "/contracts" => root().join("tests/mcp").display().to_string(),
            "0.0.0.0:8080" => "127.0.0.1:0".to_owned(),
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

/// The Deployment listens on 0.0.0.0 with the upstream's credential, and nothing in the proxy
/// authenticates a host: it says so (`--insecure-no-auth`, without which the proxy refuses), and
/// ships beside a NetworkPolicy that admits only the labelled client pods, on the MCP port.
#[test]
fn the_public_listener_ships_with_a_network_policy_that_admits_only_its_clients() {
    let deployment: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/kubernetes/deployment.yaml")).unwrap(),
    )
    .unwrap();
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array()
            .unwrap()
            .iter()
            .any(|arg| arg == "--insecure-no-auth"),
        "{args}"
    );
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
    assert_eq!(rules.len(), 1);
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
