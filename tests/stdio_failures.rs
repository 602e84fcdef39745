//! Failure modes of a stdio server: timeouts, cancellation, crashes, oversized messages,
//! wrong ids, and teardown that leaves no process behind.

mod common;

use std::time::{Duration, Instant};

use common::{connect, endpoint, is_alive, options, wait_gone};
use mcp_runtime::transport::StdioOptions;
use mcp_runtime::{CallOptions, CancelToken, Client, ConnectOptions, Error};
use serde_json::{json, Value};

/// The pid of the grandchild a `--grandchild` test server started.
fn grandchild_pid(client: &Client) -> u32 {
    let out = client.call_tool("grandchild_pid", json!({})).unwrap();
    out.text().parse().unwrap()
}

type Pending = std::thread::JoinHandle<Result<mcp_runtime::protocol::CallToolResult, Error>>;

/// Calls `hang` on another thread; the receiver fires once the server has the call (it reports
/// progress on it).
fn hang_in_background(client: &Client) -> (Pending, crossbeam_channel::Receiver<()>) {
    let (started_tx, started) = crossbeam_channel::bounded(1);
    let c2 = client.clone();
    let handle = std::thread::spawn(move || {
        let options = CallOptions::default().with_progress(move |_| {
            let _ = started_tx.try_send(());
        });
        c2.call_tool_with("hang", json!({}), options)
    });
    (handle, started)
}

fn cancelled_ids(client: &Client) -> Vec<Value> {
    let out = client.call_tool("cancelled", json!({})).unwrap();
    out.structured_content.unwrap()["ids"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_timeout_fails_the_call_and_cancels_it_on_the_server() {
    let client = connect("timeout", &[]);
    let err = client
        .call_tool_with(
            "hang",
            json!({}),
            CallOptions::timeout(Duration::from_millis(100)),
        )
        .unwrap_err();
    assert_eq!(
        err,
        Error::Timeout {
            method: "tools/call".into(),
            after: Duration::from_millis(100)
        }
    );
    assert_eq!(err.to_string(), "Request timeout after 100ms");
    // The notification was queued before the error returned, so the server has it by now.
    let ids = cancelled_ids(&client);
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].is_i64());
    // The connection is still good.
    let out = client.call_tool("echo", json!({"message": "ok"})).unwrap();
    assert_eq!(out.text(), "ok");
}

#[test]
fn a_cancel_token_ends_the_call_and_cancels_it_on_the_server() {
    let client = connect("cancel", &[]);
    let token = CancelToken::new();
    let (started_tx, started) = crossbeam_channel::bounded(1);
    let (c2, t2) = (client.clone(), token.clone());
    let caller = std::thread::spawn(move || {
        let options = CallOptions::default()
            .with_cancel(t2)
            .with_progress(move |_| {
                let _ = started_tx.try_send(());
            });
        c2.call_tool_with("hang", json!({}), options)
    });
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    token.cancel();
    assert_eq!(caller.join().unwrap().unwrap_err(), Error::Cancelled);
    assert_eq!(cancelled_ids(&client).len(), 1);
}

