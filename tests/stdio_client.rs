//! The stdio client against a real server process: handshake, listing, calling, lenient reading.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{connect, endpoint, options, wait_gone};
use mcp_runtime::protocol::{ContentBlock, ProtocolVersion};
use mcp_runtime::{CallOptions, Client, ClientHandler, ConnectOptions, Endpoint, Error};
use serde_json::json;

#[test]
fn handshake_lists_and_calls() {
    let client = connect("basic", &[]);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.server_info().name, "mcp-test-server");
    assert_eq!(client.instructions().as_deref(), Some("Use echo to test."));
    assert!(client.server_capabilities().tools_list_changed());
    assert_eq!(client.transport_kind(), "stdio");

    let tools = client.list_tools().unwrap();
    assert_eq!(tools.len(), 17);
    assert_eq!(tools[0].name, "echo");
    assert_eq!(
        tools[0].input_schema["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(
        tools[0].annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );

    let out = client
        .call_tool("echo", json!({"message": "hello"}))
        .unwrap();
    assert_eq!(out.text(), "hello");
    assert!(!out.is_error());

    let out = client.call_tool("add", json!({"a": 2, "b": 40})).unwrap();
    assert_eq!(out.text(), "42");

    let out = client.call_tool("no_such_tool", json!({})).unwrap();
    assert!(out.is_error());
    assert_eq!(out.text(), "Unknown tool: no_such_tool");

    client.ping(Duration::from_secs(10)).unwrap();
    let pid = client.pid().unwrap();
    client.close();
    assert!(wait_gone(pid, Duration::from_secs(5)));
    // After close every call fails with a typed error, at once.
    let err = client
        .call_tool("echo", json!({"message": "x"}))
        .unwrap_err();
    assert!(matches!(err, Error::TransportClosed { .. }), "{err:?}");
}

#[test]
fn unknown_method_is_an_rpc_error() {
    let client = connect("rpc-error", &[]);
    let err = client
        .request("resources/list", None, CallOptions::default())
        .unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32601));
    assert_eq!(
        err.to_string(),
        "MCP error -32601: Method not found: resources/list"
    );
}

#[test]
fn every_content_type_is_kept_exactly() {
    let client = connect("rich", &[]);
    let out = client.call_tool("rich", json!({})).unwrap();
    let kinds: Vec<&str> = out.content.iter().map(ContentBlock::kind).collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource_link", "resource"]
    );
    assert_eq!(out.structured_content, Some(json!({"ok": true, "n": 5})));
    assert_eq!(out.meta, Some(json!({"trace": "abc"})));
    let raw = serde_json::to_value(&out).unwrap();
    assert_eq!(
        raw["content"][0]["annotations"],
        json!({"audience": ["user"]})
    );
    assert_eq!(raw["content"][4]["resource"]["text"], "bee");
    let tools = client.list_tools().unwrap();
    let rich = tools.iter().find(|t| t.name == "rich").unwrap();
    assert_eq!(rich.output_schema, Some(json!({"type": "object"})));
    assert_eq!(rich.meta, Some(json!({"x": 1})));
}

#[test]
fn follows_every_page() {
    let client = connect("pages", &["--tools", "95", "--page-size", "10"]);
    let tools = client.list_tools().unwrap();
    assert_eq!(tools.len(), 17 + 95);
    assert_eq!(tools.last().unwrap().name, "tool_94");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 112, "no page twice");
}

#[test]
fn a_repeated_cursor_stops_the_listing() {
    let client = connect(
        "loop",
        &["--tools", "30", "--page-size", "10", "--repeat-cursor"],
    );
    // Page 1 (cursor page-10), page 2 (cursor page-10 again): stop with both pages.
    let tools = client.list_tools().unwrap();
    assert_eq!(tools.len(), 20);
}

#[test]
fn no_tools_capability_means_no_tools() {
    let client = connect("no-tools", &["--no-tools-capability"]);
    assert!(client.list_tools().unwrap().is_empty());
}

#[test]
fn banners_and_garbage_lines_are_skipped() {
    let client = connect("banner", &["--banner"]);
    assert_eq!(client.list_tools().unwrap().len(), 17);
    for i in 0..20 {
        let out = client
            .call_tool("echo", json!({"message": format!("m{i}")}))
            .unwrap();
        assert_eq!(out.text(), format!("m{i}"));
    }
}

#[test]
fn string_ids_match_their_numbers() {
    let client = connect("string-ids", &["--string-ids"]);
    let out = client.call_tool("echo", json!({"message": "s"})).unwrap();
    assert_eq!(out.text(), "s");
}

#[test]
fn two_megabytes_of_stderr_do_not_block_the_server() {
    let client = connect("flood", &["--stderr-flood", "2000000"]);
    let out = client
        .call_tool("echo", json!({"message": "after the flood"}))
        .unwrap();
    assert_eq!(out.text(), "after the flood");
    let out = client.call_tool("stderr", json!({"lines": 3})).unwrap();
    assert_eq!(out.text(), "written");
    // The stderr lines are written before the response, so whoever read the response has read
    // them too; wait (bounded) in case they are not attached yet.
    common::holds_within(Duration::from_secs(10), || {
        client.stderr_tail().last().map(String::as_str) == Some("stderr line 2")
    });
    let tail = client.stderr_tail();
    assert_eq!(tail.last().map(String::as_str), Some("stderr line 2"));
    assert!(tail.len() <= 64);
}

