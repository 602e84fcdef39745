//! Streamable HTTP over a Unix socket, as VS Code names such a server (`"url":
//! "unix:///path/to/server.sock#/mcp"`): `@modelcontextprotocol/server-everything` listening on
//! a socket path, reached with a session, its GET stream, tool calls and the session's DELETE,
//! from the library and from a VS Code `mcp.json` through the command. Named pipes, Windows',
//! are `tests/windows_pipe.rs`'s.
#![cfg(unix)]

mod common;

use common::everything::HttpEverything;
use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{Client, Endpoint, Error};
use serde_json::json;

fn socket_url(path: &std::path::Path) -> String {
    format!("unix://{}#/mcp", path.display())
}

#[test]
fn a_server_on_a_unix_socket_has_a_session_its_stream_and_tool_calls() {
    let dir = common::temp_dir("local-socket");
    let path = dir.join("s.sock");
    let Some(server) = HttpEverything::start_on_socket(&path) else {
        return;
    };
    let client = Client::connect(
        "local",
        &Endpoint::Http(HttpTarget::new(socket_url(&path))),
        common::options(),
    )
    .unwrap();
    assert_eq!(client.transport_kind(), "http");
    assert_eq!(client.server_info().name, "mcp-servers/everything");
    server
        .wait_for_line("Establishing new SSE stream for session")
        .expect("the GET stream was opened");
    for i in 0..3 {
        let out = client
            .call_tool("echo", json!({"message": format!("over the socket {i}")}))
            .unwrap();
        assert_eq!(out.text(), format!("Echo: over the socket {i}"));
    }
    let out = client
        .call_tool("get-sum", json!({"a": 20, "b": 22}))
        .unwrap();
    assert_eq!(out.text(), "The sum of 20 and 22 is 42.");
    client.close();
    server
        .wait_for_line("Received session termination request")
        .expect("the session was ended with a DELETE");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_unix_url_in_a_vscode_config_works_from_the_command() {
    let home = common::temp_dir("local-socket-cli");
    let path = home.join("s.sock");
    let Some(_server) = HttpEverything::start_on_socket(&path) else {
        return;
    };
    let user = home.join(".config/Code/User");
    std::fs::create_dir_all(&user).unwrap();
    let config = json!({"servers": {"local": {"type": "http", "url": socket_url(&path)}}});
    std::fs::write(user.join("mcp.json"), config.to_string()).unwrap();
    let out = common::cli(&home)
        .args(["--cwd", home.to_str().unwrap(), "--no-project-config"])
        .args(["call", "mcp_local_echo", "message=from VS Code's file"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Echo: from VS Code's file"), "{stdout}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_local_socket_url_that_cannot_be_used_says_why() {
    let connect = |url: &str| {
        Client::connect(
            "local",
            &Endpoint::Http(HttpTarget::new(url)),
            common::options(),
        )
        .expect_err("no connection")
    };
    // A relative path, and a Windows named pipe off Windows: config errors, naming the URL.
    for url in ["unix://relative/s.sock", "pipe:///pipe/mcp"] {
        let e = connect(url);
        assert!(matches!(e, Error::Config { .. }), "{url}: {e:?}");
        let scheme = url.split(':').next().unwrap();
        assert!(e.to_string().contains(scheme), "{e}");
    }
    // Nobody listening at the path: a connection failure that names the socket, and no query
    // value of the HTTP path.
    let dir = common::temp_dir("local-socket-absent");
    let path = dir.join("nobody.sock");
    let e = connect(&format!("unix://{}#/mcp?key=SECRET", path.display()));
    let text = e.to_string();
    assert!(text.contains("nobody.sock"), "{text}");
    assert!(!text.contains("SECRET"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
