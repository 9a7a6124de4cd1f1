//! G4 correlation: the response must be for this tool and answer the outstanding request.
//!
//! The request id is compared with the one the adapter minted, never taken from the response: a
//! late, replayed or misrouted answer to another request is rejected even if it is otherwise valid.

use crate::document::Node;
use crate::fault::Fault;
use crate::outcome::Layer;
use crate::pointer::JsonPointer;
use crate::request::Request;

/// Where a shape carries the tool name and the request id (absent for shapes that carry neither,
/// such as a legacy bare object; then the adapter's own knowledge stands in).
#[derive(Debug, Clone, Default)]
pub(crate) struct Correlation {
    pub tool: Option<JsonPointer>,
    pub request_id: Option<JsonPointer>,
}

pub(crate) fn check(
    correlation: &Correlation,
    document: Node<'_>,
    tool: &str,
    request: &Request,
) -> Result<(), Fault> {
    if let Some(pointer) = &correlation.tool {
        let found = pointer.resolve(document);
        if found.and_then(|node| node.as_str()) != Some(tool) {
            return Err(Fault::new(
                Layer::Correlation,
                "tool",
                format!("the response names tool {}, but this contract is for {tool:?}", shown(found)),
                "a dispatcher routed another tool's answer here; never accept one tool's result as another's",
            )
            .at(pointer.as_str()));
        }
    }
    if let Some(pointer) = &correlation.request_id {
        let found = pointer.resolve(document);
        if found.and_then(|node| node.as_str()) != Some(request.id()) {
            return Err(Fault::new(
                Layer::Correlation,
                "request_id",
                format!(
                    "the response answers request {}, but the outstanding request is {:?}",
                    shown(found),
                    request.id()
                ),
                "a late, replayed or misrouted response: the connector must echo the request id the adapter sent",
            )
            .at(pointer.as_str()));
        }
    }
    Ok(())
}

fn shown(value: Option<Node<'_>>) -> String {
    value.map_or_else(|| "(nothing)".to_owned(), |node| node.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use serde_json::json;

    fn correlation() -> Correlation {
        Correlation {
            tool: Some(JsonPointer::new("/tool")),
            request_id: Some(JsonPointer::new("/request_id")),
        }
    }

    #[test]
    fn matching_tool_and_request_pass() {
        let document = json!({"tool": "job_status", "request_id": "req.00000001"});
        assert!(
            check(
                &correlation(),
                Document::from_value(&document).root(),
                "job_status",
                &Request::new("req.00000001")
            )
            .is_ok()
        );
    }

    #[test]
    fn another_tools_answer_is_refused() {
        let document = json!({"tool": "review_status", "request_id": "req.00000001"});
        let fault = check(
            &correlation(),
            Document::from_value(&document).root(),
            "job_status",
            &Request::new("req.00000001"),
        )
        .unwrap_err();
        assert_eq!(fault.rule, "tool");
        assert_eq!(
            fault.message,
            r#"the response names tool "review_status", but this contract is for "job_status""#
        );
    }

    /// The operator is told what stood where the id belongs: the value as JSON, or that nothing
    /// did.
    #[test]
    fn the_operator_message_shows_what_the_response_held() {
        let refused = |document: serde_json::Value| {
            check(
                &correlation(),
                Document::from_value(&document).root(),
                "job_status",
                &Request::new("req.00000001"),
            )
            .unwrap_err()
            .message
            .clone()
        };
        assert_eq!(
            refused(json!({"tool": "job_status", "request_id": 7})),
            r#"the response answers request 7, but the outstanding request is "req.00000001""#
        );
        assert_eq!(
            refused(json!({"tool": "job_status"})),
            r#"the response answers request (nothing), but the outstanding request is "req.00000001""#
        );
        assert_eq!(
            refused(json!({"request_id": "req.00000001"})),
            r#"the response names tool (nothing), but this contract is for "job_status""#
        );
    }

    #[test]
    fn another_requests_answer_is_refused() {
        let document = json!({"tool": "job_status", "request_id": "req.00000002"});
        let fault = check(
            &correlation(),
            Document::from_value(&document).root(),
            "job_status",
            &Request::new("req.00000001"),
        )
        .unwrap_err();
        assert_eq!(fault.rule, "request_id");
        assert_eq!(fault.instance_path.as_deref(), Some("/request_id"));
    }

    #[test]
    fn shapes_without_correlation_members_pass() {
        let document = json!({"state": "healthy"});
        assert!(
            check(
                &Correlation::default(),
                Document::from_value(&document).root(),
                "release_status",
                &Request::new("r")
            )
            .is_ok()
        );
    }
}
