//! The manager: its lifecycle and its failure table, with real server processes.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{server_path, wait_gone, Hold};
use crossbeam_channel::Receiver;
use mcp_runtime::config::config_hash;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::host::{build_tools, AgentTool};
use mcp_runtime::manager::{FileToolCache, ToolCache};
use mcp_runtime::manager::{ManagerOptions, McpManager, ReconnectPolicy};
use mcp_runtime::protocol::Tool as ToolDef;
use mcp_runtime::CallOptions;
use mcp_runtime::{CancelToken, Error};
use serde_json::json;

fn server(args: &[&str]) -> ServerConfig {
    common::as_run(ServerConfig::stdio(server_path(), args.iter().copied()))
}

fn configs(entries: &[(&str, ServerConfig)]) -> BTreeMap<String, ServerConfig> {
    entries
        .iter()
        .map(|(n, c)| (n.to_string(), c.clone()))
        .collect()
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

fn with_cache(dir: &str) -> (ManagerOptions, Arc<FileToolCache>) {
    let cache = Arc::new(FileToolCache::new(common::temp_dir(dir)));
    let o = ManagerOptions {
        cache: Some(cache.clone()),
        ..options()
    };
    (o, cache)
}

fn changes(manager: &McpManager) -> Receiver<Vec<String>> {
    let (tx, rx) = crossbeam_channel::unbounded();
    manager.on_tools_changed(move |c| {
        let _ = tx.send(c.to_vec());
    });
    rx
}

fn tool_named<'a>(tools: &'a [Arc<dyn AgentTool>], name: &str) -> &'a Arc<dyn AgentTool> {
    tools.iter().find(|t| t.name() == name).unwrap_or_else(|| {
        panic!(
            "no {name} in {:?}",
            tools.iter().map(|t| t.name()).collect::<Vec<_>>()
        )
    })
}

#[test]
fn parallel_connect_returns_live_tools_and_calls_route_by_map() {
    let manager = McpManager::new(options());
    let report = manager.connect_servers(&configs(&[
        ("alpha", server(&[])),
        ("beta-2", server(&["--tools", "2"])),
    ]));
    assert_eq!(report.connected, ["alpha", "beta-2"]);
    assert!(report.errors.is_empty() && report.deferred.is_empty());
    let tools = build_tools(&manager);
    assert_eq!(tools.len(), 17 + 19);
    let echo = tool_named(&tools, "mcp_beta_2_echo");
    assert_eq!(echo.label(), "beta-2/echo");
    assert_eq!(echo.description(), "Echoes the message");
    assert_eq!(echo.parameters()["properties"]["message"]["type"], "string");
    let out = echo
        .execute(json!({"message": "routed"}), CallOptions::default())
        .unwrap();
    assert_eq!(out.model_text(), "routed");
    assert_eq!(out.server, "beta-2");
    assert_eq!(manager.connection_status("alpha").as_str(), "connected");
    // A second connect_servers leaves connected servers alone.
    let again = manager.connect_servers(&configs(&[("alpha", server(&[]))]));
    assert_eq!(again.skipped, ["alpha"]);
    manager.disconnect_all();
    assert!(mcp_runtime::host::build_tools(&manager).is_empty());
    assert_eq!(manager.connection_status("alpha").as_str(), "disconnected");
}

#[test]
fn failure_table_invalid_config_and_init_errors_are_per_server() {
    let manager = McpManager::new(options());
    let invalid = ServerConfig {
        url: Some("http://127.0.0.1:1/mcp".into()),
        ..server(&[])
    };
    let report = manager.connect_servers(&configs(&[
        ("good", server(&[])),
        ("invalid", invalid),
        ("broken", server(&["--exit-on-initialize", "2"])),
        (
            "missing",
            ServerConfig::stdio("/nonexistent/server", Vec::<String>::new()),
        ),
    ]));
    assert_eq!(report.connected, ["good"]);
    assert!(
        report.errors["invalid"]
            .to_string()
            .contains("both \"command\" and \"url\" are set"),
        "{}",
        report.errors["invalid"]
    );
    assert!(matches!(
        report.errors["broken"],
        Error::TransportClosed { .. }
    ));
    assert!(matches!(report.errors["missing"], Error::Spawn { .. }));
    let status = manager.connection_status("broken");
    assert_eq!(status.as_str(), "disconnected");
    assert!(status
        .error()
        .unwrap()
        .to_string()
        .contains("cannot initialize"));
    assert_eq!(
        build_tools(&manager).len(),
        17,
        "only the good server's tools"
    );
}

