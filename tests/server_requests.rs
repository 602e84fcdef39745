//! Server → client traffic: requests answered by the host's handler (or refused), capabilities
//! declared only for what the handler implements, and notifications routed to their consumers.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{capture_logs, endpoint, logs, options};
use crossbeam_channel::{Receiver, Sender};
use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, Progress, Root};
use mcp_runtime::{CallOptions, Client, ClientHandler, ConnectOptions, Error};
use serde_json::{json, Value};

struct Host {
    tools_changed: Sender<String>,
}

impl ClientHandler for Host {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(json!({"listChanged": false})),
            sampling: Some(json!({})),
            elicitation: Some(json!({})),
            ..Default::default()
        }
    }

    fn list_roots(&self, _server: &str) -> Result<Vec<Root>, RpcError> {
        Ok(vec![Root::from_path(std::path::Path::new("/work/project"))])
    }

    fn create_message(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        let asked = params["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": format!("{server} asked: {asked}")},
                  "model": "canned", "stopReason": "endTurn"}),
        )
    }

    fn elicit(&self, _server: &str, _params: Value) -> Result<Value, RpcError> {
        Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
    }

    fn on_tools_list_changed(&self, server: &str) {
        let _ = self.tools_changed.send(server.to_owned());
    }
}

fn with_host(name: &str) -> (Client, Receiver<String>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let opts = ConnectOptions {
        handler: Arc::new(Host { tools_changed: tx }),
        ..options()
    };
    (Client::connect(name, &endpoint(&[]), opts).unwrap(), rx)
}

/// Makes the server send `method` to us and returns (our answer, whether it was an error).
fn ask(client: &Client, method: &str, params: Value) -> (Value, bool) {
    let out = client
        .call_tool("ask", json!({"method": method, "params": params}))
        .unwrap();
    let is_error = out.is_error();
    (
        out.structured_content.unwrap()["response"].clone(),
        is_error,
    )
}

#[test]
fn declares_exactly_what_the_handler_implements() {
    let (client, _) = with_host("caps");
    let init = client.call_tool("client_info", json!({})).unwrap();
    let init = init.structured_content.unwrap();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(
        init["capabilities"],
        json!({"roots": {"listChanged": false}, "sampling": {}, "elicitation": {},
               "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(init["clientInfo"]["name"], "mcp-runtime");

    // An extension this crate does not know goes into `initialize` as given.
    let mut with_ext = options();
    with_ext.extensions.insert(
        "com.example/thing".into(),
        json!({"deep": [1, {"x": null}]}),
    );
    let client = Client::connect("ext", &endpoint(&[]), with_ext).unwrap();
    let init = client.call_tool("client_info", json!({})).unwrap();
    assert_eq!(
        init.structured_content.unwrap()["capabilities"]["extensions"]["com.example/thing"],
        json!({"deep": [1, {"x": null}]})
    );

    let plain = common::connect("no-caps", &[]);
    let init = plain.call_tool("client_info", json!({})).unwrap();
    assert_eq!(
        init.structured_content.unwrap()["capabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        "the tasks extension, which a call follows by itself, is declared by default"
    );
}

#[test]
fn answers_ping_roots_sampling_and_elicitation() {
    let (client, _) = with_host("host");
    assert_eq!(ask(&client, "ping", json!({})), (json!({}), false));
    let (roots, err) = ask(&client, "roots/list", json!({}));
    assert!(!err);
    assert_eq!(
        roots,
        json!({"roots": [{"uri": "file:///work/project", "name": "project"}]})
    );
    let (sample, err) = ask(
        &client,
        "sampling/createMessage",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}),
    );
    assert!(!err);
    assert_eq!(sample["content"]["text"], "host asked: hi");
    let (elicited, err) = ask(
        &client,
        "elicitation/create",
        json!({"message": "name?", "requestedSchema": {}}),
    );
    assert!(!err);
    assert_eq!(
        elicited,
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    let (unknown, err) = ask(&client, "tasks/list", json!({}));
    assert!(err);
    assert_eq!(unknown["code"], -32601);
}

#[test]
fn an_elicitation_in_a_mode_the_client_did_not_declare_is_invalid_params() {
    // The host declares `elicitation: {}`: form mode only. A URL-mode request never reaches
    // its handler (which would accept anything).
    let (client, _) = with_host("url-mode");
    let (answer, err) = ask(
        &client,
        "elicitation/create",
        json!({"mode": "url", "message": "log in", "url": "http://127.0.0.1:1/login",
            "elicitationId": "e1"}),
    );
    assert!(err);
    assert_eq!(answer["code"], -32602, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("\"url\""),
        "{answer}"
    );
    let (elicited, err) = ask(
        &client,
        "elicitation/create",
        json!({"mode": "form", "message": "name?", "requestedSchema": {}}),
    );
    assert!(!err);
    assert_eq!(elicited["action"], "accept");
}

#[test]
fn without_a_handler_every_server_request_but_ping_is_method_not_found() {
    let client = common::connect("refuses", &[]);
    assert_eq!(ask(&client, "ping", json!({})), (json!({}), false));
    for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
        let (answer, err) = ask(&client, method, json!({}));
        assert!(err, "{method}");
        assert_eq!(answer["code"], -32601, "{method}");
    }
}

#[test]
fn tools_list_changed_reaches_the_handler() {
    let (client, changed) = with_host("changing");
    client.call_tool("list_changed", json!({})).unwrap();
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(10)).unwrap(),
        "changing"
    );
}

