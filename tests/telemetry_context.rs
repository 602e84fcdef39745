//! OpenTelemetry (the `otel` feature), the context across the boundaries: a request a server
//! sends us continues the server's context; a host that makes its own tool spans gets no
//! second one; a host whose context is not ours (another OpenTelemetry version) still parents
//! our spans through `ClientHandler::trace_context`; baggage goes to servers only when the host
//! allows it; a host that traces with `tracing` and tracing-opentelemetry gets our spans under
//! its own.

mod common;
mod otel_support;

use std::sync::Arc;

use common::http_server::{Behaviour, TestHttp};
use common::{endpoint, options};
use mcp_runtime::client::Telemetry;
use mcp_runtime::protocol::{ClientCapabilities, RpcError};
use mcp_runtime::{Client, ClientHandler, ConnectOptions, Endpoint};
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer};
use opentelemetry::{global, Context, KeyValue};
use otel_support::{attr, spans_of, wait_span, Root};
use serde_json::{json, Value};

const REMOTE_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const REMOTE_SPAN: &str = "00f067aa0ba902b7";

/// A host that answers sampling inside a span of its own, and gives a trace context of its
/// own when asked.
struct Host {
    hook: Option<String>,
}

impl ClientHandler for Host {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(json!({})),
            ..Default::default()
        }
    }

    fn create_message(&self, _server: &str, _params: Value) -> Result<Value, RpcError> {
        // The host's model call: a child of the current context (our SERVER span).
        global::tracer("host").in_span("host model call", |_| {
            Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "ok"},
                      "model": "m", "stopReason": "endTurn"}),
            )
        })
    }

    fn trace_context(&self, _server: &str) -> Option<serde_json::Map<String, Value>> {
        let tp = self.hook.clone()?;
        Some(serde_json::Map::from_iter([(
            "traceparent".to_owned(),
            Value::from(tp),
        )]))
    }
}

fn with_host(name: &str, hook: Option<String>) -> Client {
    let opts = ConnectOptions {
        handler: Arc::new(Host { hook }),
        ..options()
    };
    Client::connect(name, &endpoint(&[]), opts).unwrap()
}

#[test]
fn a_server_request_continues_the_server_s_context() {
    let _root = Root::start("server request");
    let client = with_host("otel-ask", None);
    let out = client
        .call_tool(
            "ask",
            json!({"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 5,
                "_meta": {"traceparent": format!("00-{REMOTE_TRACE}-{REMOTE_SPAN}-01")}
            }}),
        )
        .unwrap();
    assert!(!out.is_error(), "{}", out.text());
    let trace = opentelemetry::trace::TraceId::from_hex(REMOTE_TRACE).unwrap();
    let served = wait_span(trace, "sampling/createMessage");
    assert_eq!(served.span_kind, SpanKind::Server);
    assert_eq!(format!("{:016x}", served.parent_span_id), REMOTE_SPAN);
    assert!(served.parent_span_is_remote);
    assert_eq!(
        attr(&served, "mcp.method.name").as_deref(),
        Some("sampling/createMessage")
    );
    let model = wait_span(trace, "host model call");
    assert_eq!(model.parent_span_id, served.span_context.span_id());
    client.close();
}

