//! The era of a Streamable HTTP server, found by a stateless `server/discover` first, and the
//! 2026-07-28 wire rules: headers mirroring the body, no session, no GET, no DELETE. Connections
//! to one server config share its era: started together, one probes and the others wait for its
//! verdict, which the client tells as soon as the probe finds it (`on_era_found`).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::modern_http::{Mode, ModernHttp};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::protocol::ProtocolVersion;
use mcp_runtime::{Client, ConnectOptions, Endpoint, EraChoice, Error};
use serde_json::json;

fn connect(server: &ModernHttp) -> Result<Client, Error> {
    Client::connect("era-http", &Endpoint::url(server.url()), common::options())
}

#[test]
fn a_stateless_server_gets_every_header_rule_and_no_session() {
    let server = ModernHttp::start(Mode::Modern);
    let client = connect(&server).unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().name, "modern-http");
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["echo", "regional"],
        "the invalid annotation is left out"
    );
    let regional = &tools[1];
    assert_eq!(
        regional.input_schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        regional.input_schema["$defs"],
        json!({"r": {"type": "string"}})
    );
    assert_eq!(regional.input_schema["additionalProperties"], false);

    let out = client
        .call_tool(
            "regional",
            json!({"region": "eu-west", "count": 3, "note": "n"}),
        )
        .unwrap();
    assert_eq!(out.text(), "eu-west");
    let out = client
        .call_tool("regional", json!({"region": "Zürich ", "count": null}))
        .unwrap();
    assert_eq!(out.text(), "Zürich ");
    let out = client
        .call_tool("echo", json!({"message": "plain"}))
        .unwrap();
    assert_eq!(out.text(), "plain");
    client.close();

    let seen = server.seen();
    assert!(seen.iter().all(|r| r.method == "POST"), "no GET, no DELETE");
    for r in &seen {
        assert_eq!(r.header("mcp-session-id"), None);
        assert_eq!(r.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(r.header("mcp-method"), r.rpc_method());
    }
    let calls: Vec<_> = seen
        .iter()
        .filter(|r| r.rpc_method() == Some("tools/call"))
        .collect();
    assert_eq!(calls[0].header("mcp-name"), Some("regional"));
    assert_eq!(calls[0].header("mcp-param-region"), Some("eu-west"));
    assert_eq!(calls[0].header("mcp-param-count"), Some("3"));
    assert_eq!(calls[0].header("mcp-param-note"), None);
    assert_eq!(
        calls[1].header("mcp-param-region"),
        Some("=?base64?WsO8cmljaCA=?=")
    );
    assert_eq!(
        calls[1].header("mcp-param-count"),
        None,
        "null sends nothing"
    );
    assert_eq!(calls[2].header("mcp-param-region"), None);
    assert_eq!(
        server.methods(),
        [
            "server/discover",
            "tools/list",
            "tools/call",
            "tools/call",
            "tools/call"
        ]
    );
}

#[test]
fn a_dual_server_is_spoken_to_statelessly() {
    let server = ModernHttp::start(Mode::Dual);
    let client = connect(&server).unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    client.close();
    assert!(!server.methods().contains(&"initialize".to_owned()));
}

#[test]
fn an_empty_400_or_a_404_to_the_probe_means_the_handshake_without_stateless_headers() {
    for mode in [Mode::Legacy, Mode::Legacy404] {
        let server = ModernHttp::start(mode);
        let client = connect(&server).unwrap();
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
        let out = client.call_tool("echo", json!({"message": "old"})).unwrap();
        assert_eq!(out.text(), "old");
        client.close();
        let seen = server.seen();
        let init = seen
            .iter()
            .find(|r| r.rpc_method() == Some("initialize"))
            .unwrap();
        assert_eq!(init.header("mcp-method"), None, "{mode:?}");
        assert_eq!(init.header("mcp-protocol-version"), None, "{mode:?}");
        let call = seen
            .iter()
            .find(|r| r.rpc_method() == Some("tools/call"))
            .unwrap();
        assert_eq!(call.header("mcp-session-id"), Some("legacy-1"));
        assert_eq!(call.header("mcp-protocol-version"), Some("2025-11-25"));
        assert_eq!(call.header("mcp-method"), None);
    }
}

