//! `McpTool`: a tool of a server, connected or (known from the cache) still connecting.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{AgentTool, Spec, ToolOutput};
use crate::client::CallOptions;
use crate::error::Error;
use crate::manager::McpManager;

/// A tool of an MCP server; calls go through the manager to the server's connection.
///
/// A tool whose definition came from the cache while its server is still connecting (a
/// deferred tool: [`AgentTool::is_deferred`]) waits for the server's connection first (its
/// handshake, not its tool listing), bounded by the smaller of the caller's timeout and the
/// server's connect timeout and by the caller's cancel signal, then calls it with what is left
/// of the caller's timeout.
#[derive(Clone)]
pub(crate) struct McpTool {
    pub(crate) spec: Spec,
    pub(crate) manager: McpManager,
    /// For a deferred tool, how long a call waits for the server's connection at most.
    pub(crate) wait: Option<Duration>,
}

impl McpTool {
    /// Waits for a deferred tool's server, then calls it with what is left of the caller's
    /// timeout.
    fn call_deferred(
        &self,
        wait: Duration,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<ToolOutput, Error> {
        let started = Instant::now();
        let bound = options.timeout.map_or(wait, |t| t.min(wait));
        let waited =
            self.manager
                .wait_for_client(&self.spec.server, bound, options.cancel.as_ref());
        match waited {
            Ok(_) => {
                let left = options.timeout.map(|t| t.saturating_sub(started.elapsed()));
                let options = CallOptions {
                    timeout: left,
                    ..options
                };
                self.spec.call(&self.manager, arguments, options)
            }
            Err(Error::Cancelled) => Err(Error::Cancelled),
            // The caller's own bound ran out first: a timeout of its call, not of the server.
            Err(Error::ConnectTimeout { .. }) if bound < wait => {
                let e = Error::Timeout {
                    method: crate::protocol::methods::TOOLS_CALL.to_owned(),
                    after: bound,
                };
                Ok(ToolOutput::failed(e, self.spec.details()))
            }
            Err(e) => Ok(ToolOutput::failed(e, self.spec.details())),
        }
    }
}

impl AgentTool for McpTool {
    spec_accessors!();

    fn is_deferred(&self) -> bool {
        self.wait.is_some()
    }

    fn execute(&self, arguments: Value, options: CallOptions<'_>) -> Result<ToolOutput, Error> {
        if let Some(wait) = self.wait {
            return self.call_deferred(wait, arguments, options);
        }
        if options.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(Error::Cancelled);
        }
        self.spec.call(&self.manager, arguments, options)
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("deferred", &self.is_deferred())
            .finish_non_exhaustive()
    }
}
