//! One server connection: request/response correlation, the handshake, typed calls,
//! server → client requests and notifications.
//!
//! A [`Client`] is cheap to clone and safe to share: any number of threads may call it at once,
//! and each caller gets its own answer. Every wait is bounded: a request ends with its response,
//! its timeout, its cancellation, or [`Error::TransportClosed`] when the connection dies.
//!
//! The client owns the session: when a Streamable HTTP server forgets it (a restart), the
//! client runs the handshake again, takes the new server's version, capabilities and
//! instructions, tells its handler ([`ClientHandler::on_session_reinitialized`]), and re-sends
//! the request only if it just reads or lists; a tool call fails with
//! [`Error::SessionExpired`] (see `renewal`).
//!
#![doc = include_str!("../../docs/client.md")]

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::select;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::cancel::CancelToken;
use crate::error::Error;
use crate::jsonrpc::Message;
use crate::panic::Boundary;
use crate::protocol::{methods, CallToolResult, ClientCapabilities, Implementation, Tool};
use crate::transport::{Envelope, Transport};

mod apps;
pub use apps::{AppPage, MAX_APP_BYTES};
mod budget;
mod caught;
mod connect;
mod era;
mod extensions;
mod features;
mod handler;
mod listen;
mod options;
mod page;
mod renewal;
mod reply;
mod router;
mod skills;
mod task_extension;
mod tasks;

/// How a connection traces: in [`ConnectOptions::telemetry`] (the `otel` feature).
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub use crate::telemetry::Telemetry;
pub use budget::MAX_RESULT_VALUES;
pub(crate) use caught::CaughtHandler;
pub use era::MAX_INPUT_ROUNDS;
pub use handler::ClientHandler;
pub(crate) use options::ProgressFn;
pub use options::{CallOptions, ConnectOptions, Endpoint, EraChoice};
pub use renewal::MAX_INSTRUCTIONS_BYTES;

use connect::ConnectFailure;
pub(crate) use connect::Leftover;
use era::{Envelopes, SessionEra};

use router::{Router, Slot};

/// The most `tools/list` pages we follow before stopping with a warning.
pub const MAX_LIST_PAGES: usize = 1000;

/// A connection to one MCP server.
///
/// ```no_run
/// use mcp_runtime::{Client, ConnectOptions, Endpoint};
/// use serde_json::json;
///
/// let endpoint = Endpoint::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
/// let client = Client::connect("everything", &endpoint, ConnectOptions::default())?;
/// for tool in client.list_tools()? {
///     println!("{}", tool.name);
/// }
/// let out = client.call_tool("echo", json!({"message": "hi"}))?;
/// println!("{}", out.text());
/// client.close();
/// # Ok::<(), mcp_runtime::Error>(())
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Connection,
    request_timeout: Duration,
    max_request_timeout: Duration,
    /// What the latest handshake settled, and its renewal when an HTTP session expires.
    session: renewal::Session,
    /// Who we say we are (again, in a new session's `initialize`).
    client_info: Implementation,
    /// How requests go on the wire: the one place the era decides.
    era: SessionEra,
    /// What the last `tools/list` said of itself (version, `ttlMs`, `cacheScope`).
    listing: parking_lot::Mutex<crate::protocol::Listing>,
    /// When the last `tools/list` began.
    listed_at: parking_lot::Mutex<Option<Instant>>,
    /// The tools whose last listing said they must be called as tasks.
    task_tools: parking_lot::Mutex<HashSet<String>>,
    /// The MCP Apps' `ui://` resources read so far, by URI (see `apps`).
    apps: apps::AppCache,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.conn.transport.close();
        // The session's duration: a close is its normal end, anything else a failure.
        let failure = self
            .conn
            .router
            .closed()
            .filter(|e| !e.is_closed_by_owner());
        let version = self.session.version();
        self.conn
            .telemetry
            .end(Some(version.as_str()), failure.as_ref());
    }
}

