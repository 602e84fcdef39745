//! A proxy named in the environment is not used: MCP servers are reached directly. A test
//! binary of its own, since the environment is the whole process's.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{Client, ConnectOptions, Endpoint};
use serde_json::json;

#[test]
fn proxy_variables_in_the_environment_neither_divert_nor_break_calls() {
    // A "proxy" that would hold any connection made to it unanswered.
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
    ] {
        std::env::set_var(name, &proxy_url);
    }
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");

    let server = TestHttp::start(Behaviour::default());
    let options = ConnectOptions {
        timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    };
    let client = Client::connect(
        "direct",
        &Endpoint::Http(HttpTarget::new(server.url())),
        options,
    )
    .unwrap();
    let out = client
        .call_tool("echo", json!({"message": "direct"}))
        .unwrap();
    assert_eq!(out.text(), "direct");
    client.close();

    proxy.set_nonblocking(true).unwrap();
    let accepted = proxy.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the client went through the proxy: {accepted:?}"
    );
    // Requests were sent in origin form (a path), as to a server, not as to a proxy.
    for seen in server.seen() {
        assert!(seen.path.starts_with('/'), "{}", seen.path);
    }
}
