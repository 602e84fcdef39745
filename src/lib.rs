//! # mcp-runtime
//!
//! A synchronous, thread-based runtime for using [MCP](https://modelcontextprotocol.io) servers
//! from hosts that have no async runtime: agents, editors, command-line tools.
//!
//! It reaches servers over stdio, Streamable HTTP and legacy HTTP+SSE, runs the handshake,
//! lists and calls their tools (and resources, prompts, completions, tasks), logs in to remote
//! servers with OAuth, answers what servers ask of the host, and shuts down without leaving a
//! process behind. Every wait is bounded: a request ends with its response,
//! its timeout, its cancellation, or [`Error::TransportClosed`] when the server goes away.
//!
//! A host starts everything with one call:
//!
//! ```no_run
//! use mcp_runtime::{create_agent_session, SessionOptions};
//!
//! let session = create_agent_session(SessionOptions::default());
//! for e in session.startup_errors() {
//!     eprintln!("{}: {}", e.path, e.error);
//! }
//! for t in session.active_tools() {
//!     println!("{} from {}", t.name(), t.origin());
//! }
//! session.close();
//! ```
//!
//! One server, one call (`Client::stdio` starts the server and runs the handshake; dropping
//! the client stops it):
//!
//! ```no_run
//! let client = mcp_runtime::Client::stdio("files", "mcp-server-files", ["/tmp"])?;
//! let result = client.call_tool("read", serde_json::json!({"path": "/tmp/a.txt"}))?;
//! println!("{}", result.text());
//! # Ok::<(), mcp_runtime::Error>(())
//! ```
//!
//! One server, with every option spelled out:
//!
//! ```no_run
//! use std::time::Duration;
//! use mcp_runtime::{CallOptions, CancelToken, Client, ConnectOptions, Endpoint};
//! use serde_json::json;
//!
//! // Start a stdio server and run the handshake (bounded by `options.timeout`, 30 s default).
//! let endpoint = Endpoint::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
//! let client = Client::connect("everything", &endpoint, ConnectOptions::default())?;
//!
//! // Every page of tools.
//! for tool in client.list_tools()? {
//!     println!("{}: {}", tool.name, tool.description.as_deref().unwrap_or(""));
//! }
//!
//! // A call with a timeout, a cancel token the host may fire, and progress reports.
//! let cancel = CancelToken::new();
//! let options = CallOptions::timeout(Duration::from_secs(10))
//!     .with_cancel(cancel.clone())
//!     .with_progress(|p| eprintln!("{}/{:?}", p.progress, p.total));
//! let result = client.call_tool_with("echo", json!({"message": "hello"}), options)?;
//! println!("{}", mcp_runtime::host::render_text(&result));
//!
//! client.close(); // also on drop: stdin closed, SIGTERM, SIGKILL, always reaped
//! # Ok::<(), mcp_runtime::Error>(())
//! ```
//!
//! ## Modules and layers
//!
//! Eight public modules, one per part a host author meets; the crate root re-exports the
//! common case. Inside, each layer uses only itself and the layers below it
//! (`tests/layers.rs` fails on a use of a layer above, by `use` or by an inline path); auth
//! sits beside the transport.
//!
//! | layer | public module | job |
//! |---|---|---|
//! | wire | [`protocol`] | MCP types by topic, protocol versions (the JSON-RPC messages are internal) |
//! | transport | [`transport`] | moves messages: stdio, Streamable HTTP, legacy SSE, and an in-memory pair ([`transport::memory_pair`]) |
//! | auth | [`auth`] | OAuth 2.1 for remote servers: discovery, registration, the sans-IO flow and its driver, authorizers, the provider a transport asks for a token, token storage |
//! | client | [`client`] | one connection: correlation, the era (handshake or stateless), calls, server requests |
//! | config | [`config`] | server configs, the files they come from, trust, and a server's OAuth provider ([`config::provider_for`]) |
//! | config | [`install`] | getting a server: the MCP Registry's API, an entry (`server.json`) checked, MCP bundles (`.mcpb`), the questions they ask, the config that runs them, the consent before it is written |
//! | manager | [`manager`] | many servers: parallel connect, the 250 ms gate, deferred tools, status, the tool cache, exposed names (`mcp_<server>_<tool>`, [`manager::exposed_names`]) |
//! | tools, host | [`host`] | the tool objects and result rendering; the startup facade, the session's tool registry and refresh, `/mcp` commands, subagent tools |
//!
//! ## Threads
//!
//! A stdio connection has one named thread, `mcp-<server>-io`, waiting on the server's stdout
//! and stderr at once; it routes each response straight to its waiting caller. A caller with
//! no cancel token and no progress callback that finds nobody else waiting reads its own answer
//! instead, while that thread parks (it reads again as soon as anyone else waits, and at most
//! 20 ms after the last such call, so nothing the server sends between calls waits longer; it
//! starts parked, so the handshake reads its own answers on the connecting thread).
//! Callers write
//! the server's stdin themselves, and never block on it: what a full pipe cannot take goes to
//! `mcp-<server>-writer`, started only then. Server requests are answered on threads of their
//! own (a slow [`ClientHandler`] never stalls the connection), notifications on
//! `mcp-<server>-events` (started with the first one). An HTTP request runs on its caller's
//! thread (a cancel signal aborts its I/O from the thread that fires it), or, when the caller
//! has a progress callback to be called while it waits, on a small worker pool
//! (`mcp-<server>-http`); `mcp-<server>-listen` holds the GET stream, opened only when the
//! server or the client declared something that may come on it. The manager connects
//! each server on a thread of its own (`mcp-<server>-connect`), refreshes lists on
//! `mcp-<server>-refresh` (one at a time per server, coalesced), and closes connections on
//! `mcp-<server>-close` and `mcp-<server>-died` threads that disconnecting waits for. On Linux,
//! the first stdio spawn also forks a small guardian process that stops every server's process
//! group if the host dies without closing them.
//!
//! ## The reference
//!
//! Each module's page is the reference for its part; the text is also in `docs/` in the
//! repository, one file a module:
//!
//! | what | where |
//! |---|---|
//! | the session, `/mcp` commands, subagents, resources, prompts, tasks, tool search, output budgets | [`host`] |
//! | the manager: parallel connect, the gate, deferred tools, the tool cache, reconnection | [`manager`] |
//! | where servers are discovered, project servers and trust, the administrator's policy | [`config`] |
//! | a server from the MCP Registry or an MCP bundle: its entry, its questions, what runs, consent | [`install`] |
//! | a connection: answering the server, protocol revisions and eras, extensions (Skills, Apps) | [`client`] |
//! | stdio, a stdio server in the operating system's sandbox, Streamable HTTP, legacy SSE, local sockets, proxies, TLS, Windows | [`transport`] |
//! | logging in to a remote server (OAuth 2.1, DPoP, workload identity) | [`auth`] |
//! | the `mcp` command, every subcommand and exit status | [`_cli`] |
//! | Cargo features, failures, timeouts and shutdown, what is guaranteed | below |
//!
#![doc = include_str!("../docs/features.md")]
//!
#![doc = include_str!("../docs/telemetry.md")]
//!
#![doc = include_str!("../docs/failures.md")]
//!
#![doc = include_str!("../docs/security.md")]
#![warn(missing_docs)]
// A panic is a bug: no `unwrap`/`expect` outside tests, except where an `allow` says why it
// cannot fail.
// docs.rs marks what each feature adds (see `[package.metadata.docs.rs]`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(clippy::unwrap_used, clippy::expect_used)]
// The docs name the OAuth flow's types (`auth::OAuthProvider`, ...), which a build without the
// `oauth` feature leaves out; the full build's docs are checked for broken links.
#![cfg_attr(not(feature = "oauth"), allow(rustdoc::broken_intra_doc_links))]

