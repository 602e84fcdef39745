//! What the manager keeps beside tools: resources, templates, prompts (as commands), server
//! identity and instructions, and the calls that use them, against the test server.

mod common;

/// How long a fact may take to come true.
const WAIT: Duration = Duration::from_secs(20);

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::server_path;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::protocol::{CompletionRef, LoggingLevel};
use mcp_runtime::ClientHandler;
use serde_json::{json, Value};

/// A notification: its method and params.
type Seen = (String, Option<Value>);

struct Updates(crossbeam_channel::Sender<Seen>);

impl ClientHandler for Updates {
    fn on_notification(&self, _server: &str, method: &str, params: Option<&Value>) {
        let _ = self.0.send((method.to_owned(), params.cloned()));
    }
}

fn connect(entries: &[(&str, &[&str])]) -> (McpManager, crossbeam_channel::Receiver<Seen>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut options = ManagerOptions {
        project_dir: std::env::temp_dir(),
        ..ManagerOptions::default()
    };
    options.connect.timeout = Duration::from_secs(20);
    options.connect.handler = Arc::new(Updates(tx));
    let manager = McpManager::new(options);
    let configs: BTreeMap<String, ServerConfig> = entries
        .iter()
        .map(|(n, args)| {
            (
                n.to_string(),
                ServerConfig::stdio(server_path(), args.iter().copied()),
            )
        })
        .collect();
    let report = manager.connect_servers(&configs);
    assert_eq!(report.connected.len(), entries.len(), "{report:?}");
    (manager, rx)
}

#[test]
fn resources_templates_and_prompts_are_kept_per_server() {
    let (manager, updates) = connect(&[("rich", &["--features"]), ("plain", &[])]);
    // Listed after the connection, off the gate.
    common::eventually("resources listed", WAIT, || manager.resources().len() == 2);
    let resources = manager.resources();
    assert!(resources.iter().all(|r| r.server == "rich"));
    assert_eq!(resources[1].item.uri, "test://b", "both pages");
    // Each is offered under a name of its server's, unique among the resources.
    let names: std::collections::BTreeSet<&str> =
        resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("mcp_rich_")),
        "{names:?}"
    );
    let templates = manager.resource_templates();
    assert_eq!(templates[0].item.uri_template, "test://item/{id}");
    let prompts = manager.prompts();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "mcp_rich_greet");
    // Reading, text and blob as sent.
    let text = manager.read_resource("rich", "test://a").unwrap();
    assert_eq!(
        text.contents[0].text.as_deref(),
        Some("contents of test://a")
    );
    let blob = manager.read_resource("rich", "test://b").unwrap();
    assert_eq!(blob.contents[0].blob.as_deref(), Some("AAEC"));
    // A subscription's updates reach the host's handler.
    manager.subscribe_resource("rich", "test://a").unwrap();
    let update = updates
        .iter()
        .find(|(method, _)| method == "notifications/resources/updated")
        .unwrap();
    assert_eq!(update.1.unwrap()["uri"], "test://a");
    manager.unsubscribe_resource("rich", "test://a").unwrap();
    // Prompts, completions, the log level.
    let prompt = manager
        .get_prompt("rich", "greet", json!({"who": "Ada"}))
        .unwrap();
    assert_eq!(prompt.messages[0].content.as_text(), Some("Hello, Ada!"));
    let done = manager
        .complete(
            "rich",
            &CompletionRef::Prompt("greet".into()),
            "who",
            "al",
            None,
        )
        .unwrap();
    assert_eq!(done.values, ["alice", "alan"]);
    manager.set_log_level("rich", LoggingLevel::Debug).unwrap();
    // A server with none of it offers nothing, and a call needing it says so.
    assert!(manager.read_resource("plain", "test://a").is_err());
    manager.disconnect_all();
    assert!(manager.resources().is_empty() && manager.prompts().is_empty());
}