#[test]
fn the_closing_delete_goes_under_the_version_the_handshake_settled_and_no_other() {
    let server = ModernHttp::start(Mode::Legacy);
    connect(&server).unwrap().close();
    let delete = server.wait_for_method("DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("legacy-1"));
    assert_eq!(delete.header("mcp-protocol-version"), Some("2025-11-25"));

    // A handshake that fails after the server assigned a session, following a stateless
    // probe it refused: the DELETE claims no version (not the probe's, which it refused).
    let server = ModernHttp::start(Mode::LegacyUnknownVersion);
    assert!(matches!(
        connect(&server),
        Err(Error::UnsupportedProtocolVersion { .. })
    ));
    let delete = server.wait_for_method("DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("legacy-1"));
    assert_eq!(delete.header("mcp-protocol-version"), None);
}

#[test]
fn unauthorized_and_server_errors_are_errors_not_verdicts() {
    for status in [401, 403, 500, 503] {
        let server = ModernHttp::start(Mode::Status(status));
        let err = connect(&server).unwrap_err();
        assert!(
            matches!(err, Error::Http { status: s, .. } if s == status),
            "{status}: {err:?}"
        );
        assert_eq!(
            server.methods(),
            ["server/discover"],
            "{status}: no initialize, no legacy SSE"
        );
    }
}

#[test]
fn a_refused_handshake_names_the_versions_and_never_tries_legacy_sse() {
    let server = ModernHttp::start(Mode::Modern);
    let options = ConnectOptions {
        era: EraChoice::Handshake,
        ..common::options()
    };
    let err = Client::connect("reject", &Endpoint::url(server.url()), options).unwrap_err();
    match &err {
        Error::UnsupportedProtocolVersion { received, .. } => assert_eq!(received, "2026-07-28"),
        other => panic!("{other:?}"),
    }
    assert!(
        server.seen().iter().all(|r| r.method == "POST"),
        "no SSE GET"
    );
}

#[test]
fn a_header_mismatch_re_lists_the_tools_and_retries_once() {
    let server = ModernHttp::start_with(Mode::Modern, 1);
    let client = connect(&server).unwrap();
    let out = client
        .call_tool("echo", json!({"message": "again"}))
        .unwrap();
    assert_eq!(out.text(), "again");
    assert_eq!(
        server.methods(),
        ["server/discover", "tools/call", "tools/list", "tools/call"]
    );

    let server = ModernHttp::start_with(Mode::Modern, 2);
    let client = connect(&server).unwrap();
    let err = client
        .call_tool("echo", json!({"message": "again"}))
        .unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32020), "{err:?}");
}

