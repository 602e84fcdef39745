//! A panic in a manager's threads, or in a host callback it runs, never ends in silence: the
//! server it served fails with `Error::Internal` naming the place (never stuck "connecting"),
//! other servers go on, nothing it started is left running, and a listener or cache that
//! panics is logged while the others still hear. Faults are put there by the test's own hook
//! (`faults::inject`), which a manager made on the test's thread carries to its threads. The
//! `mcp` command turns its own panic into one line and status 70.
#![cfg(feature = "fault-injection")]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{capture_logs, eventually, logs, processes_tagged, server_path};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::faults::{self, inject};
use mcp_runtime::manager::{ManagerOptions, McpManager, ReconnectPolicy, ToolCache};
use mcp_runtime::protocol::Tool;
use mcp_runtime::Error;
use serde_json::json;

const BOUND: Duration = Duration::from_secs(20);

fn at(at: &'static str) -> impl Fn(&str) + Send + Sync + 'static {
    move |here| {
        if here == at {
            panic!("injected at {here}");
        }
    }
}

fn server(tag: &str) -> BTreeMap<String, ServerConfig> {
    BTreeMap::from([(
        "s".to_owned(),
        ServerConfig::stdio(server_path(), ["--tag", tag]),
    )])
}

fn manager() -> McpManager {
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        ..ManagerOptions::default()
    };
    o.connect.timeout = BOUND;
    o.connect.request_timeout = BOUND;
    o.connect.stdio.close_grace = Duration::from_millis(500);
    McpManager::new(o)
}

fn assert_internal(e: &Error, place: &str) {
    match e {
        Error::Internal { place: p, .. } => assert_eq!(p, place, "{e}"),
        Error::NotConnected {
            reason: Some(reason),
            ..
        } => assert!(reason.contains(place), "{e}"),
        other => panic!("not an internal error at {place}: {other:?}"),
    }
}

#[test]
fn a_panic_in_the_connect_thread_fails_the_server_at_once() {
    let _faults = inject(at(faults::CONNECT));
    let manager = manager();
    let report = manager.connect_servers(&server("fault-connect"));
    // The startup gate heard the failure: the server is not left "connecting".
    let status = manager.connection_status("s");
    assert_eq!(status.as_str(), "disconnected", "{report:?}");
    assert_internal(status.error().unwrap(), "the connect thread");
    assert_internal(&report.errors["s"], "the connect thread");
    assert_internal(
        &manager.wait_for_connection("s", BOUND, None).unwrap_err(),
        "the connect thread",
    );
    manager.disconnect_all();
}

#[test]
fn a_panic_in_a_refresh_ends_that_server_with_it_and_stops_its_process() {
    let tag = "fault-refresh";
    let _faults = inject(at(faults::REFRESH));
    let manager = manager();
    manager.connect_servers(&server(tag));
    manager.wait_for_connection("s", BOUND, None).unwrap();
    // The server says its tools changed: the refresh thread panics.
    let _ = common::call_tool(&manager, "s", "list_changed", json!({}));
    eventually("the server failed", BOUND, || {
        manager.connection_status("s").as_str() == "disconnected"
    });
    assert_internal(
        manager.connection_status("s").error().unwrap(),
        "the refresh thread",
    );
    assert!(mcp_runtime::host::build_tools(&manager).is_empty());
    eventually("the server is gone", BOUND, || {
        processes_tagged(tag).is_empty()
    });
    manager.disconnect_all();
}

#[test]
fn a_panic_tearing_down_a_dead_server_is_logged_and_the_next_attempt_still_starts() {
    capture_logs();
    let tag = "fault-teardown";
    let _faults = inject(at(faults::TEARDOWN));
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        reconnect: Some(ReconnectPolicy {
            backoff: vec![Duration::from_millis(50)],
            ..ReconnectPolicy::default()
        }),
        ..ManagerOptions::default()
    };
    o.connect.timeout = BOUND;
    let manager = McpManager::new(o);
    manager.connect_servers(&server(tag));
    let first = manager.wait_for_connection("s", BOUND, None).unwrap();
    let _ = common::call_tool(&manager, "s", "crash", json!({}));
    eventually("the panic is logged", BOUND, || {
        !logs("Internal error in the teardown thread").is_empty()
    });
    // The reconnect the teardown would have started is started all the same: never left
    // "connecting" for good.
    eventually("the server is back", BOUND, || {
        manager
            .client("s")
            .is_some_and(|c| c.pid() != first.pid() && c.closed_reason().is_none())
            && manager.connection_status("s").is_connected()
    });
    manager.disconnect_all();
    assert!(processes_tagged(tag).is_empty());
}

