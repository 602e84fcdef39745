//! The manager's lifecycle over in-memory servers (`common::fleet`): the 250 ms gate and
//! deferred tools, waiting without a cache, coalesced refreshes, reconnection and its burst
//! breaker, and the session's reload. No process and no socket: each server is a thread
//! behind an in-memory pair the manager's `connector` hands it, and the test holds its
//! `initialize` or its `tools/list` answers to put it where the test needs it.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::fleet::Fleet;
use common::{eventually, holds_within};
use crossbeam_channel::Receiver;
use mcp_runtime::config::{
    config_hash, default_sources, ConfigSource, DiscoveryContext, HostConfig, ServerConfig,
    SourceOutput,
};
use mcp_runtime::host::{build_tools, create_agent_session, AgentTool};
use mcp_runtime::manager::{FileToolCache, ManagerOptions, McpManager, ReconnectPolicy, ToolCache};
use mcp_runtime::protocol::Tool;
use mcp_runtime::{CallOptions, ClientHandler};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(20);

/// A server config the fleet serves (its transport is never started).
fn config(tag: &str) -> ServerConfig {
    ServerConfig::stdio("in-memory", [tag])
}

fn configs(names: &[&str]) -> BTreeMap<String, ServerConfig> {
    names
        .iter()
        .map(|n| (n.to_string(), config("v1")))
        .collect()
}

fn options(fleet: &Fleet) -> ManagerOptions {
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        connector: Some(fleet.connector()),
        ..ManagerOptions::default()
    };
    o.connect.timeout = BOUND;
    o.connect.request_timeout = BOUND;
    o
}

fn changes(manager: &McpManager) -> Receiver<Vec<String>> {
    let (tx, rx) = crossbeam_channel::unbounded();
    manager.on_tools_changed(move |c| {
        let _ = tx.send(c.to_vec());
    });
    rx
}

