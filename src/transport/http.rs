//! The Streamable HTTP transport (revisions 2025-03-26 … 2025-11-25).
//!
//! - Every message is a POST of JSON with `Accept: application/json, text/event-stream`, the
//!   configured headers, `Mcp-Session-Id` once the server gave one, and `MCP-Protocol-Version`
//!   from 2025-06-18 on.
//! - A request's POST runs on a worker thread (the caller waits on its own deadline and cancel
//!   signal); its reply is JSON or an event stream, whose other messages (server requests,
//!   notifications) are dispatched as they come. A stream cut before the response is resumed
//!   with `Last-Event-ID` after the server's `retry` delay, a bounded number of times.
//! - Notifications and responses are POSTed on the calling thread (202 expected), so they reach
//!   the server in the order they were sent.
//! - After the handshake a GET stream (thread `mcp-<server>-listen`) carries server-initiated
//!   messages; a 405 or another 4xx means the server has none, and we carry on without it.
//!   It reconnects with `Last-Event-ID` and a capped backoff that empty streams do not reset.
//! - A 404 to a request that carried a session means the server forgot it: one transparent
//!   re-initialize, after which only idempotent requests are re-sent; others fail with
//!   [`Error::SessionExpired`].
//! - Close sends DELETE (bounded) and shuts the agent down, which interrupts every read.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use serde_json::Value;
use ureq::http::header::{ACCEPT, CONTENT_TYPE};
use ureq::http::{HeaderName, HeaderValue, Response, Uri};
use ureq::Body;

use super::pool::{Worker, WorkerPool};
use super::sse_parser::SseDecoder;
use super::web::{self, HttpOptions, HttpTarget, StreamEnd};
use super::{Inbound, SendHint, Transport};
use crate::jsonrpc::{Message, Request, RequestId, Response as RpcResponse};
use crate::protocol::{methods, ProtocolVersion};
use crate::{CancelToken, Error};

/// The session header (Streamable HTTP).
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version header (2025-06-18+).
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// Requests that may be re-sent after a session was re-established.
const IDEMPOTENT: &[&str] = &[
    methods::PING,
    methods::TOOLS_LIST,
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
];

/// Consecutive failed GET-stream connections before the listener gives up.
const MAX_LISTEN_FAILURES: u32 = 10;
/// A GET stream open this long counts as healthy even if it carried nothing.
const HEALTHY_STREAM: Duration = Duration::from_secs(30);

/// A Streamable HTTP connection. Dropping it closes it.
pub struct HttpTransport {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    target: HttpTarget,
    agents: web::Agents,
    options: HttpOptions,
    inbound: Arc<dyn Inbound>,
    /// The URL, parsed once rather than per request.
    uri: Uri,
    /// Read on every request, written once per session: a read-write lock keeps concurrent
    /// requests from queueing on it. A header value, so each request shares it uncopied.
    session: RwLock<Option<HeaderValue>>,
    version: RwLock<Option<ProtocolVersion>>,
    init_params: Mutex<Option<Value>>,
    reinit: Mutex<Reinit>,
    reinit_done: Condvar,
    reinit_count: AtomicU64,
    pool: WorkerPool,
    closed: AtomicBool,
    stop: CancelToken,
}

#[derive(Default)]
struct Reinit {
    running: bool,
}

/// What a POST (or a resumed stream) produced.
enum Reply {
    /// 202, or a body without our response.
    Accepted,
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
        let uri = super::url::parse(&target.url)?;
        Ok(HttpTransport {
            shared: Arc::new(Shared {
                uri,
                name: name.to_owned(),
                target: target.clone(),
                agents: web::Agents::new(options),
                options: options.clone(),
                inbound,
                session: RwLock::new(None),
                version: RwLock::new(None),
                init_params: Mutex::new(None),
                reinit: Mutex::new(Reinit::default()),
                reinit_done: Condvar::new(),
                reinit_count: AtomicU64::new(0),
                pool: WorkerPool::new(name),
                closed: AtomicBool::new(false),
                stop: CancelToken::new(),
            }),
        })
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        let session = self.shared.session.read();
        session
            .as_ref()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    }
}