#[test]
fn failure_table_connect_timeout_is_per_server() {
    let mut o = options();
    o.connect.timeout = Duration::from_millis(300);
    let manager = McpManager::new(o);
    let report = manager.connect_servers(&configs(&[
        ("silent", server(&["--silent-initialize"])),
        ("fine", server(&[])),
    ]));
    assert_eq!(report.connected, ["fine"]);
    assert!(report.errors["silent"]
        .to_string()
        .starts_with("Connection to MCP server \"silent\" timed out after 300ms"));
}

/// The gate, without timing: the held server is still connecting when `connect_servers`
/// returns, and its tools come from the cache as deferred tools.
#[test]
fn failure_table_pending_with_cache_gives_deferred_tools_then_live_ones() {
    let (o, cache) = with_cache("deferred");
    let hold = Hold::new();
    let slow = server(&["--hold-port", &hold.port()]);
    cache
        .set(
            "slow",
            &config_hash(&slow),
            &[ToolDef::new("echo", "Echoes (cached)", json!({"type": "object"})).into()],
        )
        .unwrap();
    let manager = McpManager::new(o);
    let changed = changes(&manager);
    let report = manager.connect_servers(&configs(&[("slow", slow), ("fast", server(&[]))]));
    let held = hold.wait();
    assert_eq!(report.connected, ["fast"]);
    assert_eq!(report.deferred, ["slow"]);
    assert_eq!(manager.connection_status("slow").as_str(), "connecting");
    let tools = build_tools(&manager);
    let deferred = Arc::clone(tool_named(&tools, "mcp_slow_echo"));
    assert_eq!(deferred.description(), "Echoes (cached)");

    // Eight threads call the deferred tool while the server is held; then it is released.
    let results = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for i in 0..8 {
            let (deferred, results) = (Arc::clone(&deferred), Arc::clone(&results));
            s.spawn(move || {
                let out = deferred
                    .execute(json!({"message": format!("m{i}")}), CallOptions::default())
                    .unwrap();
                results
                    .lock()
                    .unwrap()
                    .push((i, out.model_text(), out.is_error));
            });
        }
        held.release();
    });
    let mut results = results.lock().unwrap().clone();
    results.sort();
    let expected: Vec<(i32, String, bool)> = (0..8).map(|i| (i, format!("m{i}"), false)).collect();
    assert_eq!(results, expected);

    // The live tools replaced the cached ones, and the host was told.
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(10)).unwrap(),
        ["slow"]
    );
    let tools = build_tools(&manager);
    assert_eq!(
        tool_named(&tools, "mcp_slow_echo").description(),
        "Echoes the message"
    );
    assert_eq!(tools.len(), 34);
    // And the cache now holds the full list.
    assert_eq!(
        cache
            .get(
                "slow",
                &config_hash(&server(&["--hold-port", &hold.port()]))
            )
            .unwrap()
            .len(),
        17
    );
}

#[test]
fn failure_table_pending_without_cache_is_waited_for() {
    let hold = Hold::new();
    let o = ManagerOptions {
        startup_timeout: Duration::ZERO,
        ..options()
    };
    let manager = McpManager::new(o);
    let cfg = configs(&[("slow", server(&["--hold-port", &hold.port()]))]);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let m2 = manager.clone();
    std::thread::spawn(move || tx.send(m2.connect_servers(&cfg)).unwrap());
    let held = hold.wait();
    assert!(
        rx.try_recv().is_err(),
        "connect_servers returned while the server was held"
    );
    held.release();
    let report = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(report.connected, ["slow"]);
    assert_eq!(build_tools(&manager).len(), 17);
}

