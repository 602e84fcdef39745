//! Servers reached through a real forward proxy (Debian's `tinyproxy`, started by the test on
//! loopback): a server's own `proxy` setting and the HTTP options' one carry the connection
//! (the proxy's log shows the requests, forwarded as they are for these `http://` servers;
//! `https://` ones go through a `CONNECT` tunnel: see `http_tls`), credentials go to the proxy
//! and nowhere else, and a
//! proxy that refuses or is not there is told apart from the server's own failures.

mod common;

use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use common::tinyproxy::Tinyproxy;
use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{Client, ConnectOptions, Endpoint, Error};
use serde_json::json;

const USER: &str = "mcp";
const PASSWORD: &str = "pr0xy-s3cret";

fn options() -> ConnectOptions {
    ConnectOptions {
        timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    }
}

fn port_of(url: &str) -> u16 {
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    rest.split('/').next().unwrap().parse().unwrap()
}

fn through(server: &TestHttp, proxy: &str) -> Endpoint {
    Endpoint::Http(HttpTarget {
        proxy: Some(proxy.to_owned()),
        ..HttpTarget::new(server.url())
    })
}

#[test]
fn a_servers_proxy_carries_its_connection() {
    let Some(proxy) = Tinyproxy::start("carries", None) else {
        return;
    };
    let server = TestHttp::start(Behaviour::default());
    let client =
        Client::connect("proxied", &through(&server, &proxy.url(None)), options()).unwrap();
    let out = client.call_tool("echo", json!({"message": "via"})).unwrap();
    assert_eq!(out.text(), "via");
    assert_eq!(client.proxy().as_deref(), Some(proxy.url(None).as_str()));
    client.close();
    assert!(
        proxy.forwarded_to(port_of(&server.url())),
        "the proxy's log shows no request for the server: {}",
        proxy.log()
    );

    // `direct` reaches the server without it, whatever else is set.
    let direct = TestHttp::start(Behaviour::default());
    let mut opts = options();
    opts.http.proxy = Some(proxy.url(None));
    let client = Client::connect("direct", &through(&direct, "direct"), opts).unwrap();
    client.call_tool("echo", json!({"message": "x"})).unwrap();
    assert_eq!(client.proxy(), None);
    client.close();
    let direct_port = format!("127.0.0.1:{}", port_of(&direct.url()));
    assert!(
        !proxy.requests().iter().any(|r| r.contains(&direct_port)),
        "{}",
        proxy.log()
    );
}

#[test]
fn the_options_proxy_follows_the_environments_rules_for_loopback() {
    let Some(proxy) = Tinyproxy::start("options", None) else {
        return;
    };
    let server = TestHttp::start(Behaviour::default());
    let mut opts = options();
    opts.http.proxy = Some(proxy.url(None));
    // Loopback is reached directly, unless the environment's `no_proxy` takes the rule back.
    let no_proxy = ["no_proxy", "NO_PROXY"].map(|n| std::env::var(n).unwrap_or_default());
    if no_proxy.iter().any(|v| v.contains("<-loopback>")) {
        eprintln!("this environment's no_proxy proxies loopback: nothing to check");
        return;
    }
    let endpoint = Endpoint::Http(HttpTarget::new(server.url()));
    let client = Client::connect("loopback", &endpoint, opts).unwrap();
    client.call_tool("echo", json!({"message": "x"})).unwrap();
    client.close();
    assert!(proxy.requests().is_empty(), "{}", proxy.log());
}

