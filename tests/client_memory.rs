//! Client edge cases over the in-memory transport pair: no process, no socket, the server is a
//! closure on the other end of two channels.

mod common;

use std::time::Duration;

use common::rpc::{self, Call};
use crossbeam_channel::Receiver;
use mcp_runtime::transport::{memory_pair, MemoryServer};
use mcp_runtime::{CallOptions, Client, Error};
use serde_json::{json, Value};

fn init_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {}},
           "serverInfo": {"name": "mem", "version": "1"}})
}

/// A server that answers `initialize`, then hands every other message to `rest` (which may
/// answer through the sender it is given). Returns what the server saw, in order, at its end.
fn serve(
    server: MemoryServer,
    version: &'static str,
    mut rest: impl FnMut(&Value, &crossbeam_channel::Sender<Value>) + Send + 'static,
) -> Receiver<Vec<Value>> {
    let (done, seen) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut all = Vec::new();
        while let Ok(message) = server.receiver.recv() {
            match Call::of(&message) {
                Some(call) if call.method == "initialize" => {
                    let _ = server.sender.send(call.result(init_result(version)));
                }
                _ => rest(&message, &server.sender),
            }
            all.push(message);
        }
        let _ = done.send(all);
    });
    seen
}

/// The request in `message`, with its method.
fn request_of(message: &Value) -> Option<(Call, String)> {
    let call = Call::of(message)?;
    let method = call.method.clone();
    Some((call, method))
}

#[test]
fn a_call_is_answered_and_a_stray_reply_changes_nothing() {
    let (connector, server) = memory_pair();
    let seen = serve(server, "2025-06-18", |message, out| {
        if let Some((call, m)) = request_of(message) {
            if m == "tools/call" {
                // A reply to nobody first, then the real one.
                let _ = out.send(rpc::result_to(999, json!({})));
                let _ = out.send(call.result(json!({"content": [{"type": "text", "text": "hi"}]})));
            }
        }
    });
    let client = Client::with_transport("mem", connector, common::options()).unwrap();
    assert_eq!(client.transport_kind(), "memory");
    let out = client.call_tool("echo", json!({})).unwrap();
    assert_eq!(out.text(), "hi");
    client.close();
    let seen = seen.recv_timeout(Duration::from_secs(10)).unwrap();
    let methods: Vec<&str> = seen.iter().filter_map(rpc::method).collect();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/call"]
    );
}

#[test]
fn a_server_that_goes_away_mid_call_fails_it_at_once() {
    let (connector, server) = memory_pair();
    let (gone_tx, gone_rx) = crossbeam_channel::bounded::<()>(1);
    let mut holder = Some(server);
    let receiver = holder.as_ref().unwrap().receiver.clone();
    let sender = holder.as_ref().unwrap().sender.clone();
    std::thread::spawn(move || {
        while let Ok(message) = receiver.recv() {
            match request_of(&message) {
                Some((call, m)) if m == "initialize" => {
                    let _ = sender.send(call.result(init_result("2025-06-18")));
                }
                Some((_, m)) if m == "tools/call" => {
                    // Exit without answering: every sender of the server end goes.
                    holder.take();
                    let _ = gone_tx.send(());
                    return;
                }
                _ => {}
            }
        }
    });
    let client = Client::with_transport("mem", connector, common::options()).unwrap();
    let err = client
        .call_tool_with(
            "echo",
            json!({}),
            CallOptions::timeout(Duration::from_secs(60)),
        )
        .unwrap_err();
    gone_rx.recv_timeout(Duration::from_secs(1)).unwrap();
    assert!(matches!(err, Error::TransportClosed { .. }), "{err:?}");
    assert!(client.closed_reason().is_some());
}

#[test]
fn an_unsupported_version_fails_the_handshake_and_closes_the_connection() {
    let (connector, server) = memory_pair();
    let seen = serve(server, "1999-01-01", |_, _| {});
    let err = Client::with_transport("mem", connector, common::options()).unwrap_err();
    assert_eq!(
        err,
        Error::UnsupportedProtocolVersion {
            requested: "2025-11-25".into(),
            received: "1999-01-01".into()
        }
    );
    // The server's end sees the connection closed: its receiver ends.
    let seen = seen.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(seen.len(), 1, "nothing but initialize was sent");
}

#[test]
fn a_timed_out_call_is_cancelled_on_the_wire() {
    let (connector, server) = memory_pair();
    let seen = serve(server, "2025-06-18", |_, _| {});
    let client = Client::with_transport("mem", connector, common::options()).unwrap();
    let err = client
        .call_tool_with(
            "hang",
            json!({}),
            CallOptions::timeout(Duration::from_millis(50)),
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "Request timeout after 50ms");
    client.close();
    let seen = seen.recv_timeout(Duration::from_secs(10)).unwrap();
    let call_id = seen
        .iter()
        .find_map(|m| match request_of(m) {
            Some((call, m)) if m == "tools/call" => Some(call.id),
            _ => None,
        })
        .unwrap();
    let cancelled = seen
        .iter()
        .find(|m| rpc::method(m) == Some("notifications/cancelled") && m.get("id").is_none())
        .map(|m| m["params"].clone())
        .expect("notifications/cancelled was sent");
    assert_eq!(cancelled["requestId"], call_id);
}

#[test]
fn a_server_ping_is_answered_and_an_unknown_request_gets_method_not_found() {
    let (connector, server) = memory_pair();
    let (answers_tx, answers) = crossbeam_channel::unbounded();
    let seen = serve(server, "2025-06-18", move |message, out| {
        if rpc::method(message) == Some("notifications/initialized") {
            let _ = out.send(rpc::request(7001, "ping"));
            let _ = out.send(rpc::request(7002, "no/such"));
        } else if rpc::method(message).is_none() {
            // A response: the client's answer to one of those.
            let _ = answers_tx.send(message.clone());
        }
    });
    let client = Client::with_transport("mem", connector, common::options()).unwrap();
    let mut got: Vec<Value> = (0..2)
        .map(|_| answers.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    got.sort_by_key(|r| r["id"].as_i64());
    assert_eq!(got[0]["result"], json!({}));
    assert_eq!(got[1]["error"]["code"], json!(-32601));
    client.close();
    seen.recv_timeout(Duration::from_secs(10)).unwrap();
}

#[test]
fn a_value_that_is_not_json_rpc_is_dropped_and_a_batch_is_taken_apart() {
    let (connector, server) = memory_pair();
    let _seen = serve(server, "2025-06-18", |message, out| {
        if let Some((call, m)) = request_of(message) {
            if m == "tools/call" {
                let _ = out.send(json!({"not": "JSON-RPC"}));
                let _ = out.send(json!(17));
                let answer = call.result(json!({"content": [{"type": "text", "text": "batched"}]}));
                let _ = out.send(json!([
                    rpc::notification(
                        "notifications/message",
                        Some(json!({"level": "info", "data": "x"}))
                    ),
                    answer
                ]));
            }
        }
    });
    let client = Client::with_transport("mem", connector, common::options()).unwrap();
    let out = client.call_tool("echo", json!({})).unwrap();
    assert_eq!(out.text(), "batched");
    assert!(
        client.closed_reason().is_none(),
        "the connection carries on"
    );
    client.close();
}
