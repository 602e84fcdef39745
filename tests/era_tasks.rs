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
    CallOptions, CancelToken, Client, ClientHandler, ConnectOptions, Endpoint, EraChoice, Error,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

fn log_path(test: &str) -> String {
    common::server_log(&format!("tasks-{test}"))
}

fn methods(log: &str) -> Vec<String> {
    common::log_lines(log)
        .into_iter()
        // The subscription stream opens on its own time: not part of a call.
        .filter(|l| l != "start" && l != "subscriptions/listen")
        .collect()
}

fn connect(log: &str, options: ConnectOptions) -> Client {
    connect_in("modern", log, options)
}

/// The server in `mode` (`modern`: 2026-07-28 only; `dual`: the handshake too).
fn connect_in(mode: &str, log: &str, options: ConnectOptions) -> Client {
    let server = common::example_path("mcp-modern-server");
    let endpoint = Endpoint::stdio(
        server.display().to_string(),
        ["--mode", mode, "--tasks", "--log", log],
    );
    Client::connect("tasks", &endpoint, options).expect("connect")
}

/// The log holds `method` `n` times, within a bound (a task is cancelled on a thread of its
/// own: the call does not wait for it).
fn logged(log: &str, method: &str, n: usize) {
    common::eventually(
        &format!("{method} x{n} in the server's log"),
        Duration::from_secs(20),
        || methods(log).iter().filter(|m| *m == method).count() == n,
    );
}

fn approving() -> (Arc<Approver>, ConnectOptions) {
    let host = Arc::new(Approver(Mutex::new(Vec::new())));
    let options = ConnectOptions {
        handler: host.clone(),
        ..common::options()
    };
    (host, options)
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
    assert!(
        client.agreed_extension(TASKS_EXTENSION).is_some(),
        "{:?}",
        client.extension_names()
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress = Arc::clone(&seen);
    let options = CallOptions::default().with_progress(move |p| {
        progress.lock().push(p.message.clone().unwrap_or_default());
    });
    let out = client
        .call_tool_with("task_slow", json!({}), options)
        .unwrap();
    assert_eq!(out.text(), "slow done after 3 polls");
    assert_eq!(
        *seen.lock(),
        ["started", "step 1", "step 2"],
        "news, once each"
    );
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
    let (host, options) = approving();
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

    // A key asked again beside a new one: only the new one is answered (the server fails the
    // task if a key is answered twice).
    let out = client.call_tool("task_two", json!({})).unwrap();
    assert_eq!(out.text(), "both answered");
    let asked: Vec<Value> = host.0.lock().iter().map(|p| p["message"].clone()).collect();
    assert_eq!(asked, ["Delete it?", "confirm?", "again?"]);
}

#[test]
fn a_task_that_needs_input_the_host_cannot_give_fails_the_call() {
    let log = log_path("no-handler");
    let client = connect(&log, common::options());
    let err = client.call_tool("task_input", json!({})).unwrap_err();
    assert!(err.to_string().contains("elicitation/create"), "{err}");
    // Nothing was sent for the input that could not be had, and the task was cancelled.
    logged(&log, "tasks/cancel", 1);
    assert!(!methods(&log).contains(&"tasks/update".to_owned()));
}

#[test]
fn a_task_in_an_unknown_status_is_a_protocol_error_and_is_cancelled() {
    let log = log_path("weird");
    let client = connect(&log, common::options());
    let err = client.call_tool("task_weird", json!({})).unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("pondering"), "{err}");
    logged(&log, "tasks/cancel", 1);
}

#[test]
fn a_task_created_already_done_gets_its_result_from_tasks_get() {
    let log = log_path("instant");
    let client = connect(&log, common::options());
    assert_eq!(
        client.call_tool("task_instant", json!({})).unwrap().text(),
        "instant"
    );
}

#[test]
fn the_handshake_era_follows_tasks_too_when_both_sides_declared_the_extension() {
    let log = log_path("handshake");
    let (host, mut options) = approving();
    options.era = EraChoice::Handshake;
    let client = connect_in("dual", &log, options);
    assert_eq!(client.protocol_version().as_str(), "2025-11-25");
    assert!(client.agreed_extension(TASKS_EXTENSION).is_some());
    assert_eq!(
        client.call_tool("task_slow", json!({})).unwrap().text(),
        "slow done after 3 polls"
    );
    // Input is answered through the handler in this era too.
    let out = client.call_tool("task_input", json!({})).unwrap();
    assert_eq!(out.text(), "confirmed: accept {\"ok\":true}");
    assert_eq!(host.0.lock().len(), 1);
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
    logged(&log, "tasks/cancel", 1);
    let calls = methods(&log);

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
    logged(&log, "tasks/cancel", 2);
    // A task is cancelled with tasks/cancel, never with notifications/cancelled.
    let after = methods(&log);
    assert!(
        !after.contains(&"notifications/cancelled".to_owned()),
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