#[test]
fn credentials_go_to_the_proxy_and_nowhere_else() {
    let Some(proxy) = Tinyproxy::start("auth", Some((USER, PASSWORD))) else {
        return;
    };
    let server = TestHttp::start(Behaviour::default());
    let with = through(&server, &proxy.url(Some((USER, PASSWORD))));
    assert!(!format!("{with:?}").contains(PASSWORD), "{with:?}");
    let client = Client::connect("auth", &with, options()).unwrap();
    client.call_tool("echo", json!({"message": "ok"})).unwrap();
    assert_eq!(client.proxy().as_deref(), Some(proxy.url(None).as_str()));
    client.close();
    // The server never saw them (nor any Proxy-Authorization).
    for seen in server.seen() {
        let text = format!("{seen:?}");
        assert!(!text.contains(PASSWORD), "{text}");
        assert!(
            !text.to_ascii_lowercase().contains("proxy-authorization"),
            "{text}"
        );
    }

    // Without them: the proxy's 407, said as such.
    let without = through(&server, &proxy.url(None));
    let err = Client::connect("no-auth", &without, options()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("407") && text.contains("credentials"),
        "{text}"
    );
    assert!(text.contains("through the proxy"), "{text}");

    // Wrong ones: refused the same way (tinyproxy answers those 401), and the wrong password
    // is not repeated back.
    let wrong = through(&server, &proxy.url(Some((USER, "not-the-password"))));
    let text = Client::connect("wrong", &wrong, options())
        .unwrap_err()
        .to_string();
    assert!(text.contains("credentials"), "{text}");
    assert!(!text.contains("not-the-password"), "{text}");
}

#[test]
fn a_proxy_that_is_not_there_is_named_in_the_error() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let server = TestHttp::start(Behaviour::default());
    let proxy = format!("http://{USER}:{PASSWORD}@127.0.0.1:{port}");
    let err = Client::connect("gone", &through(&server, &proxy), options()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("through the proxy http://127.0.0.1:{port}")),
        "{text}"
    );
    assert!(!text.contains(PASSWORD), "{text}");
    assert!(server.seen().is_empty(), "nothing reached the server");

    // A setting that is not a proxy URL is a config error naming whose it is, not its value.
    let bad = through(&server, "socks5://someone:hunter2@proxy:1080");
    let err = Client::connect("bad", &bad, options()).unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err:?}");
    assert!(err.to_string().contains("the server's proxy"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[test]
fn a_legacy_sse_server_is_reached_through_the_proxy_too() {
    let Some(proxy) = Tinyproxy::start("sse", Some((USER, PASSWORD))) else {
        return;
    };
    let server = TestHttp::start(Behaviour::default());
    let endpoint = Endpoint::Sse(HttpTarget {
        proxy: Some(proxy.url(Some((USER, PASSWORD)))),
        ..HttpTarget::new(server.sse_url())
    });
    let client = Client::connect("legacy", &endpoint, options()).unwrap();
    assert_eq!(client.list_tools().unwrap()[0].name, "echo");
    client.close();
    assert!(
        proxy.forwarded_to(port_of(&server.url())),
        "{}",
        proxy.log()
    );
}

#[test]
fn status_and_info_show_the_proxy_without_its_credentials() {
    let Some(proxy) = Tinyproxy::start("cli", Some((USER, PASSWORD))) else {
        return;
    };
    let server = TestHttp::start(Behaviour::default());
    let dir = common::temp_dir("proxy-cli");
    let config = dir.join(".mcp.json");
    let entry =
        json!({"type": "http", "url": server.url(), "proxy": proxy.url(Some((USER, PASSWORD)))});
    std::fs::write(&config, json!({"mcpServers": {"far": entry}}).to_string()).unwrap();
    let shown = proxy.url(None);
    let run = |args: &[&str]| {
        let out = common::cli(&dir.join("home"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{args:?}: {text}");
        assert!(!text.contains(PASSWORD), "{args:?}: {text}");
        text
    };
    let status = run(&["status"]);
    assert!(
        status.contains(&format!("through the proxy {shown}")),
        "{status}"
    );
    let rows: serde_json::Value = serde_json::from_str(&run(&["--json", "status"])).unwrap();
    assert_eq!(rows[0]["proxy"], json!(shown));
    let info: serde_json::Value = serde_json::from_str(&run(&["--json", "info", "far"])).unwrap();
    assert_eq!(info["proxy"], json!(shown));
}
