//! Interop beyond tools with `@modelcontextprotocol/server-everything` over stdio: resources,
//! templates, prompts, completions, the log level, and a tool that must run as a task.
//! Skips, saying so, only where node is absent.

mod common;

use std::time::Duration;

use mcp_runtime::protocol::{CompletionRef, LoggingLevel};
use mcp_runtime::transport::StdioCommand;
use mcp_runtime::{CallOptions, Client, Endpoint};
use serde_json::json;

fn connect() -> Option<Client> {
    let script = common::everything::entry_script()?;
    let mut cmd = StdioCommand::new(
        "node",
        [script.to_string_lossy().into_owned(), "stdio".into()],
    );
    cmd.env
        .push(("GZIP_ALLOWED_DOMAINS".into(), "127.0.0.1".into()));
    Some(Client::connect("everything", &Endpoint::Stdio(cmd), common::options()).unwrap())
}

#[test]
fn resources_templates_prompts_completions_and_logging() {
    let Some(client) = connect() else { return };
    let resources = client.list_resources().unwrap();
    assert!(
        !resources.is_empty(),
        "server-everything lists its documents"
    );
    let first = &resources[0];
    let read = client.read_resource(&first.uri).unwrap();
    assert_eq!(read.contents[0].uri, first.uri);
    assert!(read.contents[0].text.is_some() || read.contents[0].blob.is_some());

    let templates = client.list_resource_templates().unwrap();
    let text_template = templates
        .iter()
        .find(|t| t.uri_template.ends_with("/text/{resourceId}"))
        .unwrap_or_else(|| panic!("no text template in {templates:?}"));
    let uri = text_template.uri_template.replace("{resourceId}", "7");
    let read = client.read_resource(&uri).unwrap();
    assert!(read.contents[0].text.as_deref().unwrap_or("").contains('7'));
    let blob_template = templates
        .iter()
        .find(|t| t.uri_template.ends_with("/blob/{resourceId}"))
        .unwrap();
    let read = client
        .read_resource(&blob_template.uri_template.replace("{resourceId}", "3"))
        .unwrap();
    assert!(read.contents[0].blob.is_some(), "a blob stays base64");

    let prompts = client.list_prompts().unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    for expected in ["simple-prompt", "args-prompt", "completable-prompt"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let prompt = client.get_prompt("simple-prompt", json!(null)).unwrap();
    assert!(!prompt.messages.is_empty());

    let done = client
        .complete(
            &CompletionRef::Prompt("completable-prompt".into()),
            "department",
            "En",
            None,
        )
        .unwrap();
    assert_eq!(done.values, ["Engineering"]);
    let done = client
        .complete(
            &CompletionRef::Prompt("completable-prompt".into()),
            "name",
            "A",
            Some(json!({"department": "Engineering"})),
        )
        .unwrap();
    assert_eq!(done.values, ["Alice"]);

    client.set_log_level(LoggingLevel::Error).unwrap();
    client.close();
}

#[test]
fn a_task_required_tool_is_one_blocking_call() {
    let Some(client) = connect() else { return };
    let tools = client.list_tools().unwrap();
    assert!(
        tools.iter().any(|t| t.name == "simulate-research-query"),
        "the task tool is listed"
    );
    let mut stages = Vec::new();
    let out = client
        .call_tool_with(
            "simulate-research-query",
            json!({"topic": "sync clients"}),
            CallOptions::timeout(Duration::from_secs(60))
                .with_progress(|p| stages.push(p.message.clone().unwrap_or_default())),
        )
        .unwrap();
    assert!(!out.is_error(), "{}", out.text());
    assert!(out.text().contains("sync clients"), "{}", out.text());
    assert!(stages.len() >= 2, "status reached the caller: {stages:?}");
    client.close();
}
