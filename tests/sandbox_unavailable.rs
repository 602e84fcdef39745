//! Where the sandbox cannot be applied, a server that asks for it does not start: a typed
//! error names what is missing, and nothing runs unconfined. The kernel's parts are reported
//! absent by the test (`fault-injection`'s `MCP_RUNTIME_TEST_SANDBOX_MISSING`, read once per
//! process: this binary has this one test, so no other test sees it).
#![cfg(feature = "fault-injection")]

mod common;

use std::time::Duration;

use mcp_runtime::transport::{Sandbox, StdioCommand};
use mcp_runtime::{Client, Endpoint, Error};
use serde_json::json;

#[test]
fn a_server_asking_for_an_absent_sandbox_fails_to_start_naming_what_is_missing() {
    std::env::set_var("MCP_RUNTIME_TEST_SANDBOX_MISSING", "Landlock");
    // Directly: the typed error, and no process started.
    let tag = format!("sandbox-absent-{}", std::process::id());
    let command = StdioCommand {
        sandbox: Some(Sandbox::default()),
        ..StdioCommand::new(common::server_path(), ["--tag", tag.as_str()])
    };
    match Client::connect("confined", &Endpoint::Stdio(command), common::options()) {
        Err(Error::Sandbox { server, message }) => {
            assert_eq!(server, "confined");
            assert!(message.contains("Landlock"), "{message}");
        }
        Err(e) => panic!("expected the sandbox's error, got {e}"),
        Ok(_) => panic!("a server asking for an absent sandbox started"),
    }
    assert!(common::processes_tagged(&tag).is_empty(), "nothing ran");

    // Through discovery: a VS Code mcp.json with sandboxEnabled; the unconfined server of the
    // same file still runs.
    let root = common::temp_dir("sandbox-absent");
    let project = root.join("project");
    std::fs::create_dir_all(project.join(".vscode")).unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    let config = json!({"servers": {
        "confined": {"type": "stdio", "command": common::server_path(),
                     "args": ["--tag", tag], "sandboxEnabled": true},
        "plain": {"type": "stdio", "command": common::server_path()}
    }});
    std::fs::write(project.join(".vscode/mcp.json"), config.to_string()).unwrap();
    let mut manager = mcp_runtime::ManagerOptions::default();
    manager.connect.timeout = Duration::from_secs(20);
    let session = mcp_runtime::create_agent_session(common::project_session(
        &root.join("home"),
        &project,
        manager,
    ));
    let manager = session.manager().expect("a manager");
    common::eventually("the confined server fails", Duration::from_secs(20), || {
        matches!(
            manager.connection_status("confined").error(),
            Some(Error::Sandbox { .. })
        )
    });
    let error = manager
        .connection_status("confined")
        .error()
        .cloned()
        .unwrap();
    assert!(error.to_string().contains("was not started"), "{error}");
    assert!(common::call_tool(manager, "plain", "echo", json!({"message": "hi"})).is_ok());
    assert!(
        common::processes_tagged(&tag).is_empty(),
        "nothing ran unconfined"
    );
    session.close();
    let _ = std::fs::remove_dir_all(&root);
}
