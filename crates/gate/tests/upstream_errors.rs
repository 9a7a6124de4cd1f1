//! `upstream_errors:`: an API's own failures (GitHub's 404 `{"message":"Not Found"}`, Stripe's
//! `{"error":{"code":"resource_missing"}}`) reach the agent as the mapped code and nothing else,
//! decided by the status before the body is read, or by a member of the strictly parsed body.

mod common;

use common::{REQUEST_ID, failure, now, request, text};
use toolgate_gate::{Contract, ContractSource, ErrorCode, Layer, Outcome, Response};

const REPO: &str = r#"{"type": "object", "required": ["id", "name"], "properties": {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 100}}, "additionalProperties": false}"#;

fn contract(mappings: &str) -> Contract {
    let yaml = format!(
        "tool: repo\nversion: 1\ndirection: result\nshape:\n  schema: repo.json\n  fields:\n    - {{ name: name, from: /name }}\nagent_schema: agent.json\nupstream_errors:\n{mappings}"
    );
    let source = ContractSource::new(yaml)
        .with_schema("repo.json", REPO)
        .with_schema("agent.json", "{}");
    Contract::compile(&source).unwrap_or_else(|errors| panic!("{errors}"))
}

const GITHUB: &str = "  - name: not_found\n    status: [404, 410]\n    code: NOT_FOUND\n  - name: rate_limited\n    status: 403\n    body: { pointer: /message, equals: API rate limit exceeded }\n    code: UPSTREAM_UNAVAILABLE\n";

const STRIPE: &str = "  - name: resource_missing\n    body: { pointer: /error/code, equals: resource_missing }\n    code: NOT_FOUND\n  - name: maintenance\n    status: 503\n    code: UPSTREAM_UNAVAILABLE\n    retryable: false\n";

fn decide(contract: &Contract, status: Option<u16>, body: &[u8]) -> toolgate_gate::Decision {
    let mut response = Response::body(body);
    if let Some(status) = status {
        response = response.with_status(status);
    }
    contract.admit_response(response, &request(), now())
}

