//! Tools that must run as tasks (2025-11-25), over the in-memory pair.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::rpc::Call;
use mcp_runtime::protocol::RpcError;
use mcp_runtime::transport::memory_pair;
use mcp_runtime::{CallOptions, CancelToken, Client, ConnectOptions, Error};
use serde_json::{json, Value};

type Seen = Arc<Mutex<Vec<Call>>>;

/// A server whose `research` tool must run as a task that needs `polls` polls to complete.
fn task_server(polls: usize) -> (Client, Seen) {
    let (connector, end) = memory_pair();
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let polled = AtomicUsize::new(0);
    std::thread::spawn(move || {
        while let Ok(message) = end.receiver.recv() {
            let Some(request) = Call::of(&message) else {
                continue;
            };
            log.lock().unwrap().push(request.clone());
            let params = request.params.clone().unwrap_or(Value::Null);
            let reply: Result<Value, RpcError> = match request.method.as_str() {
                "initialize" => Ok(json!({"protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}, "cancel": {}}},
                    "serverInfo": {"name": "tasks", "version": "1"}})),
                "tools/list" => Ok(json!({"tools": [
                    {"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
                    {"name": "quick", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
                ]})),
                "tools/call" if params.get("task").is_some() => Ok(json!({"task": {
                    "taskId": "t1", "status": "working", "statusMessage": "starting",
                    "createdAt": "2025-11-25T00:00:00Z", "lastUpdatedAt": "2025-11-25T00:00:00Z",
                    "ttl": null, "pollInterval": 10}})),
                "tools/call" => Ok(json!({"content": [{"type": "text", "text": "plain call"}]})),
                "tasks/get" => {
                    let n = polled.fetch_add(1, Ordering::SeqCst) + 1;
                    let status = if n >= polls { "completed" } else { "working" };
                    Ok(
                        json!({"taskId": "t1", "status": status, "statusMessage": format!("step {n}"),
                              "pollInterval": 10}),
                    )
                }
                "tasks/result" => Ok(json!({"content": [{"type": "text", "text": "findings"}],
                    "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}})),
                "tasks/cancel" => Ok(json!({"taskId": "t1", "status": "cancelled"})),
                other => Err(RpcError::method_not_found(other)),
            };
            let _ = end.sender.send(request.answer(reply));
        }
    });
    let options = ConnectOptions {
        timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    };
    let client = Client::with_transport("tasks", connector, options).unwrap();
    assert_eq!(client.list_tools().unwrap().len(), 2);
    (client, seen)
}

fn methods(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| r.method.clone())
        .collect()
}

#[test]
fn a_required_task_tool_is_one_blocking_call_with_progress() {
    let (client, seen) = task_server(3);
    let mut messages = Vec::new();
    let out = client
        .call_tool_with(
            "research",
            json!({"q": "rust"}),
            CallOptions::timeout(Duration::from_secs(10))
                .with_progress(|p| messages.push(p.message.clone().unwrap_or_default())),
        )
        .unwrap();
    assert_eq!(out.text(), "findings");
    assert_eq!(messages, ["starting", "step 1", "step 2", "step 3"]);
    assert_eq!(
        methods(&seen)[2..],
        [
            "tools/call",
            "tasks/get",
            "tasks/get",
            "tasks/get",
            "tasks/result"
        ]
    );
    let call = seen.lock().unwrap()[2].params.clone().unwrap();
    assert_eq!(call["task"], json!({"ttl": 10_000}));
    // An optional one is called the ordinary way.
    let out = client.call_tool("quick", json!({})).unwrap();
    assert_eq!(out.text(), "plain call");
    client.close();
}

#[test]
fn a_task_that_outlives_its_call_is_cancelled() {
    let (client, seen) = task_server(usize::MAX);
    let err = client
        .call_tool_with(
            "research",
            json!({}),
            CallOptions::timeout(Duration::from_millis(1000)),
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "Request timeout after 1000ms");
    assert_eq!(
        methods(&seen).last().map(String::as_str),
        Some("tasks/cancel")
    );
    // Cancelled once the task is being polled.
    let cancel = CancelToken::new();
    let firing = cancel.clone();
    let polls = |seen: &Seen| methods(seen).iter().filter(|m| *m == "tasks/get").count();
    let before = polls(&seen);
    let watching = Arc::clone(&seen);
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while polls(&watching) == before && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        firing.cancel();
    });
    let err = client
        .call_tool_with(
            "research",
            json!({}),
            CallOptions::timeout(Duration::from_secs(30)).with_cancel(cancel),
        )
        .unwrap_err();
    assert_eq!(err, Error::Cancelled);
    assert_eq!(
        methods(&seen).last().map(String::as_str),
        Some("tasks/cancel")
    );
    client.close();
}