#[test]
fn the_stderr_tail_is_current_when_a_call_returns() {
    // On one CPU (this thread, and so the server and the io thread it starts, pinned to it) the
    // server has mostly answered before the caller reads: the caller finds its answer without
    // waiting for it, the path that must not skip stderr.
    pin_to_one_cpu();
    let client = connect("tail", &[]);
    // Each call writes its lines before it answers: whoever read the answer (the caller or the
    // io thread) read them first.
    for lines in 1..=200 {
        let out = client
            .call_tool("stderr", json!({ "lines": lines }))
            .unwrap();
        assert_eq!(out.text(), "written");
        let tail = client.stderr_tail();
        let expected = format!("stderr line {}", lines - 1);
        assert_eq!(tail.last(), Some(&expected), "after call {lines}");
    }
}

/// Pins the calling thread (and what it starts from now on) to the CPU it runs on.
fn pin_to_one_cpu() {
    // SAFETY: sched_getcpu has no arguments; the cpu_set_t is zeroed, then one CPU set in it,
    // and handed to sched_setaffinity for the calling thread (pid 0).
    unsafe {
        let cpu = libc::sched_getcpu().max(0) as usize;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[test]
fn a_silent_server_times_out_the_handshake_with_the_design_text() {
    let opts = ConnectOptions {
        timeout: Duration::from_millis(300),
        ..options()
    };
    let err = Client::connect("silent", &endpoint(&["--silent-initialize"]), opts).unwrap_err();
    match &err {
        Error::ConnectTimeout {
            server,
            after,
            stderr_tail,
            skipped_stdout,
        } => {
            assert_eq!(server, "silent");
            assert_eq!(
                *skipped_stdout, None,
                "the test server prints only JSON-RPC"
            );
            assert_eq!(*after, Duration::from_millis(300));
            assert!(
                stderr_tail.iter().any(|l| l == "ignoring initialize"),
                "{stderr_tail:?}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err
        .to_string()
        .starts_with("Connection to MCP server \"silent\" timed out after 300ms"));
}

#[test]
fn a_server_that_exits_during_the_handshake_reports_its_stderr() {
    let err =
        Client::connect("dies", &endpoint(&["--exit-on-initialize", "7"]), options()).unwrap_err();
    match &err {
        Error::TransportClosed {
            reason,
            stderr_tail,
        } => {
            assert!(reason.contains("exited"), "{reason}");
            assert!(reason.contains('7'), "{reason}");
            assert_eq!(
                stderr_tail.last().map(String::as_str),
                Some("fatal: cannot initialize (exiting with 7)")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn an_unknown_protocol_version_is_refused() {
    let err = Client::connect(
        "future",
        &endpoint(&["--protocol", "2099-01-01"]),
        options(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::UnsupportedProtocolVersion {
            requested: "2025-11-25".into(),
            received: "2099-01-01".into()
        }
    );
}

#[test]
fn every_older_revision_is_accepted() {
    for v in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        let client = connect("older", &["--protocol", v]);
        assert_eq!(client.protocol_version().as_str(), v);
    }
}

#[test]
fn a_missing_command_is_a_spawn_error() {
    let err = Client::connect(
        "missing",
        &Endpoint::stdio("/nonexistent/mcp-server", Vec::<String>::new()),
        options(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::Spawn { server, .. } if server == "missing"),
        "{err:?}"
    );
    assert!(err
        .to_string()
        .starts_with("Failed to start MCP server \"missing\": /nonexistent/mcp-server"));
}

#[test]
fn env_and_cwd_reach_the_server() {
    let dir = std::env::temp_dir();
    let mut endpoint = endpoint(&[]);
    let Endpoint::Stdio(cmd) = &mut endpoint else {
        unreachable!()
    };
    cmd.env.push(("MCP_TEST_VALUE".into(), "42".into()));
    cmd.cwd = Some(dir.clone());
    let client = Client::connect("env", &endpoint, options()).unwrap();
    let pid = client.pid().unwrap();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(environ
        .split(|b| *b == 0)
        .any(|kv| kv == b"MCP_TEST_VALUE=42"));
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    assert_eq!(cwd.canonicalize().unwrap(), dir.canonicalize().unwrap());
}

/// Tells the test what the client saw on its own.
struct Events(crossbeam_channel::Sender<&'static str>);

impl ClientHandler for Events {
    fn on_tools_list_changed(&self, _server: &str) {
        let _ = self.0.send("list_changed");
    }
    fn on_connection_closed(&self, _server: &str, _reason: &Error) {
        let _ = self.0.send("closed");
    }
}

#[test]
fn what_the_server_sends_between_calls_arrives_without_another_call() {
    for (what, expected) in [("notify", "list_changed"), ("crash", "closed")] {
        let (tx, rx) = crossbeam_channel::unbounded();
        let options = ConnectOptions {
            handler: Arc::new(Events(tx)),
            ..options()
        };
        let client = Client::connect("between", &endpoint(&[]), options).unwrap();
        // Plain calls read their own answers, and the reader thread parks meanwhile; it must
        // wake up for what comes after the last call.
        for i in 0..3 {
            let out = client
                .call_tool("echo", json!({ "message": i.to_string() }))
                .unwrap();
            assert_eq!(out.text(), i.to_string());
        }
        let args = json!({ "ms": 50, "what": what });
        let out = client.call_tool("later", args).unwrap();
        assert_eq!(out.text(), "ok");
        let seen = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(seen, Ok(expected), "{what}");
        client.close();
    }
}
