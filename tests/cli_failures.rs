//! The `mcp` CLI's failures to reach a server: what `--timeout` bounds, what a server that
//! prints garbage is told, and the exit status when every server failed.

mod common;

use std::process::Output;

use common::http_server::{Behaviour, TestHttp};

fn mcp(name: &str, args: &[&str]) -> Output {
    let home = common::temp_dir(&format!("cli-failures-{name}"));
    common::cli(&home)
        .arg("--no-cache")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn garbage_before_the_handshake_is_counted_and_quoted_with_its_secrets_masked() {
    let out = mcp(
        "garbage",
        &[
            "--timeout",
            "500",
            "tools",
            "--env",
            "API_KEY=sk-test-0123456789",
            "--",
            "sh",
            "-c",
            "echo \"Welcome! key=$API_KEY\"; echo 'Listening on stdin'; exec sleep 30",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(124), "a connect timeout: {err}");
    assert!(
        err.contains("timed out after 500ms; it printed 2 lines that are not JSON-RPC on stdout (the first: \"Welcome! key=REDACTED\")"),
        "{err}"
    );
    assert!(!err.contains("sk-test"), "{err}");
}

#[test]
fn a_server_that_prints_only_garbage_fails_at_the_bound_with_a_protocol_status() {
    let out = mcp(
        "flood",
        &["tools", "--", "sh", "-c", "yes 'not an MCP server'"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(76), "{err}");
    assert!(
        err.contains("lines that are not JSON-RPC on stdout before its first message")
            && err.contains("the first: \"not an MCP server\""),
        "{err}"
    );
}

#[test]
fn timeout_bounds_the_connect_over_http_and_names_itself() {
    let server = TestHttp::start(Behaviour {
        hang_discover: true,
        ..Behaviour::default()
    });
    let out = mcp(
        "http-timeout",
        &["--timeout", "400", "tools", "--url", &server.url()],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(err.contains("timed out after 400ms"), "{err}");
}

#[test]
fn when_every_server_failed_tools_exits_with_the_failures_status() {
    let out = mcp("unstartable", &["tools", "--", "/nonexistent/server"]);
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains("Failed to start MCP server"));
}
