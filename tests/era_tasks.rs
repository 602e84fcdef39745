//! The tasks extension of 2026-07-28 (SEP-2663) against a stdio server that speaks it
//! (`tests/bin/modern_tasks.rs`): declared by default in every request's `_meta`; a call the
//! server turns into a task is followed with `tasks/get` to its inline result, its input
//! requests answered through the host's handler once each with `tasks/update`, its failure
//! the call's error, and a call that times out or is cancelled sends `tasks/cancel`. No
//! `tasks/result` is ever sent. A host that removes the extension gets the server's
//! missing-capability error.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::protocol::{ClientCapabilities, RpcError, TASKS_EXTENSION};
use mcp_runtime::{
    CallOptions, CancelToken, Client, ClientHandler, ConnectOptions, Endpoint, Error,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

fn log_path(test: &str) -> String {
    let path = std::env::temp_dir().join(format!("mcp-tasks-{}-{test}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path.to_string_lossy().into_owned()
}

fn methods(log: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        // The subscription stream opens on its own time: not part of a call.
        .filter(|l| l != "start" && l != "subscriptions/listen")
        .collect()
}

fn connect(log: &str, options: ConnectOptions) -> Client {
    let server = common::example_path("mcp-modern-server");
    let endpoint = Endpoint::stdio(
        server.display().to_string(),
        ["--mode", "modern", "--tasks", "--log", log],
    );
    Client::connect("tasks", &endpoint, options).expect("connect")
}

/// A host that approves every elicitation, and counts them.
struct Approver(Mutex<Vec<Value>>);

impl ClientHandler for Approver {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }

    fn elicit(&self, _server: &str, params: Value) -> Result<Value, RpcError> {
        self.0.lock().push(params);
        Ok(json!({"action": "accept", "content": {"ok": true}}))
    }
}

#[test]
fn a_task_is_followed_to_its_inline_result_with_its_status_as_progress() {
    let log = log_path("slow");
    let client = connect(&log, common::options());
    let tasks = client
        .extensions()
        .into_iter()
        .find(|e| e.name == TASKS_EXTENSION)
        .unwrap();
    assert!(tasks.agreed(), "{tasks:?}");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress = Arc::clone(&seen);
    let options = CallOptions::default().with_progress(move |p| {
        progress.lock().push(p.message.clone().unwrap_or_default());
    });
    let out = client
        .call_tool_with("task_slow", json!({}), options)
        .unwrap();
    assert_eq!(out.text(), "slow done after 3 polls");
    assert_eq!(*seen.lock(), ["started", "step 1", "step 2", "completed"]);
    let calls = methods(&log);
    assert_eq!(
        calls,
        [
            "server/discover",
            "tools/call",
            "tasks/get",
            "tasks/get",
            "tasks/get"
        ],
        "followed with tasks/get only (no tasks/result): {calls:?}"
    );
}

#[test]
fn a_tasks_input_is_answered_once_through_the_handler_and_sent_with_tasks_update() {
    let log = log_path("input");
    let host = Arc::new(Approver(Mutex::new(Vec::new())));
    let options = ConnectOptions {
        handler: host.clone(),
        ..common::options()
    };
    let client = connect(&log, options);
    let out = client.call_tool("task_input", json!({})).unwrap();
    assert_eq!(out.text(), "confirmed: accept {\"ok\":true}");
    assert_eq!(host.0.lock().len(), 1);
    assert_eq!(host.0.lock()[0]["message"], "Delete it?");
    let calls = methods(&log);
    assert_eq!(
        calls.iter().filter(|m| *m == "tasks/update").count(),
        1,
        "{calls:?}"
    );
}

#[test]
fn a_task_that_needs_input_the_host_cannot_give_fails_the_call() {
    let log = log_path("no-handler");
    let client = connect(&log, common::options());
    let err = client.call_tool("task_input", json!({})).unwrap_err();
    assert!(err.to_string().contains("elicitation/create"), "{err}");
    // Nothing was sent for the input that could not be had.
    assert!(!methods(&log).contains(&"tasks/update".to_owned()));
}

#[test]
fn a_failed_task_is_the_calls_error() {
    let log = log_path("fail");
    let client = connect(&log, common::options());
    let err = client.call_tool("task_fail", json!({})).unwrap_err();
    match err {
        Error::Rpc { code, message, .. } => {
            assert_eq!((code, message.as_str()), (-32000, "the disk is full"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_call_that_times_out_or_is_cancelled_cancels_its_task() {
    let log = log_path("endless");
    let client = connect(&log, common::options());
    let err = client
        .call_tool_with(
            "task_endless",
            json!({}),
            CallOptions::timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    let calls = methods(&log);
    assert_eq!(
        calls.last().map(String::as_str),
        Some("tasks/cancel"),
        "{calls:?}"
    );

    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    let waiter = std::thread::spawn(move || {
        client.call_tool_with(
            "task_endless",
            json!({}),
            CallOptions {
                cancel: Some(cancel),
                ..CallOptions::default()
            },
        )
    });
    common::eventually("the second task is polled", Duration::from_secs(20), || {
        methods(&log).iter().filter(|m| *m == "tasks/get").count()
            > calls.iter().filter(|m| *m == "tasks/get").count()
    });
    trigger.cancel();
    let err = waiter.join().unwrap().unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err:?}");
    let after = methods(&log);
    assert_eq!(
        after.iter().filter(|m| *m == "tasks/cancel").count(),
        2,
        "{after:?}"
    );
}

#[test]
fn a_host_that_removes_the_extension_gets_the_servers_refusal() {
    let log = log_path("opt-out");
    let mut options = common::options();
    options.extensions.remove(TASKS_EXTENSION);
    let client = connect(&log, options);
    assert!(client.agreed_extension(TASKS_EXTENSION).is_none());
    let err = client.call_tool("task_slow", json!({})).unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32021, .. }), "{err:?}");
}