#[test]
fn a_listen_stream_that_drops_is_issued_again_under_a_new_id() {
    let server = ModernHttp::start_listening();
    let client = connect(&server).unwrap();
    let listens = || {
        server
            .seen()
            .into_iter()
            .filter(|r| r.rpc_method() == Some("subscriptions/listen"))
            .collect::<Vec<_>>()
    };
    common::eventually("listened again", Duration::from_secs(20), || {
        listens().len() >= 2
    });
    let seen = listens();
    assert_ne!(seen[0].body["id"], seen[1].body["id"]);
    for r in &seen {
        assert_eq!(r.header("mcp-method"), Some("subscriptions/listen"));
        assert_eq!(r.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(
            r.body["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
    }
    // The connection itself carried on.
    let out = client
        .call_tool("echo", json!({"message": "still"}))
        .unwrap();
    assert_eq!(out.text(), "still");
    client.close();
}

fn manager() -> McpManager {
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        ..ManagerOptions::default()
    };
    o.connect.timeout = Duration::from_secs(20);
    o.connect.request_timeout = Duration::from_secs(20);
    McpManager::new(o)
}

fn configs(server: &ModernHttp, n: usize) -> BTreeMap<String, ServerConfig> {
    let config = ServerConfig {
        transport: Some("http".into()),
        url: Some(server.url()),
        ..ServerConfig::default()
    };
    (0..n).map(|i| (format!("s{i}"), config.clone())).collect()
}

fn count(server: &ModernHttp, method: &str) -> usize {
    server.methods().iter().filter(|m| *m == method).count()
}

#[test]
fn servers_of_one_http_config_started_together_probe_once() {
    let server = ModernHttp::start(Mode::Legacy);
    let manager = manager();
    let report = manager.connect_servers(&configs(&server, 6));
    assert_eq!(report.connected.len(), 6, "{:?}", report.errors);
    for name in &report.connected {
        let client = manager.client(name).unwrap();
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    }
    assert_eq!(
        count(&server, "server/discover"),
        1,
        "{:?}",
        server.methods()
    );
    // Each connection still opens its own session.
    assert_eq!(count(&server, "initialize"), 6);
    manager.disconnect_all();
}

#[test]
fn a_stateless_era_shared_still_opens_each_connection_with_its_discovery() {
    let server = ModernHttp::start(Mode::Modern);
    let manager = manager();
    let report = manager.connect_servers(&configs(&server, 3));
    assert_eq!(report.connected.len(), 3, "{:?}", report.errors);
    for name in &report.connected {
        let client = manager.client(name).unwrap();
        assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    }
    // Discovery is the stateless opening: each connection has its own, and none initializes.
    assert_eq!(count(&server, "server/discover"), 3);
    assert_eq!(count(&server, "initialize"), 0);
    manager.disconnect_all();
}

#[test]
fn the_client_tells_the_era_as_soon_as_the_probe_finds_it() {
    for (mode, found) in [
        (Mode::Legacy, ProtocolVersion::latest()),
        (Mode::Legacy404, ProtocolVersion::latest()),
        (Mode::Modern, ProtocolVersion::V2026_07_28),
    ] {
        let server = Arc::new(ModernHttp::start(mode));
        let told = Arc::new(Mutex::new(Vec::new()));
        let (seen, at_probe) = (Arc::clone(&told), Arc::clone(&server));
        let options = ConnectOptions {
            timeout: Duration::from_secs(20),
            on_era_found: Some(Arc::new(move |v| {
                // Before the opening that follows: the server has seen the probe only.
                seen.lock().unwrap().push((v, at_probe.methods()));
            })),
            ..ConnectOptions::default()
        };
        let client = Client::connect("era-told", &Endpoint::url(server.url()), options).unwrap();
        let probe = vec!["server/discover".to_owned()];
        assert_eq!(*told.lock().unwrap(), [(found, probe)], "{mode:?}");
        client.close();
    }
}

#[test]
fn connects_that_waited_for_a_probe_that_never_ended_time_out_naming_their_own_bound() {
    // A server that accepts and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < until && conns.len() < 8 {
            match listener.accept() {
                Ok((c, _)) => conns.push(c),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        conns
    });
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        ..ManagerOptions::default()
    };
    o.connect.timeout = Duration::from_millis(800);
    let manager = McpManager::new(o);
    let config = ServerConfig {
        transport: Some("http".into()),
        url: Some(url),
        ..ServerConfig::default()
    };
    let configs: BTreeMap<String, ServerConfig> =
        (0..3).map(|i| (format!("s{i}"), config.clone())).collect();
    let report = manager.connect_servers(&configs);
    assert!(report.connected.is_empty(), "{:?}", report.connected);
    assert_eq!(report.errors.len(), 3, "{:?}", report.errors);
    // Each names its configured bound, never what was left after waiting (a few
    // milliseconds): a waiter's error says 800 ms exactly, the prober's 800 ms less the time
    // it took to open its connection.
    for (name, error) in &report.errors {
        match error {
            Error::ConnectTimeout { after, .. } => {
                assert_eq!(*after, Duration::from_millis(800), "{name}")
            }
            Error::Timeout { method, after } => {
                assert_eq!(method, "server/discover", "{name}");
                assert!(*after > Duration::from_millis(100), "{name}: {error}");
                assert!(*after <= Duration::from_millis(800), "{name}: {error}");
            }
            other => panic!("{name}: {other}"),
        }
    }
    manager.disconnect_all();
    drop(held);
}
