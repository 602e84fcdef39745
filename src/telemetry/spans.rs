//! The spans of what is not one outgoing request: the connect (with the era probe and the
//! handshake under it), a request or notification a server sends us (continuing the server's
//! context), and an HTTP request of the library's own (OAuth's discovery, registration and
//! tokens).

use std::borrow::Cow;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, ContextGuard, KeyValue};
use serde_json::Value;

use super::otel::{error_type, peer_attributes, tracer};
use super::{w3c, Carried, Peer};
use crate::error::Error;

/// A span current on this thread until it is finished.
pub(crate) struct Current {
    cx: Context,
    _guard: ContextGuard,
}

impl Current {
    fn start(name: impl Into<Cow<'static, str>>, kind: SpanKind, parent: &Context) -> Current {
        let tracer = tracer();
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .start_with_context(&tracer, parent);
        let cx = parent.with_span(span);
        Current {
            _guard: cx.clone().attach(),
            cx,
        }
    }

    fn set(&self, attributes: Vec<KeyValue>) {
        let span = self.cx.span();
        if span.is_recording() {
            span.set_attributes(attributes);
        }
    }

    fn fail(&self, kind: Cow<'static, str>, message: String) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("error.type", kind));
        span.set_status(Status::error(message));
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// `connect {server}`: an INTERNAL span over a whole connect, current on the connecting thread.
pub(crate) struct Connecting(Current);

/// Starts the connect's span.
pub(crate) fn connecting(server: &str, peer: &Peer) -> Connecting {
    let current = Current::start(
        format!("connect {server}"),
        SpanKind::Internal,
        &Context::current(),
    );
    let mut attributes = Vec::new();
    peer_attributes(peer, &mut attributes);
    current.set(attributes);
    Connecting(current)
}

impl Connecting {
    /// The connect's outcome: the protocol version it settled, or its failure.
    pub(crate) fn finish(self, outcome: Result<&'static str, &Error>) {
        match outcome {
            Ok(version) => self
                .0
                .set(vec![KeyValue::new("mcp.protocol.version", version)]),
            Err(e) => self.0.fail(error_type(e), e.to_string()),
        }
    }
}

/// A request a server sent us (sampling, elicitation, roots): a SERVER span, child of the
/// context in its `params._meta` when there is one, current while the host's handler answers.
pub(crate) struct Serving(Current);

/// The context a server sent in a message's `params._meta`, when it sent one.
fn sent_context(params: Option<&Value>) -> Option<Context> {
    params
        .and_then(|p| p.get("_meta")?.as_object())
        .and_then(w3c::extract)
}

/// Starts the span of the server's request `method` with `id`.
pub(crate) fn serving(method: &str, id: &str, params: Option<&Value>) -> Serving {
    let parent = sent_context(params).unwrap_or_else(Context::current);
    let current = Current::start(method.to_owned(), SpanKind::Server, &parent);
    current.set(vec![
        KeyValue::new("mcp.method.name", method.to_owned()),
        KeyValue::new("jsonrpc.request.id", id.to_owned()),
    ]);
    Serving(current)
}

impl Serving {
    /// The answer: an error's code and message, or nothing.
    pub(crate) fn finish(self, error: Option<(i64, &str)>) {
        if let Some((code, message)) = error {
            self.0.set(vec![KeyValue::new(
                "rpc.response.status_code",
                code.to_string(),
            )]);
            self.0.fail(code.to_string().into(), message.to_owned());
        }
    }
}

/// A notification a server sent that the host hears (`list_changed`, a resource update, ...): a
/// SERVER span `{mcp.method.name}`, child of the context in its `params._meta` when there is one
/// (the server's work that caused it), else of `origin` (the connect of the connection it came
/// on). It is current while the handlers run, so what they start (a refresh's `tools/list`)
/// nests under it; it ends when dropped.
pub(crate) struct Receiving {
    _span: Current,
}

/// Starts the span of the server's notification `method`.
pub(crate) fn receiving(method: &str, params: Option<&Value>, origin: &Carried) -> Receiving {
    let parent = sent_context(params).unwrap_or_else(|| origin.or_current());
    let current = Current::start(method.to_owned(), SpanKind::Server, &parent);
    current.set(vec![KeyValue::new("mcp.method.name", method.to_owned())]);
    Receiving { _span: current }
}

/// An HTTP request of the library's own: a CLIENT span `{method}` (as HTTP's conventions name
/// it), with the server's address and the response's status, never the URL's path or query.
#[cfg(feature = "oauth")]
pub(crate) struct HttpRequest(Current);

/// Starts the span of an HTTP request to `url`; `what` says what it is for (e.g.
/// `oauth.token`).
#[cfg(feature = "oauth")]
pub(crate) fn http_request(method: &str, url: &str, what: &'static str) -> HttpRequest {
    let current = Current::start(method.to_owned(), SpanKind::Client, &Context::current());
    let mut attributes = vec![
        KeyValue::new("http.request.method", method.to_owned()),
        KeyValue::new("mcp.client.operation", what),
    ];
    let peer = Peer::url(url);
    if let Some(a) = peer.address {
        attributes.push(KeyValue::new("server.address", a));
    }
    if let Some(p) = peer.port {
        attributes.push(KeyValue::new("server.port", i64::from(p)));
    }
    current.set(attributes);
    HttpRequest(current)
}

#[cfg(feature = "oauth")]
impl HttpRequest {
    /// The response's status, or the failure.
    pub(crate) fn finish(self, outcome: Result<u16, &Error>) {
        match outcome {
            Ok(status) => {
                self.0.set(vec![KeyValue::new(
                    "http.response.status_code",
                    i64::from(status),
                )]);
                if status >= 400 {
                    self.0
                        .fail(status.to_string().into(), format!("HTTP {status}"));
                }
            }
            Err(e) => self.0.fail(error_type(e), e.to_string()),
        }
    }
}
