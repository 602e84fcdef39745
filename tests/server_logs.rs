//! A server's `notifications/message` reaches the host's handler (`on_log_message`), directly
//! and through the manager.

mod common;

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::McpManager;
use mcp_runtime::protocol::LoggingLevel;
use mcp_runtime::{Client, ClientHandler, ManagerOptions};
use serde_json::{json, Value};

/// A log message as the handler got it.
#[derive(Debug)]
struct Logged {
    level: LoggingLevel,
    logger: Option<String>,
    data: Value,
}

struct Logs(Sender<(String, Logged)>);

impl ClientHandler for Logs {
    fn on_log_message(
        &self,
        server: &str,
        level: LoggingLevel,
        logger: Option<&str>,
        data: &Value,
    ) {
        let logger = logger.map(str::to_owned);
        let _ = self.0.send((
            server.to_owned(),
            Logged {
                level,
                logger,
                data: data.clone(),
            },
        ));
    }
}

fn handler() -> (Arc<Logs>, Receiver<(String, Logged)>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    (Arc::new(Logs(tx)), rx)
}

#[test]
fn a_log_message_reaches_the_client_handler() {
    let (logs, rx) = handler();
    let mut options = common::options();
    options.handler = logs;
    let client = Client::connect("srv", &common::endpoint(&[]), options).unwrap();
    let args = json!({"level": "warning", "message": "disk almost full"});
    client.call_tool("log", args).unwrap();
    let (server, message) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(server, "srv");
    assert_eq!(message.level, LoggingLevel::Warning);
    assert_eq!(message.logger.as_deref(), Some("test"));
    assert_eq!(message.data, json!("disk almost full"));
    client.close();
}

#[test]
fn the_manager_forwards_log_messages_to_the_hosts_handler() {
    let (logs, rx) = handler();
    let mut options = ManagerOptions::default();
    options.connect = common::options();
    options.connect.handler = logs;
    let manager = McpManager::new(options);
    let config: ServerConfig =
        serde_json::from_value(json!({"command": common::server_path()})).unwrap();
    let report = manager.connect_servers(&[("logger".to_owned(), config)].into_iter().collect());
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let args = json!({"level": "error", "message": {"code": 7}});
    let out = common::call_tool(&manager, "logger", "log", args).unwrap();
    assert!(!out.is_error());
    let (server, message) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(server, "logger");
    assert_eq!(message.level, LoggingLevel::Error);
    assert_eq!(message.data, json!({"code": 7}));
    manager.disconnect_all();
}
