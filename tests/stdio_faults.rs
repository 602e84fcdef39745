//! A stdio server that breaks the protocol or its pipes: each fault ends the calls it concerns
//! at once, with a typed error, instead of leaving them to their timeout.

mod common;

use std::time::{Duration, Instant};

use common::{capture_logs, connect, endpoint, logs, options, wait_gone};
use mcp_runtime::transport::StdioOptions;
use mcp_runtime::{CallOptions, CancelToken, Client, ConnectOptions, Error};
use serde_json::{json, Value};

/// Long enough that a call which waits it out is unmistakable.
const TIMEOUT: Duration = Duration::from_secs(20);
/// What "at once" is allowed to take here, under load: a quarter of the timeout.
const AT_ONCE: Duration = Duration::from_secs(5);

/// The tests of this file one at a time. A server that closes its stdin only breaks the pipe
/// when no other process holds its read end, and a child another test of this process is
/// spawning at that moment does hold it, inherited, until it execs (under CPU load that can
/// be a while): the write then succeeds and the call waits out its timeout. Other test binaries
/// are other processes, so serialising this one's tests is enough.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A call of `tool`; `inline` calls read their own answer, the others (with a cancel token)
/// have the io thread read it.
fn call(client: &Client, tool: &str, args: Value, inline: bool) -> Result<String, Error> {
    let mut options = CallOptions::timeout(TIMEOUT);
    if !inline {
        options = options.with_cancel(CancelToken::new());
    }
    client
        .call_tool_with(tool, args, options)
        .map(|out| out.text())
}

#[test]
fn a_reply_that_cannot_be_parsed_fails_that_call_at_once() {
    let _serial = one_at_a_time();
    let client = connect("unparsable", &[]);
    for inline in [true, false] {
        for (tool, args) in [("bad_utf8", json!({})), ("deep", json!({"depth": 300}))] {
            let started = Instant::now();
            let err = call(&client, tool, args, inline).unwrap_err();
            let took = started.elapsed();
            match &err {
                // Invalid UTF-8 spoils the whole line; a result nested too deep is read as
                // text and refused when parsed into the tool result.
                Error::Protocol { message } => assert!(
                    message.contains("could not be parsed")
                        || message.contains("invalid tools/call result: recursion limit"),
                    "{tool}: {message}"
                ),
                other => panic!("{tool} (inline {inline}): unexpected {other:?}"),
            }
            assert!(took < AT_ONCE, "{tool} (inline {inline}) took {took:?}");
            // The connection carries on.
            let echo = call(&client, "echo", json!({"message": "still here"}), inline);
            assert_eq!(echo.unwrap(), "still here");
        }
    }
    assert!(client.closed_reason().is_none());
}

#[test]
fn a_call_to_a_server_that_closed_its_stdin_fails_at_once() {
    let _serial = one_at_a_time();
    for inline in [true, false] {
        let client = connect("no-stdin", &[]);
        assert_eq!(
            call(&client, "close_stdin", json!({}), true).unwrap(),
            "stdin closed"
        );
        for _ in 0..2 {
            let started = Instant::now();
            let err = call(&client, "echo", json!({"message": "x"}), inline).unwrap_err();
            let took = started.elapsed();
            assert!(
                matches!(&err, Error::TransportClosed { reason, .. } if reason.contains("closed its stdin")),
                "inline {inline}: {err:?}"
            );
            assert!(took < AT_ONCE, "inline {inline}: took {took:?}");
        }
        let pid = client.pid().unwrap();
        client.close();
        assert!(wait_gone(pid, Duration::from_secs(5)));
    }
}

#[test]
fn a_request_queued_when_the_server_closes_its_stdin_fails_at_once() {
    let _serial = one_at_a_time();
    for inline in [true, false] {
        let client = connect("stdin-breaks", &[]);
        assert_eq!(
            call(&client, "close_stdin_later", json!({"ms": 1000}), true).unwrap(),
            "closing stdin later"
        );
        // Far more than the pipe holds: most of it waits in the writer's queue until the server
        // closes its stdin under it.
        let big = "x".repeat(1 << 20);
        let started = Instant::now();
        let err = call(&client, "echo", json!({ "message": big }), inline).unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(&err, Error::TransportClosed { reason, .. } if reason.contains("closed its stdin")),
            "inline {inline}: {err:?}"
        );
        assert!(
            took < Duration::from_secs(10),
            "inline {inline}: took {took:?}"
        );
        client.close();
    }
}

#[test]
fn a_server_that_closes_stdout_and_lingers_ends_the_connection_at_once() {
    let _serial = one_at_a_time();
    // The documented grace periods, and a server only SIGKILL stops: the teardown takes them
    // all, and the calls must not wait for it.
    let opts = ConnectOptions {
        stdio: StdioOptions::default(),
        request_timeout: TIMEOUT,
        ..options()
    };
    let args = ["--ignore-stdin-eof", "--ignore-sigterm", "--grandchild"];
    let client = Client::connect("no-stdout", &endpoint(&args), opts).unwrap();
    let pid = client.pid().unwrap();
    let (started_tx, started) = crossbeam_channel::bounded(1);
    let other = client.clone();
    let pending = std::thread::spawn(move || {
        let options = CallOptions::default().with_progress(move |_| {
            let _ = started_tx.try_send(());
        });
        other.call_tool_with("hang", json!({}), options)
    });
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    let t = Instant::now();
    let err = client.call_tool("close_stdout", json!({})).unwrap_err();
    let took = t.elapsed();
    match &err {
        Error::TransportClosed {
            reason,
            stderr_tail,
        } => {
            assert!(reason.contains("closed its stdout"), "{reason}");
            assert!(
                stderr_tail.iter().any(|l| l == "closing stdout"),
                "{stderr_tail:?}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(took < AT_ONCE, "took {took:?}");
    let other = pending.join().unwrap().unwrap_err();
    assert!(
        matches!(&other, Error::TransportClosed { reason, .. } if reason.contains("closed its stdout")),
        "{other:?}"
    );
    assert!(client.closed_reason().is_some());
    // And the process is torn down (SIGKILL after both grace periods).
    assert!(wait_gone(pid, Duration::from_secs(10)));
}

#[test]
fn a_flood_of_error_responses_nobody_waits_for_logs_a_few_warnings() {
    let _serial = one_at_a_time();
    capture_logs();
    let client = connect("unsolicited", &[]);
    for args in [
        json!({"count": 1000}),
        json!({"count": 500, "id": "nobody"}),
    ] {
        // The errors come before the call's own answer, so all are read when it returns.
        let out = client.call_tool("unsolicited_errors", args).unwrap();
        assert_eq!(out.text(), "sent");
    }
    let warnings: Vec<String> = logs("[unsolicited]")
        .into_iter()
        .filter(|r| r.level == log::Level::Warn)
        .map(|r| r.message)
        .collect();
    assert!(
        (2..=25).contains(&warnings.len()),
        "{} warnings: {:#?}",
        warnings.len(),
        &warnings[..warnings.len().min(10)]
    );
    assert!(
        warnings.iter().all(|w| !w.contains("without a request id")),
        "{warnings:#?}"
    );
    assert!(
        warnings[0].contains("error response for no id")
            && warnings[0].contains("no request waits for"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("has sent 1405 error responses")),
        "a summary counts them: {warnings:#?}"
    );
    client.ping(Duration::from_secs(10)).unwrap();
}
