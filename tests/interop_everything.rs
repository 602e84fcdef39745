//! Interop over stdio with a real third-party server: `@modelcontextprotocol/server-everything`.
//! Skips, saying so, only where node is absent.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, Root};
use mcp_runtime::transport::StdioCommand;
use mcp_runtime::{CallOptions, Client, ClientHandler, ConnectOptions, Endpoint};
use serde_json::{json, Value};

fn endpoint() -> Option<Endpoint> {
    let script = common::everything::entry_script()?;
    let mut cmd = StdioCommand::new(
        "node",
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    // Keep its URL-fetching tool from ever reaching outside this machine.
    cmd.env
        .push(("GZIP_ALLOWED_DOMAINS".into(), "127.0.0.1".into()));
    Some(Endpoint::Stdio(cmd))
}

#[test]
fn lists_calls_and_follows_progress() {
    let Some(endpoint) = endpoint() else { return };
    let client = Client::connect("everything", &endpoint, common::options()).unwrap();
    assert_eq!(client.server_info().name, "mcp-servers/everything");
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // Without the capabilities, the conditional tools are not offered.
    assert!(!names.contains(&"trigger-sampling-request"));

    let out = client.call_tool("echo", json!({"message": "hi"})).unwrap();
    assert_eq!(out.text(), "Echo: hi");
    let out = client
        .call_tool("get-sum", json!({"a": 2, "b": 3}))
        .unwrap();
    assert_eq!(out.text(), "The sum of 2 and 3 is 5.");

    let mut progress = Vec::new();
    let out = client
        .call_tool_with(
            "trigger-long-running-operation",
            json!({"duration": 0.4, "steps": 4}),
            CallOptions::default().with_progress(|p| progress.push((p.progress, p.total))),
        )
        .unwrap();
    assert!(
        out.text().starts_with("Long running operation completed"),
        "{}",
        out.text()
    );
    assert_eq!(
        progress,
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );

    let out = client
        .call_tool("get-structured-content", json!({"location": "Chicago"}))
        .unwrap();
    assert!(out.structured_content.as_ref().unwrap()["temperature"].is_number());
    client.close();
}

struct Host {
    changed: Sender<()>,
    sampled: Mutex<Vec<Value>>,
}

impl ClientHandler for Host {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(json!({"listChanged": false})),
            sampling: Some(json!({})),
            ..Default::default()
        }
    }

    fn list_roots(&self, _server: &str) -> Result<Vec<Root>, RpcError> {
        Ok(vec![Root::from_path(std::path::Path::new("/interop/root"))])
    }

    fn create_message(&self, _server: &str, params: Value) -> Result<Value, RpcError> {
        self.sampled.lock().unwrap().push(params);
        Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": "canned reply"}, "model": "test-model"}),
        )
    }

    fn on_tools_list_changed(&self, _server: &str) {
        let _ = self.changed.send(());
    }
}

/// Lists tools until `name` is offered, waiting for `tools/list_changed` between tries.
fn wait_for_tool(client: &Client, changed: &Receiver<()>, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if client.list_tools().unwrap().iter().any(|t| t.name == name) {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        changed
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("{name} was never offered"));
    }
}

#[test]
fn answers_roots_and_sampling_when_declared() {
    let Some(endpoint) = endpoint() else { return };
    let (tx, rx) = crossbeam_channel::unbounded();
    let host = Arc::new(Host {
        changed: tx,
        sampled: Mutex::new(Vec::new()),
    });
    let opts = ConnectOptions {
        handler: host.clone(),
        ..common::options()
    };
    let client = Client::connect("everything-host", &endpoint, opts).unwrap();
    wait_for_tool(&client, &rx, "get-roots-list");
    wait_for_tool(&client, &rx, "trigger-sampling-request");

    let out = client.call_tool("get-roots-list", json!({})).unwrap();
    assert!(
        out.text().contains("file:///interop/root"),
        "{}",
        out.text()
    );

    let out = client
        .call_tool(
            "trigger-sampling-request",
            json!({"prompt": "ping?", "maxTokens": 5}),
        )
        .unwrap();
    assert!(out.text().contains("canned reply"), "{}", out.text());
    let sampled = host.sampled.lock().unwrap();
    assert_eq!(sampled.len(), 1);
    assert_eq!(sampled[0]["maxTokens"], 5);
    assert!(sampled[0]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .ends_with("ping?"));
}
