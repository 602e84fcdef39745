//! OpenTelemetry (the `otel` feature), checked with the real SDK's in-memory exporters: each
//! request a CLIENT span under the host's span, named and attributed by the MCP semantic
//! conventions, with its failures classed; the connect's span over the era probe and the
//! handshake; a new session's handshake under the request that needed it; the context in
//! every request's `_meta` and, over HTTP, its headers; and the two duration metrics.

mod common;
mod otel_support;

use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use common::{endpoint, options};
use mcp_runtime::{CallOptions, CancelToken, Client, Endpoint, Error};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt};
use otel_support::{attr, find, histogram_points, Root};
use serde_json::json;

fn span_id_of(traceparent: &str) -> &str {
    traceparent.split('-').nth(2).expect("a traceparent")
}

#[test]
fn a_tool_call_over_stdio_is_a_client_span_under_the_hosts() {
    let root = Root::start("host request");
    let client = Client::connect("otel-stdio", &endpoint(&[]), options()).unwrap();
    let out = client.call_tool("echo", json!({"message": "hi"})).unwrap();
    assert_eq!(out.text(), "hi");

    let call = root.span("tools/call echo");
    assert_eq!(call.span_kind, SpanKind::Client);
    assert_eq!(
        call.parent_span_id,
        root.span_id(),
        "the host's span is the parent"
    );
    assert_eq!(
        attr(&call, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(attr(&call, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(
        attr(&call, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attr(&call, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(attr(&call, "network.transport").as_deref(), Some("pipe"));
    assert!(attr(&call, "jsonrpc.request.id").is_some());
    assert_eq!(attr(&call, "error.type"), None);
    assert_eq!(call.status, Status::Unset);
    assert_eq!(
        attr(&call, "gen_ai.tool.call.arguments"),
        None,
        "arguments are recorded only when the host asks"
    );

    // The check for a live tracer left nothing behind.
    assert!(!otel_support::sdk()
        .spans
        .get_finished_spans()
        .unwrap()
        .iter()
        .any(|s| s.name.contains("probe") && s.name.starts_with("mcp-runtime")));

    // The connect: its span under the host's, the probe and the handshake under it.
    let connect = root.span("connect otel-stdio");
    assert_eq!(connect.span_kind, SpanKind::Internal);
    assert_eq!(connect.parent_span_id, root.span_id());
    assert_eq!(
        attr(&connect, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    for name in ["server/discover", "initialize", "notifications/initialized"] {
        let s = root.span(name);
        assert_eq!(s.parent_span_id, connect.span_context.span_id(), "{name}");
        assert_eq!(s.span_kind, SpanKind::Client, "{name}");
    }
    // The probe of a handshake-era server fails as the server answers it.
    let probe = root.span("server/discover");
    assert_eq!(attr(&probe, "error.type").as_deref(), Some("-32601"));
    assert_eq!(
        attr(&probe, "rpc.response.status_code").as_deref(),
        Some("-32601")
    );
    client.close();
}

#[test]
fn failures_are_classed_on_the_span() {
    let root = Root::start("failures");
    let client = Client::connect("otel-fail", &endpoint(&[]), options()).unwrap();

    // A tool that reports an error is a successful call whose span says `tool_error`.
    let out = client.call_tool("no_such_tool", json!({})).unwrap();
    assert!(out.is_error());
    let s = root.span("tools/call no_such_tool");
    assert_eq!(attr(&s, "error.type").as_deref(), Some("tool_error"));
    assert!(matches!(s.status, Status::Error { .. }), "{:?}", s.status);

    // A JSON-RPC error: its code, and its message as the status.
    let err = client
        .call_tool("typed_union", json!({"verbose": "no"}))
        .unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32602));
    let s = root.span("tools/call typed_union");
    assert_eq!(attr(&s, "error.type").as_deref(), Some("-32602"));
    assert_eq!(
        attr(&s, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    match &s.status {
        Status::Error { description } => {
            assert!(description.contains("wrong types"), "{description}")
        }
        other => panic!("{other:?}"),
    }

    // A timeout.
    let err = client
        .call_tool_with(
            "slow",
            json!({"ms": 5000}),
            CallOptions::timeout(Duration::from_millis(100)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    let s = root.span("tools/call slow");
    assert_eq!(attr(&s, "error.type").as_deref(), Some("timeout"));

    // A cancellation, fired once the call is under way (its first progress came).
    let cancel = CancelToken::new();
    let firing = cancel.clone();
    let err = client
        .call_tool_with(
            "progress",
            json!({"steps": 1000, "interval_ms": 10}),
            CallOptions::default()
                .with_cancel(cancel)
                .with_progress(move |_| firing.cancel()),
        )
        .unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err:?}");
    let cancelled: Vec<_> = root
        .spans()
        .into_iter()
        .filter(|s| {
            s.name == "tools/call progress" && attr(s, "error.type").as_deref() == Some("cancelled")
        })
        .collect();
    assert_eq!(cancelled.len(), 1);
    client.close();
}

#[test]
fn http_carries_the_context_in_meta_and_headers() {
    let server = TestHttp::start(Behaviour::default());
    let root = Root::start("http host request");
    let client = Client::connect("otel-http", &Endpoint::http(server.url()), options()).unwrap();
    client.call_tool("echo", json!({"message": "hi"})).unwrap();

    let call = root.span("tools/call echo");
    assert_eq!(call.parent_span_id, root.span_id());
    assert_eq!(attr(&call, "network.transport").as_deref(), Some("tcp"));
    assert_eq!(attr(&call, "server.address").as_deref(), Some("127.0.0.1"));
    assert_eq!(
        attr(&call, "server.port"),
        Some(
            server
                .url()
                .split(':')
                .nth(2)
                .unwrap()
                .trim_end_matches("/mcp")
                .to_owned()
        )
    );
    assert_eq!(
        attr(&call, "network.protocol.name").as_deref(),
        Some("http")
    );
    let seen = server.wait_for("tools/call");
    let session = seen.header("mcp-session-id").expect("a session").to_owned();
    assert_eq!(attr(&call, "mcp.session.id"), Some(session));

    // The span's context went in `_meta` and in the headers, alike.
    let meta = seen.body["params"]["_meta"]["traceparent"]
        .as_str()
        .expect("_meta.traceparent")
        .to_owned();
    assert_eq!(seen.header("traceparent"), Some(meta.as_str()));
    assert_eq!(
        span_id_of(&meta),
        format!("{:016x}", call.span_context.span_id())
    );
    assert!(meta.contains(&format!("{:032x}", root.trace_id())));
    assert_eq!(seen.header("baggage"), None);
    client.close();
}

#[test]
fn a_new_session_s_handshake_is_under_the_request_that_needed_it() {
    let server = TestHttp::start(Behaviour {
        expire_after: Some(1),
        ..Behaviour::default()
    });
    let root = Root::start("renewal");
    let client = Client::connect("otel-renew", &Endpoint::http(server.url()), options()).unwrap();
    client.list_tools().unwrap();
    // The server forgot the session: the next listing renews it and is sent again.
    client.list_tools().unwrap();
    let lists: Vec<_> = root
        .spans()
        .into_iter()
        .filter(|s| s.name == "tools/list")
        .collect();
    let renewed = root
        .spans()
        .into_iter()
        .filter(|s| s.name == "initialize")
        .find(|s| {
            lists
                .iter()
                .any(|l| l.span_context.span_id() == s.parent_span_id)
        })
        .expect("an initialize under a tools/list");
    assert_eq!(renewed.span_kind, SpanKind::Client);
    client.close();
}

#[test]
fn the_durations_are_recorded() {
    let root = Root::start("metrics");
    let client = Client::connect("otel-metrics", &endpoint(&[]), options()).unwrap();
    // A tool no other test of this binary calls (the metrics are the binary's).
    client.call_tool("add", json!({"a": 1, "b": 2})).unwrap();
    drop(client);
    drop(root);
    let ops = histogram_points("mcp.client.operation.duration");
    let call = ops
        .iter()
        .find(|(a, _)| {
            find(a, "mcp.method.name").as_deref() == Some("tools/call")
                && find(a, "gen_ai.tool.name").as_deref() == Some("add")
        })
        .expect("a tools/call add point");
    assert!(call.1 >= 1);
    assert_eq!(find(&call.0, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(
        find(&call.0, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(
        find(&call.0, "jsonrpc.request.id"),
        None,
        "the metric's attributes are low-cardinality"
    );
    let sessions = histogram_points("mcp.client.session.duration");
    assert!(
        sessions.iter().any(|(a, n)| *n >= 1
            && find(a, "network.transport").as_deref() == Some("pipe")
            && find(a, "error.type").is_none()),
        "{sessions:?}"
    );
    // Spans other than ours are not the point here, only that the root's trace has ours.
    let _ = opentelemetry::Context::current().span();
}