impl Transport for HttpTransport {
    fn send(&self, message: &Message) -> Result<(), Error> {
        let s = &self.shared;
        if s.closed.load(Ordering::SeqCst) {
            return Err(Error::closed("the connection was closed"));
        }
        match message {
            Message::Request(request) => {
                if request.method == methods::INITIALIZE {
                    *s.init_params.lock() = request.params.clone();
                }
                let (shared, message) = (Arc::clone(s), message.clone());
                s.pool
                    .run(move |worker| shared.execute(&message, Some(worker), None));
                Ok(())
            }
            cancel if web::is_cancellation(cancel) => {
                let (shared, message) = (Arc::clone(s), cancel.clone());
                s.pool.run(move |_| {
                    if let Err(e) = shared.post(&message, None, None) {
                        log::debug!("[{}] sending a cancellation failed: {e}", shared.name);
                    }
                });
                Ok(())
            }
            other => match s.post(other, None, None)? {
                Reply::Answer(r) => {
                    s.inbound.on_message(Message::Response(r));
                    Ok(())
                }
                _ => Ok(()),
            },
        }
    }

    fn send_with(&self, message: &Message, hint: &SendHint) -> Result<(), Error> {
        let s = &self.shared;
        match message {
            // A caller that needs no cancel or progress runs its exchange itself: no thread hop.
            Message::Request(request) if hint.inline && request.method != methods::INITIALIZE => {
                if s.closed.load(Ordering::SeqCst) {
                    return Err(Error::closed("the connection was closed"));
                }
                s.execute(message, None, Some(hint.deadline));
                Ok(())
            }
            other => self.send(other),
        }
    }

    fn close(&self) {
        let s = &self.shared;
        if s.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        s.stop.cancel();
        if let Some(session) = s.session.read().clone() {
            let request = s
                .agents
                .get()
                .delete(s.uri.clone())
                .config()
                .timeout_send_request(Some(s.options.close_timeout))
                .timeout_recv_response(Some(s.options.close_timeout))
                .build()
                .header(SESSION_HEADER, session);
            let request = s.with_version(web::with_target_headers(request, &s.target));
            if let Err(e) = request.call() {
                log::debug!("[{}] DELETE of the session failed: {e}", s.name);
            }
        }
        s.agents.shutdown();
        s.inbound
            .on_closed(Error::closed("the connection was closed"));
    }

