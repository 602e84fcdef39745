//! The Streamable HTTP transport (revisions 2025-03-26 … 2025-11-25).
//!
//! - Every message is a POST of JSON with `Accept: application/json, text/event-stream`, the
//!   configured headers, `Mcp-Session-Id` once the server gave one, and `MCP-Protocol-Version`
//!   from 2025-06-18 on.
//! - A request's POST runs on its caller's thread (a cancel signal aborts its I/O from the
//!   firing thread), or on a worker when the caller has a progress callback to be called while
//!   it waits; its reply is JSON or an event stream, whose other messages (server requests,
//!   notifications) are dispatched as they come. A stream cut before the response is resumed
//!   with `Last-Event-ID` after the server's `retry` delay, a bounded number of times.
//! - Notifications and responses are POSTed on the calling thread (202 expected), so they reach
//!   the server in the order they were sent.
//! - After the handshake a GET stream (thread `mcp-<server>-listen`) carries server-initiated
//!   messages; a 405 or another 4xx means the server has none, and we carry on without it.
//!   It reconnects with `Last-Event-ID` and a capped backoff that empty streams do not reset.
//! - A 404 to a request that carried a session means the server forgot it (it restarted, or
//!   expired the session), and so does a 400 whose body names the session (what servers built
//!   on the TypeScript SDK's examples answer after a restart): the request fails with [`Error::SessionExpired`] and the session id
//!   is forgotten. Until an `initialize` succeeds again, every other request fails the same
//!   way without being sent (it could only be refused). Re-initializing is the client's job
//!   (`client::renewal`): it runs the handshake again, once however many requests noticed,
//!   and re-sends only the idempotent ones. After it, [`Transport::on_ready`] brings back the
//!   GET stream if it ended meanwhile.
//! - Close sends DELETE (bounded by `close_timeout`, 1 s by default) and shuts the connections
//!   down, which interrupts every read.
//!
//! Bounds and endings:
//! - Every phase of a request (connect, send, response headers, body or stream, the resuming
//!   GETs and the pauses between them) is bounded by the caller's
//!   deadline, as one overall timeout. At the deadline the caller reports its own
//!   [`Error::Timeout`]; the transport reports nothing else for a request whose time ran out.
//!   A call with a progress callback (whose deadline moves with each progress) has
//!   `exchange_timeout` as its bound instead.
//! - A call that ends early (timeout, cancel: the client then sends `notifications/cancelled`)
//!   ends its exchange at once: the worker's blocked read is interrupted (see `abort`).
//! - A request that fails at the connection level (refused, unreachable: no HTTP status, no
//!   timeout), or a GET stream whose reconnection fails so [`MAX_DEAD_LISTENS`] times in a row,
//!   ends the transport ([`Inbound::on_closed`] with the reason).
//! - Redirects are never followed (see `web`): a 3xx is [`Error::Redirect`].

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use ureq::http::header::{ACCEPT, CONTENT_TYPE};
use ureq::http::{HeaderName, HeaderValue, Response, Uri};
use ureq::Body;

use super::pool::{Worker, WorkerPool};
use super::sse_parser::SseDecoder;
use super::web::{self, StreamEnd};
use super::{Envelope, Inbound, Transport};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::jsonrpc::{Message, RequestId, Response as RpcResponse};
use crate::net::abort::Abort;
use crate::net::target::{AuthProvider, HttpOptions, HttpTarget};
use crate::panic::Boundary;
use crate::protocol::{methods, ProtocolVersion};

/// The session header (Streamable HTTP).
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version header (2025-06-18+).
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

mod auth;
mod ending;
mod get_stream;
mod headers;
mod resume;
mod session_id;
mod strays;
use ending::{cancelled_id, has_progress_token};
pub use get_stream::MAX_DEAD_LISTENS;
use headers::WithHeader;