#[test]
fn without_waiting_late_tools_arrive_through_on_tools_changed() {
    let hold = Hold::new();
    let o = ManagerOptions {
        wait_without_cache: false,
        ..options()
    };
    let manager = McpManager::new(o);
    let changed = changes(&manager);
    let report = manager.connect_servers(&configs(&[(
        "late",
        server(&["--hold-port", &hold.port()]),
    )]));
    assert_eq!(report.pending, ["late"]);
    assert!(build_tools(&manager).is_empty());
    hold.wait().release();
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(20)).unwrap(),
        ["late"]
    );
    assert_eq!(build_tools(&manager).len(), 17);
}

#[test]
fn failure_table_late_background_error_is_logged_and_the_deferred_tools_go() {
    common::capture_logs();
    let (o, cache) = with_cache("late-error");
    let hold = Hold::new();
    let doomed = server(&["--hold-port", &hold.port(), "--exit-on-initialize", "9"]);
    cache
        .set(
            "doomed",
            &config_hash(&doomed),
            &[ToolDef::new("echo", "cached", json!({})).into()],
        )
        .unwrap();
    let manager = McpManager::new(o);
    let changed = changes(&manager);
    let report = manager.connect_servers(&configs(&[("doomed", doomed)]));
    assert_eq!(report.deferred, ["doomed"]);
    let tools = build_tools(&manager);
    let deferred = Arc::clone(tool_named(&tools, "mcp_doomed_echo"));
    let caller =
        std::thread::spawn(move || deferred.execute(json!({}), CallOptions::default()).unwrap());
    hold.wait().release();
    // The waiting call ends with the error as content, not a hang.
    let out = caller.join().unwrap();
    assert!(out.is_error);
    let text = out.result.content[0].as_text().unwrap();
    assert!(
        text.starts_with("MCP error: MCP server not connected: doomed (Transport closed"),
        "{text}"
    );
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(10)).unwrap(),
        ["doomed"]
    );
    assert!(build_tools(&manager).is_empty());
    let status = manager.connection_status("doomed");
    assert_eq!(status.as_str(), "disconnected");
    assert!(status.error().is_some());
    let logged = common::logs("[doomed]");
    assert!(
        logged
            .iter()
            .any(|r| r.level == log::Level::Warn && r.message.contains("cannot initialize")),
        "{logged:?}"
    );
}

#[test]
fn failure_table_a_transport_that_dies_at_runtime() {
    let manager = McpManager::new(options());
    manager.connect_servers(&configs(&[("dies", server(&[])), ("lives", server(&[]))]));
    // The host holds tool objects built before the death.
    let tools = build_tools(&manager);
    let changed = changes(&manager);
    let err = common::call_tool(&manager, "dies", "crash", json!({})).unwrap_err();
    assert!(matches!(err, Error::TransportClosed { .. }));
    // Noticed at once: the status says why, without any call having to time out.
    let status = manager.connection_status("dies");
    assert_eq!(status.as_str(), "disconnected");
    let reason = status.error().unwrap().to_string();
    assert!(reason.contains("exited"), "{reason}");
    // A tool object the host still holds fails with the reason, as the call's failure.
    let again = tool_named(&tools, "mcp_dies_echo")
        .execute(json!({}), CallOptions::default())
        .unwrap()
        .failure
        .unwrap();
    assert_eq!(
        again,
        Error::NotConnected {
            server: "dies".into(),
            reason: Some(reason.clone()),
        }
    );
    assert_eq!(
        again.to_string(),
        format!("MCP server not connected: dies ({reason})")
    );
    // Its tools are withdrawn and the host is told.
    let change = changed
        .recv_timeout(Duration::from_secs(10))
        .expect("the death is announced");
    assert_eq!(change, ["dies"]);
    assert!(build_tools(&manager)
        .iter()
        .all(|t| t.mcp_identity().is_some_and(|(server, _)| server != "dies")));
    let out = tool_named(&tools, "mcp_dies_echo")
        .execute(json!({}), CallOptions::default())
        .unwrap();
    assert!(out.is_error);
    assert_eq!(
        out.result.content[0].as_text().map(str::to_owned),
        Some(format!(
            "MCP error: MCP server not connected: dies ({reason})"
        ))
    );
    // The other server is untouched.
    let out = common::call_tool(&manager, "lives", "echo", json!({"message": "ok"})).unwrap();
    assert_eq!(out.text(), "ok");
}

