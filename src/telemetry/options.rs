//! What a host chooses of the telemetry.

/// How a connection traces (the `otel` feature; see docs/telemetry.md). The default follows
/// the MCP semantic conventions with nothing a host has to opt out of: a span per request,
/// no `baggage` sent to servers, no arguments or results recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Telemetry {
    /// The host makes a span of its own for each tool execution (as the GenAI conventions'
    /// `execute_tool` span): a tool call then makes no second span; its MCP attributes go on
    /// the host's current span, and that span's context is the one sent to the server.
    pub reuse_tool_span: bool,
    /// Send the host's W3C `baggage` to servers (in `_meta` and HTTP headers). Off by default:
    /// baggage is the host's, and servers may be third parties.
    pub send_baggage: bool,
    /// Record a tool call's arguments and result on its span (`gen_ai.tool.call.arguments`,
    /// `gen_ai.tool.call.result`). Off by default: they can hold secrets and personal data.
    pub record_tool_content: bool,
}