#[test]
fn a_response_with_the_wrong_id_is_ignored() {
    let client = connect("wrong-id", &[]);
    let err = client
        .call_tool_with(
            "wrong_id",
            json!({}),
            CallOptions::timeout(Duration::from_millis(200)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    let out = client
        .call_tool("echo", json!({"message": "still fine"}))
        .unwrap();
    assert_eq!(out.text(), "still fine");
}

#[test]
fn a_crash_mid_call_fails_every_pending_call_with_the_stderr_tail() {
    let client = connect("crash", &["--grandchild"]);
    let pid = client.pid().unwrap();
    let grandchild = grandchild_pid(&client);
    let (other, started) = hang_in_background(&client);
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    let err = client.call_tool("crash", json!({})).unwrap_err();
    match &err {
        Error::TransportClosed {
            reason,
            stderr_tail,
        } => {
            assert!(reason.contains("exited"), "{reason}");
            assert_eq!(
                stderr_tail.last().map(String::as_str),
                Some("about to crash")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    let other = other.join().unwrap().unwrap_err();
    assert!(matches!(other, Error::TransportClosed { .. }), "{other:?}");
    assert!(client.closed_reason().is_some());
    assert!(wait_gone(pid, Duration::from_secs(5)));
    assert!(
        wait_gone(grandchild, Duration::from_secs(5)),
        "the grandchild was left behind"
    );
}

#[test]
fn a_100_mb_line_closes_the_connection_with_message_too_large() {
    let client = connect("huge", &[]);
    let pid = client.pid().unwrap();
    let (other, started) = hang_in_background(&client);
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    let err = client
        .call_tool("huge", json!({"bytes": 100_000_000}))
        .unwrap_err();
    assert_eq!(
        err,
        Error::MessageTooLarge {
            limit: 64 * 1024 * 1024
        }
    );
    let other = other.join().unwrap().unwrap_err();
    assert!(
        matches!(
            other,
            Error::MessageTooLarge { .. } | Error::TransportClosed { .. }
        ),
        "{other:?}"
    );
    assert_eq!(
        client.closed_reason(),
        Some(Error::MessageTooLarge {
            limit: 64 * 1024 * 1024
        })
    );
    assert!(wait_gone(pid, Duration::from_secs(5)));
}

#[test]
fn the_message_limit_is_configurable() {
    let opts = ConnectOptions {
        stdio: StdioOptions {
            max_message_bytes: 4096,
            ..options().stdio
        },
        ..options()
    };
    let client = Client::connect("small-limit", &endpoint(&[]), opts).unwrap();
    let out = client.call_tool("huge", json!({"bytes": 1000})).unwrap();
    assert_eq!(out.text().len(), 1000);
    let err = client
        .call_tool("huge", json!({"bytes": 5000}))
        .unwrap_err();
    assert_eq!(err, Error::MessageTooLarge { limit: 4096 });
}

#[test]
fn close_fails_a_pending_call_and_stops_the_process_group() {
    let client = connect("close", &["--grandchild"]);
    let pid = client.pid().unwrap();
    let grandchild = grandchild_pid(&client);
    let (pending, started) = hang_in_background(&client);
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    client.close();
    let err = pending.join().unwrap().unwrap_err();
    assert!(
        matches!(&err, Error::TransportClosed { reason, .. } if reason == "the connection was closed"),
        "{err:?}"
    );
    assert!(wait_gone(pid, Duration::from_secs(5)));
    assert!(
        wait_gone(grandchild, Duration::from_secs(5)),
        "the grandchild was left behind"
    );
}

#[test]
fn a_server_that_ignores_stdin_eof_gets_sigterm() {
    let client = connect("stubborn", &["--ignore-stdin-eof"]);
    let pid = client.pid().unwrap();
    client.close();
    assert!(wait_gone(pid, Duration::from_secs(5)));
}

#[test]
fn a_server_that_ignores_sigterm_gets_sigkill() {
    let client = connect(
        "very-stubborn",
        &["--ignore-stdin-eof", "--ignore-sigterm", "--grandchild"],
    );
    let pid = client.pid().unwrap();
    let grandchild = grandchild_pid(&client);
    client.close();
    assert!(wait_gone(pid, Duration::from_secs(5)));
    assert!(wait_gone(grandchild, Duration::from_secs(5)));
}

#[test]
fn close_returns_with_a_server_that_ignores_everything_and_its_grandchild_gone() {
    // The documented grace periods: stdin close, 0.5 s, SIGTERM, 0.5 s, SIGKILL.
    let opts = ConnectOptions {
        stdio: StdioOptions::default(),
        ..options()
    };
    let args = ["--ignore-stdin-eof", "--ignore-sigterm", "--grandchild"];
    let client = Client::connect("stubborn-group", &endpoint(&args), opts).unwrap();
    let pid = client.pid().unwrap();
    let grandchild = grandchild_pid(&client);
    let started = Instant::now();
    client.close();
    let took = started.elapsed();
    // Gone when close returns, not some time later.
    assert!(!is_alive(pid), "the server outlived close");
    assert!(!is_alive(grandchild), "the grandchild outlived close");
    // About 1 s; the 2 s grace periods made it over 4 s.
    assert!(took < Duration::from_secs(3), "close took {took:?}");
}

#[test]
fn close_returns_with_the_grandchild_of_a_server_that_exited_gone() {
    let client = connect("leaves-a-child", &["--grandchild"]);
    let pid = client.pid().unwrap();
    let grandchild = grandchild_pid(&client);
    client.close();
    assert!(!is_alive(pid), "the server outlived close");
    assert!(!is_alive(grandchild), "the grandchild outlived close");
}

#[test]
fn dropping_the_last_clone_closes_the_connection() {
    let client = connect("dropped", &["--grandchild"]);
    let pid = client.pid().unwrap();
    let clone = client.clone();
    drop(client);
    // A clone keeps it open.
    clone.ping(Duration::from_secs(10)).unwrap();
    drop(clone);
    assert!(wait_gone(pid, Duration::from_secs(5)));
}

#[test]
fn a_failed_handshake_leaves_no_process() {
    let opts = ConnectOptions {
        timeout: Duration::from_millis(200),
        ..options()
    };
    let tag = format!("handshake-{}", std::process::id());
    let args = ["--tag", tag.as_str(), "--silent-initialize", "--grandchild"];
    let err = Client::connect("silent", &endpoint(&args), opts).unwrap_err();
    assert!(matches!(err, Error::ConnectTimeout { .. }));
    let left: Vec<u32> = common::processes_tagged(&tag)
        .into_iter()
        .filter(|pid| !wait_gone(*pid, Duration::from_secs(5)))
        .collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn an_already_fired_token_sends_nothing() {
    let client = connect("pre-cancelled", &[]);
    let token = CancelToken::new();
    token.cancel();
    let err = client
        .call_tool_with(
            "echo",
            json!({"message": "x"}),
            CallOptions::default().with_cancel(token),
        )
        .unwrap_err();
    assert_eq!(err, Error::Cancelled);
    assert!(cancelled_ids(&client).is_empty());
}

#[test]
fn a_server_that_stops_reading_never_blocks_a_caller() {
    let client = connect("deaf", &[]);
    let pid = client.pid().unwrap();
    client.call_tool("stop_reading", json!({})).unwrap();
    // 200 calls of 64 KiB each: far more than a pipe holds. Every one must come back (with a
    // timeout), not block on the full pipe.
    let big = "x".repeat(64 * 1024);
    for _ in 0..200 {
        let err = client
            .call_tool_with(
                "echo",
                json!({ "message": big }),
                CallOptions::timeout(Duration::from_millis(1)),
            )
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    }
    // Close still stops it (its stdin cannot even be closed while the queue is stuck).
    client.close();
    assert!(wait_gone(pid, Duration::from_secs(5)));
}