fn names(manager: &McpManager) -> Vec<String> {
    build_tools(manager)
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

fn tool(manager: &McpManager, name: &str) -> Arc<dyn AgentTool> {
    build_tools(manager)
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", names(manager)))
}

#[test]
fn the_gate_serves_a_held_server_from_the_cache_and_its_call_waits_for_it() {
    let fleet = Fleet::new();
    fleet
        .server("fast", &["echo"])
        .server("slow", &["echo", "more"]);
    let held = fleet.hold_initialize("slow");
    let cache = Arc::new(FileToolCache::new(common::temp_dir("memory-gate")));
    let cached: Tool = serde_json::from_value(
        json!({"name": "echo", "description": "cached", "inputSchema": {"type": "object"}}),
    )
    .unwrap();
    cache
        .set("slow", &config_hash(&config("v1")), &[Arc::new(cached)])
        .unwrap();
    let manager = McpManager::new(ManagerOptions {
        cache: Some(cache.clone()),
        ..options(&fleet)
    });
    let changed = changes(&manager);

    let report = manager.connect_servers(&configs(&["fast", "slow"]));
    assert_eq!(report.connected, ["fast"]);
    assert_eq!(report.deferred, ["slow"]);
    assert_eq!(manager.connection_status("slow").as_str(), "connecting");
    let deferred = tool(&manager, "mcp_slow_echo");
    assert_eq!(deferred.description(), "cached");

    // A call to the deferred tool waits for its server; the server is still held.
    let caller = std::thread::spawn(move || {
        deferred.execute(json!({"message": "hi"}), CallOptions::default())
    });
    assert!(
        !caller.is_finished(),
        "the call did not wait for its server"
    );
    held.release();
    let out = caller.join().unwrap().unwrap();
    assert_eq!(out.model_text(), "slow: hi");
    assert!(!out.is_error);

    // The live tools replace the cached ones, and the host is told.
    assert_eq!(changed.recv_timeout(BOUND).unwrap(), ["slow"]);
    assert_eq!(tool(&manager, "mcp_slow_echo").description(), "echo (slow)");
    tool(&manager, "mcp_slow_more");
    assert_eq!(
        cache
            .get("slow", &config_hash(&config("v1")))
            .unwrap()
            .len(),
        2
    );
    manager.disconnect_all();
}

#[test]
fn without_a_cache_a_held_server_is_waited_for() {
    let fleet = Fleet::new();
    fleet.server("slow", &["echo"]);
    let held = fleet.hold_initialize("slow");
    let manager = McpManager::new(ManagerOptions {
        startup_timeout: Duration::ZERO,
        ..options(&fleet)
    });
    let (tx, rx) = crossbeam_channel::bounded(1);
    let m = manager.clone();
    std::thread::spawn(move || tx.send(m.connect_servers(&configs(&["slow"]))));
    eventually("the server is asked to connect", BOUND, || {
        fleet.connects("slow") == 1
    });
    assert!(
        rx.try_recv().is_err(),
        "connect_servers returned while the server was held"
    );
    held.release();
    let report = rx.recv_timeout(BOUND).unwrap();
    assert_eq!(report.connected, ["slow"]);
    assert_eq!(names(&manager), ["mcp_slow_echo"]);
    manager.disconnect_all();
}

/// Counts the `tools/list_changed` notifications the manager has taken in (it asks for its
/// refresh before the host hears of one).
#[derive(Default)]
struct Counting(AtomicUsize);

impl ClientHandler for Counting {
    fn on_tools_list_changed(&self, _server: &str) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_burst_of_list_changed_while_a_refresh_runs_costs_one_more_listing() {
    let fleet = Fleet::new();
    fleet.server("grows", &["a"]);
    let heard = Arc::new(Counting::default());
    let mut o = options(&fleet);
    o.connect.handler = heard.clone();
    let manager = McpManager::new(o);
    manager.connect_servers(&configs(&["grows"]));
    assert_eq!(names(&manager), ["mcp_grows_a"]);
    assert_eq!(fleet.lists("grows"), 1);

    // The refresh the first notification starts is held in its listing...
    let held = fleet.hold_lists("grows");
    fleet.set_tools("grows", &["a", "b"], "");
    fleet.notify("grows", "notifications/tools/list_changed");
    eventually("the refresh is listing", BOUND, || {
        fleet.lists("grows") == 2
    });
    // ...while twenty more arrive and are taken in.
    for _ in 0..20 {
        fleet.notify("grows", "notifications/tools/list_changed");
    }
    eventually("every notification was taken in", BOUND, || {
        heard.0.load(Ordering::SeqCst) == 21
    });
    held.release();
    eventually("the new tool is in", BOUND, || {
        names(&manager) == ["mcp_grows_a", "mcp_grows_b"]
    });
    // One listing more for the whole burst, and no other.
    eventually("the burst's listing ran", BOUND, || {
        fleet.lists("grows") == 3
    });
    assert!(holds_within(Duration::from_millis(300), || fleet
        .lists("grows")
        == 3));
    manager.disconnect_all();
}

#[test]
fn a_dead_server_comes_back_until_the_burst_breaker_stops_it() {
    let fleet = Fleet::new();
    fleet.server("phoenix", &["echo"]);
    let manager = McpManager::new(ManagerOptions {
        reconnect: Some(ReconnectPolicy {
            backoff: vec![Duration::from_millis(1)],
            max_tries: 2,
            // Wide enough that no try leaves it while the test runs: no clock is waited out.
            window: Duration::from_secs(3600),
        }),
        ..options(&fleet)
    });
    manager.connect_servers(&configs(&["phoenix"]));
    for connects in 2..=3 {
        fleet.kill("phoenix");
        eventually("the server is connected again", BOUND, || {
            fleet.connects("phoenix") == connects
                && manager.connection_status("phoenix").is_connected()
        });
        let out =
            common::call_tool(&manager, "phoenix", "echo", json!({"message": "back"})).unwrap();
        assert_eq!(out.text(), "phoenix: back");
    }
    // A third death within the window is one too many: it stays down.
    fleet.kill("phoenix");
    eventually("the server is down", BOUND, || {
        manager.connection_status("phoenix").as_str() == "disconnected"
    });
    assert!(holds_within(Duration::from_millis(300), || fleet
        .connects("phoenix")
        == 3));
    manager.disconnect_all();
}

/// A config source that finds nothing, or fails the whole discovery while `broken` is set.
struct Breakable(Arc<AtomicBool>);

impl ConfigSource for Breakable {
    fn id(&self) -> &str {
        "breakable"
    }
    fn display_name(&self) -> &str {
        "Breakable"
    }
    fn load(&self, _: &DiscoveryContext) -> SourceOutput {
        assert!(!self.0.load(Ordering::SeqCst), "the source broke");
        SourceOutput::default()
    }
}

#[test]
fn a_reload_connects_the_new_set_and_a_failed_discovery_changes_nothing() {
    let fleet = Fleet::new();
    fleet
        .server("keep", &["echo"])
        .server("gone", &["echo"])
        .server("new", &["echo"]);
    let root = common::temp_dir("memory-reload");
    let project = root.join("project");
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let write = |servers: &str| {
        std::fs::write(
            project.join(".mcp.json"),
            format!("{{\"mcpServers\": {{{servers}}}}}"),
        )
        .unwrap()
    };
    write(r#""keep": {"command": "in-memory"}, "gone": {"command": "in-memory"}"#);
    let broken = Arc::new(AtomicBool::new(false));
    let mut sources = default_sources(HostConfig::default());
    sources.push(Arc::new(Breakable(broken.clone())));
    let mut session_options =
        common::project_session(&root.join("home"), &project, options(&fleet));
    session_options.config.sources = Some(sources);
    let session = create_agent_session(session_options);
    let tools = |s: &mcp_runtime::host::AgentSession| -> Vec<String> {
        s.active_tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    };
    assert_eq!(tools(&session), ["mcp_gone_echo", "mcp_keep_echo"]);

    write(r#""keep": {"command": "in-memory"}, "new": {"command": "in-memory"}"#);
    let report = session.reload().unwrap().unwrap();
    assert_eq!(report.connected, ["keep", "new"]);
    assert_eq!(tools(&session), ["mcp_keep_echo", "mcp_new_echo"]);
    assert_eq!(fleet.connects("keep"), 2);
    assert_eq!(fleet.connects("gone"), 1);

    // Discovery itself fails: the reload fails, and nothing is disconnected.
    write(r#""keep": {"command": "in-memory"}"#);
    broken.store(true, Ordering::SeqCst);
    assert!(session.reload().unwrap().is_err());
    assert_eq!(tools(&session), ["mcp_keep_echo", "mcp_new_echo"]);
    assert_eq!(fleet.connects("keep"), 2);
    session.close();
}
