//! Host integration: the session's registry and refresh, the /mcp commands, subagent proxies.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{server_path, wait_gone, Hold};
use mcp_runtime::config::default_sources;
use mcp_runtime::config::{ConfigSource, DiscoveryContext, SourceOutput};
use mcp_runtime::host::subagent_tools;
use mcp_runtime::host::{create_agent_session, AgentSession, SessionOptions};
use mcp_runtime::{AgentTool, CallOptions, Error, ManagerOptions, ToolOutput};
use serde_json::{json, Value};

/// A host's own tool.
struct HostTool(&'static str);

impl AgentTool for HostTool {
    fn name(&self) -> &str {
        self.0
    }
    fn label(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "a host tool"
    }
    fn parameters(&self) -> &Value {
        static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        EMPTY.get_or_init(|| json!({"type": "object", "properties": {}}))
    }
    fn execute(&self, _: Value, _: CallOptions<'_>) -> Result<ToolOutput, Error> {
        Err(Error::Cancelled)
    }
}

struct Project {
    root: PathBuf,
}

impl Project {
    fn new(name: &str, servers: Value) -> Project {
        let root = common::temp_dir(&format!("session-{name}"));
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        let p = Project { root };
        p.write_servers(servers);
        p
    }
    fn cwd(&self) -> PathBuf {
        self.root.join("project")
    }
    fn write_servers(&self, servers: Value) {
        std::fs::write(
            self.cwd().join(".mcp.json"),
            json!({ "mcpServers": servers }).to_string(),
        )
        .unwrap();
    }
    fn options(&self) -> SessionOptions {
        let mut manager = ManagerOptions::default();
        manager.connect.timeout = Duration::from_secs(20);
        manager.connect.stdio.close_grace = Duration::from_millis(500);
        common::project_session(&self.root.join("home"), &self.cwd(), manager)
    }
    fn own_file(&self, user: bool) -> PathBuf {
        if user {
            self.root.join("home/.mcp-runtime/mcp.json")
        } else {
            self.cwd().join(".mcp-runtime/mcp.json")
        }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn test_server(args: &[&str]) -> Value {
    json!({"command": server_path(), "args": args})
}

fn names(session: &AgentSession) -> Vec<String> {
    session
        .active_tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn refresh_keeps_the_host_tools_and_their_active_state() {
    let project = Project::new("refresh", json!({"a": test_server(&[])}));
    let mut options = project.options();
    options.host_tools = vec![Arc::new(HostTool("read_file")), Arc::new(HostTool("bash"))];
    let session = create_agent_session(options);
    assert!(session.set_tool_active("bash", false));
    assert_eq!(session.mcp_tool_names().len(), 17);
    let mirrored = Arc::new(std::sync::Mutex::new(0usize));
    let m2 = Arc::clone(&mirrored);
    session.on_refresh(move |r| *m2.lock().unwrap() = r.mcp_tool_names().len());

    // Refresh with only one MCP tool: the others go, the host tools stay as they were.
    let one: Vec<Arc<dyn AgentTool>> = mcp_runtime::host::loaded_tools(session.manager().unwrap())
        .into_iter()
        .filter(|t| t.name() == "mcp_a_echo")
        .collect();
    session.refresh_mcp_tools(one);
    assert_eq!(session.mcp_tool_names(), ["mcp_a_echo"]);
    assert!(session.is_tool_active("read_file"));
    assert!(
        !session.is_tool_active("bash"),
        "the host's inactive tool stays inactive"
    );
    assert!(session.is_tool_active("mcp_a_echo"));
    assert_eq!(*mirrored.lock().unwrap(), 1, "the mirror heard of it");
    session.refresh_from_manager();
    assert_eq!(session.mcp_tool_names().len(), 17);
    assert!(!session.is_tool_active("bash"));
    session.close();
}

#[test]
fn enable_mcp_false_starts_nothing() {
    let tag = format!("session-off-{}", std::process::id());
    let project = Project::new("off", json!({"a": test_server(&["--tag", &tag])}));
    let mut options = project.options();
    options.enable_mcp = false;
    options.host_tools = vec![Arc::new(HostTool("bash"))];
    let session = create_agent_session(options);
    assert!(session.manager().is_none());
    assert_eq!(names(&session), ["bash"]);
    assert!(common::processes_tagged(&tag).is_empty());
    assert_eq!(
        session.run_command("/mcp status"),
        "MCP is disabled for this session."
    );
}

#[test]
fn reload_picks_up_a_config_edit() {
    let project = Project::new("reload", json!({"a": test_server(&[])}));
    let session = create_agent_session(project.options());
    assert!(!names(&session).contains(&"mcp_b_echo".to_owned()));
    project.write_servers(json!({"a": test_server(&[]), "b": test_server(&["--tools", "1"])}));
    let out = session.run_command("/mcp reload");
    assert!(out.contains("Connected: a, b"), "{out}");
    let now = names(&session);
    assert!(now.contains(&"mcp_b_echo".to_owned()) && now.contains(&"mcp_b_tool_0".to_owned()));
    session.close();
}

#[test]
fn disabling_one_server_leaves_the_other_running() {
    let project = Project::new(
        "disable",
        json!({"a": test_server(&[]), "b": test_server(&[])}),
    );
    let session = create_agent_session(project.options());
    let manager = session.manager().unwrap().clone();
    let (pid_a, pid_b) = (
        manager.client("a").unwrap().pid().unwrap(),
        manager.client("b").unwrap().pid().unwrap(),
    );
    assert_eq!(
        session.run_command("/mcp disable a"),
        "Disabled MCP server a."
    );
    assert!(wait_gone(pid_a, Duration::from_secs(5)));
    assert_eq!(
        manager.client("b").unwrap().pid(),
        Some(pid_b),
        "b was not restarted"
    );
    assert!(common::is_alive(pid_b));
    assert!(names(&session).iter().all(|n| !n.starts_with("mcp_a_")));
    // a lives in a file we do not own (.mcp.json): the user file's list turns it off.
    assert_eq!(
        read(&project.own_file(true))["disabledServers"],
        json!(["a"])
    );
    let out = session.run_command("/mcp enable a");
    assert!(
        out.starts_with("Enabled MCP server a.\nConnected: a"),
        "{out}"
    );
    assert_eq!(manager.client("b").unwrap().pid(), Some(pid_b));
    assert!(names(&session).contains(&"mcp_a_echo".to_owned()));
    session.close();
}

#[test]
fn add_and_remove_edit_the_right_file() {
    let project = Project::new("add", json!({}));
    let session = create_agent_session(project.options());
    let out = session.run_command(&format!("/mcp add local -- {} --tools 1", server_path()));
    assert!(
        out.contains(&format!(
            "Added MCP server local to {}",
            project.own_file(false).display()
        )),
        "{out}"
    );
    assert!(out.contains("Connected: local"), "{out}");
    assert_eq!(
        read(&project.own_file(false))["mcpServers"]["local"]["args"],
        json!(["--tools", "1"])
    );
    assert!(names(&session).contains(&"mcp_local_tool_0".to_owned()));

    let out = session.run_command("/mcp add remote --scope user --url http://127.0.0.1:9/mcp --transport sse --header 'X-Key: k'");
    assert!(
        out.contains(&project.own_file(true).display().to_string()),
        "{out}"
    );
    let remote = &read(&project.own_file(true))["mcpServers"]["remote"];
    assert_eq!(
        remote,
        &json!({"type": "sse", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}})
    );
    assert!(out.contains("Failed: remote"), "{out}");

    assert!(session
        .run_command("/mcp add local -- x")
        .starts_with("Error: Invalid config: a server named \"local\" already exists"));
    assert!(session
        .run_command("/mcp add bad!name -- x")
        .starts_with("Error: Invalid config: invalid server name"));
    assert!(session
        .run_command("/mcp add nothing")
        .contains("add needs --url URL or -- command args"));

    let out = session.run_command("/mcp rm local");
    assert!(out.starts_with("Removed MCP server local from"), "{out}");
    assert!(read(&project.own_file(false))["mcpServers"]
        .get("local")
        .is_none());
    assert!(names(&session).iter().all(|n| !n.starts_with("mcp_local_")));
    assert!(session
        .run_command("/mcp remove ghost")
        .contains("not in this host's config files"));
    session.close();
}

#[test]
fn list_status_test_help_and_bad_usage() {
    let project = Project::new(
        "list",
        json!({"a": test_server(&[]), "off": {"command": "x", "enabled": false}}),
    );
    let session = create_agent_session(project.options());
    let list = session.run_command("/mcp list");
    assert!(
        list.starts_with(&format!(
            "Claude Code [project] {}",
            project.cwd().join(".mcp.json").display()
        )),
        "{list}"
    );
    assert!(
        list.contains("  a (connected)") && list.contains("  off (off: enabled: false)"),
        "{list}"
    );
    assert_eq!(
        session.run_command("/mcp status"),
        "a: connected (17 tools)"
    );
    let test = session.run_command("/mcp test a");
    assert!(
        test.starts_with(
            "Connected to a: mcp-test-server 1.0.0 (protocol 2025-11-25, stdio)\n17 tools:"
        ),
        "{test}"
    );
    assert!(test.ends_with("  ... and 7 more"), "{test}");
    assert_eq!(
        session.run_command("/mcp frobnicate"),
        "Unknown subcommand: frobnicate. Type /mcp help for usage."
    );
    assert!(session
        .run_command("/mcp help")
        .contains("/mcp reconnect <name>"));
    assert!(session
        .run_command("/mcp enable")
        .contains("Type /mcp help for usage."));
    let before = session.manager().unwrap().client("a").unwrap().pid();
    assert_eq!(session.run_command("/mcp reconnect a"), "Connected: a");
    assert_ne!(
        session.manager().unwrap().client("a").unwrap().pid(),
        before
    );
    session.close();
}

#[test]
fn a_late_servers_tools_appear_after_the_follow_up_refresh() {
    let hold = Hold::new();
    let project = Project::new(
        "late",
        json!({"late": test_server(&["--hold-port", &hold.port()])}),
    );
    let mut options = project.options();
    options.manager.wait_without_cache = false;
    options.auto_refresh = false;
    let session = create_agent_session(options);
    assert!(names(&session).is_empty());
    hold.wait().release();
    session
        .wait_for_server("late", Duration::from_secs(20))
        .unwrap();
    assert_eq!(
        session
            .manager()
            .unwrap()
            .connection_status("late")
            .as_str(),
        "connected"
    );
    assert_eq!(session.mcp_tool_names().len(), 17);
    session.close();
}

#[test]
fn auto_refresh_registers_late_tools_by_itself() {
    let hold = Hold::new();
    let project = Project::new(
        "auto",
        json!({"late": test_server(&["--hold-port", &hold.port()])}),
    );
    let mut options = project.options();
    options.manager.wait_without_cache = false;
    let session = create_agent_session(options);
    let (tx, rx) = crossbeam_channel::unbounded();
    session.on_refresh(move |r| {
        let _ = tx.send(r.mcp_tool_names().len());
    });
    hold.wait().release();
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), 17);
    session.close();
}

#[test]
fn subagents_share_the_parents_server_process() {
    let tag = format!("subagent-{}", std::process::id());
    let project = Project::new("subagent", json!({"shared": test_server(&["--tag", &tag])}));
    let session = create_agent_session(project.options());
    let manager = session.manager().unwrap().clone();
    let pid = manager.client("shared").unwrap().pid().unwrap();
    std::thread::scope(|s| {
        for agent in 0..8 {
            let manager = &manager;
            s.spawn(move || {
                // Each subagent asks for the parent's tools when it starts.
                let tools = subagent_tools(manager, Duration::from_secs(60));
                let echo = tools
                    .iter()
                    .find(|t| t.name() == "mcp_shared_echo")
                    .unwrap();
                for i in 0..20 {
                    let message = format!("agent {agent} call {i}");
                    let out = echo
                        .execute(json!({ "message": message }), CallOptions::default())
                        .unwrap();
                    assert_eq!(out.model_text(), message);
                }
            });
        }
    });
    assert_eq!(
        common::processes_tagged(&tag),
        [pid],
        "one process for the parent and all subagents"
    );

    // The proxies follow the parent's current tools, not a snapshot.
    let proxies = || subagent_tools(&manager, Duration::from_secs(60));
    let before = proxies();
    let echo = Arc::clone(
        before
            .iter()
            .find(|t| t.name() == "mcp_shared_echo")
            .unwrap(),
    );
    common::call_tool(&manager, "shared", "list_changed", json!({})).unwrap();
    manager.refresh_server_tools("shared").unwrap();
    assert_eq!(proxies().len(), before.len() + 1);
    manager.disconnect_server("shared");
    let out = echo
        .execute(json!({"message": "x"}), CallOptions::default())
        .unwrap();
    assert!(
        out.is_error && out.model_text().contains("no longer available"),
        "{}",
        out.model_text()
    );
    assert!(proxies().is_empty());
}

#[test]
fn a_proxied_call_is_capped_and_an_abort_stays_an_abort() {
    let project = Project::new("cap", json!({"s": test_server(&[])}));
    let session = create_agent_session(project.options());
    let manager = session.manager().unwrap().clone();
    let tools = subagent_tools(&manager, Duration::from_millis(200));
    let hang = tools.iter().find(|t| t.name() == "mcp_s_hang").unwrap();
    let out = hang.execute(json!({}), CallOptions::default()).unwrap();
    assert!(out.is_error);
    assert!(
        out.model_text().contains("Request timeout after"),
        "{}",
        out.model_text()
    );
    let cancel = mcp_runtime::CancelToken::new();
    cancel.cancel();
    let ctx = CallOptions {
        cancel: Some(cancel),
        ..CallOptions::default()
    };
    assert_eq!(hang.execute(json!({}), ctx).unwrap_err(), Error::Cancelled);
    session.close();
}

/// A host's own source with a bug: it panics once told to.
struct Flaky(Arc<std::sync::atomic::AtomicBool>);

impl ConfigSource for Flaky {
    fn id(&self) -> &str {
        "flaky"
    }
    fn display_name(&self) -> &str {
        "Flaky"
    }
    fn load(&self, _: &DiscoveryContext) -> SourceOutput {
        if self.0.load(std::sync::atomic::Ordering::SeqCst) {
            panic!("the flaky source blew up");
        }
        SourceOutput::default()
    }
}

#[test]
fn a_source_that_panics_later_fails_each_command_and_changes_nothing() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let project = Project::new("panics", json!({"a": test_server(&[])}));
    let boom = Arc::new(AtomicBool::new(false));
    let mut options = project.options();
    let mut sources = default_sources(options.config.host.clone());
    sources.push(Arc::new(Flaky(Arc::clone(&boom))));
    options.config.sources = Some(sources);
    let session = create_agent_session(options);
    assert_eq!(session.mcp_tool_names().len(), 17);
    let pid = session.manager().unwrap().client("a").unwrap().pid();
    boom.store(true, Ordering::SeqCst);
    for line in [
        "/mcp reload",
        "/mcp list",
        "/mcp enable a",
        "/mcp disable a",
        "/mcp test a",
        "/mcp reconnect a",
    ] {
        let out = session.run_command(line);
        assert!(
            out.starts_with("Error: .mcp.json: the flaky source blew up"),
            "{line}: {out}"
        );
        assert_eq!(session.mcp_tool_names().len(), 17, "{line}: the tools stay");
        assert_eq!(
            session.manager().unwrap().client("a").map(|c| c.pid()),
            Some(pid),
            "{line}: the server stays connected"
        );
    }
    assert!(
        !project.own_file(true).exists() && !project.own_file(false).exists(),
        "no config file was written"
    );
    let failed = session.discover_and_connect().unwrap().unwrap_err();
    assert_eq!(failed.path, ".mcp.json");
    boom.store(false, Ordering::SeqCst);
    let out = session.run_command("/mcp reload");
    assert!(
        out.starts_with("Reloaded MCP servers.\nConnected: a"),
        "{out}"
    );
    session.close();
}
