//! A connection's telemetry: its requests as CLIENT spans with the operation metric, the trace
//! context each carries, and the session's duration.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::metrics::Histogram;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer,
};
use opentelemetry::{Context, ContextGuard, InstrumentationScope, KeyValue};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{w3c, Peer, Telemetry};
use crate::error::Error;

/// The conventions followed: OpenTelemetry's GenAI MCP conventions (`docs/gen-ai/mcp.md` of
/// `open-telemetry/semantic-conventions-genai` at 0393513, status Development), whose general
/// attributes are those of semantic conventions 1.41.
pub(crate) const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";

/// The bucket bounds, in seconds, the conventions give both duration histograms.
const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The library's instrumentation scope.
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("mcp-runtime")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_schema_url(SCHEMA_URL)
        .build()
}

/// The tracer of the provider installed now.
pub(super) fn tracer() -> BoxedTracer {
    global::tracer_with_scope(scope())
}

/// The tracer installed now, or `None` when it is OpenTelemetry's no-op one (no SDK installed):
/// then a request makes no span at all, not even a no-op one. Told apart by a probe started,
/// with telemetry suppressed, under a remote parent: the no-op tracer hands back the parent's
/// context, an SDK an empty one (and records and exports nothing).
fn live_tracer() -> Option<BoxedTracer> {
    let tracer = tracer();
    let parent = SpanContext::new(
        TraceId::from_bytes([1; 16]),
        SpanId::from_bytes([1; 8]),
        TraceFlags::default(),
        true,
        TraceState::default(),
    );
    let cx = Context::new()
        .with_remote_span_context(parent.clone())
        .with_telemetry_suppressed();
    let probe = tracer.start_with_context("mcp-runtime probe", &cx);
    let noop = probe.span_context().span_id() == parent.span_id();
    drop(probe);
    (!noop).then_some(tracer)
}

/// A connection's tracer, instruments and settings: taken from the providers installed when it
/// connects.
pub(crate) struct Session {
    /// `None` with no SDK installed (see [`live_tracer`]).
    tracer: Option<BoxedTracer>,
    operation: Histogram<f64>,
    duration: Histogram<f64>,
    settings: Telemetry,
    /// The peer's attributes, made once (the address shared, not copied, per request).
    peer: Vec<KeyValue>,
    /// Whether requests go as HTTP (their headers carry the context too).
    http: bool,
    started: Instant,
}