/// A Streamable HTTP connection. Dropping it closes it.
pub struct HttpTransport {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    /// The URL as `ureq` sees it and as we show it, and the secrets only the wire gets.
    wire: web::Wire,
    /// Asked what to do when a request is answered `401` or `403`.
    target_auth: Option<Arc<dyn AuthProvider>>,
    remote: web::Remote,
    options: HttpOptions,
    inbound: Arc<dyn Inbound>,
    /// The URL, parsed once rather than per request.
    uri: Uri,
    /// Read on every request, written once per session: a read-write lock keeps concurrent
    /// requests from queueing on it. A header value, so each request shares it uncopied.
    session: RwLock<Option<HeaderValue>>,
    /// The server forgot the session (a 404 to a request that carried it) and no `initialize`
    /// has succeeded since. Set and cleared under the `session` write lock.
    expired: AtomicBool,
    /// The version of the last message sent under one: the transport's own requests (the GET
    /// stream, the closing DELETE) go under it.
    version: RwLock<Option<ProtocolVersion>>,
    /// Whether the GET stream's listener runs (see `get_stream`).
    listening: Mutex<get_stream::Listening>,
    /// Told when the listener's first GET was answered (or failed): `on_ready` waits for it.
    listen_opened: Mutex<Option<crossbeam_channel::Sender<()>>>,
    pool: WorkerPool,
    /// The abort switches of the requests running on workers, by id.
    exchanges: Mutex<std::collections::HashMap<i64, Arc<Abort>>>,
    /// Requests in flight, and their answers that came on another stream.
    strays: strays::Strays,
    closed: AtomicBool,
    stop: CancelToken,
}

/// What a POST (or a resumed stream) produced.
enum Reply {
    /// 202, or a body without our response: what the server answered, for a request's error
    /// (a request must be answered with its response, as JSON or on an event stream).
    Accepted(&'static str),
    /// The response to our request.
    Answer(RpcResponse),
    /// The event stream ended before the response.
    Cut {
        last_event_id: Option<String>,
        retry: Option<Duration>,
    },
}

impl HttpTransport {
    /// A transport for `target`. No I/O happens until the first message.
    pub fn new(
        name: &str,
        target: &HttpTarget,
        options: &HttpOptions,
        inbound: Arc<dyn Inbound>,
    ) -> Result<HttpTransport, Error> {
        let target = &super::caught_auth::caught(target);
        let wire = web::Wire::new(target, options)?;
        Ok(HttpTransport {
            shared: Arc::new(Shared {
                uri: wire.split.public.clone(),
                name: name.to_owned(),
                remote: web::Remote::new(options, &wire),
                wire,
                target_auth: target.auth.clone(),
                options: options.clone(),
                inbound,
                session: RwLock::new(None),
                expired: AtomicBool::new(false),
                version: RwLock::new(None),
                listening: Mutex::new(get_stream::Listening::default()),
                pool: WorkerPool::new(name),
                exchanges: Mutex::new(std::collections::HashMap::new()),
                strays: strays::Strays::default(),
                listen_opened: Mutex::new(None),
                closed: AtomicBool::new(false),
                stop: CancelToken::new(),
            }),
        })
    }