#[test]
fn log_messages_go_to_the_log_crate_under_the_server_target() {
    capture_logs();
    let client = common::connect("logsrv", &[]);
    client
        .call_tool(
            "log",
            json!({"level": "warning", "message": "disk almost full"}),
        )
        .unwrap();
    // The notification precedes the response on the same stream, so it was logged already.
    let records = logs("disk almost full");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].target, "mcp::logsrv");
    assert_eq!(records[0].level, log::Level::Warn);
    assert_eq!(records[0].message, "[logsrv] test: disk almost full");
}

#[test]
fn progress_reaches_the_callback_on_the_calling_thread() {
    let client = common::connect("progress", &[]);
    let seen: Mutex<Vec<Progress>> = Mutex::new(Vec::new());
    let caller = std::thread::current().id();
    let out = client
        .call_tool_with(
            "progress",
            json!({"steps": 5}),
            CallOptions::default().with_progress(|p| {
                assert_eq!(std::thread::current().id(), caller);
                seen.lock().unwrap().push(p.clone());
            }),
        )
        .unwrap();
    assert_eq!(out.text(), "5 steps");
    let seen = seen.into_inner().unwrap();
    let steps: Vec<f64> = seen.iter().map(|p| p.progress).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(seen[4].total, Some(5.0));
    assert_eq!(seen[0].message.as_deref(), Some("step 1"));
    // Without a callback no token is sent, so the server sends no progress.
    let out = client.call_tool("progress", json!({"steps": 2})).unwrap();
    assert_eq!(out.text(), "2 steps");
}

#[test]
fn progress_extends_the_timeout_up_to_the_hard_maximum() {
    // 15 steps 100 ms apart: 1.5 s in all, never more than 1 s without progress.
    let client = common::connect("long", &[]);
    let mut count = 0;
    let out = client
        .call_tool_with(
            "progress",
            json!({"steps": 15, "interval_ms": 100}),
            CallOptions::timeout(Duration::from_millis(1000)).with_progress(|_| count += 1),
        )
        .unwrap();
    assert_eq!(out.text(), "15 steps");
    assert_eq!(count, 15);

    let opts = ConnectOptions {
        max_request_timeout: Duration::from_millis(300),
        ..options()
    };
    let capped = Client::connect("capped", &endpoint(&[]), opts).unwrap();
    let err = capped
        .call_tool_with(
            "progress",
            json!({"steps": 15, "interval_ms": 100}),
            CallOptions::timeout(Duration::from_millis(250)).with_progress(|_| {}),
        )
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
}