// The public modules: what a host author reads. Everything else is private; what a host needs of
// it is re-exported by the public module of its layer (`host` gathers the loader, the session,
// the `/mcp` commands, subagent tools and the tool objects; `manager` the tool cache).
pub mod auth;
pub mod client;
pub mod config;
pub mod host;
pub mod install;
pub mod manager;
pub mod protocol;
pub mod transport;

/// The `mcp` command's reference: a documentation page, no items (the command is built with
/// the `cli` feature; `cargo install --locked --path .` installs it).
#[doc = include_str!("../docs/cli.md")]
pub mod _cli {}

/// One HTTP POST on the library's exchange and connection stack, for the `mcp` command's
/// OpenTelemetry exporter (its OTLP/HTTP client): not part of the API.
#[cfg(all(feature = "otel", feature = "oauth"))]
#[doc(hidden)]
pub mod otlp {
    /// POSTs `body` to `url` with `headers` before `deadline`: the status and body, or the
    /// failure in words (never a header's value).
    pub fn post(
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        deadline: std::time::Instant,
    ) -> Result<(u16, Vec<u8>), String> {
        crate::auth::post_once(url, headers, body, deadline)
    }
}

mod cancel;
mod error;
mod files;
mod hex;
mod jsonrpc;
mod net;
mod panic;
mod sleep_lock;
mod telemetry;
mod text;
mod tool;

