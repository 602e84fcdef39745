//! The manager under faults: nothing outlives a disconnect, nothing deadlocks when a server
//! fails halfway, every wait has its bound, and a flood of notifications stays a trickle of
//! work.

mod common;

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{processes_tagged, server_path, Hold};
use mcp_runtime::config::config_hash;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::host::build_tools;
use mcp_runtime::manager::ToolCache;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::protocol::Tool as ToolDef;
use mcp_runtime::{CallOptions, ClientHandler, Error};
use serde_json::{json, Value};

fn server(args: &[&str]) -> ServerConfig {
    common::as_run(ServerConfig::stdio(server_path(), args.iter().copied()))
}

fn one(name: &str, config: ServerConfig) -> BTreeMap<String, ServerConfig> {
    BTreeMap::from([(name.to_owned(), config)])
}

fn options() -> ManagerOptions {
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        ..ManagerOptions::default()
    };
    o.connect.timeout = Duration::from_secs(20);
    o.connect.request_timeout = Duration::from_secs(20);
    o.connect.stdio.close_grace = Duration::from_millis(500);
    o
}

/// Runs `f` on a thread and fails the test if it has not returned within `bound` (a hang).
fn ends_within<T: Send + 'static>(bound: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(bound)
        .unwrap_or_else(|_| panic!("still running after {bound:?}: a hang"))
}

/// A cache entry: the config hash and the tools.
type Entry = (String, Vec<Arc<ToolDef>>);

/// A tool cache in memory that counts its writes.
#[derive(Default)]
struct CountingCache {
    entries: Mutex<BTreeMap<String, Entry>>,
    writes: AtomicUsize,
}

impl ToolCache for CountingCache {
    fn get(&self, server: &str, config_hash: &str) -> Option<Vec<Arc<ToolDef>>> {
        let entries = self.entries.lock().unwrap();
        let (hash, tools) = entries.get(server)?;
        (hash == config_hash).then(|| tools.clone())
    }
    fn set(&self, server: &str, config_hash: &str, tools: &[Arc<ToolDef>]) -> Result<(), Error> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.entries
            .lock()
            .unwrap()
            .insert(server.to_owned(), (config_hash.to_owned(), tools.to_vec()));
        Ok(())
    }
}

// --- An HTTP server whose `initialize` works and whose `tools/list` fails -------------------

#[derive(Clone, Copy, Debug)]
enum ListFailure {
    RpcError,
    Status500,
    NoAnswer,
}

/// Streamable HTTP at `/mcp`, JSON replies: `initialize` succeeds, `tools/list` fails as told.
fn failing_list_server(failure: ListFailure) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream, failure));
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

fn serve(stream: TcpStream, failure: ListFailure) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let Some(request) = common::http_request::read_request(&mut reader) else {
            return;
        };
        let (method, body) = (request.method, request.body);
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let reply = |out: &mut TcpStream, status: &str, body: &str| {
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            out.write_all(head.as_bytes())
                .and_then(|_| out.write_all(body.as_bytes()))
        };
        let sent = match (method.as_str(), message["method"].as_str()) {
            ("POST", Some("initialize")) => {
                let result = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "failing-list", "version": "1"}
                }});
                reply(&mut out, "200 OK", &result.to_string())
            }
            ("POST", Some("tools/list")) => match failure {
                ListFailure::RpcError => {
                    let error = json!({"jsonrpc": "2.0", "id": message["id"],
                        "error": {"code": -32603, "message": "rate limited"}});
                    reply(&mut out, "200 OK", &error.to_string())
                }
                ListFailure::Status500 => reply(&mut out, "500 Internal Server Error", "{}"),
                ListFailure::NoAnswer => {
                    // Keep the connection open without a word until the client gives up.
                    let mut rest = Vec::new();
                    let _ = reader.read_to_end(&mut rest);
                    return;
                }
            },
            ("POST", _) => out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"),
            ("DELETE", _) => out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
            _ => out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"),
        };
        if sent.is_err() {
            return;
        }
    }
}

#[test]
fn a_server_whose_listing_fails_after_initialize_never_hangs_the_host() {
    for failure in [
        ListFailure::RpcError,
        ListFailure::Status500,
        ListFailure::NoAnswer,
    ] {
        let url = failing_list_server(failure);
        let config = ServerConfig {
            transport: Some("http".into()),
            url: Some(url),
            timeout_ms: Some(1000),
            ..ServerConfig::default()
        };
        let manager = McpManager::new(options());
        let m = manager.clone();
        let report = ends_within(Duration::from_secs(30), move || {
            m.connect_servers(&one("flaky", config))
        });
        assert!(
            report.errors.contains_key("flaky"),
            "{failure:?}: {report:?}"
        );
        let status = manager.connection_status("flaky");
        assert_eq!(status.as_str(), "disconnected", "{failure:?}");
        // The manager still answers, and shuts down.
        assert!(mcp_runtime::host::build_tools(&manager).is_empty());
        ends_within(Duration::from_secs(30), move || manager.disconnect_all());
    }
}

