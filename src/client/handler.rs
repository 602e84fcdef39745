//! [`ClientHandler`]: how a host answers what a server asks of it.

use serde_json::Value;

use crate::error::Error;
use crate::jsonrpc::RpcError;
use crate::protocol::{ClientCapabilities, LoggingLevel, Root};

/// The host's side of server → client traffic.
///
/// `ping` is always answered by the client itself. For `roots/list`,
/// `sampling/createMessage` and `elicitation/create`, the client asks [`capabilities`]
/// what the handler implements, declares exactly that in `initialize`, and answers `-32601`
/// (without calling the handler) for anything not declared. The default of every method
/// is "not supported".
///
/// Requests are answered on a thread of their own, so a slow handler never stalls the
/// connection. Notifications arrive in order on the connection's event thread; do not block
/// there for long.
///
/// A method that panics is caught and logged: a server request it was answering gets a
/// `-32603` error, a notification is dropped (the next is still delivered), and the connection
/// stays.
///
/// [`capabilities`]: ClientHandler::capabilities
pub trait ClientHandler: Send + Sync + 'static {
    /// What this handler implements; declared to the server during the handshake.
    /// Set `roots`, `sampling` and `elicitation` (e.g. to `{}`) for each one implemented.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::default()
    }

    /// `roots/list`: the directories the server may work in.
    fn list_roots(&self, server: &str) -> Result<Vec<Root>, RpcError> {
        let _ = server;
        Err(RpcError::method_not_found("roots/list"))
    }

    /// `sampling/createMessage`: `params` as the server sent them; the result is sent back as is
    /// (a `CreateMessageResult`: `role`, `content`, `model`, `stopReason`).
    fn create_message(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        let _ = (server, params);
        Err(RpcError::method_not_found("sampling/createMessage"))
    }

    /// `elicitation/create`: `params` as the server sent them; the result (`action`, `content`)
    /// is sent back as is.
    fn elicit(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        let _ = (server, params);
        Err(RpcError::method_not_found("elicitation/create"))
    }

    /// `notifications/tools/list_changed`: the server's tool list changed.
    fn on_tools_list_changed(&self, server: &str) {
        let _ = server;
    }

    /// The server forgot our HTTP session (a restart, an expiry) and the client established a
    /// new one: the handshake ran again, so the server's version, capabilities, instructions,
    /// and what it lists (tools, resources, prompts) may all have changed. Called once per new
    /// session, on the thread of the request that noticed, before that request is re-sent (or
    /// fails): return quickly.
    fn on_session_reinitialized(&self, server: &str) {
        let _ = server;
    }

    /// `notifications/message`: a log message of the server, its severity, the server-side
    /// logger's name and its payload (any JSON), so a host can show it (it is also logged
    /// through the `log` crate, target `mcp::<server>`). Called in order with the other
    /// notifications, on the connection's event thread.
    fn on_log_message(
        &self,
        server: &str,
        level: LoggingLevel,
        logger: Option<&str>,
        data: &Value,
    ) {
        let _ = (server, level, logger, data);
    }

    /// Any other notification, by its method and params (progress, log messages and
    /// cancellations are handled by the client and not passed here).
    fn on_notification(&self, server: &str, method: &str, params: Option<&Value>) {
        let _ = (server, method, params);
    }

    /// The W3C trace context (<https://www.w3.org/TR/trace-context/>) of the request about to
    /// be sent to `server`, as the entries of its `_meta`: `traceparent` (e.g.
    /// `00-<trace id>-<span id>-01`) and, when there are, `tracestate` and `baggage`;
    /// typically the host's current span. Entries the request has already stay. Called on the
    /// calling thread before each request; the default is none.
    fn trace_context(&self, server: &str) -> Option<serde_json::Map<String, Value>> {
        let _ = server;
        None
    }

    /// The connection ended (the process exited, the stream ended, it was closed, ...). Called
    /// once, possibly on the transport's reader thread: return quickly.
    fn on_connection_closed(&self, server: &str, reason: &Error) {
        let _ = (server, reason);
    }
}

/// Adds a trace context's entries (`traceparent`, `tracestate`, `baggage`) to `params._meta`;
/// entries already there stay.
pub(crate) fn with_trace_context(
    params: Option<Value>,
    context: serde_json::Map<String, Value>,
) -> Value {
    let mut params = match params {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        for (key, value) in context {
            meta.entry(key).or_insert(value);
        }
    }
    Value::Object(params)
}

/// A handler that supports nothing: every server request gets `-32601`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NoHandler;

impl ClientHandler for NoHandler {}