// Its targets are the parsers of every feature: a build without one has no fuzzing module.
#[cfg(all(
    any(test, fuzzing),
    feature = "oauth",
    feature = "yaml",
    feature = "toml"
))]
#[doc(hidden)]
pub mod fuzzing;

/// The request head the loopback servers read (the OAuth callback listener, and the `mcp`
/// command's app pages): shared with the command, not part of the API.
#[doc(hidden)]
pub mod loopback {
    pub use crate::net::request_head::{
        parse, parse_proxy, read_head, read_proxy_head, RequestHead, MAX_HEAD,
    };
}

/// Fault injection for this crate's own tests (the `fault-injection` feature): not part of the
/// API. Each boundary by its name, for a hook to compare with, and the hook.
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub mod faults {
    pub const CONNECT: &str = "connect";
    pub const REFRESH: &str = "refresh";
    pub const TEARDOWN: &str = "teardown";
    pub const CLOSE: &str = "close";
    pub const SEND: &str = "send";
    pub const STDIO_READER: &str = "stdio_reader";
    pub const STDIO_WRITER: &str = "stdio_writer";
    pub const STDIO_STDERR: &str = "stdio_stderr";
    pub const HTTP_JOB: &str = "http_job";
    pub const GET_STREAM: &str = "get_stream";
    pub const SSE_STREAM: &str = "sse_stream";
    pub const EVENTS: &str = "events";
    pub const SERVER_REQUEST: &str = "server_request";
    pub const STATELESS_INPUT: &str = "stateless_input";
    pub const SUBSCRIPTIONS: &str = "subscriptions";
    pub const COMMAND: &str = "command";
    #[cfg(feature = "oauth")]
    pub const BROWSER: &str = "browser";
    pub const CANCEL_SEND: &str = "cancel_send";
    #[cfg(unix)]
    pub const SANDBOX_PROXY: &str = "sandbox_proxy";

    /// Calls `hook` with the name of every boundary (one of the constants here) this thread,
    /// and every thread the library starts from it, passes; a hook that panics there is a
    /// panic at that boundary. The faults are removed when the guard drops.
    #[must_use = "the faults are removed when this is dropped"]
    pub fn inject(hook: impl Fn(&str) + Send + Sync + 'static) -> impl Drop {
        crate::panic::inject(move |at| hook(at.name()))
    }
}

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// What a host needs, at the root; the modules hold the rest of what a host can set or plug in
// (config sources, the tool cache, the in-memory pipe for `Client::with_transport`, OAuth
// authorizers and token storage).
pub use cancel::CancelToken;
pub use client::{
    CallOptions, Client, ClientHandler, ConnectOptions, Endpoint, EraChoice, MAX_RESULT_VALUES,
};
pub use config::{DiscoveryOptions, ProjectTrust, ServerConfig};
pub use error::{Error, OAuthErrorKind};
pub use host::loader::discover_mcp_servers;
pub use host::session::{create_agent_session, AgentSession, SessionOptions};
pub use manager::{ManagerOptions, McpManager};
pub use protocol::{CallToolResult, ContentBlock};
pub use tool::{AgentTool, ToolOutput};
