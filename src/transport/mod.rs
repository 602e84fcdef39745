//! Transports move JSON-RPC messages between us and one server: stdio (a child process),
//! Streamable HTTP and legacy SSE, built by the client from an
//! [`Endpoint`](crate::client::Endpoint) and tuned by [`StdioOptions`] and [`HttpOptions`].
//!
//! Any other way of reaching a server (an in-process server, a socket of the host's own) goes
//! through an in-memory pipe, [`memory_pair`]: the client takes one end
//! ([`Client::with_transport`](crate::client::Client::with_transport), or a manager's
//! [`connector`](crate::manager::ManagerOptions::connector)), and whoever holds the other, a
//! [`MemoryServer`], answers or forwards JSON-RPC messages as JSON values.
//!
//! Inside, each transport is built with a sink it delivers to: whoever reads (its reader
//! thread, or for stdio a caller reading its own answer) hands on every message the server
//! sends, in order, and reports the end of the connection exactly once. Sending never blocks
//! on the server: a server that stops reading cannot hang the caller.
//!
#![doc = include_str!("../../docs/transport.md")]

use crate::error::Error;
use crate::jsonrpc::{Message, RequestId};
use crate::protocol::ProtocolVersion;

mod caught_auth;
pub(crate) mod http;
#[cfg(windows)]
mod job;
pub(crate) mod lines;
mod memory;
mod pool;
mod process;
pub(crate) mod sse;
pub(crate) mod sse_parser;
#[cfg(unix)]
mod stdin;
// Windows pipes cannot be made non-blocking: a writer thread per server instead.
#[cfg(not(unix))]
mod stdin_thread;
#[cfg(not(unix))]
use stdin_thread as stdin;
pub(crate) mod sandbox;
pub(crate) mod stdio;
pub(crate) mod web;

// What a host sets. The three transports themselves are built by the client from an
// `Endpoint`, not by hosts.
pub use crate::net::target::{AuthProvider, HttpOptions, HttpTarget, MAX_AUTH_RETRIES};
pub(crate) use http::HttpTransport;
pub use http::MAX_DEAD_LISTENS;
pub use memory::{pair as memory_pair, MemoryConnector, MemoryServer};
pub use sandbox::Sandbox;
pub(crate) use sse::SseTransport;
pub(crate) use stdio::StdioTransport;
pub use stdio::{StdioCommand, StdioOptions, CLOSE_GRACE, KILL_WAIT};

/// Builds a transport around a client's [`Inbound`] sink, for
/// [`Client::with_transport`](crate::client::Client::with_transport) and a manager's
/// [`ManagerOptions::connector`](crate::manager::ManagerOptions::connector).
pub(crate) trait Connector: Send + Sync {
    /// The transport for the server `name`, delivering what it receives to `inbound`.
    fn connect(
        &self,
        name: &str,
        inbound: std::sync::Arc<dyn Inbound>,
    ) -> Result<std::sync::Arc<dyn Transport>, Error>;
}

impl Connector for memory::MemoryConnector {
    fn connect(
        &self,
        name: &str,
        inbound: std::sync::Arc<dyn Inbound>,
    ) -> Result<std::sync::Arc<dyn Transport>, Error> {
        Ok(std::sync::Arc::new(self.transport(name, inbound)?))
    }
}