impl Session {
    pub(crate) fn new(settings: Telemetry, peer: Peer) -> Session {
        let meter = global::meter_with_scope(scope());
        let histogram = |name: &'static str, what: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(what)
                .with_boundaries(BOUNDARIES.to_vec())
                .build()
        };
        Session {
            tracer: live_tracer(),
            operation: histogram(
                "mcp.client.operation.duration",
                "The duration of an MCP request or notification, from when it was sent until its response came.",
            ),
            duration: histogram(
                "mcp.client.session.duration",
                "The duration of the MCP session as observed by the client.",
            ),
            settings,
            http: peer.http,
            peer: {
                let mut attributes = Vec::new();
                peer_attributes(&peer, &mut attributes);
                attributes
            },
            started: Instant::now(),
        }
    }

    /// The peer's attributes (`network.transport`, `server.address`, `server.port`, and the
    /// HTTP protocol).
    pub(super) fn peer_attributes(&self, into: &mut Vec<KeyValue>) {
        into.extend(self.peer.iter().cloned());
    }

    /// A request (`id`) or a notification (`None`) about to go: its span, started as a child
    /// of the calling thread's current span (or, when there is none, of the context already in
    /// `params._meta`, such as what a host's `trace_context` gave), whose context then goes
    /// into `params._meta`.
    pub(crate) fn outgoing(
        &self,
        method: &str,
        params: &mut Option<Value>,
        id: Option<i64>,
        session_id: impl FnOnce() -> Option<String>,
    ) -> Outgoing<'_> {
        let meta = params.as_ref().and_then(|p| p.get("_meta")?.as_object());
        let current = Context::current();
        let parent = if current.span().span_context().is_valid() {
            current
        } else {
            meta.and_then(w3c::extract).unwrap_or(current)
        };
        let param = |key: &str| {
            params
                .as_ref()
                .and_then(|p| p.get(key)?.as_str())
                .map(Arc::<str>::from)
        };
        let mut target = None;
        // The metric's attributes (room for what `finish` adds); the span has these and more.
        let mut measured = Vec::with_capacity(12);
        measured.push(KeyValue::new("mcp.method.name", method_name(method)));
        let mut tool_call = false;
        match method {
            crate::protocol::methods::TOOLS_CALL => {
                tool_call = true;
                if let Some(name) = param("name") {
                    measured.push(KeyValue::new("gen_ai.tool.name", Arc::clone(&name)));
                    target = Some(name);
                }
                measured.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            crate::protocol::methods::PROMPTS_GET => {
                if let Some(name) = param("name") {
                    measured.push(KeyValue::new("gen_ai.prompt.name", Arc::clone(&name)));
                    target = Some(name);
                }
            }
            _ => {}
        }
        let reuse = tool_call && self.settings.reuse_tool_span;
        let tracer = self.tracer.as_ref().filter(|_| !reuse);
        let own = tracer.is_some();
        let cx = match tracer {
            None => parent,
            Some(tracer) => {
                let name: Cow<'static, str> = match target {
                    Some(t) => format!("{method} {t}").into(),
                    None => method.to_owned().into(),
                };
                let span = tracer
                    .span_builder(name)
                    .with_kind(SpanKind::Client)
                    .start_with_context(tracer, &parent);
                parent.with_span(span)
            }
        };
        let span = cx.span();
        let recording = span.is_recording();
        if recording {
            let mut attributes = measured.clone();
            if matches!(
                method,
                "resources/read" | "resources/subscribe" | "resources/unsubscribe"
            ) {
                if let Some(uri) = param("uri") {
                    attributes.push(KeyValue::new("mcp.resource.uri", uri));
                }
            }
            if let Some(id) = id {
                attributes.push(KeyValue::new("jsonrpc.request.id", id.to_string()));
            }
            if let Some(id) = session_id() {
                attributes.push(KeyValue::new("mcp.session.id", id));
            }
            if tool_call && self.settings.record_tool_content {
                if let Some(arguments) = params.as_ref().and_then(|p| p.get("arguments")) {
                    attributes.push(KeyValue::new(
                        "gen_ai.tool.call.arguments",
                        arguments.to_string(),
                    ));
                }
            }
            self.peer_attributes(&mut attributes);
            span.set_attributes(attributes);
        }
        // Nothing to send, nor to make current, without a valid span (unless baggage may go).
        let valid = span.span_context().is_valid();
        let entries = if valid || self.settings.send_baggage {
            w3c::inject(&cx, self.settings.send_baggage)
        } else {
            Vec::new()
        };
        if !entries.is_empty() {
            write_meta(params, &entries);
        }
        Outgoing {
            session: self,
            cx,
            own,
            valid,
            tool_call,
            recording,
            measured,
            entries,
            started: Instant::now(),
        }
    }

    /// The session ended (its last handle dropped): its duration, with `error.type` when it
    /// ended by a failure rather than a close.
    pub(crate) fn end(&self, version: Option<&'static str>, failure: Option<&Error>) {
        let mut attributes = Vec::new();
        if let Some(v) = version {
            attributes.push(KeyValue::new("mcp.protocol.version", v));
        }
        if let Some(e) = failure {
            attributes.push(KeyValue::new("error.type", error_type(e)));
        }
        self.peer_attributes(&mut attributes);
        self.duration
            .record(self.started.elapsed().as_secs_f64(), &attributes);
    }
}

/// The peer's attributes.
pub(super) fn peer_attributes(peer: &Peer, into: &mut Vec<KeyValue>) {
    if let Some(t) = peer.transport {
        into.push(KeyValue::new("network.transport", t));
    }
    if let Some(a) = &peer.address {
        into.push(KeyValue::new(
            "server.address",
            Arc::<str>::from(a.as_str()),
        ));
    }
    if let Some(p) = peer.port {
        into.push(KeyValue::new("server.port", i64::from(p)));
    }
    if peer.http {
        into.push(KeyValue::new("network.protocol.name", "http"));
        into.push(KeyValue::new("network.protocol.version", "1.1"));
    }
}

