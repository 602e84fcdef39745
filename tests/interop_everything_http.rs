//! Interop over HTTP with `@modelcontextprotocol/server-everything`: Streamable HTTP, legacy
//! SSE, and detection from a bare URL. Skips, saying so, only where node is absent.

mod common;

use common::everything::HttpEverything;
use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{CallOptions, Client, Endpoint};
use serde_json::json;

fn exercise(client: &Client) {
    assert_eq!(client.server_info().name, "mcp-servers/everything");
    let tools = client.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "get-sum"), "{tools:?}");
    let out = client
        .call_tool("echo", json!({"message": "over the wire"}))
        .unwrap();
    assert_eq!(out.text(), "Echo: over the wire");
    let out = client
        .call_tool("get-sum", json!({"a": 20, "b": 22}))
        .unwrap();
    assert_eq!(out.text(), "The sum of 20 and 22 is 42.");
    let mut progress = 0;
    let out = client
        .call_tool_with(
            "trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
            CallOptions::default().with_progress(|_| progress += 1),
        )
        .unwrap();
    assert!(out.text().starts_with("Long running operation completed"));
    assert_eq!(progress, 3);
}

#[test]
fn streamable_http() {
    let Some(server) = HttpEverything::start("streamableHttp") else {
        return;
    };
    let client = Client::connect(
        "everything-http",
        &Endpoint::Http(HttpTarget::new(server.mcp_url())),
        common::options(),
    )
    .unwrap();
    assert_eq!(client.transport_kind(), "http");
    exercise(&client);
    client.close();
}

#[test]
fn legacy_sse() {
    let Some(server) = HttpEverything::start("sse") else {
        return;
    };
    let client = Client::connect(
        "everything-sse",
        &Endpoint::Sse(HttpTarget::new(server.sse_url())),
        common::options(),
    )
    .unwrap();
    assert_eq!(client.transport_kind(), "sse");
    exercise(&client);
    client.close();
}

#[test]
fn a_bare_url_detects_each_transport() {
    let Some(http) = HttpEverything::start("streamableHttp") else {
        return;
    };
    let client = Client::connect(
        "detect-http",
        &Endpoint::url(http.mcp_url()),
        common::options(),
    )
    .unwrap();
    assert_eq!(client.transport_kind(), "http");
    client.close();
    let Some(sse) = HttpEverything::start("sse") else {
        return;
    };
    let client = Client::connect(
        "detect-sse",
        &Endpoint::url(sse.sse_url()),
        common::options(),
    )
    .unwrap();
    assert_eq!(client.transport_kind(), "sse");
    exercise(&client);
    client.close();
}

/// The `mcp` command.
fn mcp_cli() -> std::process::Command {
    std::process::Command::new(common::cli_path())
}

fn probe_json(url: &str, call_all: bool) -> serde_json::Value {
    let mut cmd = mcp_cli();
    cmd.args(["--json", "probe"]);
    if call_all {
        cmd.arg("--call-all");
    }
    let out = cmd.arg(url).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn check_probe(report: &serde_json::Value, transport: &str) {
    assert_eq!(report["server"], "mcp-servers/everything");
    assert_eq!(report["transport"], transport);
    let calls = report["calls"].as_array().unwrap();
    assert!(calls.len() >= 10, "{report}");
    assert!(calls.iter().all(|c| c["ok"] == true), "{report}");
    // Its sampling and roots tools were offered (we declare both) and answered.
    for name in ["trigger-sampling-request", "get-roots-list", "echo"] {
        assert!(
            calls
                .iter()
                .any(|c| c["tool"] == name && c["isError"] == false),
            "{name}: {report}"
        );
    }
}

#[test]
fn probe_over_streamable_http_and_legacy_sse() {
    let Some(http) = HttpEverything::start("streamableHttp") else {
        return;
    };
    let Some(sse) = HttpEverything::start("sse") else {
        return;
    };
    // Both at once: each probe waits about ten seconds for the long-running tool's default.
    // With --call-all: the server annotates its sampling and elicitation tools
    // `readOnlyHint: false`, which a plain probe does not call (below).
    std::thread::scope(|s| {
        let h = s.spawn(|| probe_json(&http.mcp_url(), true));
        let l = s.spawn(|| probe_json(&sse.sse_url(), true));
        check_probe(&h.join().unwrap(), "http");
        check_probe(&l.join().unwrap(), "sse");
    });
    let plain = probe_json(&http.mcp_url(), false);
    let calls = plain["calls"].as_array().unwrap();
    assert!(
        calls.contains(
            &serde_json::json!({"tool": "trigger-sampling-request", "skipped": "writes"})
        ),
        "{plain}"
    );
    assert!(calls.iter().any(|c| c["tool"] == "echo" && c["ok"] == true));
}