/// The pieces of a connection before its handshake is done.
pub(crate) struct Connection {
    name: String,
    transport: Arc<dyn Transport>,
    router: Arc<Router>,
    /// What every message goes in: the era's version and headers.
    envelopes: Arc<Envelopes>,
    next_id: Arc<AtomicI64>,
    /// What we declare in `initialize` (asked of the handler once).
    declared: ClientCapabilities,
    /// The host's handler (asked for each request's trace context).
    handler: Arc<dyn ClientHandler>,
    /// Its spans and metrics (the `otel` feature; nothing without it).
    telemetry: crate::telemetry::Session,
}

/// How one request waits.
pub(crate) struct Wait<'a> {
    timeout: Duration,
    hard_deadline: Instant,
    cancel: Option<CancelToken>,
    on_progress: Option<ProgressFn<'a>>,
    /// `initialize` must never be cancelled on the wire.
    notify_cancel: bool,
}

impl Connection {
    /// The connect ran out of its bound `after`: the error, with what the server wrote to
    /// stderr and what it printed on stdout that was not JSON-RPC.
    fn timed_out(&self, after: Duration) -> Error {
        Error::ConnectTimeout {
            server: self.name.clone(),
            after,
            stderr_tail: self.transport.stderr_tail(),
            skipped_stdout: self.transport.skipped_stdout(),
        }
    }

    fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let mut params = params;
        let traced = self
            .telemetry
            .outgoing(method, &mut params, None, || self.transport.session_id());
        let message = Message::notification(method, params);
        let mut envelope = self.envelopes.envelope(&message);
        traced.headers(&mut envelope.headers);
        let sent = self.send(&message, &envelope);
        traced.finish(envelope.version.map(|v| v.as_str()), sent_outcome(&sent));
        sent
    }

    /// Ends the connection with `error`: marked closed first, so a call racing with the close
    /// gets this reason, then the transport is closed.
    pub(crate) fn fail(&self, error: Error) {
        self.router.fail_all(error);
        self.transport.close();
    }

    /// Hands a message to the transport, which may do its I/O on this thread: a panic in it
    /// ends the connection with [`Error::Internal`], which this returns. A transport found
    /// closed under a connection that has ended gives the connection's reason (a panic of one
    /// of its threads, say, which closed the transport after it ended the connection), not the
    /// closed pipe it left behind.
    pub(crate) fn send(&self, message: &Message, envelope: &Envelope) -> Result<(), Error> {
        match crate::panic::catch(Boundary::Send, || self.transport.send(message, envelope)) {
            Ok(Err(closed @ Error::TransportClosed { .. })) => {
                Err(self.router.closed().unwrap_or(closed))
            }
            Ok(sent) => sent,
            Err(e) => {
                self.fail(e.clone());
                Err(e)
            }
        }
    }

    /// Sends a request and waits for its result, parsed as a [`Value`].
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<Value>,
        wait: Wait<'_>,
    ) -> Result<Value, Error> {
        parse_result(method, &self.request_raw(method, params, wait)?)
    }

    /// Sends a request and waits for its outcome: the result as the JSON text it came as.
    pub(crate) fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        wait: Wait<'_>,
    ) -> Result<Box<RawValue>, Error> {
        self.request_traced(method, params, wait).0
    }

    /// [`Connection::request_raw`], and its span's context: what the request's outcome causes
    /// next (a new session's handshake) is its child.
    pub(crate) fn request_traced(
        &self,
        method: &str,
        params: Option<Value>,
        wait: Wait<'_>,
    ) -> (Result<Box<RawValue>, Error>, crate::telemetry::Carried) {
        if wait.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return (Err(Error::Cancelled), crate::telemetry::Carried::none());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Waiting for nothing but the answer: the transport may run the exchange (or read the
        // answer) on this thread, and the answer comes through a waiter, not a channel.
        let alone = wait.cancel.is_none() && wait.on_progress.is_none();
        let (tx, rx) = reply::pair(alone);
        let (progress_tx, progress_rx) = match wait.on_progress {
            Some(_) => {
                let (ptx, prx) = crossbeam_channel::unbounded();
                (Some(ptx), prx)
            }
            None => (None, crossbeam_channel::never()),
        };
        let mut params = match progress_tx {
            Some(_) => Some(with_progress_token(params, id)),
            None => params,
        };
        // Its span, current on this thread while it runs (what it causes here is its child).
        let traced = self.telemetry.outgoing(method, &mut params, Some(id), || {
            self.transport.session_id()
        });
        let _current = traced.enter();
        let mut envelope = crate::transport::Envelope {
            trace: traced.carried(),
            ..crate::transport::Envelope::default()
        };
        traced.headers(&mut envelope.headers);
        let pending = Pending {
            alone,
            tx,
            rx,
            progress_tx,
            progress_rx,
        };
        let outcome = self.send_and_wait(id, method, params, wait, pending, envelope);
        let carried = traced.carried();
        traced.finish(
            self.envelopes.version().map(|v| v.as_str()),
            outcome.as_deref().map(Some),
        );
        (outcome, carried)
    }

    /// [`Connection::request_raw`] once the request is made: sends it (its `extra` headers and
    /// span beside the era's) and waits for its outcome.
    fn send_and_wait(
        &self,
        id: i64,
        method: &str,
        params: Option<Value>,
        mut wait: Wait<'_>,
        pending: Pending,
        extra: crate::transport::Envelope,
    ) -> Result<Box<RawValue>, Error> {
        let Pending {
            alone,
            tx,
            rx,
            progress_tx,
            progress_rx,
        } = pending;
        self.router.register(
            id,
            Slot {
                response: tx,
                progress: progress_tx,
            },
        )?;
        let message = Message::request(id, method, params);
        let deadline = (Instant::now() + wait.timeout).min(wait.hard_deadline);
        let mut envelope = crate::transport::Envelope {
            deadline: Some(deadline),
            inline: alone,
            cancel: wait.cancel.clone().filter(|_| wait.on_progress.is_none()),
            trace: extra.trace,
            ..self.envelopes.envelope(&message)
        };
        envelope.headers.extend(extra.headers);
        match self.send(&message, &envelope) {
            Ok(()) => {}
            // The transport is shutting down: its reader fails this slot with the real reason
            // (exit status, stderr) once the process is gone, so wait for that below.
            Err(Error::TransportClosed { .. }) => {}
            Err(e) => {
                self.router.forget(id);
                return Err(e);
            }
        }
        // A caller that read its own answer (stdio) or ran its own exchange (HTTP) finds it
        // here already.
        if envelope.inline {
            if let Some(outcome) = rx.try_recv() {
                return outcome;
            }
        }
        // A cancellable exchange the transport ran here, cut short by the cancel: the failure
        // in the slot is the cut, and the answer is "cancelled" (an answer that made it wins).
        if wait.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            self.router.forget(id);
            if let Some(Ok(result)) = rx.try_recv() {
                return Ok(result);
            }
            if wait.notify_cancel {
                let reason = Error::Cancelled.to_string();
                let _ = self.notify(
                    methods::CANCELLED,
                    Some(json!({"requestId": id, "reason": reason})),
                );
            }
            return Err(Error::Cancelled);
        }
        let abandoned = match rx.channel() {
            // Nothing but the answer and the deadline to wait for: a plain wait is cheaper
            // than a select over channels that can never fire.
            None => match rx.recv_until(deadline) {
                Ok(outcome) => return outcome,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(Error::closed("the connection was dropped"))
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => Error::Timeout {
                    method: method.to_owned(),
                    after: wait.timeout,
                },
            },
            Some(answer_rx) => {
                let never = crossbeam_channel::never();
                let cancel_rx = wait.cancel.as_ref().map(|c| c.receiver()).unwrap_or(&never);
                let mut deadline = deadline;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    select! {
                    recv(answer_rx) -> outcome => {
                        // Progress sent before the response was routed before it too: deliver
                        // it first (select! picks among ready channels at random).
                        if let Some(cb) = wait.on_progress.as_mut() {
                            while let Ok(p) = progress_rx.try_recv() {
                                cb(&p);
                            }
                        }
                        return outcome.unwrap_or_else(|_| Err(Error::closed("the connection was dropped")));
                    }
                    recv(progress_rx) -> p => {
                        if let (Ok(p), Some(cb)) = (p, wait.on_progress.as_mut()) {
                            cb(&p);
                            deadline = (Instant::now() + wait.timeout).min(wait.hard_deadline);
                        }
                    }
                    recv(cancel_rx) -> _ => break Error::Cancelled,
                    default(left) => break Error::Timeout { method: method.to_owned(), after: wait.timeout },
                    }
                }
            }
        };
        self.router.forget(id);
        // The response may have won the race with the deadline; prefer it.
        if let Some(outcome) = rx.try_recv() {
            return outcome;
        }
        if wait.notify_cancel {
            let reason = abandoned.to_string();
            let _ = self.notify(
                methods::CANCELLED,
                Some(json!({"requestId": id, "reason": reason})),
            );
        }
        Err(abandoned)
    }
}

