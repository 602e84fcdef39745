//! OpenTelemetry (the `otel` feature) and the manager's own work, which runs on its threads: a
//! startup connect is traced under the host's call; the `tools/list` a `list_changed` sets off
//! under the notification's span, itself under the connect of its connection; a reconnect under
//! the connect of the connection that died.

mod common;
mod otel_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::server_path;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager, ReconnectPolicy};
use opentelemetry::trace::{SpanKind, TraceId};
use opentelemetry_sdk::trace::SpanData;
use otel_support::{attr, spans_of, Root};
use serde_json::json;

fn manager(reconnect: Option<ReconnectPolicy>) -> McpManager {
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        reconnect,
        ..ManagerOptions::default()
    };
    o.connect.timeout = Duration::from_secs(20);
    o.connect.request_timeout = Duration::from_secs(20);
    o.connect.stdio.close_grace = Duration::from_millis(500);
    McpManager::new(o)
}

fn one(name: &str) -> BTreeMap<String, ServerConfig> {
    let config = common::as_run(ServerConfig::stdio(server_path(), Vec::<String>::new()));
    BTreeMap::from([(name.to_owned(), config)])
}

/// The spans of `trace` named `name` once there are at least `count` of them (waited for up to
/// 10 s: other threads end them).
fn at_least(trace: TraceId, name: &str, count: usize) -> Vec<SpanData> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let spans = spans_of(trace);
        let named: Vec<SpanData> = spans.iter().filter(|s| s.name == name).cloned().collect();
        if named.len() >= count {
            return named;
        }
        assert!(
            Instant::now() < deadline,
            "{} span(s) {name:?} of {count} in the trace; there are {:?}",
            named.len(),
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_refresh_after_list_changed_is_under_the_notification_under_the_connect() {
    let root = Root::start("host start");
    let manager = manager(None);
    let (tx, changed) = crossbeam_channel::unbounded();
    manager.on_tools_changed(move |c| {
        let _ = tx.send(c.to_vec());
    });
    manager.connect_servers(&one("grows"));

    // The startup connect ran on a manager thread, under the host's call.
    let connect = root.span("connect grows");
    assert_eq!(connect.parent_span_id, root.span_id());
    // So is its first listing, which follows the connect.
    let listed = at_least(root.trace_id(), "tools/list", 1);
    assert!(
        listed.iter().all(|s| s.parent_span_id == root.span_id()),
        "{:?}",
        listed.iter().map(|s| s.parent_span_id).collect::<Vec<_>>()
    );

    // The tool makes the server send tools/list_changed; the manager lists the tools again.
    common::call_tool(&manager, "grows", "list_changed", json!({})).unwrap();
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(10)).unwrap(),
        ["grows"]
    );
    let heard = root.span("notifications/tools/list_changed");
    assert_eq!(heard.span_kind, SpanKind::Server);
    assert_eq!(
        attr(&heard, "mcp.method.name").as_deref(),
        Some("notifications/tools/list_changed")
    );
    assert_eq!(
        heard.parent_span_id,
        connect.span_context.span_id(),
        "a notification with no context of its own is under its connection's connect"
    );
    let refresh = at_least(root.trace_id(), "tools/list", 2)
        .into_iter()
        .find(|s| s.parent_span_id == heard.span_context.span_id())
        .expect("a tools/list under the notification's span");
    assert_eq!(refresh.span_kind, SpanKind::Client);
    manager.disconnect_all();
}

#[test]
fn a_reconnect_is_under_the_connect_of_the_connection_that_died() {
    let root = Root::start("host reconnect");
    let manager = manager(Some(ReconnectPolicy {
        backoff: vec![Duration::from_millis(10)],
        ..ReconnectPolicy::default()
    }));
    manager.connect_servers(&one("phoenix"));
    let first = manager.client("phoenix").unwrap().pid().unwrap();
    let _ = common::call_tool(&manager, "phoenix", "crash", json!({}));
    let client = manager
        .wait_for_connection("phoenix", Duration::from_secs(20), None)
        .unwrap();
    assert_ne!(client.pid().unwrap(), first);

    let connects = at_least(root.trace_id(), "connect phoenix", 2);
    let original = connects
        .iter()
        .find(|s| s.parent_span_id == root.span_id())
        .expect("the first connect, under the host's call");
    let again = connects
        .iter()
        .find(|s| s.parent_span_id == original.span_context.span_id())
        .expect("the reconnect, under the connect of the connection that died");
    assert_eq!(again.span_kind, SpanKind::Internal);
    assert_eq!(
        at_least(root.trace_id(), "initialize", 2)
            .iter()
            .filter(|s| s.parent_span_id == again.span_context.span_id())
            .count(),
        1,
        "the new handshake is under the reconnect"
    );
    manager.disconnect_all();
}