/// Puts `entries` into `params._meta`, over what was there (our span is the child of any
/// context that was).
fn write_meta(params: &mut Option<Value>, entries: &[(String, String)]) {
    let params = params.get_or_insert_with(|| Value::Object(Map::new()));
    let Some(object) = params.as_object_mut() else {
        return;
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        for (k, v) in entries {
            meta.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

/// A request or notification on its way: its span (ours, or the host's it reuses), ended by
/// [`Outgoing::finish`].
pub(crate) struct Outgoing<'a> {
    session: &'a Session,
    cx: Context,
    /// Whether the span is ours to end.
    own: bool,
    /// Whether its context is a valid one (to send, and to make current).
    valid: bool,
    tool_call: bool,
    recording: bool,
    measured: Vec<KeyValue>,
    entries: Vec<(String, String)>,
    started: Instant,
}

impl Outgoing<'_> {
    /// The trace context as HTTP headers (for a transport that sends them).
    pub(crate) fn headers(&self, into: &mut Vec<(String, String)>) {
        if self.session.http {
            into.extend(self.entries.iter().cloned());
        }
    }

    /// The span as the current context of this thread until the guard drops: what the
    /// request causes here (an OAuth refresh, a new session's handshake) is its child.
    pub(crate) fn enter(&self) -> Option<ContextGuard> {
        self.valid.then(|| self.cx.clone().attach())
    }

    /// The span's context, for work that a worker thread does for the request.
    pub(crate) fn carried(&self) -> Carried {
        Carried(self.valid.then(|| self.cx.clone()))
    }

    /// The outcome: its attributes and status on the span, which ends (when it is ours), and
    /// the duration recorded.
    pub(crate) fn finish(
        self,
        version: Option<&'static str>,
        outcome: Result<Option<&RawValue>, &Error>,
    ) {
        let mut attributes = self.measured;
        let mut failure: Option<(String, String)> = None;
        match outcome {
            Ok(Some(raw)) if self.tool_call => {
                if is_error_result(raw) {
                    attributes.push(KeyValue::new("error.type", "tool_error"));
                    failure = Some(("tool_error".into(), "the tool reported an error".into()));
                }
            }
            Ok(_) => {}
            Err(e) => {
                let kind = error_type(e);
                if let Some(code) = e.rpc_code() {
                    attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
                }
                attributes.push(KeyValue::new("error.type", kind.clone()));
                let message = match e {
                    Error::Rpc { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                failure = Some((kind.into_owned(), message));
            }
        }
        if let Some(v) = version {
            attributes.push(KeyValue::new("mcp.protocol.version", v));
        }
        self.session.peer_attributes(&mut attributes);
        let span = self.cx.span();
        if self.recording {
            let mut extra = attributes.clone();
            if let (true, true, Ok(Some(raw))) = (
                self.tool_call,
                self.session.settings.record_tool_content,
                outcome,
            ) {
                extra.push(KeyValue::new(
                    "gen_ai.tool.call.result",
                    raw.get().to_owned(),
                ));
            }
            span.set_attributes(extra);
            if let Some((_, message)) = &failure {
                span.set_status(Status::error(message.clone()));
            }
        }
        if self.own {
            span.end();
        }
        self.session
            .operation
            .record(self.started.elapsed().as_secs_f64(), &attributes);
    }
}

/// A method's name as an attribute: the protocol's own names without a copy.
fn method_name(method: &str) -> Cow<'static, str> {
    use crate::protocol::methods::*;
    const KNOWN: &[&str] = &[
        TOOLS_CALL,
        TOOLS_LIST,
        INITIALIZE,
        INITIALIZED,
        PING,
        SERVER_DISCOVER,
        RESOURCES_LIST,
        RESOURCES_READ,
        RESOURCE_TEMPLATES_LIST,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        CANCELLED,
    ];
    match KNOWN.iter().find(|k| **k == method) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(method.to_owned()),
    }
}

/// Whether a `tools/call` result says `isError: true` (read without building the result, and
/// not read at all when the text has no such member).
fn is_error_result(raw: &RawValue) -> bool {
    if memchr::memmem::find(raw.get().as_bytes(), b"\"isError\"").is_none() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<Flag>(raw.get()).is_ok_and(|f| f.is_error == Some(true))
}

/// `error.type` of a failure: the JSON-RPC error code as a string when one came back, an HTTP
/// status, else a low-cardinality class.
pub(super) fn error_type(e: &Error) -> Cow<'static, str> {
    if let Some(code) = e.rpc_code() {
        return code.to_string().into();
    }
    match e {
        Error::Http { status, .. } => status.to_string().into(),
        Error::Timeout { .. } | Error::ConnectTimeout { .. } => "timeout".into(),
        Error::Cancelled => "cancelled".into(),
        Error::TransportClosed { .. } => "transport_closed".into(),
        Error::MessageTooLarge { .. } => "message_too_large".into(),
        Error::SessionExpired => "session_expired".into(),
        Error::UnsupportedProtocolVersion { .. } => "unsupported_protocol_version".into(),
        Error::Spawn { .. } => "spawn_failed".into(),
        Error::Sandbox { .. } => "sandbox".into(),
        Error::Protocol { .. } => "protocol_error".into(),
        Error::Config { .. } => "config".into(),
        Error::NotConnected { .. } => "not_connected".into(),
        Error::Io { .. } => "io".into(),
        Error::OAuth { .. } => "oauth".into(),
        Error::Redirect { .. } => "redirect".into(),
        Error::Integrity { .. } => "integrity".into(),
        Error::FeatureMissing { .. } => "feature_missing".into(),
        Error::Internal { .. } => "internal".into(),
        Error::Rpc { code, .. } => code.to_string().into(),
    }
}