/// A request's answer channels, made before it is sent.
struct Pending {
    /// Nothing but the answer is waited for (see `request_traced`).
    alone: bool,
    tx: reply::ReplyTx,
    rx: reply::ReplyRx,
    progress_tx: Option<crossbeam_channel::Sender<crate::protocol::Progress>>,
    progress_rx: crossbeam_channel::Receiver<crate::protocol::Progress>,
}

/// What a send's result is to its span: a notification has no answer but its send.
fn sent_outcome(sent: &Result<(), Error>) -> Result<Option<&RawValue>, &Error> {
    sent.as_ref().map(|()| None)
}

/// A result's JSON text parsed into the type its method returns, in one pass (no [`Value`]
/// tree in between unless `T` is one).
pub(crate) fn parse_result<T: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<T, Error> {
    budget::check(method, raw.get())?;
    serde_json::from_str(raw.get())
        .map_err(|e| Error::protocol(format!("invalid {method} result: {e}")))
}

fn with_progress_token(params: Option<Value>, token: i64) -> Value {
    let mut params = match params {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("progressToken".into(), Value::from(token));
    }
    Value::Object(params)
}

impl Client {
    /// Sends a request and waits for its result, as a JSON value.
    pub fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions<'_>,
    ) -> Result<Value, Error> {
        self.request_as(method, params, options)
    }

    /// Sends a request and parses its result straight into `T`.
    pub(crate) fn request_as<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions<'_>,
    ) -> Result<T, Error> {
        parse_result(method, &self.request_raw(method, params, options)?)
    }

    /// Sends a request and waits for its result's JSON text.
    pub(crate) fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions<'_>,
    ) -> Result<Box<RawValue>, Error> {
        self.request_raw_with(method, params, options, true)
    }

    /// [`Client::request_raw`]; `notify_cancel: false` sends no `notifications/cancelled` when
    /// the wait is given up (a task's requests: the task is cancelled with `tasks/cancel`).
    pub(crate) fn request_raw_with(
        &self,
        method: &str,
        params: Option<Value>,
        options: CallOptions<'_>,
        notify_cancel: bool,
    ) -> Result<Box<RawValue>, Error> {
        let inner = &*self.inner;
        let timeout = crate::cancel::capped(options.timeout.unwrap_or(inner.request_timeout));
        let hard = if options.on_progress.is_some() {
            inner.max_request_timeout.max(timeout)
        } else {
            timeout
        };
        let wait = Wait {
            timeout,
            hard_deadline: Instant::now() + hard,
            cancel: options.cancel,
            on_progress: options.on_progress,
            notify_cancel,
        };
        let params = match inner.conn.handler.trace_context(&inner.conn.name) {
            Some(trace) => Some(handler::with_trace_context(params, trace)),
            None => params,
        };
        match &inner.era {
            SessionEra::Handshake => self.handshake_request(method, params, wait),
            SessionEra::Stateless(session) => {
                let relist = || self.list_tools().map(drop);
                session.request(&inner.conn, method, params, wait, &relist)
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        self.inner.conn.notify(method, params)
    }

    /// Lists every tool, following `nextCursor` to the last page. Stops (with a warning) on a
    /// cursor the server already sent or after [`MAX_LIST_PAGES`] pages. A server that did not
    /// declare the `tools` capability has no tools.
    pub fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        if self.initialize_result().capabilities.tools.is_none() {
            return Ok(Vec::new());
        }
        let mut tools: Vec<Tool> = self.list_all(methods::TOOLS_LIST, "tools")?;
        let conn = &self.inner.conn;
        self.inner
            .era
            .after_listing(&conn.envelopes, &conn.name, &mut tools);
        *self.inner.task_tools.lock() = tools
            .iter()
            .filter(|t| tasks::requires_task(t))
            .map(|t| t.name.clone())
            .collect();
        Ok(tools)
    }

    /// Calls a tool with the connection's request timeout, and returns its result as the
    /// server sent it (see [`Client::call_tool_with`]).
    pub fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, CallOptions::default())
    }

    /// Calls a tool and returns its result as the server sent it. A tool that failed is a
    /// successful call whose result has `isError: true`; a protocol or transport failure is an
    /// `Err`. A tool the last listing marked `execution.taskSupport: "required"` runs as a task
    /// on a server that supports them (one blocking call all the same; see `client::tasks`).
    pub fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, Error> {
        // 2025-11-25's tasks are the handshake era's (2026-07-28 has the extension).
        if matches!(self.inner.era, SessionEra::Handshake)
            && self.server_runs_tool_tasks()
            && self.inner.task_tools.lock().contains(name)
        {
            return self.call_tool_as_task(name, arguments, options);
        }
        let params = json!({ "name": name, "arguments": arguments });
        let mut options = options;
        let bounds = task_extension::Bounds::of(self, &options);
        let first = CallOptions {
            timeout: options.timeout,
            cancel: options.cancel.clone(),
            on_progress: options
                .on_progress
                .as_mut()
                .map(|cb| Box::new(|p: &_| cb(p)) as ProgressFn<'_>),
        };
        let raw = self.request_raw(methods::TOOLS_CALL, Some(params), first)?;
        if self.may_answer_with_a_task()
            && crate::protocol::ResultType::of_json(&raw) == Ok(crate::protocol::ResultType::Task)
        {
            // The tasks extension: the server runs it as a task, which the call follows.
            let created: Value = parse_result(methods::TOOLS_CALL, &raw)?;
            return self.follow_task(created, bounds, &mut options.on_progress);
        }
        parse_result(methods::TOOLS_CALL, &raw)
    }

    /// Sends `ping` and waits for the answer (2026-07-28 has no `ping`: `server/discover`
    /// checks the server is there instead).
    pub fn ping(&self, timeout: Duration) -> Result<(), Error> {
        let method = match self.inner.era {
            SessionEra::Handshake => methods::PING,
            SessionEra::Stateless(_) => methods::SERVER_DISCOVER,
        };
        self.request(method, None, CallOptions::timeout(timeout))
            .map(|_| ())
    }

    /// Closes the connection (for stdio: stops the process and its group, bounded by twice the
    /// close grace period plus a second). Every pending request fails with
    /// [`Error::TransportClosed`]. Idempotent; dropping the last clone of a client closes it too.
    pub fn close(&self) {
        self.inner.conn.fail(Error::closed_by_owner());
    }

    /// Ends the connection with `error` (a panic caught in what served it): every pending
    /// request fails with it, and it is the connection's closed reason.
    pub(crate) fn fail(&self, error: Error) {
        self.inner.conn.fail(error);
    }

    /// Whether the connection has ended, and why.
    pub fn closed_reason(&self) -> Option<Error> {
        self.inner.conn.router.closed()
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.inner.conn.name
    }

    /// The transport kind: `stdio`, `http` or `sse`.
    pub fn transport_kind(&self) -> &'static str {
        self.inner.conn.transport.kind()
    }

    /// The proxy the connection goes through, without its credentials (see *Networks* in the
    /// `transport` module's docs).
    pub fn proxy(&self) -> Option<String> {
        self.inner.conn.transport.proxy()
    }

    /// The server's process id, for a local server.
    pub fn pid(&self) -> Option<u32> {
        self.inner.conn.transport.pid()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.inner.conn.transport.stderr_tail()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.inner.conn.name)
            .field("transport", &self.inner.conn.transport.kind())
            .field("protocol_version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}
