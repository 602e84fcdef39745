//! MCP Apps' visibility rule: a tool only its App may call (`_meta.ui.visibility` without
//! `"model"`) is never offered to a model (the loader's tools, the session's registry and its
//! tool search, subagents' proxies) and stays callable by the host; the CLI, a host, lists it
//! with its UI.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::server_path;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::host::{all_loaded_tools, loaded_tools, subagent_tools, ToolIndex};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::CallOptions;
use serde_json::{json, Value};

fn manager() -> McpManager {
    let mut options = ManagerOptions {
        project_dir: std::env::temp_dir(),
        ..ManagerOptions::default()
    };
    options.connect.timeout = Duration::from_secs(20);
    let manager = McpManager::new(options);
    let configs = BTreeMap::from([(
        "clock".to_owned(),
        ServerConfig::stdio(server_path(), ["--app"]),
    )]);
    assert_eq!(manager.connect_servers(&configs).connected, ["clock"]);
    manager
}

fn names(tools: impl IntoIterator<Item = String>) -> Vec<String> {
    tools.into_iter().collect()
}

#[test]
fn an_app_only_tool_is_never_offered_to_a_model_and_stays_the_hosts() {
    let manager = manager();
    let offered = names(loaded_tools(&manager).iter().map(|t| t.name().to_owned()));
    assert!(
        offered.contains(&"mcp_clock_show_clock".to_owned()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"mcp_clock_tick".to_owned()),
        "{offered:?}"
    );
    let all = names(
        all_loaded_tools(&manager)
            .iter()
            .map(|t| t.name().to_owned()),
    );
    assert!(all.contains(&"mcp_clock_tick".to_owned()));
    let proxies = names(
        subagent_tools(&manager, Duration::from_secs(10))
            .iter()
            .map(|t| t.name().to_owned()),
    );
    assert!(
        !proxies.contains(&"mcp_clock_tick".to_owned()),
        "{proxies:?}"
    );
    // A search over what a model is offered does not find it.
    let mut index = ToolIndex::new();
    index.sync(loaded_tools(&manager));
    assert!(index
        .search("advances the clock", 5)
        .iter()
        .all(|t| t.name() != "mcp_clock_tick"));
    // The host (and the App through it) still calls it.
    let result = common::call_tool_with(
        &manager,
        "clock",
        "clock_tick",
        json!({}),
        CallOptions::default(),
    )
    .unwrap();
    assert_eq!(result.text(), "clock_tick called");
    manager.close();
}

#[test]
fn the_cli_lists_each_tools_ui_and_who_may_call_it() {
    let root = common::temp_dir("apps-cli");
    let cfg = root.join("servers.json");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        &cfg,
        json!({"mcpServers": {"clock": {"command": server_path(), "args": ["--app"]}}}).to_string(),
    )
    .unwrap();
    let out = common::cli(&root.join("home"))
        .arg("--config")
        .arg(&cfg)
        .args(["--json", "tools"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not listed: {tools}"))
    };
    let show = find("mcp_clock_show_clock");
    assert_eq!(show["ui"]["resourceUri"], "ui://clock/app.html");
    assert_eq!(show["visibleToModel"], true);
    let tick = find("mcp_clock_tick");
    assert_eq!(tick["ui"]["visibility"], json!(["app"]));
    assert_eq!(tick["visibleToModel"], false);
    let echo = find("mcp_clock_echo");
    assert!(echo["ui"].is_null());
    // What a model is offered costs what it costs: the App's own tool is not counted.
    let out = common::cli(&root.join("home"))
        .arg("--config")
        .arg(&cfg)
        .args(["tools", "--tokens"])
        .output()
        .unwrap();
    let costs = String::from_utf8_lossy(&out.stdout);
    assert!(costs.contains("mcp_clock_show_clock"), "{costs}");
    assert!(!costs.contains("mcp_clock_tick"), "{costs}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_apps_page_is_read_once_checked_and_typed() {
    let manager = manager();
    let client = manager.client("clock").unwrap();
    let page = client.read_app("ui://clock/app.html").unwrap();
    assert_eq!(page.html, "<!doctype html><p>clock</p>");
    let ui = page.ui.clone().unwrap();
    assert_eq!(ui.csp.unwrap().connect_domains, ["https://api.example.com"]);
    assert_eq!(ui.prefers_border, Some(true));
    // Kept for the connection: the server is not asked again (it counts its reads).
    let again = client.read_app("ui://clock/app.html").unwrap();
    assert!(std::sync::Arc::ptr_eq(&page, &again));
    client.forget_app("ui://clock/app.html");
    let fresh = client.read_app("ui://clock/app.html").unwrap();
    let reads = |p: &mcp_runtime::client::AppPage| {
        let resource = client.read_resource(&p.uri).unwrap();
        resource.contents[0].extra["_meta"]["ui"]["reads"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(reads(&fresh), 3, "two reads by read_app, and this one");
    // Pages that are not an App's are refused, typed.
    for (uri, says) in [
        ("ui://clock/plain.html", "MIME type"),
        ("ui://clock/huge.html", "more than the"),
        ("https://clock/app.html", "ui:// resource"),
    ] {
        match client.read_app(uri) {
            Err(mcp_runtime::Error::Integrity { problem, .. }) => {
                assert!(problem.contains(says), "{uri}: {problem}")
            }
            other => panic!("{uri}: {other:?}"),
        }
    }
    assert!(client
        .server_extension(mcp_runtime::protocol::UI_EXTENSION)
        .is_some());
    manager.close();
}