/// A span's context handed to another thread (a worker running a request's exchange, a thread
/// we start), to be its current context there.
#[derive(Clone, Default)]
pub(crate) struct Carried(Option<Context>);

impl Carried {
    /// No context.
    pub(crate) fn none() -> Carried {
        Carried(None)
    }

    /// This thread's current context, when it has a span (what caused the work it hands on).
    pub(crate) fn here() -> Carried {
        let cx = Context::current();
        Carried(cx.has_active_span().then_some(cx))
    }

    /// The context, or the thread's current one when there is none.
    pub(crate) fn or_current(&self) -> Context {
        self.0.clone().unwrap_or_else(Context::current)
    }

    /// The context as this thread's current one until the guard drops.
    pub(crate) fn attach(&self) -> Option<ContextGuard> {
        self.0.clone().map(Context::attach)
    }
}

impl std::fmt::Debug for Carried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Carried")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_error_is_read_from_the_result_s_own_member() {
        let raw = |t: &str| RawValue::from_string(t.to_owned()).unwrap();
        assert!(is_error_result(&raw(r#"{"content":[],"isError":true}"#)));
        assert!(!is_error_result(&raw(r#"{"content":[],"isError":false}"#)));
        assert!(!is_error_result(&raw(r#"{"content":[]}"#)));
        // Words in a text, a member of something else: not the result's.
        assert!(!is_error_result(&raw(
            r#"{"content":[{"type":"text","text":"\"isError\": true"}]}"#
        )));
        assert!(!is_error_result(&raw(
            r#"{"content":[],"structuredContent":{"isError":true}}"#
        )));
        assert_eq!(method_name("tools/call"), Cow::Borrowed("tools/call"));
        assert_eq!(method_name("x/y"), Cow::<str>::Owned("x/y".into()));
    }

    #[test]
    fn without_an_sdk_there_is_no_tracer_and_no_context_to_send() {
        // This test process installs no provider: OpenTelemetry's no-op one.
        assert!(live_tracer().is_none());
        let session = Session::new(Telemetry::default(), Peer::stdio());
        let mut params = Some(serde_json::json!({"name": "echo", "arguments": {}}));
        let out = session.outgoing("tools/call", &mut params, Some(1), || None);
        assert!(!out.own && !out.valid && !out.recording);
        assert!(out.enter().is_none());
        out.finish(None, Ok(None));
        assert_eq!(
            params,
            Some(serde_json::json!({"name": "echo", "arguments": {}})),
            "nothing added to the request"
        );
    }
}
