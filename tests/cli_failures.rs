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

/// `call` reports a server it could not use with that failure's own status and, with `--json`,
/// its error object, as `tools` does (it used to exit 69 whatever the cause, printing no
/// object).
#[test]
fn call_exits_with_the_failure_of_the_server_it_could_not_use() {
    let unauthorized = TestHttp::start(Behaviour {
        post_status: Some((401, vec![], "unauthorized".into())),
        ..Behaviour::default()
    });
    let hanging = TestHttp::start(Behaviour {
        hang_discover: true,
        ..Behaviour::default()
    });
    let (unauthorized_url, hanging_url) = (unauthorized.url(), hanging.url());
    let cases: [(&str, Vec<&str>, i32, &str, &str); 3] = [
        (
            "call-401",
            vec!["--url", &unauthorized_url],
            77,
            "authorization",
            "needs a login",
        ),
        (
            "call-timeout",
            vec!["--timeout", "400", "--url", &hanging_url],
            124,
            "timeout",
            "timed out after 400ms",
        ),
        (
            "call-unstartable",
            vec!["--", "/nonexistent/server"],
            69,
            "unavailable",
            "Failed to start MCP server",
        ),
    ];
    for (name, target, status, kind, says) in cases {
        let (options, server): (Vec<&str>, Vec<&str>) = match target.iter().position(|a| *a == "--")
        {
            Some(at) => (target[..at].to_vec(), target[at..].to_vec()),
            None => (target.clone(), Vec::new()),
        };
        let mut args = vec!["--json"];
        args.extend(&options);
        args.extend(["call", "mcp_x_echo", "message=hi"]);
        args.extend(&server);
        let out = mcp(name, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(status), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        let printed: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{name}: no JSON on stdout ({e}): {err}"));
        assert_eq!(printed["error"]["kind"], kind, "{name}: {printed}");
        assert!(printed["error"]["message"].is_string(), "{name}: {printed}");
    }
}

/// Headers the transport owns (framing, connection, session) cannot come from a config or
/// `--header`: the config is refused before any connection, naming each header, as a usage
/// error. Before, they went out beside the transport's own (a request-smuggling shape).
#[test]
fn a_configured_framing_header_is_refused_before_anything_is_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let out = mcp(
        "owned-headers",
        &[
            "--timeout",
            "2000",
            "tools",
            "--url",
            &url,
            "--header",
            "Transfer-Encoding: chunked",
            "--header",
            "Content-Length: 0",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for header in ["Transfer-Encoding", "Content-Length"] {
        assert!(
            err.contains(&format!("header \"{header}\" cannot be configured")),
            "{err}"
        );
    }
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a connection was made"
    );
}
