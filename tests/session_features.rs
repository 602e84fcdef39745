//! The session's resources, templates and prompts: listed at startup, mirrored on
//! `list_changed`, and the calls that use them.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_runtime::host::create_agent_session;
use mcp_runtime::protocol::CompletionRef;
use mcp_runtime::ManagerOptions;
use serde_json::json;

fn session_with_features(name: &str) -> (mcp_runtime::host::AgentSession, std::path::PathBuf) {
    let root = common::temp_dir(&format!("session-features-{name}"));
    let project = root.join("project");
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let servers =
        json!({"mcpServers": {"docs": {"command": common::server_path(), "args": ["--features"]}}});
    std::fs::write(project.join(".mcp.json"), servers.to_string()).unwrap();
    let manager = ManagerOptions {
        connect: common::options(),
        ..ManagerOptions::default()
    };
    let session = create_agent_session(common::project_session(
        &root.join("home"),
        &project,
        manager,
    ));
    (session, root)
}

#[test]
fn the_session_offers_resources_templates_and_prompts_and_follows_their_changes() {
    let (session, root) = session_with_features("refresh");
    assert!(
        common::holds_within(Duration::from_secs(10), || session.prompts().len() == 1),
        "{:?}",
        session.prompts()
    );
    let resources = session.resources();
    let uris: Vec<&str> = resources.iter().map(|r| r.item.uri.as_str()).collect();
    assert_eq!(uris, ["test://a", "test://b"]);
    assert_eq!(
        session.resource_templates()[0].item.uri_template,
        "test://item/{id}"
    );
    assert_eq!(session.prompts()[0].name, "mcp_docs_greet");
    let docs = session.manager().unwrap().client("docs").unwrap();
    assert_eq!(docs.server_info().name, "mcp-test-server");
    assert_eq!(docs.instructions().as_deref(), Some("Use echo to test."));

    let mirrored: Arc<Mutex<Vec<String>>> = Arc::default();
    let m = Arc::clone(&mirrored);
    session.on_features_refresh(move |f| {
        *m.lock().unwrap() = f.prompts().iter().map(|p| p.name.clone()).collect();
    });
    // The server adds a prompt and says so (prompts/list_changed).
    let out = common::call_tool(
        session.manager().unwrap(),
        "docs",
        "features_changed",
        json!({}),
    )
    .unwrap();
    assert!(!out.is_error());
    common::holds_within(Duration::from_secs(10), || {
        mirrored.lock().unwrap().len() >= 2
    });
    assert_eq!(
        *mirrored.lock().unwrap(),
        ["mcp_docs_greet", "mcp_docs_late_prompt"]
    );
    assert!(session.prompt("mcp_docs_late_prompt").is_some());

    let prompt = session
        .get_prompt("mcp_docs_greet", json!({"who": "Ada"}))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages[0].content).unwrap()["text"],
        "Hello, Ada!"
    );
    let read = session.read_resource("docs", "test://a").unwrap();
    assert_eq!(read.contents.len(), 1);
    let done = session
        .complete(
            "docs",
            &CompletionRef::Prompt("greet".into()),
            "who",
            "al",
            None,
        )
        .unwrap();
    assert_eq!(done.values, ["alice", "alan"]);
    assert!(session.get_prompt("mcp_docs_nothing", json!({})).is_err());

    session.close();
    assert!(session.prompts().is_empty());
    let _ = std::fs::remove_dir_all(root);
}
