//! The client handler the manager gives each connection: it forwards everything to the host's
//! handler, and also refreshes the server's tools on `tools/list_changed` (and its tools and
//! features when the client established a new session with it) and notices a dead transport
//! at once.

use std::sync::{Arc, Weak};

use serde_json::Value;

use super::runtime::Refresh;
use super::Shared;
use crate::client::ClientHandler;
use crate::error::Error;
use crate::jsonrpc::RpcError;
use crate::protocol::{methods, ClientCapabilities, LoggingLevel, Root};

pub(crate) struct ManagedHandler {
    manager: Weak<Shared>,
    server: String,
    attempt: u64,
    host: Arc<dyn ClientHandler>,
}

impl ManagedHandler {
    pub(crate) fn new(
        manager: Weak<Shared>,
        server: &str,
        attempt: u64,
        host: Arc<dyn ClientHandler>,
    ) -> ManagedHandler {
        ManagedHandler {
            manager,
            server: server.to_owned(),
            attempt,
            // The manager's own work in each callback is done whatever the host's does.
            host: crate::client::CaughtHandler::wrap(host),
        }
    }
}

impl ClientHandler for ManagedHandler {
    fn capabilities(&self) -> ClientCapabilities {
        self.host.capabilities()
    }

    fn list_roots(&self, server: &str) -> Result<Vec<Root>, RpcError> {
        self.host.list_roots(server)
    }

    fn create_message(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        self.host.create_message(server, params)
    }

    fn elicit(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        self.host.elicit(server, params)
    }

    fn trace_context(&self, server: &str) -> Option<serde_json::Map<String, Value>> {
        self.host.trace_context(server)
    }

    fn on_tools_list_changed(&self, server: &str) {
        // Coalesced, and run on a manager thread: a flood of notifications costs a refresh or two.
        if let Some(manager) = self.manager.upgrade() {
            manager.request_refresh(&self.server, Refresh::Tools);
        }
        self.host.on_tools_list_changed(server);
    }

    fn on_session_reinitialized(&self, server: &str) {
        // A new session may be a new server behind the same URL: list what it offers again
        // (on manager threads, coalesced with any list_changed refresh).
        if let Some(manager) = self.manager.upgrade() {
            manager.request_refresh(&self.server, Refresh::Tools);
            manager.request_refresh(&self.server, Refresh::Features);
        }
        self.host.on_session_reinitialized(server);
    }

    fn on_notification(&self, server: &str, method: &str, params: Option<&Value>) {
        if matches!(
            method,
            methods::RESOURCES_LIST_CHANGED | methods::PROMPTS_LIST_CHANGED
        ) {
            if let Some(manager) = self.manager.upgrade() {
                manager.request_refresh(&self.server, Refresh::Features);
            }
        }
        self.host.on_notification(server, method, params);
    }

    fn on_log_message(
        &self,
        server: &str,
        level: LoggingLevel,
        logger: Option<&str>,
        data: &Value,
    ) {
        self.host.on_log_message(server, level, logger, data);
    }

    fn on_connection_closed(&self, server: &str, reason: &Error) {
        if let Some(manager) = self.manager.upgrade() {
            manager.transport_died(&self.server, self.attempt, reason);
        }
        self.host.on_connection_closed(server, reason);
    }
}
