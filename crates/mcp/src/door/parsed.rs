//! A call handed to the door already parsed, by a host that owns the wire and hands its hooks the
//! call's parts: a coding agent's hook (`toolgate hook`), a Python gateway's guardrail or plugin
//! (LiteLLM, ContextForge, through the wheel). The door decides each part as the JSON-RPC message
//! it stands for, with [`Door::request`] and [`Door::answer_result`], so a call gets the same agent
//! bytes and audit line as through `mcp-proxy`. Whatever cannot be decided is answered with the
//! tool's fixed failure, never passed.

use serde_json::{Value, json};
use toolgate_gate::ErrorCode;
use toolgate_gate::internals::failure_envelope;

use super::{Answered, Asked, Door, Sender};

/// What the door says of a call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgumentsDecided {
    /// Call the tool with them as they are (no argument contract, or it admitted them unchanged).
    Unchanged,
    /// Call the tool with these instead: the argument contract rebuilt them.
    Rebuilt(Value),
    /// Do not call the tool: the host is given the tool's fixed failure, these agent bytes.
    Refused(String),
}

/// A call's result as the host handed it over.
#[derive(Debug, Clone, Copy)]
pub enum Handed<'a> {
    /// The MCP `CallToolResult` (`content`, `structuredContent`, `isError`), parsed.
    Result(&'a Value),
    /// The compact JSON of the result's `structuredContent` (Claude Code's `tool_response`),
    /// decided as its bytes: the gate's strict parse reads them.
    StructuredJson(&'a str),
    /// The JSON-RPC error the tool's server answered, its message.
    Error(&'a str),
    /// Nothing the door can read, and why.
    Nothing(&'static str),
}

/// What the door says of a call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultDecided {
    /// The MCP result the host is given, as JSON: the one the gate built (in observe mode, the
    /// upstream's as it came).
    pub result: Vec<u8>,
    /// The agent bytes: the result's text, which the gate built (the projection or the fixed
    /// failure). `None` in observe mode, where the upstream's result goes on unchanged.
    pub agent: Option<String>,
}

impl Door {
    /// `arguments` of a call of `tool` with request id `id`, decided by the tool's argument
    /// contract (and refused where the tool has no contract at all).
    pub fn decide_arguments(&self, tool: &str, id: &str, arguments: &Value) -> ArgumentsDecided {
        let message = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        });
        let message = serde_json::to_vec(&message).unwrap_or_default();
        match self.request(&message, &Sender::default()) {
            Asked::Forward {
                rewritten: None, ..
            } => ArgumentsDecided::Unchanged,
            Asked::Forward {
                rewritten: Some(rewritten),
                ..
            } => {
                let rebuilt =
                    serde_json::from_slice::<Value>(&rewritten)
                        .ok()
                        .and_then(|mut message| {
                            message.pointer_mut("/params/arguments").map(Value::take)
                        });
                match rebuilt {
                    Some(rebuilt) if rebuilt == *arguments => ArgumentsDecided::Unchanged,
                    Some(rebuilt) => ArgumentsDecided::Rebuilt(rebuilt),
                    None => ArgumentsDecided::Refused(fixed_failure(tool, id)),
                }
            }
            Asked::Answer(line) => ArgumentsDecided::Refused(
                serde_json::from_slice::<Value>(&line)
                    .ok()
                    .and_then(|line| agent_text(line.get("result")?))
                    .unwrap_or_else(|| fixed_failure(tool, id)),
            ),
        }
    }

    /// The result `handed` of a call of `tool` with request id `id` and `arguments` (as the tool
    /// was called: their contract has decided them already), decided by the tool's contract.
    pub fn decide_result(
        &self,
        tool: &str,
        id: &str,
        arguments: &Value,
        handed: Handed<'_>,
    ) -> ResultDecided {
        let failure = || {
            let agent = fixed_failure(tool, id);
            ResultDecided {
                result: failure_result(&agent),
                agent: Some(agent),
            }
        };
        let request_id = Value::from(id);
        let params = json!({"name": tool, "arguments": arguments});
        let Ok(exchange) =
            self.expect(request_id.clone(), "tools/call", params, &Sender::default())
        else {
            return failure();
        };
        let message = match handed {
            Handed::Result(result) => {
                json!({"jsonrpc": "2.0", "id": request_id, "result": result}).to_string()
            }
            Handed::StructuredJson(structured) => structured_message(&request_id, structured),
            Handed::Error(message) => json!({
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32603, "message": message},
            })
            .to_string(),
            Handed::Nothing(_) => String::new(),
        };
        let answered = match handed {
            Handed::Nothing(why) => Answered::Failed(why),
            _ => Answered::Message(message.as_bytes()),
        };
        let Ok(result) = self.answer_result(exchange, answered) else {
            return failure();
        };
        if self.front.observe() {
            return ResultDecided {
                result,
                agent: None,
            };
        }
        match serde_json::from_slice::<Value>(&result)
            .ok()
            .and_then(|value| agent_text(&value))
        {
            Some(agent) => ResultDecided {
                result,
                agent: Some(agent),
            },
            None => failure(),
        }
    }

    /// The tools a `tools/list` result offers, as the door offers them to the host: the tools
    /// without a contract (or whose pin does not match) left out, each output schema the one
    /// the agent's result meets. `None` where the door cannot read the result.
    pub fn decide_tools_list(&self, result: &Value) -> Option<Value> {
        let exchange = self
            .expect(Value::from(0), "tools/list", json!({}), &Sender::default())
            .ok()?;
        let message = json!({"jsonrpc": "2.0", "id": 0, "result": result}).to_string();
        let listed = self
            .answer_result(exchange, Answered::Message(message.as_bytes()))
            .ok()?;
        serde_json::from_slice(&listed).ok()
    }
}

