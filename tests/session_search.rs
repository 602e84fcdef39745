//! Schemas on demand in a session: 500 tools of real servers' definitions (captured
//! catalogues served by child processes) behind the search tool; the model finds a tool
//! through it and calls it; every tool stays callable by name; the index follows a disconnect;
//! tools from the cache are searchable while their server is still connecting.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, server_path, Hold};
use mcp_runtime::host::{create_agent_session, AgentSession, SessionOptions, ToolSearchOptions};
use mcp_runtime::manager::FileToolCache;
use mcp_runtime::{CallOptions, ManagerOptions};
use serde_json::{json, Value};

use common::catalogue::{file as catalogue, servers as catalogues};

fn options(root: &std::path::Path, servers: Value, search: ToolSearchOptions) -> SessionOptions {
    let cwd = root.join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::write(
        cwd.join(".mcp.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .unwrap();
    let mut manager = ManagerOptions::default();
    manager.connect.timeout = Duration::from_secs(30);
    SessionOptions {
        tool_search: Some(search),
        ..common::project_session(&root.join("home"), &cwd, manager)
    }
}

fn active(session: &AgentSession) -> Vec<String> {
    session
        .active_tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

fn search(session: &AgentSession, query: &str) -> (String, Vec<String>) {
    let tool = session.tool("tool_search").expect("the search tool");
    let output = tool
        .execute(json!({ "query": query }), CallOptions::default())
        .unwrap();
    assert!(!output.is_error, "{}", output.model_text());
    let Some(structured) = output.structured_content() else {
        return (output.model_text(), Vec::new());
    };
    let names = structured["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    (output.model_text(), names)
}

fn call(session: &AgentSession, name: &str, arguments: Value) -> String {
    let tool = session
        .tool(name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    let output = tool.execute(arguments, CallOptions::default()).unwrap();
    assert!(!output.is_error, "{}", output.model_text());
    output.model_text()
}

#[test]
fn five_hundred_tools_behind_the_search_tool_found_and_called_through_it() {
    let root = common::temp_dir("session-search-500");
    let mut servers = serde_json::Map::new();
    for name in catalogues() {
        servers.insert(
            name.clone(),
            json!({"command": server_path(), "args": ["--catalogue", catalogue(&name)]}),
        );
    }
    // Generated tools bring the count past 500.
    servers.insert(
        "generated".into(),
        json!({"command": server_path(), "args": ["--tools", "150"]}),
    );
    let session = create_agent_session(options(
        &root,
        Value::Object(servers),
        ToolSearchOptions {
            above_tools: Some(100),
            ..ToolSearchOptions::default()
        },
    ));
    let mcp = session.mcp_tool_names();
    assert!(mcp.len() >= 500, "{} tools", mcp.len());
    assert!(session.schemas_on_demand());
    // The model is offered the search tool only.
    assert_eq!(active(&session), ["tool_search"]);
    let refreshes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&refreshes);
    session.on_refresh(move |r| {
        let names: Vec<String> = (r.active_tools().iter())
            .map(|t| t.name().to_owned())
            .collect();
        seen.lock().unwrap().push(names);
    });
    // Its description carries the catalogue, within its budget, saying what did not fit.
    let description = session
        .tool("tool_search")
        .unwrap()
        .description()
        .to_owned();
    assert!(
        description.len() <= 2_000 * 4 + 1_000,
        "{}",
        description.len()
    );
    assert!(
        description.contains(&format!("The {} tools:", mcp.len())),
        "{description}"
    );
    assert!(
        description.contains("more: search to find them"),
        "{description}"
    );

    // A question as a model asks it: the right tool comes back with its schema, offered.
    let (text, found) = search(&session, "list the commits of a repository");
    assert!(
        found.contains(&"mcp_github_list_commits".to_owned()),
        "{found:?}"
    );
    assert!(text.contains("## mcp_github_list_commits"), "{text}");
    assert!(text.contains("Parameters: {"), "{text}");
    let now = active(&session);
    assert!(
        now.contains(&"mcp_github_list_commits".to_owned()),
        "{now:?}"
    );
    assert_eq!(now.len(), found.len() + 1, "{now:?}");
    assert_eq!(
        refreshes.lock().unwrap().last(),
        Some(&now),
        "the host was told"
    );
    assert_eq!(session.offered_tools().len(), found.len());
    // And it is called through the session.
    let answer = call(
        &session,
        "mcp_github_list_commits",
        json!({"owner": "o", "repo": "r"}),
    );
    assert_eq!(
        answer,
        r#"called list_commits with {"owner":"o","repo":"r"}"#
    );

    // Every tool stays callable by its exposed name, offered or not.
    assert!(!active(&session).contains(&"mcp_time_get_current_time".to_owned()));
    let answer = call(
        &session,
        "mcp_time_get_current_time",
        json!({"timezone": "Asia/Tokyo"}),
    );
    assert!(answer.starts_with("called get_current_time"), "{answer}");

    // select: loads by name; a search that finds nothing says so and offers nothing.
    let (_, found) = search(&session, "select:mcp_git_status");
    assert_eq!(found, ["mcp_git_status"]);
    assert!(active(&session).contains(&"mcp_git_status".to_owned()));
    let before = active(&session);
    let (text, found) = search(&session, "xylophone quartz");
    assert!(
        found.is_empty() && text.starts_with("No tool matches"),
        "{text}"
    );
    assert_eq!(active(&session), before);

    // The host drops what was offered.
    session.drop_offered_tools();
    assert_eq!(active(&session), ["tool_search"]);

    // The index follows a disconnect: github's tools are no longer found.
    session.manager().unwrap().disconnect_server("github");
    eventually(
        "github's tools leave the index",
        Duration::from_secs(20),
        || {
            session
                .search_tools("list the commits of a repository", 10)
                .iter()
                .all(|t| !t.name().starts_with("mcp_github_"))
        },
    );
    assert!(session.tool("mcp_github_list_commits").is_none());
    session.close();
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn below_the_threshold_every_tool_is_offered_and_there_is_no_search_tool() {
    let root = common::temp_dir("session-search-below");
    let servers =
        json!({"git": {"command": server_path(), "args": ["--catalogue", catalogue("git")]}});
    let session = create_agent_session(options(
        &root,
        servers,
        ToolSearchOptions {
            above_tools: Some(100),
            ..ToolSearchOptions::default()
        },
    ));
    assert!(!session.schemas_on_demand());
    let names = active(&session);
    assert_eq!(names.len(), 12, "{names:?}");
    assert!(session.tool("tool_search").is_none());
    // Searching still works for the host.
    let found = session.search_tools("working tree status", 1);
    assert_eq!(found[0].name(), "mcp_git_status");
    assert!(!session.offer_tools(&["mcp_git_status".to_owned()]));
    session.close();
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn tools_from_the_cache_are_searchable_before_their_server_connects() {
    let root = common::temp_dir("session-search-cache");
    let hold = Hold::new();
    let servers = json!({"slow": {"command": server_path(),
        "args": ["--catalogue", catalogue("git"), "--hold-port", hold.port()]}});
    let cache = Arc::new(FileToolCache::new(root.join("cache")));
    let with_cache = || {
        let mut o = options(&root, servers.clone(), ToolSearchOptions::default());
        o.manager.cache = Some(cache.clone());
        o
    };
    // A first session lists the tools (and caches them).
    let first = std::thread::scope(|s| {
        s.spawn(|| hold.wait().release());
        create_agent_session(with_cache())
    });
    assert_eq!(first.mcp_tool_names().len(), 12);
    first.close();

    // The next one starts while the server is held: its tools come from the cache.
    let session = create_agent_session(with_cache());
    let held = hold.wait();
    let manager = session.manager().unwrap().clone();
    assert_eq!(manager.connection_status("slow").as_str(), "connecting");
    let (_, found) = search(&session, "show the working tree status");
    assert_eq!(
        found.first().map(String::as_str),
        Some("mcp_slow_git_status")
    );
    // Called while the server is held, it waits for the server; released, it answers.
    let answer = std::thread::scope(|s| {
        let call = s.spawn(|| call(&session, "mcp_slow_git_status", json!({"repo_path": "."})));
        held.release();
        call.join().unwrap()
    });
    assert_eq!(answer, r#"called git_status with {"repo_path":"."}"#);
    session.close();
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_index_follows_list_changed_and_reloads() {
    let root = common::temp_dir("session-search-follow");
    let servers = json!({"changing": {"command": server_path()}});
    let session = create_agent_session(options(&root, servers, ToolSearchOptions::default()));
    assert!(session.search_tools("late_tool", 5).is_empty());
    // The server adds a tool and says so: the index has it, offered or not.
    call(&session, "mcp_changing_list_changed", json!({}));
    eventually(
        "the new tool is searchable",
        Duration::from_secs(20),
        || {
            session
                .search_tools("late_tool", 1)
                .first()
                .is_some_and(|t| t.name() == "mcp_changing_late_tool")
        },
    );
    assert!(!active(&session).contains(&"mcp_changing_late_tool".to_owned()));
    // What was offered stays offered across a reload.
    let (_, found) = search(&session, "select:mcp_changing_echo");
    assert_eq!(found, ["mcp_changing_echo"]);
    session.reload().unwrap().unwrap();
    assert!(active(&session).contains(&"mcp_changing_echo".to_owned()));
    assert!(session.tool("tool_search").is_some());
    assert_eq!(
        session.search_tools("echoes the message", 1)[0].name(),
        "mcp_changing_echo"
    );
    session.close();
    assert!(session.search_tools("echoes the message", 1).is_empty());
    let _ = std::fs::remove_dir_all(&root);
}

/// A host tool of the host's own.
struct HostTool;

impl mcp_runtime::AgentTool for HostTool {
    fn name(&self) -> &str {
        "tool_search"
    }
    fn label(&self) -> &str {
        "host"
    }
    fn description(&self) -> &str {
        "the host's own search"
    }
    fn parameters(&self) -> &Value {
        static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        EMPTY.get_or_init(|| json!({"type": "object"}))
    }
    fn execute(
        &self,
        _: Value,
        _: CallOptions<'_>,
    ) -> Result<mcp_runtime::ToolOutput, mcp_runtime::Error> {
        Ok(mcp_runtime::ToolOutput::text("host"))
    }
}

#[test]
fn a_host_tool_of_the_same_name_is_left_alone_and_the_hosts_choices_stay() {
    let root = common::temp_dir("session-search-host");
    let servers =
        json!({"git": {"command": server_path(), "args": ["--catalogue", catalogue("git")]}});
    let mut o = options(&root, servers.clone(), ToolSearchOptions::default());
    o.host_tools = vec![Arc::new(HostTool)];
    let session = create_agent_session(o);
    assert!(session.schemas_on_demand());
    assert_eq!(
        session.tool("tool_search").unwrap().description(),
        "the host's own search"
    );
    session.refresh_from_manager();
    assert_eq!(
        session.tool("tool_search").unwrap().description(),
        "the host's own search"
    );
    session.close();

    // The host turns the search tool off: a refresh leaves it off.
    let session = create_agent_session(options(&root, servers, ToolSearchOptions::default()));
    assert!(session.set_tool_active("tool_search", false));
    session.refresh_from_manager();
    assert!(!session.is_tool_active("tool_search"));
    assert!(session.tool("tool_search").is_some());
    // Offering a name of no MCP tool changes nothing.
    assert!(!session.offer_tools(&["nope".to_owned()]));
    assert!(session.offer_tools(&["mcp_git_status".to_owned()]));
    assert!(!session.offer_tools(&["mcp_git_status".to_owned()]));
    session.close();
    let _ = std::fs::remove_dir_all(&root);
}