#[test]
fn a_reconnect_policy_brings_a_dead_server_back() {
    let o = ManagerOptions {
        reconnect: Some(ReconnectPolicy {
            backoff: vec![Duration::from_millis(10)],
            ..ReconnectPolicy::default()
        }),
        ..options()
    };
    let manager = McpManager::new(o);
    manager.connect_servers(&configs(&[("phoenix", server(&[]))]));
    let first = manager.client("phoenix").unwrap().pid().unwrap();
    let _ = common::call_tool(&manager, "phoenix", "crash", json!({}));
    let client = manager
        .wait_for_connection("phoenix", Duration::from_secs(20), None)
        .unwrap();
    assert_ne!(client.pid().unwrap(), first);
    let out = common::call_tool(&manager, "phoenix", "echo", json!({"message": "back"})).unwrap();
    assert_eq!(out.text(), "back");
    manager.disconnect_all();
}

#[test]
fn list_changed_refreshes_the_tools_and_tells_the_host() {
    let manager = McpManager::new(options());
    let changed = changes(&manager);
    manager.connect_servers(&configs(&[("grows", server(&[]))]));
    assert_eq!(build_tools(&manager).len(), 17);
    common::call_tool(&manager, "grows", "list_changed", json!({})).unwrap();
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(10)).unwrap(),
        ["grows"]
    );
    let tools = build_tools(&manager);
    assert_eq!(tools.len(), 18);
    tool_named(&tools, "mcp_grows_late_tool");
}

#[test]
fn a_tool_the_config_turns_off_is_not_offered() {
    let manager = McpManager::new(options());
    let only = ServerConfig {
        enabled_tools: Some(vec!["echo".into(), "add".into()]),
        disabled_tools: Some(vec!["add".into()]),
        ..server(&[])
    };
    manager.connect_servers(&configs(&[("filtered", only)]));
    let names: Vec<String> = build_tools(&manager)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, ["mcp_filtered_echo"]);
    // A tool the config turns off is not offered, so the host has no way to call it.
    assert!(common::tool_of(&manager, "filtered", "crash").is_none());
    assert!(
        manager.connection_status("filtered").is_connected(),
        "crash was never called"
    );
}

#[test]
fn names_are_deterministic_across_colliding_servers() {
    let manager = McpManager::new(options());
    manager.connect_servers(&configs(&[("a-b", server(&[])), ("a_b", server(&[]))]));
    let names: Vec<String> = build_tools(&manager)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names.len(), 34, "no tool dropped");
    let unique: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), 34);
    // "a-b" sorts before "a_b": it keeps the plain names.
    let tools = build_tools(&manager);
    assert_eq!(tool_named(&tools, "mcp_a_b_echo").label(), "a-b/echo");
    let again: Vec<String> = build_tools(&manager)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, again);
}

#[test]
fn disconnect_server_removes_tools_by_identity_not_by_prefix() {
    let manager = McpManager::new(options());
    let changed = changes(&manager);
    manager.connect_servers(&configs(&[("git", server(&[])), ("git_hub", server(&[]))]));
    let pid = manager.client("git").unwrap().pid().unwrap();
    manager.disconnect_server("git");
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(10)).unwrap(),
        ["git"]
    );
    let tools = build_tools(&manager);
    assert_eq!(tools.len(), 17);
    assert!(tools.iter().all(|t| t.label().starts_with("git_hub/")));
    assert!(wait_gone(pid, Duration::from_secs(5)));
    assert_eq!(manager.server_names(), ["git_hub"]);
}