/// The tool's fixed failure, where no contract decided the call (none, or none could be opened,
/// or the door could not read what it was handed).
pub fn fixed_failure(tool: &str, id: &str) -> String {
    String::from_utf8_lossy(&failure_envelope(
        tool,
        id,
        ErrorCode::InvalidResponse,
        false,
    ))
    .into_owned()
}

/// The MCP result holding `agent`, the fixed failure, as the doors write one.
fn failure_result(agent: &str) -> Vec<u8> {
    let structured: Value = serde_json::from_str(agent).unwrap_or(Value::Null);
    json!({
        "content": [{"type": "text", "text": agent}],
        "structuredContent": structured,
        "isError": true,
    })
    .to_string()
    .into_bytes()
}

/// The agent bytes of a result a door wrote (`tools::result_json`: its one text block).
fn agent_text(result: &Value) -> Option<String> {
    result
        .get("content")?
        .get(0)?
        .get("text")?
        .as_str()
        .map(str::to_owned)
}

/// The JSON-RPC response a result whose `structuredContent` is `structured` stands for, those
/// bytes written in as they are (so a duplicate member reaches the gate's strict parse).
fn structured_message(id: &Value, structured: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":{text}}}],"structuredContent":{structured}}}}}"#,
        text = Value::from(structured),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_json_is_decided_as_its_bytes() {
        assert_eq!(
            structured_message(&Value::from("t1"), r#"{"a":1,"a":2}"#),
            r#"{"jsonrpc":"2.0","id":"t1","result":{"content":[{"type":"text","text":"{\"a\":1,\"a\":2}"}],"structuredContent":{"a":1,"a":2}}}"#
        );
    }

    #[test]
    fn the_fixed_failure_is_a_failure_result() {
        let agent = fixed_failure("weather", "t1");
        assert!(agent.contains(r#""outcome":"failure""#));
        let result: Value = serde_json::from_slice(&failure_result(&agent)).unwrap();
        assert_eq!(agent_text(&result).as_deref(), Some(agent.as_str()));
        assert_eq!(result["isError"], true);
    }
}