#[test]
fn a_host_that_makes_its_own_tool_span_gets_no_second_one() {
    let server = TestHttp::start(Behaviour::default());
    let root = Root::start("reuse");
    let opts = ConnectOptions {
        telemetry: Telemetry {
            reuse_tool_span: true,
            record_tool_content: true,
            ..Telemetry::default()
        },
        ..options()
    };
    let client = Client::connect("otel-reuse", &Endpoint::http(server.url()), opts).unwrap();
    let tool_span = global::tracer("host").start("execute_tool echo");
    let cx = Context::current_with_span(tool_span);
    {
        let _g = cx.clone().attach();
        client
            .call_tool("echo", json!({"message": "once"}))
            .unwrap();
    }
    cx.span().end();
    let spans = root.spans();
    assert!(
        !spans.iter().any(|s| s.name == "tools/call echo"),
        "no span of ours for the tool call"
    );
    let host = root.span("execute_tool echo");
    assert_eq!(
        attr(&host, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(attr(&host, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(
        attr(&host, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(
        attr(&host, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"message":"once"}"#)
    );
    assert!(attr(&host, "gen_ai.tool.call.result").is_some_and(|r| r.contains("once")));
    // The server got the host's span as the parent.
    let seen = server.wait_for("tools/call");
    let tp = seen.body["params"]["_meta"]["traceparent"]
        .as_str()
        .unwrap();
    assert!(
        tp.contains(&format!("{:016x}", host.span_context.span_id())),
        "{tp}"
    );
    // Other requests still get their spans.
    assert!(spans.iter().any(|s| s.name == "initialize"));
    client.close();
}

#[test]
fn the_trace_context_hook_parents_our_spans_when_the_host_s_context_is_not_ours() {
    // No current span on this thread (as for a host on another OpenTelemetry version): the
    // hook's traceparent is the parent of our span, whose own context replaces it on the wire.
    otel_support::sdk();
    let hook = format!("00-{REMOTE_TRACE}-{REMOTE_SPAN}-01");
    let server = TestHttp::start(Behaviour::default());
    let opts = ConnectOptions {
        handler: Arc::new(Host {
            hook: Some(hook.clone()),
        }),
        ..options()
    };
    let client = Client::connect("otel-hook", &Endpoint::http(server.url()), opts).unwrap();
    client
        .call_tool("echo", json!({"message": "hook"}))
        .unwrap();
    let trace = opentelemetry::trace::TraceId::from_hex(REMOTE_TRACE).unwrap();
    let call = spans_of(trace)
        .into_iter()
        .find(|s| s.name == "tools/call echo" && attr(s, "gen_ai.tool.name").is_some())
        .expect("our span in the hook's trace");
    assert_eq!(format!("{:016x}", call.parent_span_id), REMOTE_SPAN);
    let seen = server.wait_for("tools/call");
    let sent = seen.body["params"]["_meta"]["traceparent"]
        .as_str()
        .unwrap();
    assert_ne!(sent, hook);
    assert!(sent.contains(&format!("{:016x}", call.span_context.span_id())));
    client.close();
}

#[test]
fn baggage_goes_to_servers_only_when_the_host_allows_it() {
    let server = TestHttp::start(Behaviour::default());
    let root = Root::start("baggage");
    let cx = root
        .cx
        .with_baggage(vec![KeyValue::new("user.id", "alice")]);
    let _g = cx.attach();
    for (allowed, name) in [(false, "otel-no-baggage"), (true, "otel-baggage")] {
        let opts = ConnectOptions {
            telemetry: Telemetry {
                send_baggage: allowed,
                ..Telemetry::default()
            },
            ..options()
        };
        let client = Client::connect(name, &Endpoint::http(server.url()), opts).unwrap();
        client.call_tool("echo", json!({"message": name})).unwrap();
        let seen = server
            .seen()
            .into_iter()
            .rev()
            .find(|s| s.body["params"]["arguments"]["message"] == name)
            .unwrap();
        let meta = &seen.body["params"]["_meta"];
        if allowed {
            assert_eq!(meta["baggage"], "user.id=alice");
            assert_eq!(seen.header("baggage"), Some("user.id=alice"));
        } else {
            assert!(meta.get("baggage").is_none(), "{meta}");
            assert_eq!(seen.header("baggage"), None);
        }
        assert!(meta["traceparent"].is_string());
        client.close();
    }
}

#[test]
fn a_host_that_traces_with_tracing_gets_our_spans_under_its_own() {
    use tracing_subscriber::layer::SubscriberExt;
    // tracing-opentelemetry over an SDK tracer of the same provider our spans go to.
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(otel_support::sdk().spans.clone())
        .build();
    let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "host-tracing");
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("agent turn");
        let _entered = span.enter();
        let client = Client::connect("otel-tracing", &endpoint(&[]), options()).unwrap();
        client.call_tool("echo", json!({"message": "t"})).unwrap();
        client.close();
        let cx = Context::current();
        let host = cx.span().span_context().clone();
        assert!(
            host.is_valid(),
            "tracing-opentelemetry makes its span current"
        );
        drop(_entered);
        drop(span);
        let call = wait_span(host.trace_id(), "tools/call echo");
        let turn = wait_span(host.trace_id(), "agent turn");
        assert_eq!(call.parent_span_id, turn.span_context.span_id());
    });
}
