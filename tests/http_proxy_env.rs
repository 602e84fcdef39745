//! The environment's proxies (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`), with a
//! real proxy: a loopback server is reached directly unless `no_proxy` says `<-loopback>`, then
//! through the proxy, unless `no_proxy` names the host; uppercase `HTTP_PROXY` is ignored
//! (httpoxy). A test binary of its own, one test, since the environment is the whole
//! process's.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use common::tinyproxy::Tinyproxy;
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
        options.clone(),
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

    // With a real proxy, and `no_proxy` taking the loopback rule back: through the proxy.
    let Some(real) = Tinyproxy::start("env", None) else {
        return;
    };
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "https_proxy"] {
        std::env::remove_var(name);
    }
    std::env::set_var("http_proxy", real.url(None));
    std::env::set_var("NO_PROXY", "<-loopback>");
    let call = |label: &str| {
        let client = Client::connect(
            label,
            &Endpoint::Http(HttpTarget::new(server.url())),
            options.clone(),
        )
        .unwrap();
        client.call_tool("echo", json!({"message": label})).unwrap();
        client.close();
    };
    call("through");
    let port: u16 = server
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        real.forwarded_to(port),
        "no request in the proxy's log: {}",
        real.log()
    );
    let tunnels = || real.requests().len();
    let before = tunnels();

    // `no_proxy` naming the host (lowercase wins over uppercase): direct again.
    std::env::set_var("no_proxy", "<-loopback>, 127.0.0.0/8");
    call("named");
    // Uppercase HTTP_PROXY alone is ignored (httpoxy).
    std::env::remove_var("no_proxy");
    std::env::remove_var("http_proxy");
    std::env::set_var("HTTP_PROXY", real.url(None));
    call("uppercase");
    assert_eq!(tunnels(), before, "{}", real.log());
}