#[test]
fn a_panic_while_closing_still_stops_the_server() {
    capture_logs();
    let tag = "fault-close";
    let _faults = inject(at(faults::CLOSE));
    let manager = manager();
    manager.connect_servers(&server(tag));
    manager.wait_for_connection("s", BOUND, None).unwrap();
    manager.disconnect_server("s");
    // The client, dropped as the close thread unwound, closed the connection.
    eventually("the server is gone", BOUND, || {
        processes_tagged(tag).is_empty()
    });
    assert!(!logs("Internal error in the close thread").is_empty());
}

#[test]
fn a_panic_reading_a_command_value_leaves_it_out_and_stops_the_command() {
    capture_logs();
    let tag = "fault-command";
    let _faults = inject(at(faults::COMMAND));
    let mut config = ServerConfig::stdio(server_path(), ["--tag", "fault-command-server"]);
    config.env = BTreeMap::from([(
        "FROM_COMMAND".to_owned(),
        format!("!{} --sleep --tag {tag}", server_path()),
    )]);
    let manager = manager();
    manager.connect_servers(&BTreeMap::from([("s".to_owned(), config)]));
    // The value is left out (as a command that failed); the server still connects.
    manager.wait_for_connection("s", BOUND, None).unwrap();
    assert!(!logs("Internal error in a !command's reader").is_empty());
    eventually("the command is gone", BOUND, || {
        processes_tagged(tag).is_empty()
    });
    manager.disconnect_all();
}

#[test]
fn a_listener_that_panics_is_logged_and_the_others_still_hear() {
    capture_logs();
    let manager = manager();
    let heard = Arc::new(AtomicUsize::new(0));
    manager.on_tools_changed(|_| panic!("the host's listener broke"));
    let counter = Arc::clone(&heard);
    manager.on_tools_changed(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    manager.connect_servers(&server("fault-listener"));
    manager.wait_for_connection("s", BOUND, None).unwrap();
    let before = heard.load(Ordering::SeqCst);
    let _ = common::call_tool(&manager, "s", "list_changed", json!({}));
    eventually("the second listener heard the change", BOUND, || {
        heard.load(Ordering::SeqCst) > before
    });
    assert!(!logs("the host's listener broke").is_empty());
    assert_eq!(manager.connection_status("s").as_str(), "connected");
    manager.disconnect_all();
}

/// A cache whose every call panics.
struct PanickingCache;

impl ToolCache for PanickingCache {
    fn get(&self, _: &str, _: &str) -> Option<Vec<Arc<Tool>>> {
        panic!("the host's cache broke on a read")
    }
    fn set(&self, _: &str, _: &str, _: &[Arc<Tool>]) -> Result<(), Error> {
        panic!("the host's cache broke on a write")
    }
}

#[test]
fn a_tool_cache_that_panics_is_a_miss_and_a_failed_write() {
    capture_logs();
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        cache: Some(Arc::new(PanickingCache)),
        ..ManagerOptions::default()
    };
    o.connect.timeout = BOUND;
    let manager = McpManager::new(o);
    manager.connect_servers(&server("fault-cache"));
    manager.wait_for_connection("s", BOUND, None).unwrap();
    assert!(!mcp_runtime::host::build_tools(&manager).is_empty());
    eventually("the write's panic is logged", BOUND, || {
        !logs("the host's cache broke on a write").is_empty()
    });
    manager.disconnect_all();
}

#[test]
fn the_commands_own_panic_is_one_line_and_status_70() {
    let home = common::temp_dir("faults-cli");
    let config = home.join("mcp.json");
    let servers =
        json!({"mcpServers": {"s": {"command": server_path(), "args": ["--tag", "fault-cli"]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    for (fault, said) in [
        ("main", "mcp: internal error: injected in main"),
        ("connect", "Internal error in the connect thread: injected"),
    ] {
        let out = common::cli(&home)
            .env("MCP_FAULT", fault)
            .args(["--no-cache", "--config"])
            .arg(&config)
            .arg("tools")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(70), "{fault}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{fault}: {stderr}");
        assert!(stderr.contains(said), "{fault}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&home);
}