#[test]
fn a_github_404_reaches_the_agent_as_not_found_and_nothing_of_its_body() {
    let contract = contract(GITHUB);
    for body in [
        &br#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#[..],
        // The status decides before the body is read: even HTML or a duplicate is never parsed.
        b"<html>404</html>",
        br#"{"message":"a","message":"b"}"#,
    ] {
        let decision = decide(&contract, Some(404), body);
        assert!(matches!(decision.outcome(), Outcome::Rejected(_)));
        let rejection = decision.rejection().unwrap();
        assert_eq!(
            (rejection.layer(), rejection.code(), rejection.retryable()),
            (Layer::Transport, ErrorCode::NotFound, false)
        );
        assert_eq!(
            text(decision.agent_bytes()),
            failure("repo", "NOT_FOUND", false)
        );
        let record = decision.operator_record().unwrap();
        assert_eq!(record.rule(), "upstream_errors.not_found");
        assert!(
            record.message().contains("status 404"),
            "{}",
            record.message()
        );
    }
    assert_eq!(
        decide(&contract, Some(410), b"")
            .rejection()
            .unwrap()
            .code(),
        ErrorCode::NotFound
    );
    // A success is a success; another error status that no entry maps is refused by its status
    // (the contract describes only the success), never validated as a success body.
    assert!(decide(&contract, Some(200), br#"{"id":1,"name":"toolgate"}"#).is_admitted());
    let other = decide(&contract, Some(400), br#"{"message":"Bad"}"#);
    assert_eq!(other.rejection().unwrap().layer(), Layer::Transport);
    assert_eq!(other.operator_record().unwrap().rule(), "upstream_status");
}

/// Where the description is silent on a status: a 404 or 410 is NOT_FOUND, any other error
/// status is refused naming it (its fix says where a 4xx usually comes from), and neither is
/// validated as a success, even when its body would pass the success schema.
#[test]
fn an_unmapped_error_status_is_never_read_as_a_success() {
    let yaml = "tool: repo\nversion: 1\ndirection: result\nshape:\n  schema: repo.json\n  fields:\n    - { name: name, from: /name }\nagent_schema: agent.json\n";
    let source = ContractSource::new(yaml)
        .with_schema("repo.json", REPO)
        .with_schema("agent.json", "{}");
    let contract = Contract::compile(&source).unwrap_or_else(|errors| panic!("{errors}"));
    let looks_like_success = br#"{"id":1,"name":"toolgate"}"#;
    for (status, code) in [
        (404, ErrorCode::NotFound),
        (410, ErrorCode::NotFound),
        (400, ErrorCode::InvalidResponse),
        (422, ErrorCode::InvalidResponse),
    ] {
        let decision = decide(&contract, Some(status), looks_like_success);
        let rejection = decision
            .rejection()
            .unwrap_or_else(|| panic!("{status} admitted"));
        assert_eq!(
            (rejection.layer(), rejection.code(), rejection.retryable()),
            (Layer::Transport, code, false),
            "{status}"
        );
        let record = decision.operator_record().unwrap();
        assert_eq!(record.rule(), "upstream_status");
        assert!(
            record.message().contains(&format!("status {status}")),
            "{}",
            record.message()
        );
        assert!(
            record.hint().contains("upstream_errors entry"),
            "{}",
            record.hint()
        );
    }
    assert!(decide(&contract, Some(200), looks_like_success).is_admitted());
    assert!(decide(&contract, Some(304), looks_like_success).is_admitted());
}

#[test]
fn a_body_mapping_reads_the_strictly_parsed_body_and_the_status_it_names() {
    let contract = contract(GITHUB);
    let limited = decide(
        &contract,
        Some(403),
        br#"{"message":"API rate limit exceeded","documentation_url":"x"}"#,
    );
    let rejection = limited.rejection().unwrap();
    assert_eq!(
        (rejection.code(), rejection.retryable()),
        (ErrorCode::UpstreamUnavailable, true),
        "the retry policy decides: UPSTREAM_UNAVAILABLE is retryable unless it says otherwise"
    );
    assert_eq!(
        limited.operator_record().unwrap().rule(),
        "upstream_errors.rate_limited"
    );
    // The same body under another status is not this mapping's.
    let elsewhere = decide(
        &contract,
        Some(200),
        br#"{"message":"API rate limit exceeded"}"#,
    );
    assert_eq!(elsewhere.rejection().unwrap().layer(), Layer::Schema);
    // Evidence goes through the parser first: a duplicate member is refused, never mapped.
    let duplicate = decide(
        &contract,
        Some(403),
        br#"{"message":"API rate limit exceeded","message":"x"}"#,
    );
    assert_eq!(duplicate.rejection().unwrap().layer(), Layer::Parse);
}

#[test]
fn a_stripe_error_body_maps_under_any_status_and_a_mapping_outranks_the_default_statuses() {
    let contract = contract(STRIPE);
    let missing = br#"{"error":{"code":"resource_missing","message":"No such payment_intent: 'pi_123'","type":"invalid_request_error"}}"#;
    for status in [None, Some(404), Some(400)] {
        let decision = decide(&contract, status, missing);
        let rejection = decision.rejection().unwrap();
        assert_eq!(rejection.code(), ErrorCode::NotFound, "{status:?}");
        let agent = text(decision.agent_bytes());
        assert!(
            !agent.contains("pi_123") && !agent.contains("No such"),
            "{agent}"
        );
    }
    // 503 is unavailable by default (retryable under a policy that retries it); the mapping
    // says not to retry, and it decides first.
    let maintenance = decide(&contract, Some(503), b"down");
    let rejection = maintenance.rejection().unwrap();
    assert_eq!(
        (rejection.code(), rejection.retryable()),
        (ErrorCode::UpstreamUnavailable, false)
    );
    assert_eq!(
        maintenance.operator_record().unwrap().rule(),
        "upstream_errors.maintenance"
    );
    // Unmapped defaults still apply.
    assert_eq!(
        decide(&contract, Some(502), b"")
            .operator_record()
            .unwrap()
            .rule(),
        "upstream_status"
    );
    assert_eq!(REQUEST_ID, request().id());
}

#[test]
fn a_mapping_that_cannot_match_or_reads_a_text_body_does_not_compile() {
    let compile = |yaml: String, schema: &str| {
        let source = ContractSource::new(yaml)
            .with_schema("repo.json", schema)
            .with_schema("agent.json", "{}");
        Contract::compile(&source)
            .expect_err("must not compile")
            .to_string()
    };
    let json = |mappings: &str| {
        format!(
            "tool: repo\nversion: 1\ndirection: result\nshape:\n  schema: repo.json\n  fields:\n    - {{ name: name, from: /name }}\nagent_schema: agent.json\nupstream_errors:\n{mappings}"
        )
    };
    let neither = compile(json("  - name: vague\n    code: NOT_FOUND\n"), REPO);
    assert!(
        neither.contains("matches a `status`, a `body` member, both, or a `tool_error`"),
        "{neither}"
    );
    let status = compile(
        json("  - name: odd\n    status: 99\n    code: NOT_FOUND\n"),
        REPO,
    );
    assert!(
        status.contains("status 99 must be an HTTP status (100 to 599)"),
        "{status}"
    );
    let twice = compile(
        json(
            "  - name: gone\n    status: 404\n    code: NOT_FOUND\n  - name: gone\n    status: 410\n    code: NOT_FOUND\n",
        ),
        REPO,
    );
    assert!(
        twice.contains("two upstream_errors entries are named `gone`"),
        "{twice}"
    );
    let text = compile(
        "tool: repo\nversion: 1\ndirection: result\nshape:\n  schema: repo.json\n  text_pattern: '^(?P<name>[a-z]+)$'\n  fields:\n    - { name: name, from: /name }\nagent_schema: agent.json\nupstream_errors:\n  - name: nope\n    body: { pointer: /x, equals: 1 }\n    code: NOT_FOUND\n".to_owned(),
        r#"{"type": "object"}"#,
    );
    assert!(
        text.contains("text contract's output is not JSON"),
        "{text}"
    );
}

/// What the agent is told of a tool error, and the operator record's rule.
fn tool_error(contract: &Contract, body: &[u8]) -> (ErrorCode, bool, String, String) {
    let decision = contract.admit_response(Response::tool_error(body), &request(), now());
    let rejection = decision
        .rejection()
        .expect("a tool error is never admitted");
    let record = decision.operator_record().unwrap();
    (
        rejection.code(),
        rejection.retryable(),
        record.rule().to_owned(),
        text(decision.agent_bytes()).to_owned(),
    )
}

#[test]
fn a_tool_error_is_mapped_like_a_status_and_unmapped_is_not_retried() {
    // MCP's isError: no status, its structuredContent (if any) the body the entries read.
    let mapped = contract(
        "  - name: unknown_repo\n    tool_error: true\n    body: { pointer: /error, equals: unknown_repo }\n    code: NOT_FOUND\n",
    );
    let (code, retryable, rule, agent) = tool_error(
        &mapped,
        br#"{"error":"unknown_repo","hint":"try torvalds/linux"}"#,
    );
    assert_eq!(
        (code, retryable, rule.as_str()),
        (ErrorCode::NotFound, false, "upstream_errors.unknown_repo")
    );
    assert_eq!(agent, failure("repo", "NOT_FOUND", false));
    // Another error, no structured part, or a body that would pass the schema: still an error,
    // and the same call would get the same answer.
    for body in [
        &br#"{"error":"quota"}"#[..],
        b"",
        br#"{"id":1,"name":"looks fine"}"#,
    ] {
        let (code, retryable, rule, agent) = tool_error(&mapped, body);
        assert_eq!(
            (code, retryable, rule.as_str()),
            (ErrorCode::InvalidResponse, false, "tool_error")
        );
        assert_eq!(agent, failure("repo", "INVALID_RESPONSE", false));
    }
    // An entry without a body maps every tool error, before anything is read.
    let any = contract(
        "  - name: tool_failed\n    tool_error: true\n    code: UPSTREAM_UNAVAILABLE\n    retryable: true\n",
    );
    let (code, retryable, rule, _) = tool_error(&any, b"{not json");
    assert_eq!(
        (code, retryable, rule.as_str()),
        (
            ErrorCode::UpstreamUnavailable,
            true,
            "upstream_errors.tool_failed"
        )
    );
    // A tool_error entry says nothing about answers that are not tool errors.
    let admitted = decide(&mapped, None, br#"{"id":1,"name":"toolgate"}"#);
    assert!(admitted.is_admitted());
    let unmapped_body = decide(&mapped, None, br#"{"error":"unknown_repo"}"#);
    assert_eq!(unmapped_body.rejection().unwrap().layer(), Layer::Schema);
}

#[test]
fn a_tool_error_has_no_status() {
    let yaml = "tool: repo\nversion: 1\ndirection: result\nshape:\n  schema: repo.json\n  fields:\n    - { name: name, from: /name }\nagent_schema: agent.json\nupstream_errors:\n  - name: both\n    status: 404\n    tool_error: true\n    code: NOT_FOUND\n";
    let source = ContractSource::new(yaml)
        .with_schema("repo.json", REPO)
        .with_schema("agent.json", "{}");
    let errors = Contract::compile(&source).unwrap_err().to_string();
    assert!(
        errors.contains("`status` or `tool_error`, not both"),
        "{errors}"
    );
}