/// What goes with a message besides its body, all of it decided by the client's session: the
/// protocol version and headers its era asks for, and how its sender waits for the answer.
/// `Debug` shows the headers' names, never their values (they mirror a call's arguments).
#[derive(Clone, Default)]
pub(crate) struct Envelope {
    /// The protocol version the message goes under; `None` before one is settled (the
    /// `initialize` request). HTTP sends it as `MCP-Protocol-Version` where the revision asks
    /// for the header, and follows that revision's transport rules (2026-07-28: no session id;
    /// a request is cancelled by ending its response stream).
    pub version: Option<ProtocolVersion>,
    /// Headers that mirror the body (2026-07-28's `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`),
    /// named and encoded as they go on the wire; transports without headers ignore them.
    pub headers: Vec<(String, String)>,
    /// For a request whose sender waits for the answer: when it stops waiting. `None` for a
    /// request nobody waits on with a deadline (an open-ended subscription), and for
    /// notifications and responses.
    pub deadline: Option<std::time::Instant>,
    /// The sender needs nothing awake while it waits (no cancel signal, no progress
    /// callback): a transport may run the exchange, or read the answer, on the sender's
    /// thread, bounded by `deadline`. The answer still goes through [`Inbound`].
    pub inline: bool,
    /// The sender's cancel signal, if it has one (and no progress callback): a transport may
    /// still run the exchange on the sender's thread if firing the signal ends it at once.
    pub cancel: Option<crate::cancel::CancelToken>,
    /// The request's span (the `otel` feature), to be current on a worker thread that runs the
    /// exchange for the sender (what the exchange causes, an OAuth refresh, is its child).
    pub trace: crate::telemetry::Carried,
}

impl std::fmt::Debug for Envelope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Envelope")
            .field("version", &self.version)
            .field("headers", &names)
            .field("deadline", &self.deadline)
            .field("inline", &self.inline)
            .field("cancel", &self.cancel.is_some())
            .finish()
    }
}

/// Where a transport delivers what the server sends.
pub(crate) trait Inbound: Send + Sync {
    /// One message from the server. Called on the thread reading (the transport's reader, or a
    /// caller waiting for its answer): return quickly.
    fn on_message(&self, message: Message);
    /// The connection ended (EOF, process exit, stream end, oversized message, close).
    /// Called once, after the last `on_message`.
    fn on_closed(&self, error: Error);
    /// One request failed without a JSON-RPC response (an HTTP error status, a broken
    /// stream, ...); the connection itself carries on.
    fn on_request_failed(&self, id: &RequestId, error: Error);
}

/// A connection to one server that can send messages.
pub(crate) trait Transport: Send + Sync {
    /// Sends one message in its envelope. Never waits for the answer to a request past the
    /// envelope's deadline (the answer comes through [`Inbound`], possibly before this
    /// returns when the envelope says `inline`); a notification or response may be written
    /// out before this returns. Fails with [`Error::TransportClosed`] once the transport is
    /// closed.
    fn send(&self, message: &Message, envelope: &Envelope) -> Result<(), Error>;
    /// Closes the connection and releases its resources (for stdio: the process and its whole
    /// process group). Idempotent; bounded in time.
    fn close(&self);
    /// The last lines the server wrote to stderr (empty for remote servers).
    fn stderr_tail(&self) -> Vec<String> {
        Vec::new()
    }
    /// How many stdout lines that are not JSON-RPC a local server printed before its first
    /// message, and the first of them (trimmed, secrets masked); `None` when there were none.
    fn skipped_stdout(&self) -> Option<(usize, String)> {
        None
    }
    /// A short name of the transport kind: `stdio`, `http` or `sse`.
    fn kind(&self) -> &'static str;
    /// The proxy the connection goes through, without its credentials.
    fn proxy(&self) -> Option<String> {
        None
    }
    /// The server's process id, for a local process.
    fn pid(&self) -> Option<u32> {
        None
    }
    /// The session id the server gave (Streamable HTTP's `Mcp-Session-Id`), for telemetry.
    fn session_id(&self) -> Option<String> {
        None
    }
    /// The handshake is complete and the server may send messages unasked (HTTP opens its GET
    /// stream); not called when neither side declared anything that would make it.
    fn on_ready(&self) {}
}

#[cfg(test)]
mod tests {
    use super::Envelope;

    #[test]
    fn an_envelope_shows_header_names_never_values() {
        let envelope = Envelope {
            headers: vec![("mcp-param-token".into(), "ARG-SECRET".into())],
            ..Envelope::default()
        };
        let shown = format!("{envelope:?}");
        assert!(shown.contains("mcp-param-token"), "{shown}");
        assert!(!shown.contains("ARG-SECRET"), "{shown}");
    }
}