// --- Teardown ---------------------------------------------------------------------------------

#[test]
fn disconnect_all_during_a_handshake_returns_with_the_server_gone() {
    let tag = "faults-handshake-teardown";
    let mut o = options();
    o.wait_without_cache = false;
    let manager = McpManager::new(o);
    let stubborn = server(&[
        "--silent-initialize",
        "--ignore-sigterm",
        "--ignore-stdin-eof",
        "--grandchild",
        "--tag",
        tag,
    ]);
    let report = manager.connect_servers(&one("stubborn", stubborn));
    assert_eq!(report.pending, ["stubborn"]);
    common::holds_within(Duration::from_secs(20), || processes_tagged(tag).len() >= 2);
    assert_eq!(
        processes_tagged(tag).len(),
        2,
        "server and grandchild started"
    );
    manager.disconnect_all();
    // No polling: when disconnect_all returns, the process group is gone.
    assert_eq!(processes_tagged(tag), Vec::<u32>::new());
}

#[test]
fn a_failed_handshake_frees_the_gate_before_its_teardown_and_disconnect_waits_for_it() {
    let tag = "faults-failed-handshake";
    // Two long grace periods: the teardown takes seconds, the report must not wait for it.
    let mut o = options();
    o.connect.stdio.close_grace = Duration::from_secs(2);
    o.disconnect_wait = Duration::from_secs(10);
    let manager = McpManager::new(o);
    let mut stubborn = server(&[
        "--silent-initialize",
        "--ignore-sigterm",
        "--ignore-stdin-eof",
        "--tag",
        tag,
    ]);
    stubborn.timeout_ms = Some(300);
    let report = manager.connect_servers(&one("stubborn", stubborn));
    assert!(
        matches!(
            report.errors.get("stubborn"),
            Some(Error::ConnectTimeout { .. })
        ),
        "{report:?}"
    );
    // The gate heard of the failure first: the process (which ignores stdin EOF and SIGTERM,
    // so its teardown takes two grace periods) is still being stopped.
    assert_eq!(
        processes_tagged(tag).len(),
        1,
        "teardown runs after the report"
    );
    manager.disconnect_all();
    assert_eq!(processes_tagged(tag), Vec::<u32>::new());
}

#[test]
fn disconnect_all_releases_a_connect_servers_still_waiting() {
    let hold = Hold::new();
    let manager = McpManager::new(options());
    let m = manager.clone();
    let config = server(&["--hold-port", &hold.port()]);
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(m.connect_servers(&one("held", config)));
    });
    let held = hold.wait();
    // connect_servers waits for the uncached server (a host never starts without a server's tools) until it is dropped.
    manager.disconnect_all();
    let report = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("connect_servers returns once its server is gone");
    assert!(report.connected.is_empty(), "{report:?}");
    drop(held);
}

#[test]
fn a_connect_cancelled_while_resolving_a_command_stops_it_and_starts_nothing() {
    let tag = "faults-cancelled-resolution";
    let command_tag = "faults-cancelled-resolution-command";
    let mut o = options();
    o.wait_without_cache = false;
    let manager = McpManager::new(o);
    let mut config = server(&["--tag", tag]);
    config.env.insert(
        "SECRET".into(),
        format!("!sh -c 'sleep 30; echo late' {command_tag}"),
    );
    let report = manager.connect_servers(&one("slow-secret", config));
    assert_eq!(report.pending, ["slow-secret"]);
    common::holds_within(Duration::from_secs(20), || {
        !processes_tagged(command_tag).is_empty()
    });
    assert!(
        !processes_tagged(command_tag).is_empty(),
        "the command runs"
    );
    manager.disconnect_server("slow-secret");
    assert_eq!(processes_tagged(command_tag), Vec::<u32>::new());
    // The task has ended: had it gone on to spawn, the server would be there now.
    assert_eq!(processes_tagged(tag), Vec::<u32>::new());
}

// --- Timeouts -----------------------------------------------------------------------------------

#[test]
fn a_servers_timeout_bounds_its_tool_calls_and_tool_timeout_overrides_it() {
    let manager = McpManager::new(options());
    let mut bounded = server(&[]);
    bounded.timeout_ms = Some(700);
    let mut tool_bounded = server(&[]);
    tool_bounded.timeout_ms = Some(5000);
    tool_bounded.tool_timeout_ms = Some(300);
    let configs = BTreeMap::from([
        ("bounded".to_owned(), bounded),
        ("tool-bounded".to_owned(), tool_bounded),
    ]);
    let report = manager.connect_servers(&configs);
    assert_eq!(report.connected.len(), 2, "{report:?}");
    let err = common::call_tool(&manager, "bounded", "hang", json!({})).unwrap_err();
    assert_eq!(
        err,
        Error::Timeout {
            method: "tools/call".into(),
            after: Duration::from_millis(700)
        }
    );
    let err = common::call_tool(&manager, "tool-bounded", "hang", json!({})).unwrap_err();
    assert_eq!(err.to_string(), "Request timeout after 300ms");
    // The caller's own bound still wins.
    let err = common::call_tool_with(
        &manager,
        "bounded",
        "hang",
        json!({}),
        CallOptions::timeout(Duration::from_millis(100)),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "Request timeout after 100ms");
    manager.disconnect_all();
}