    /// Runs a request's exchange on a worker, bounded by its envelope's deadline when it has
    /// one.
    fn spawn_request(&self, message: &Message, envelope: &Envelope) {
        let s = &self.shared;
        let Message::Request(request) = message else {
            return;
        };
        // A caller with a progress callback moves its deadline with each progress: its
        // exchange ends when the caller gives up (the cancellation), or at `exchange_timeout`.
        let deadline = envelope.deadline.filter(|_| !has_progress_token(request));
        let abort = Arc::new(Abort::default());
        let key = request.id.as_i64();
        if let Some(k) = key {
            s.exchanges.lock().insert(k, Arc::clone(&abort));
        }
        let (shared, message, envelope) = (Arc::clone(s), message.clone(), envelope.clone());
        let failed = Arc::clone(s);
        let slot = web::Remote::slot();
        s.pool.run(
            move |worker| {
                let _trace = envelope.trace.attach();
                web::Remote::on_behalf_of(slot, || {
                    abort.scope(|| {
                        shared.execute(&message, &envelope, Some(worker), deadline, Some(&abort))
                    })
                });
                if let Some(k) = key {
                    shared.exchanges.lock().remove(&k);
                }
            },
            move |e| failed.panicked(e),
        );
    }
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("name", &self.shared.name)
            .field("url", &self.shared.wire.split.shown)
            .field("closed", &self.shared.closed.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl Transport for HttpTransport {
    fn send(&self, message: &Message, envelope: &Envelope) -> Result<(), Error> {
        let s = &self.shared;
        if s.closed.load(Ordering::SeqCst) {
            return Err(Error::closed_by_owner());
        }
        s.remember_version(envelope);
        match message {
            // A caller that needs no cancel and no progress runs its exchange itself: no thread hop.
            Message::Request(_) if envelope.inline && envelope.deadline.is_some() => {
                s.execute(message, envelope, None, envelope.deadline, None);
                Ok(())
            }
            // A cancellable caller runs its exchange itself too (no worker, no thread hop):
            // firing its signal aborts the exchange's I/O from the firing thread.
            Message::Request(_) if envelope.cancel.is_some() && envelope.deadline.is_some() => {
                #[allow(clippy::expect_used, reason = "the arm's guard checked it")]
                let cancel = envelope.cancel.as_ref().expect("checked");
                let abort = Arc::new(Abort::default());
                let _hook = cancel.on_cancel({
                    let abort = Arc::clone(&abort);
                    move || abort.abort()
                });
                abort.scope(|| s.execute(message, envelope, None, envelope.deadline, Some(&abort)));
                Ok(())
            }
            Message::Request(_) => {
                self.spawn_request(message, envelope);
                Ok(())
            }
            cancel if web::is_cancellation(cancel) => {
                // The caller gave up: its exchange stops now.
                if let Some(id) = cancelled_id(cancel) {
                    let running = s.exchanges.lock().get(&id).cloned();
                    if let Some(abort) = running {
                        abort.abort();
                    }
                }
                // 2026-07-28: closing the response stream is the cancellation.
                if envelope.version.is_some_and(ProtocolVersion::is_stateless) {
                    return Ok(());
                }
                let (shared, message, envelope) = (Arc::clone(s), cancel.clone(), envelope.clone());
                let failed = Arc::clone(s);
                s.pool.run(
                    move |_| {
                        if let Err(e) = shared.post(&message, &envelope, None, None) {
                            log::debug!("[{}] sending a cancellation failed: {e}", shared.name);
                        }
                    },
                    move |e| failed.panicked(e),
                );
                Ok(())
            }
            other => match s.post(other, envelope, None, None)? {
                Reply::Answer(r) => {
                    s.inbound.on_message(Message::Response(r));
                    Ok(())
                }
                _ => Ok(()),
            },
        }
    }

    fn close(&self) {
        self.shared.close();
    }

    fn kind(&self) -> &'static str {
        "http"
    }

    fn session_id(&self) -> Option<String> {
        let id = self.shared.session.read();
        id.as_ref()?.to_str().ok().map(str::to_owned)
    }

    fn proxy(&self) -> Option<String> {
        let proxy = self.shared.wire.proxy.as_ref()?;
        Some(proxy.url.redacted().to_owned())
    }

    /// Opens the GET stream: after the first handshake, and again after each re-initialization
    /// (a listener still running carries on with the new session instead). Returns once the
    /// server answered the GET (or [`LISTEN_OPEN_WAIT`] passed, or the transport closed), so
    /// that the stream is there before the requests whose messages it may carry, and a server
    /// never takes it for the resumption of a request sent after it.
    fn on_ready(&self) {
        if !self.shared.listening.lock().start() {
            return;
        }
        let (opened, answered) = crossbeam_channel::bounded(1);
        *self.shared.listen_opened.lock() = Some(opened);
        let (shared, failed) = (Arc::clone(&self.shared), Arc::clone(&self.shared));
        let spawned = crate::panic::spawn(
            format!("mcp-{}-listen", self.shared.name),
            Boundary::GetStream,
            move || shared.listen(),
            move |e| failed.panicked(e),
        );
        if let Err(e) = spawned {
            self.shared.listening.lock().stopped();
            self.shared.listen_opened.lock().take();
            log::warn!(
                "[{}] cannot start the GET stream listener: {e}",
                self.shared.name
            );
            return;
        }
        crossbeam_channel::select! {
            recv(answered) -> _ => {}
            recv(self.shared.stop.receiver()) -> _ => {}
            default(LISTEN_OPEN_WAIT) => {
                log::debug!("[{}] the GET stream is not answered yet; going on", self.shared.name);
            }
        }
    }
}

impl Shared {
    /// One of the connection's threads panicked: the connection ends with `error` (pending
    /// calls fail with it now), then it is closed.
    fn panicked(&self, error: Error) {
        self.inbound.on_closed(error);
        self.close();
    }

