//! `toolgate ext-mcp`: agentgateway's `ExtMcp` service. agentgateway calls `CheckRequest` with
//! a request's method and raw `params` before it forwards it, and `CheckResponse` with the
//! method and the raw `result` before the host reads it.
//!
//! - `CheckRequest`: the message as the host sent it, asked of [`Door::request`]: `pass`,
//!   `mutated` (the arguments an argument contract rebuilt) or `error` (a refusal: the upstream
//!   is never called).
//! - `CheckResponse`: the result decided as the call's, `mutated` with the result the host is
//!   given, or `error`. The hook carries no tool name, request id or arguments: the operator maps
//!   them into `metadata_context` (`tool`, `requestId`, `arguments`; guide: "Inside
//!   agentgateway"), and a call without `tool` is refused.
//!
//! What this door cannot do, said in the guide: agentgateway hands over a re-serialized result
//! (a duplicate key is gone before toolgate sees it), error results skip the hook, and the
//! request's arguments reach the response hook only through metadata.

use std::sync::Arc;

use serde_json::{Map, Value};
use tonic::{Request, Response, Status};
use toolgate_mcp::{Answered, Asked, Door, Sender};

use crate::CallerFrom;
use crate::ext_mcp_proto::ext_mcp_server::{ExtMcp, ExtMcpServer};
use crate::ext_mcp_proto::{
    AuthorizationError, McpRequest, McpRequestResult, McpResponse, McpResponseResult, Pass,
    authorization_error::Code, mcp_request_result, mcp_response_result,
};

/// The `metadata_context` keys the door reads.
pub mod keys {
    /// The tool a `tools/call` calls (agentgateway: `mcp.tool.name`).
    pub const TOOL: &str = "tool";
    /// The host's JSON-RPC id (where the gateway can say it; correlation needs it only for
    /// contracts that echo it).
    pub const REQUEST_ID: &str = "requestId";
    /// The call's arguments (an object), for contracts whose rules read them.
    pub const ARGUMENTS: &str = "arguments";
}

/// The gRPC service, ready to serve.
pub(crate) fn service(
    door: Arc<Door>,
    caller_from: Option<CallerFrom>,
) -> tonic::transport::server::Router {
    let cap = door.max_message_bytes() + 64 * 1024;
    tonic::transport::Server::builder().add_service(
        ExtMcpServer::new(Checker { door, caller_from })
            .max_decoding_message_size(cap)
            .max_encoding_message_size(cap),
    )
}

struct Checker {
    door: Arc<Door>,
    caller_from: Option<CallerFrom>,
}

#[tonic::async_trait]
impl ExtMcp for Checker {
    async fn check_request(
        &self,
        request: Request<McpRequest>,
    ) -> Result<Response<McpRequestResult>, Status> {
        let asked = request.into_inner();
        let context = asked.metadata_context.as_ref().map(json_of_struct);
        let id = request_id(context.as_ref());
        let caller = self.caller(&asked.headers, context.as_ref());
        let message = request_message(&id, &asked.method, asked.mcp_request.as_deref());
        let sender = Sender {
            caller: caller.as_deref(),
            ..Sender::default()
        };
        let result = match self.door.request(&message, &sender) {
            Asked::Forward {
                rewritten: None, ..
            } => mcp_request_result::Result::Pass(Pass {}),
            Asked::Forward {
                rewritten: Some(rewritten),
                ..
            } => match params_of(&rewritten) {
                Some(params) => mcp_request_result::Result::Mutated(params),
                None => refused_request(&rewritten),
            },
            Asked::Answer(line) => refused_request(&line),
        };
        Ok(Response::new(McpRequestResult {
            result: Some(result),
            ..Default::default()
        }))
    }