#[test]
fn disconnect_during_connect_leaves_no_process() {
    let hold = Hold::new();
    let tag = format!("mgr-disconnect-{}", std::process::id());
    let o = ManagerOptions {
        wait_without_cache: false,
        ..options()
    };
    let manager = McpManager::new(o);
    let cfg = configs(&[(
        "held",
        server(&["--tag", &tag, "--grandchild", "--hold-port", &hold.port()]),
    )]);
    let report = manager.connect_servers(&cfg);
    assert_eq!(report.pending, ["held"]);
    let _held = hold.wait();
    assert_eq!(
        common::processes_tagged(&tag).len(),
        2,
        "the server and its grandchild are running"
    );
    manager.disconnect_all();
    assert_eq!(manager.connection_status("held").as_str(), "disconnected");
    let procs = common::processes_tagged(&tag);
    for pid in procs {
        assert!(
            wait_gone(pid, Duration::from_secs(10)),
            "process {pid} outlived disconnect_all"
        );
    }
    // A task that finishes after the disconnect finds nothing to update.
    assert!(mcp_runtime::host::build_tools(&manager).is_empty());
    assert!(manager.server_names().is_empty());
}

#[test]
fn wait_for_connection_honours_cancel_and_timeout() {
    let hold = Hold::new();
    let o = ManagerOptions {
        wait_without_cache: false,
        ..options()
    };
    let manager = McpManager::new(o);
    manager.connect_servers(&configs(&[(
        "held",
        server(&["--hold-port", &hold.port()]),
    )]));
    let held = hold.wait();
    let err = manager
        .wait_for_connection("held", Duration::from_millis(100), None)
        .unwrap_err();
    assert!(matches!(err, Error::ConnectTimeout { .. }), "{err:?}");
    let cancel = CancelToken::new();
    let (m2, c2) = (manager.clone(), cancel.clone());
    let waiter = std::thread::spawn(move || {
        m2.wait_for_connection("held", Duration::from_secs(60), Some(&c2))
    });
    cancel.cancel();
    assert_eq!(waiter.join().unwrap().unwrap_err(), Error::Cancelled);
    assert_eq!(
        manager
            .wait_for_connection("nobody", Duration::from_secs(1), None)
            .unwrap_err(),
        Error::not_connected("nobody")
    );
    held.release();
    manager
        .wait_for_connection("held", Duration::from_secs(20), None)
        .unwrap();
}

#[test]
fn cache_miss_on_config_change_and_corrupt_entry() {
    let (o, cache) = with_cache("miss");
    let hold = Hold::new();
    let cfg = server(&["--hold-port", &hold.port()]);
    // An entry for another config, and a corrupt one: both misses, so no deferred tools.
    cache
        .set(
            "changed",
            &config_hash(&server(&["--other"])),
            &[ToolDef::new("x", "x", json!({})).into()],
        )
        .unwrap();
    std::fs::write(cache.path_for("corrupt"), "{ not json").unwrap();
    let o = ManagerOptions {
        wait_without_cache: false,
        ..o
    };
    let manager = McpManager::new(o);
    let report = manager.connect_servers(&configs(&[("changed", cfg.clone()), ("corrupt", cfg)]));
    let mut pending = report.pending.clone();
    pending.sort();
    assert_eq!(pending, ["changed", "corrupt"]);
    assert!(report.deferred.is_empty());
    hold.wait().release();
    hold.wait().release();
    manager
        .wait_for_connection("changed", Duration::from_secs(20), None)
        .unwrap();
    manager
        .wait_for_connection("corrupt", Duration::from_secs(20), None)
        .unwrap();
    manager.disconnect_all();
}

#[test]
fn an_aborted_call_stays_an_abort() {
    let manager = McpManager::new(options());
    manager.connect_servers(&configs(&[("abort", server(&[]))]));
    let tools = build_tools(&manager);
    let hang = Arc::clone(tool_named(&tools, "mcp_abort_hang"));
    let cancel = CancelToken::new();
    let (started_tx, started) = crossbeam_channel::bounded::<()>(1);
    let ctx = CallOptions {
        cancel: Some(cancel.clone()),
        on_progress: Some(Box::new(move |_: &_| {
            let _ = started_tx.try_send(());
        })),
        ..CallOptions::default()
    };
    let caller = std::thread::spawn(move || hang.execute(json!({}), ctx));
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    cancel.cancel();
    assert_eq!(
        caller.join().unwrap().unwrap_err(),
        mcp_runtime::Error::Cancelled
    );
}