    /// Ends the session (a DELETE, bounded) and every connection of it.
    fn close(&self) {
        let s = self;
        if s.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        s.stop.cancel();
        if let Some(session) = s.session.read().clone() {
            let request = web::request(ureq::http::Method::DELETE, &s.uri);
            let request = s.with_version(request, *s.version.read());
            let request = request.with_header(SESSION_HEADER, session);
            let budget =
                crate::net::exchange::Budget::until(Instant::now() + s.options.close_timeout);
            let deleted = s.remote.send(request, &[], budget, true).map(|r| {
                // Read to its end, so that nothing is left half-read on the connection.
                let _ = web::read_body(r, 64 * 1024, "");
            });
            if let Err(e) = deleted {
                log::debug!(
                    "[{}] DELETE of the session failed: {}",
                    s.name,
                    web::scrub(&e.to_string())
                );
            }
        }
        s.remote.shutdown();
        s.inbound.on_closed(Error::closed_by_owner());
    }
}

/// How long the end of a handshake waits for the server to answer the GET stream's request.
pub const LISTEN_OPEN_WAIT: Duration = Duration::from_millis(500);

/// How close to its deadline a failed exchange counts as timed out (see `execute`).
const DEADLINE_SLACK: Duration = Duration::from_millis(50);

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    /// A request's whole exchange (on a worker, or on the caller's thread); its outcome goes to
    /// the inbound sink.
    fn execute(
        &self,
        message: &Message,
        envelope: &Envelope,
        worker: Option<&Worker>,
        deadline: Option<Instant>,
        abort: Option<&Abort>,
    ) {
        let Message::Request(request) = message else {
            return;
        };
        let id = &request.id;
        let outcome = self.exchange(message, envelope, deadline, abort);
        // Handing the outcome over is all that is left: let the next request have this worker.
        if let Some(w) = worker {
            w.done();
        }
        match outcome {
            Ok(Some(response)) => self.inbound.on_message(Message::Response(response)),
            // Only a message that is not a request has no answer, and none comes here.
            Ok(None) => {}
            // A timeout is the caller's to report (it also tells the server), and so is a
            // cancellation; anything else ends the request here. The exchange's own bound is
            // the caller's deadline, and a socket wait may end a hair before it (the kernel's
            // timer): a failure that close to the deadline is the deadline's.
            Err(Error::TransportClosed { reason, .. })
                if deadline.is_some_and(|d| Instant::now() + DEADLINE_SLACK >= d)
                    || abort.is_some_and(Abort::is_aborted) =>
            {
                log::debug!("[{}] request {id} ended: {reason}", self.name)
            }
            Err(e) => {
                if !self.closed.load(Ordering::SeqCst) {
                    self.inbound.on_request_failed(id, e);
                }
            }
        }
    }