    fn kind(&self) -> &'static str {
        "http"
    }

    fn on_negotiated(&self, version: ProtocolVersion) {
        *self.shared.version.write() = Some(version);
    }

    fn on_ready(&self) {
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{}-listen", self.shared.name))
            .spawn(move || shared.listen());
        if let Err(e) = spawned {
            log::warn!(
                "[{}] cannot start the GET stream listener: {e}",
                self.shared.name
            );
        }
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn with_version<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match *self.version.read() {
            Some(v) if v.sends_version_header() => {
                request.header(VERSION_HEADER, HeaderValue::from_static(v.as_str()))
            }
            _ => request,
        }
    }

    fn with_session<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match self.session.read().clone() {
            Some(id) => request.header(SESSION_HEADER, id),
            None => request,
        }
    }

    fn remember_session(&self, response: &Response<Body>) {
        let Some(id) = response.headers().get(SESSION_HEADER) else {
            return;
        };
        if self.session.read().as_ref() == Some(id) {
            return;
        }
        let mut session = self.session.write();
        if session.as_ref() != Some(id) {
            log::debug!("[{}] session assigned", self.name);
            *session = Some(id.clone());
        }
    }

    /// A request's whole exchange, on a worker thread; its outcome goes to the inbound sink.
    fn execute(&self, message: &Message, worker: Option<&Worker>, deadline: Option<Instant>) {
        let Message::Request(request) = message else {
            return;
        };
        let id = &request.id;
        let outcome = self.exchange(message, deadline);
        // Handing the outcome over is all that is left: let the next request have this worker.
        if let Some(w) = worker {
            w.done();
        }
        match outcome {
            Ok(Some(response)) => self.inbound.on_message(Message::Response(response)),
            Ok(None) => log::debug!(
                "[{}] request {id} was accepted without an answer; it may come on the GET stream",
                self.name
            ),
            // On the caller's own thread, a timeout is the caller's to report (it also tells
            // the server); anything else ends the request here.
            Err(Error::TransportClosed { reason, .. })
                if deadline.is_some_and(|d| Instant::now() >= d) =>
            {
                log::debug!("[{}] request {id} ran out of time: {reason}", self.name)
            }
            Err(e) => {
                if !self.closed.load(Ordering::SeqCst) {
                    self.inbound.on_request_failed(id, e);
                }
            }
        }
    }

    /// A request's exchange; `message` is that request.
    fn exchange(
        &self,
        message: &Message,
        deadline: Option<Instant>,
    ) -> Result<Option<RpcResponse>, Error> {
        let Message::Request(request) = message else {
            return Ok(None);
        };
        let sent_with = self.session.read().clone();
        let method = request.method.as_str();
        match self.post_and_resume(message, &request.id, deadline) {
            Err(Error::Http { status: 404, .. })
                if sent_with.is_some() && method != methods::INITIALIZE =>
            {
                self.reinitialize(sent_with.as_ref())?;
                if IDEMPOTENT.contains(&method) {
                    self.post_and_resume(message, &request.id, deadline)
                } else {
                    Err(Error::SessionExpired)
                }
            }
            other => other,
        }
    }

    /// Posts the request `message` (whose id is `id`), resuming a cut response stream.
    fn post_and_resume(
        &self,
        message: &Message,
        id: &RequestId,
        deadline: Option<Instant>,
    ) -> Result<Option<RpcResponse>, Error> {
        let mut reply = self.post(message, Some(id), deadline)?;
        let mut attempts = 0;
        loop {
            match reply {
                Reply::Answer(r) => return Ok(Some(r)),
                Reply::Accepted => return Ok(None),
                Reply::Cut {
                    last_event_id: Some(last),
                    retry,
                } if attempts < self.options.resume_attempts => {
                    attempts += 1;
                    if !self.pause(retry.unwrap_or(self.options.default_retry)) {
                        return Err(Error::closed("the connection was closed"));
                    }
                    log::debug!("[{}] resuming the response stream after event {last:?}", self.name);
                    reply = self.resume(&last, id)?;
                }
                Reply::Cut { last_event_id, .. } => {
                    return Err(Error::closed(match last_event_id {
                        Some(_) => format!(
                            "the response stream ended before the response, {attempts} times"
                        ),
                        None => "the response stream ended before the response (no event id to resume from)"
                            .to_owned(),
                    }))
                }
            }
        }
    }

    /// POSTs one message. For a request, `expect` is its id and the reply is searched for its
    /// response; everything else the reply carries is dispatched.
    fn post(
        &self,
        message: &Message,
        expect: Option<&RequestId>,
        deadline: Option<Instant>,
    ) -> Result<Reply, Error> {
        let body = {
            let mut b = Vec::with_capacity(256);
            message.write_json(&mut b);
            b
        };
        // A request's exchange is bounded by the agent's phase timeouts; a notification or a
        // response gets the shorter `post_timeout`.
        let request = self.agents.get().post(self.uri.clone());
        let request = match (expect, deadline) {
            // On the caller's thread: the caller's deadline bounds the exchange.
            (Some(_), Some(d)) => {
                let left = d
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1));
                request
                    .config()
                    .timeout_recv_response(Some(left))
                    .timeout_recv_body(Some(left))
                    .build()
            }
            (Some(_), None) => request,
            (None, _) => request
                .config()
                .timeout_recv_response(Some(self.options.post_timeout))
                .build(),
        }
        .header(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        )
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let request =
            self.with_version(self.with_session(web::with_target_headers(request, &self.target)));
        let response = request
            .send(&body[..])
            .map_err(|e| web::transport_error(e, &self.target.url, "POST"))?;
        self.remember_session(&response);
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(web::status_error(response));
        }
        if status == 202 {
            let _ = web::read_body(response, 64 * 1024, &self.target.url);
            return Ok(Reply::Accepted);
        }
        if web::is_event_stream(&response) {
            return self.read_stream(response, expect, None);
        }
        let bytes = web::read_body(response, self.options.max_message_bytes, &self.target.url)?;
        Ok(self
            .dispatch(&bytes, expect)
            .map_or(Reply::Accepted, Reply::Answer))
    }

    /// Resumes a cut response stream with a GET carrying `Last-Event-ID`.
    fn resume(&self, last_event_id: &str, expect: &RequestId) -> Result<Reply, Error> {
        let request = self
            .agents
            .get()
            .get(self.uri.clone())
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .header("Last-Event-ID", last_event_id);
        let request =
            self.with_version(self.with_session(web::with_target_headers(request, &self.target)));
        let response = request
            .call()
            .map_err(|e| web::transport_error(e, &self.target.url, "GET"))?;
        if !response.status().is_success() {
            return Err(web::status_error(response));
        }
        if !web::is_event_stream(&response) {
            return Err(Error::protocol(
                "the resumed stream is not text/event-stream",
            ));
        }
        self.read_stream(response, Some(expect), Some(last_event_id))
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
                other => self.inbound.on_message(other),
            }
        }
        answer
    }

    /// Re-establishes a forgotten session: once, however many requests noticed it.
    fn reinitialize(&self, stale: Option<&HeaderValue>) -> Result<(), Error> {
        {
            let mut state = self.reinit.lock();
            let deadline = Instant::now() + self.options.post_timeout;
            while state.running {
                if self
                    .reinit_done
                    .wait_until(&mut state, deadline)
                    .timed_out()
                {
                    return Err(Error::SessionExpired);
                }
            }
            if self.session.read().as_ref() != stale {
                return Ok(()); // another request already re-initialized
            }
            state.running = true;
        }
        let result = self.run_initialize();
        self.reinit.lock().running = false;
        self.reinit_done.notify_all();
        result
    }

    fn run_initialize(&self) -> Result<(), Error> {
        let params = self
            .init_params
            .lock()
            .clone()
            .ok_or(Error::SessionExpired)?;
        *self.session.write() = None;
        let n = self.reinit_count.fetch_add(1, Ordering::SeqCst) + 1;
        let id = RequestId::String(format!("mcp-runtime-reinitialize-{n}"));
        let init = Message::Request(Request {
            id: id.clone(),
            method: methods::INITIALIZE.to_owned(),
            params: Some(params),
        });
        match self.post(&init, Some(&id), None)? {
            Reply::Answer(RpcResponse { outcome: Ok(_), .. }) => {}
            Reply::Answer(RpcResponse {
                outcome: Err(e), ..
            }) => return Err(e.into()),
            _ => return Err(Error::SessionExpired),
        }
        self.post(
            &Message::notification(methods::INITIALIZED, None),
            None,
            None,
        )?;
        log::info!(
            "[{}] the server forgot the session; re-initialized",
            self.name
        );
        Ok(())
    }

    /// Waits `delay`, or less if the transport closes; false when it did.
    fn pause(&self, delay: Duration) -> bool {
        // The token's channel never carries a value: it times out, or disconnects on close.
        let _ = self.stop.receiver().recv_timeout(delay);
        !self.stop.is_cancelled()
    }

    /// The GET stream: server requests and notifications, reconnected with a capped backoff.
    fn listen(&self) {
        let mut last_event_id: Option<String> = None;
        let mut retry: Option<Duration> = None;
        let mut failures: u32 = 0;
        while !self.closed.load(Ordering::SeqCst) {
            // The GET stream may stay open, and silent, for as long as it likes.
            let mut request = self
                .agents
                .get()
                .get(self.uri.clone())
                .config()
                .timeout_recv_body(None)
                .build()
                .header(ACCEPT, HeaderValue::from_static("text/event-stream"));
            if let Some(id) = &last_event_id {
                request = request.header("Last-Event-ID", id.as_str());
            }
            let request = self
                .with_version(self.with_session(web::with_target_headers(request, &self.target)));
            let mut delivered = false;
            let opened = Instant::now();
            match request.call() {
                Err(e) => log::debug!("[{}] GET stream: {e}", self.name),
                Ok(response) => {
                    let status = response.status().as_u16();
                    if (400..500).contains(&status) && ![404, 408, 429].contains(&status) {
                        log::debug!("[{}] the server offers no GET stream ({status})", self.name);
                        return;
                    }
                    if !response.status().is_success() || !web::is_event_stream(&response) {
                        log::debug!("[{}] GET stream refused ({status})", self.name);
                    } else {
                        self.remember_session(&response);
                        let mut decoder = SseDecoder::new(self.options.max_message_bytes);
                        let end = web::read_events(
                            web::stream_body(response),
                            &mut decoder,
                            &mut |event| {
                                if event.event == "message" {
                                    delivered = true;
                                    self.dispatch(event.data.as_bytes(), None);
                                }
                                ControlFlow::Continue(())
                            },
                        );
                        if let StreamEnd::Failed(e) = end {
                            log::debug!("[{}] GET stream: {e}", self.name);
                        }
                        if let Some(id) = decoder.last_event_id() {
                            last_event_id = Some(id.to_owned());
                        }
                        if let Some(ms) = decoder.retry_ms() {
                            retry = Some(Duration::from_millis(ms));
                        }
                    }
                }
            }
            // Only a stream that delivered something, or stayed open a good while, resets the
            // backoff: a server answering with empty streams must not make us reconnect in a
            // tight loop.
            let healthy = delivered || opened.elapsed() >= HEALTHY_STREAM;
            failures = if healthy { 0 } else { failures + 1 };
            if failures > MAX_LISTEN_FAILURES {
                log::warn!(
                    "[{}] giving up on the GET stream after {failures} empty attempts",
                    self.name
                );
                return;
            }
            let base = retry.unwrap_or(self.options.default_retry);
            let delay = base
                .saturating_mul(1 << failures.min(16))
                .min(self.options.max_backoff.max(base));
            if !self.pause(delay) {
                return;
            }
        }
    }
}
