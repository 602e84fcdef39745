//! The startup a host's session runs: discovery, the connects behind the gate, the tools.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::config::{ConfigSource, DiscoveryContext, SourceOutput};
use mcp_runtime::{create_agent_session, CallOptions, ManagerOptions, SessionOptions};
use serde_json::json;

fn options(home: &std::path::Path, cwd: &std::path::Path) -> SessionOptions {
    let mut manager = ManagerOptions::default();
    manager.connect.timeout = Duration::from_secs(20);
    common::project_session(home, cwd, manager)
}

#[test]
fn loads_tools_with_display_paths_and_per_server_errors() {
    let dir = common::temp_dir("loader");
    let (home, project) = (dir.join("home"), dir.join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let config = json!({"mcpServers": {
        "good": {"command": common::server_path()},
        "broken": {"command": common::server_path(), "args": ["--exit-on-initialize", "3"]},
        "invalid": {"type": "sse"},
        "exa": {"url": "https://mcp.exa.ai/mcp?exaApiKey=key-1"}
    }});
    // `mcp.json` (no dot): the plain source, "MCP Config".
    std::fs::write(project.join("mcp.json"), config.to_string()).unwrap();
    let loaded = create_agent_session(options(&home, &project));
    assert_eq!(loaded.startup_report().unwrap().connected, ["good"]);
    assert_eq!(loaded.exa_api_keys(), ["key-1"]);
    let tools = loaded.active_tools();
    assert_eq!(tools.len(), 17);
    let echo = tools.iter().find(|t| t.name() == "mcp_good_echo").unwrap();
    assert_eq!(echo.origin(), "mcp:good via MCP Config");
    assert_eq!(echo.source().unwrap().path, project.join("mcp.json"));
    let out = echo
        .execute(json!({"message": "loaded"}), CallOptions::default())
        .unwrap();
    assert_eq!(out.model_text(), "loaded");
    assert_eq!(
        out.source.as_ref().map(|s| s.provider_name.as_str()),
        Some("MCP Config")
    );
    let errors = loaded.startup_errors();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["mcp:broken via MCP Config", "mcp:invalid via MCP Config"]
    );
    assert!(errors[1]
        .error
        .contains("sse server requires \"url\" field"));
    // The working directory of stdio servers defaults to the project.
    let pid = loaded
        .manager()
        .unwrap()
        .client("good")
        .unwrap()
        .pid()
        .unwrap();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    assert_eq!(cwd.canonicalize().unwrap(), project.canonicalize().unwrap());
    loaded.close();
    let _ = std::fs::remove_dir_all(dir);
}

struct Exploding;

impl ConfigSource for Exploding {
    fn id(&self) -> &str {
        "exploding"
    }
    fn display_name(&self) -> &str {
        "Exploding"
    }
    fn load(&self, _: &DiscoveryContext) -> SourceOutput {
        panic!("the config loader blew up")
    }
}

#[test]
fn failure_table_discovery_throws() {
    let dir = common::temp_dir("loader-throws");
    let mut opts = options(&dir, &dir);
    opts.config.sources = Some(vec![Arc::new(Exploding)]);
    let loaded = create_agent_session(opts);
    assert!(loaded.active_tools().is_empty());
    let errors = loaded.startup_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].path, ".mcp.json");
    assert_eq!(errors[0].error, "the config loader blew up");
    assert!(loaded.manager().unwrap().server_names().is_empty());
}

#[test]
fn the_users_own_file_sets_the_runtimes_proxy_and_ca_file() {
    let home = std::env::temp_dir().join(format!("mcp-loader-net-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join(".mcp-runtime")).unwrap();
    std::fs::write(
        home.join(".mcp-runtime/mcp.json"),
        r#"{"proxy": "http://proxy.corp:3128", "caFile": "corp-ca.pem", "mcpServers": {}}"#,
    )
    .unwrap();
    let cwd = home.join("project");
    let manager = options(&home, &cwd).manager_options();
    assert_eq!(
        manager.connect.http.proxy.as_deref(),
        Some("http://proxy.corp:3128")
    );
    assert_eq!(
        manager.connect.http.ca_file,
        Some(home.join(".mcp-runtime/corp-ca.pem"))
    );
    // The host's own settings win.
    let mut mine = options(&home, &cwd);
    mine.manager.connect.http.proxy = Some("direct".into());
    assert_eq!(
        mine.manager_options().connect.http.proxy.as_deref(),
        Some("direct")
    );
    let _ = std::fs::remove_dir_all(&home);
}