    /// POSTs one message. For a request, `expect` is its id and the reply is searched for its
    /// response; everything else the reply carries is dispatched.
    fn post(
        &self,
        message: &Message,
        envelope: &Envelope,
        expect: Option<&RequestId>,
        deadline: Option<Instant>,
    ) -> Result<Reply, Error> {
        let body = {
            let mut b = Vec::with_capacity(256);
            message.write_json(&mut b);
            b
        };
        // The caller's deadline bounds every phase of the exchange; a request without one (a
        // call with progress) has the agent's phase timeouts; a notification or a response
        // gets `post_timeout` overall.
        let deadline = match (expect, deadline) {
            (_, Some(d)) => Some(d),
            (Some(_), None) => None,
            (None, None) => Some(Instant::now() + self.options.post_timeout),
        };
        let mut request = web::request(ureq::http::Method::POST, &self.uri);
        let headers = request.headers_mut();
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let request = self.with_envelope(self.with_session(request), envelope);
        // A request that only reads or lists may go again on a new connection when a kept one
        // was closed under it (see `exchange`); never a tool call, nor a notification.
        let safe = matches!(message, Message::Request(r)
            if methods::IDEMPOTENT.contains(&r.method.as_str()));
        let response = self
            .remote
            .send(request, &body, self.remote.budget(deadline), safe)
            .map_err(|e| self.failure(e, "POST"))?;
        web::note_nonce(&response, self.target_auth.as_ref(), &self.uri);
        if web::is_redirect(&response) {
            return Err(web::redirect_error(&response, &self.uri));
        }
        let to_initialize =
            matches!(message, Message::Request(r) if r.method == methods::INITIALIZE);
        let stateless = envelope.version.is_some_and(ProtocolVersion::is_stateless);
        self.remember_session(&response, to_initialize, stateless);
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(web::status_error(
                response,
                &self.wire.split.shown,
                self.wire.forwards(),
            ));
        }
        let shown = &self.wire.split.shown;
        if status == 202 {
            let _ = web::read_body(response, 64 * 1024, shown);
            return Ok(Reply::Accepted("202 Accepted"));
        }
        if web::is_event_stream(&response) {
            return self.read_stream(response, expect, None);
        }
        let bytes = web::read_body(response, self.options.max_message_bytes, shown)?;
        let what = if bytes.iter().all(u8::is_ascii_whitespace) {
            "an empty body"
        } else {
            "a body that holds no response to it"
        };
        Ok(self
            .dispatch(&bytes, expect)
            .map_or(Reply::Accepted(what), Reply::Answer))
    }

    /// Reads an event stream until `expect`'s response (dispatching everything else) or its end.
    fn read_stream(
        &self,
        response: Response<Body>,
        expect: Option<&RequestId>,
        resumed_from: Option<&str>,
    ) -> Result<Reply, Error> {
        let mut decoder = SseDecoder::new(self.options.max_message_bytes);
        let mut answer = None;
        let end = web::read_events(web::stream_body(response), &mut decoder, &mut |event| {
            if event.event != "message" {
                return ControlFlow::Continue(());
            }
            answer = self.dispatch(event.data.as_bytes(), expect);
            if answer.is_some() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if let Some(r) = answer {
            return Ok(Reply::Answer(r));
        }
        if let StreamEnd::Failed(e) = end {
            log::debug!("[{}] response stream: {e}", self.name);
            if let Error::MessageTooLarge { .. } = e {
                // Resuming would replay the same event: this request fails.
                return Err(e);
            }
        }
        Ok(Reply::Cut {
            last_event_id: decoder
                .last_event_id()
                .map(str::to_owned)
                .or_else(|| resumed_from.map(str::to_owned)),
            retry: decoder.retry_ms().map(Duration::from_millis),
        })
    }

    /// Hands the messages of a payload to the sink, except the response to `expect`, which is
    /// returned.
    fn dispatch(&self, payload: &[u8], expect: Option<&RequestId>) -> Option<RpcResponse> {
        let wanted = expect.and_then(RequestId::as_i64);
        let mut answer = None;
        for m in web::messages(&self.name, payload) {
            match m {
                Message::Response(r)
                    if answer.is_none()
                        && expect.is_some()
                        && (r.id.as_ref() == expect
                            || (wanted.is_some()
                                && r.id.as_ref().and_then(RequestId::as_i64) == wanted)) =>
                {
                    answer = Some(r)
                }
                Message::Response(r) => {
                    if let Some(r) = self.strays.offer(r) {
                        self.inbound.on_message(Message::Response(r));
                    }
                }
                other => self.inbound.on_message(other),
            }
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl Inbound for Nothing {
        fn on_message(&self, _: Message) {}
        fn on_closed(&self, _: Error) {}
        fn on_request_failed(&self, _: &RequestId, _: Error) {}
    }

    #[test]
    fn the_debug_of_a_transport_shows_no_secret_of_its_url() {
        let url = "http://user-secret:PASS-SECRET@127.0.0.1:1/mcp?apiKey=QUERY-SECRET";
        let target = HttpTarget::new(url).header("X-Api-Key", "HEADER-SECRET");
        let t = HttpTransport::new("t", &target, &HttpOptions::default(), Arc::new(Nothing));
        let shown = format!("{:?}", t.unwrap());
        for secret in [
            "user-secret",
            "PASS-SECRET",
            "QUERY-SECRET",
            "HEADER-SECRET",
        ] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