#[test]
fn prompts_list_changed_refreshes_and_tells_the_host() {
    let (manager, _) = connect(&[("rich", &["--features"])]);
    common::eventually("prompts listed", WAIT, || manager.prompts().len() == 1);
    let (tx, changed) = crossbeam_channel::unbounded();
    manager.on_features_changed(move |c| {
        let _ = tx.send(c.to_vec());
    });
    common::call_tool(&manager, "rich", "features_changed", json!({})).unwrap();
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(20)).unwrap(),
        ["rich"]
    );
    common::eventually("the new prompt", WAIT, || manager.prompts().len() == 2);
    let names: Vec<String> = manager
        .prompts()
        .iter()
        .map(|p| p.item.name.clone())
        .collect();
    assert_eq!(names, ["greet", "late_prompt"]);
    manager.disconnect_all();
}

#[test]
fn server_info_has_identity_capabilities_and_instructions() {
    let (manager, _) = connect(&[("rich", &["--features"])]);
    let client = manager.client("rich").unwrap();
    assert_eq!(client.server_info().name, "mcp-test-server");
    assert_eq!(client.instructions().as_deref(), Some("Use echo to test."));
    assert!(client.server_capabilities().prompts.is_some());
    assert_eq!(client.transport_kind(), "stdio");
    assert!(manager.client("nobody").is_none());
    manager.disconnect_all();
}

#[test]
fn a_server_still_connecting_offers_the_features_it_listed_last_time() {
    use mcp_runtime::manager::{FileToolCache, ToolCache as _};
    let dir = common::temp_dir("features-cache");
    let _ = std::fs::remove_dir_all(&dir);
    let cache = Arc::new(FileToolCache::new(&dir));
    let hold = common::Hold::new();
    let config = ServerConfig::stdio(server_path(), ["--features", "--hold-port", &hold.port()]);
    let configs = BTreeMap::from([("rich".to_owned(), config.clone())]);
    let options = |cache: &Arc<FileToolCache>| {
        let mut o = ManagerOptions {
            project_dir: std::env::temp_dir(),
            cache: Some(cache.clone()),
            ..ManagerOptions::default()
        };
        o.connect.timeout = Duration::from_secs(20);
        o
    };
    // First run: it connects (released at once) and its features reach the cache.
    let first = McpManager::new(options(&cache));
    let releasing = std::thread::spawn(move || {
        hold.wait().release();
        hold
    });
    first.connect_servers(&configs);
    let hold = releasing.join().unwrap();
    let hash = mcp_runtime::config::config_hash(&config);
    common::eventually("features cached", WAIT, || {
        cache
            .get_features("rich", &hash)
            .is_some_and(|f| f["prompts"].as_array().is_some_and(|p| p.len() == 1))
    });
    first.disconnect_all();
    // Second run: held in its handshake past the gate, it offers its cached prompts already.
    let second = McpManager::new(options(&cache));
    let report = second.connect_servers(&configs);
    assert_eq!(report.deferred, ["rich"], "{report:?}");
    let prompts = second.prompts();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "mcp_rich_greet");
    assert_eq!(second.resources().len(), 2);
    drop(hold);
    second.disconnect_all();
}

#[test]
fn resource_links_and_embedded_resources_in_a_result_are_followed_in_one_call() {
    let (manager, _) = connect(&[("rich", &["--features"])]);
    let out = common::call_tool(&manager, "rich", "rich", json!({})).unwrap();
    let link = out
        .content
        .iter()
        .find(|b| b.kind() == "resource_link")
        .unwrap();
    let read = manager.follow_resource("rich", link).unwrap();
    assert_eq!(
        read.contents[0].text.as_deref(),
        Some("contents of file:///tmp/a.txt")
    );
    let embedded = out.content.iter().find(|b| b.kind() == "resource").unwrap();
    let read = manager.follow_resource("rich", embedded).unwrap();
    assert_eq!(read.contents[0].text.as_deref(), Some("bee"));
    let text = &out.content[0];
    assert!(manager.follow_resource("rich", text).is_err());
    manager.disconnect_all();
}