// --- Deferred tools -------------------------------------------------------------------------

fn cached_echo(cache: &CountingCache, name: &str, config: &ServerConfig) {
    cache
        .set(
            name,
            &config_hash(config),
            &[ToolDef::new("echo", "cached", json!({})).into()],
        )
        .unwrap();
}

#[test]
fn a_deferred_tool_waits_for_the_handshake_not_the_listing() {
    let hold = Hold::new();
    let config = server(&["--hold-port", &hold.port(), "--hold-method", "tools/list"]);
    let cache = Arc::new(CountingCache::default());
    cached_echo(&cache, "listing", &config);
    let manager = McpManager::new(ManagerOptions {
        cache: Some(cache.clone()),
        ..options()
    });
    let report = manager.connect_servers(&one("listing", config));
    assert_eq!(report.deferred, ["listing"]);
    let held = hold.wait();
    let tools = build_tools(&manager);
    let echo = Arc::clone(&tools[0]);
    let out = ends_within(Duration::from_secs(15), move || {
        echo.execute(json!({"message": "early"}), CallOptions::default())
            .unwrap()
    });
    assert!(!out.is_error, "{:?}", out.model_text());
    assert_eq!(out.model_text(), "early");
    held.release();
    manager.disconnect_all();
}

#[test]
fn a_deferred_tool_is_bounded_by_the_callers_timeout() {
    let hold = Hold::new();
    let config = server(&["--hold-port", &hold.port()]);
    let cache = Arc::new(CountingCache::default());
    cached_echo(&cache, "held", &config);
    let manager = McpManager::new(ManagerOptions {
        cache: Some(cache.clone()),
        ..options()
    });
    let report = manager.connect_servers(&one("held", config));
    assert_eq!(report.deferred, ["held"]);
    let held = hold.wait();
    let tools = build_tools(&manager);
    let ctx = CallOptions {
        timeout: Some(Duration::from_millis(200)),
        ..CallOptions::default()
    };
    let out = tools[0].execute(json!({}), ctx).unwrap();
    assert!(out.is_error);
    assert_eq!(
        out.result.content[0].as_text(),
        Some("MCP error: Request timeout after 200ms")
    );
    held.release();
    manager.disconnect_all();
}

// --- Amplification ------------------------------------------------------------------------------

/// Records the cache's write count when the server's marker notification arrives.
struct Marker {
    cache: Arc<CountingCache>,
    seen: crossbeam_channel::Sender<usize>,
}

impl ClientHandler for Marker {
    fn on_notification(&self, _server: &str, method: &str, _: Option<&Value>) {
        if method == "notifications/test/marker" {
            let _ = self.seen.send(self.cache.writes.load(Ordering::SeqCst));
        }
    }
}

#[test]
fn a_flood_of_list_changed_is_coalesced() {
    let cache = Arc::new(CountingCache::default());
    let (seen, marker) = crossbeam_channel::unbounded();
    let mut o = ManagerOptions {
        cache: Some(cache.clone()),
        ..options()
    };
    o.connect.handler = Arc::new(Marker {
        cache: Arc::clone(&cache),
        seen,
    });
    let manager = McpManager::new(o);
    let report = manager.connect_servers(&one("noisy", server(&[])));
    assert_eq!(report.connected, ["noisy"]);
    let before = cache.writes.load(Ordering::SeqCst);
    let out =
        common::call_tool(&manager, "noisy", "list_changed", json!({"count": 10_000})).unwrap();
    assert_eq!(out.text(), "sent");
    // Every notification has been handled once the marker that followed them arrives.
    let writes = marker
        .recv_timeout(Duration::from_secs(60))
        .expect("the marker arrives");
    // Coalesced: far fewer refreshes than notifications. How many exactly depends on how fast a
    // refresh runs against how fast the notifications arrive (a busy machine saw 104), so the
    // bound is an order of magnitude, not a count.
    assert!(
        writes - before < 1_000,
        "{} refreshes for 10,000 notifications",
        writes - before
    );
    // The refresh still happens: the new tool shows up.
    common::eventually("the refreshed tool", Duration::from_secs(20), || {
        manager.has_tool("noisy", "late_tool")
    });
    manager.disconnect_all();
}
