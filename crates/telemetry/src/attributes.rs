//! What a tool call's span says of it: the same fields with or without OTLP, so a front names
//! them once whichever way it is built.

/// What the span of a tool call says of it.
#[derive(Clone, Copy)]
pub struct CallAttributes<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The host's JSON-RPC id, written as text only if the call is traced.
    pub request_id: &'a dyn std::fmt::Display,
    /// `pipe` (stdio) or `tcp` (HTTP).
    pub transport: &'static str,
    /// The door the call came through (`mcp-proxy`, `ext-proc`, `ext-mcp`): `toolgate.door`.
    pub door: &'static str,
    /// The handshake-era session (`Mcp-Session-Id`), over HTTP.
    pub session: Option<&'a str>,
    /// The revision the host speaks, where it said.
    pub protocol_version: Option<&'a str>,
    /// The host's W3C trace context.
    pub traceparent: Option<&'a str>,
    /// Who asked, where the front authenticated the caller (`enduser.id`).
    pub caller: Option<&'a str>,
}
