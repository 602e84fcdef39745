//! What a host's tool objects give back: a tool's structuredContent checked against its
//! outputSchema (reported, never enforced).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::server_path;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::host::build_tools;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::CallOptions;
use serde_json::json;

#[test]
fn structured_content_is_checked_against_the_output_schema() {
    let mut options = ManagerOptions {
        project_dir: std::env::temp_dir(),
        ..ManagerOptions::default()
    };
    options.connect.timeout = Duration::from_secs(20);
    let manager = McpManager::new(options);
    let configs = BTreeMap::from([(
        "typed".to_owned(),
        ServerConfig::stdio(server_path(), ["--typed-tool"]),
    )]);
    let report = manager.connect_servers(&configs);
    assert_eq!(report.connected, ["typed"]);
    let tools = build_tools(&manager);
    let typed = tools
        .iter()
        .find(|t| t.name() == "mcp_typed_typed")
        .unwrap();
    let good = typed
        .execute(json!({"structured": {"t": 21}}), CallOptions::default())
        .unwrap();
    assert_eq!(good.schema_problem, None);
    let bad = typed
        .execute(json!({"structured": {"t": "warm"}}), CallOptions::default())
        .unwrap();
    assert_eq!(
        bad.schema_problem.as_deref(),
        Some("$.t: expected number, got a string")
    );
    // Reported, not enforced: the output is the server's.
    assert!(!bad.is_error);
    assert_eq!(bad.structured_content(), Some(&json!({"t": "warm"})));
    let none = typed.execute(json!({}), CallOptions::default()).unwrap();
    assert_eq!(
        none.schema_problem.as_deref(),
        Some("the tool declares an outputSchema but sent no structuredContent")
    );
    manager.disconnect_all();
}