    async fn check_response(
        &self,
        request: Request<McpResponse>,
    ) -> Result<Response<McpResponseResult>, Status> {
        let answered = request.into_inner();
        let context = answered.metadata_context.as_ref().map(json_of_struct);
        let id = request_id(context.as_ref());
        let caller = self.caller(&[], context.as_ref());
        let sender = Sender {
            caller: caller.as_deref(),
            ..Sender::default()
        };
        let mut params = Map::new();
        if answered.method == "tools/call" {
            let Some(tool) = context
                .as_ref()
                .and_then(|context| context.get(keys::TOOL))
                .and_then(Value::as_str)
            else {
                return Ok(refused_response(
                    Code::Invalid,
                    "toolgate ext-mcp needs the tool's name in metadata_context `tool` (mcp.tool.name) to decide a call's result",
                ));
            };
            params.insert("name".to_owned(), Value::from(tool));
            if let Some(arguments) = context
                .as_ref()
                .and_then(|context| context.get(keys::ARGUMENTS))
            {
                params.insert("arguments".to_owned(), arguments.clone());
            }
        }
        let exchange =
            match self
                .door
                .expect(id.clone(), &answered.method, Value::Object(params), &sender)
            {
                Ok(exchange) => exchange,
                Err(line) => return Ok(refused_response_line(&line)),
            };
        // The result, held in the response message the other doors read, byte for byte.
        let mut message = Vec::with_capacity(answered.mcp_response.len() + 48);
        message.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        message.extend_from_slice(id.to_string().as_bytes());
        message.extend_from_slice(br#","result":"#);
        message.extend_from_slice(&answered.mcp_response);
        message.push(b'}');
        let result = match self
            .door
            .answer_result(exchange, Answered::Message(&message))
        {
            Ok(result) => mcp_response_result::Result::Mutated(result),
            Err(error) => {
                return Ok(Response::new(McpResponseResult {
                    result: Some(mcp_response_result::Result::Error(authorization_error(
                        Code::Invalid,
                        &error,
                    ))),
                }));
            }
        };
        Ok(Response::new(McpResponseResult {
            result: Some(result),
        }))
    }
}

impl Checker {
    /// The caller, where `--caller-from` says to read it: a header agentgateway passed on, or a
    /// `metadata_context` key.
    fn caller(
        &self,
        headers: &[crate::ext_mcp_proto::McpHeader],
        context: Option<&Value>,
    ) -> Option<String> {
        match self.caller_from.as_ref()? {
            CallerFrom::Header(name) => headers
                .iter()
                .find(|header| header.key.eq_ignore_ascii_case(name))
                .and_then(|header| String::from_utf8(header.value.clone()).ok()),
            CallerFrom::Metadata { path, .. } => {
                let mut at = context?;
                for key in path {
                    at = at.get(key)?;
                }
                at.as_str().map(str::to_owned)
            }
        }
    }
}

/// The request a hook's method and raw params make, as the host sent it: the params' bytes
/// kept as they came, so the strict parse reads them.
pub(crate) fn request_message(id: &Value, method: &str, params: Option<&[u8]>) -> Vec<u8> {
    let mut message = Vec::with_capacity(params.map_or(0, <[u8]>::len) + 64);
    message.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    message.extend_from_slice(id.to_string().as_bytes());
    message.extend_from_slice(br#","method":"#);
    message.extend_from_slice(Value::from(method).to_string().as_bytes());
    if let Some(params) = params {
        message.extend_from_slice(br#","params":"#);
        message.extend_from_slice(params);
    }
    message.push(b'}');
    message
}

/// The host's id, where `metadata_context` names it (a whole number as the number it was).
fn request_id(context: Option<&Value>) -> Value {
    match context.and_then(|context| context.get(keys::REQUEST_ID)) {
        Some(Value::String(text)) => Value::from(text.as_str()),
        Some(Value::Number(number)) => number
            .as_f64()
            .filter(|whole| whole.fract() == 0.0 && whole.abs() < 9.0e15)
            .map_or_else(
                || Value::Number(number.clone()),
                |whole| Value::from(whole as i64),
            ),
        _ => Value::from(0),
    }
}

/// The `params` of a message the door rewrote.
pub(crate) fn params_of(message: &[u8]) -> Option<Vec<u8>> {
    let message: Value = serde_json::from_slice(message).ok()?;
    serde_json::to_vec(message.get("params")?).ok()
}

/// The refusal of a request, from the answer the door gave instead: its error, or for a call the
/// argument contract refused, the tool's fixed failure as the error's data.
fn refused_request(line: &[u8]) -> mcp_request_result::Result {
    let message: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
    let error = match message.get("result") {
        Some(failure) => serde_json::json!({
            "code": -32602,
            "message": "refused by toolgate: the call's arguments were refused by the tool's argument contract",
            "data": failure,
        }),
        None => message.get("error").cloned().unwrap_or(Value::Null),
    };
    mcp_request_result::Result::Error(authorization_error(
        Code::PermissionDenied,
        error.to_string().as_bytes(),
    ))
}

fn refused_response_line(line: &[u8]) -> Response<McpResponseResult> {
    let message: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
    let error = message.get("error").cloned().unwrap_or(Value::Null);
    Response::new(McpResponseResult {
        result: Some(mcp_response_result::Result::Error(authorization_error(
            Code::Invalid,
            error.to_string().as_bytes(),
        ))),
    })
}

fn refused_response(code: Code, reason: &str) -> Response<McpResponseResult> {
    let error = serde_json::json!({"code": -32603, "message": reason});
    let mut refusal = authorization_error(code, error.to_string().as_bytes());
    refusal.reason = reason.to_owned();
    Response::new(McpResponseResult {
        result: Some(mcp_response_result::Result::Error(refusal)),
    })
}

/// An `error` result: the JSON-RPC error object the host is given, and its message as the
/// reason.
fn authorization_error(code: Code, error: &[u8]) -> AuthorizationError {
    let reason = serde_json::from_slice::<Value>(error)
        .ok()
        .and_then(|error| {
            error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "refused by toolgate".to_owned());
    AuthorizationError {
        code: code as i32,
        reason,
        mcp_error: (!error.is_empty()).then(|| error.to_vec()),
    }
}

/// A protobuf `Struct` as JSON.
fn json_of_struct(fields: &prost_types::Struct) -> Value {
    Value::Object(
        fields
            .fields
            .iter()
            .map(|(key, value)| (key.clone(), json_of(value)))
            .collect(),
    )
}

fn json_of(value: &prost_types::Value) -> Value {
    use prost_types::value::Kind;
    match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::NumberValue(number)) => {
            serde_json::Number::from_f64(*number).map_or(Value::Null, Value::Number)
        }
        Some(Kind::StringValue(text)) => Value::from(text.as_str()),
        Some(Kind::BoolValue(flag)) => Value::Bool(*flag),
        Some(Kind::StructValue(inner)) => json_of_struct(inner),
        Some(Kind::ListValue(list)) => Value::Array(list.values.iter().map(json_of).collect()),
    }
}
