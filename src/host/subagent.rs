//! Subagents: proxy tools that route calls through the parent's manager, so the parent and all
//! its subagents share one process per server.
//!
//! [`subagent_tools`] reflects the parent's tool set *at the time it is asked* (not a
//! snapshot taken when the subagent was spawned), and every proxy resolves its server and tool
//! again at call time. A call waits for the server's connection, is capped (60 s by default),
//! and an abort stays an abort.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::client::CallOptions;
use crate::error::Error;
use crate::manager::McpManager;
use crate::tool::{build_tools, call_through, AgentTool, ToolDetails, ToolOutput};

/// The default cap on one proxied call.
pub const DEFAULT_CALL_CAP: Duration = Duration::from_secs(60);

/// The parent's current MCP tools, for a subagent: proxies over `parent`'s manager (its
/// connections, one process per server for the parent and every subagent), each call capped
/// at `cap` ([`DEFAULT_CALL_CAP`] is the usual). Ask again for the tool set of a later moment.
pub fn subagent_tools(parent: &McpManager, cap: Duration) -> Vec<Arc<dyn AgentTool>> {
    build_tools(parent)
        .into_iter()
        .filter_map(|inner| {
            // A subagent's model is offered them: no tool only an MCP App may call.
            if !inner.mcp_definition()?.visible_to_model() {
                return None;
            }
            let (server, tool) = inner.mcp_identity()?;
            let proxy = ProxyTool {
                server: server.to_owned(),
                tool: tool.to_owned(),
                inner,
                manager: parent.clone(),
                cap,
            };
            Some(Arc::new(proxy) as Arc<dyn AgentTool>)
        })
        .collect()
}

/// One parent tool, seen from a subagent.
#[derive(Clone)]
pub(crate) struct ProxyTool {
    /// The parent's tool object: the presentation is its own (shared, not copied).
    inner: Arc<dyn AgentTool>,
    server: String,
    tool: String,
    manager: McpManager,
    cap: Duration,
}

impl ProxyTool {
    fn details(&self) -> ToolDetails {
        ToolDetails {
            server: self.server.clone(),
            tool: self.tool.clone(),
            source: self.manager.source(&self.server),
        }
    }
}

impl AgentTool for ProxyTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn label(&self) -> &str {
        self.inner.label()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> &Value {
        self.inner.parameters()
    }

    fn execute(&self, arguments: Value, options: CallOptions<'_>) -> Result<ToolOutput, Error> {
        if options.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(Error::Cancelled);
        }
        // The parent's current tool set decides: a tool it no longer has is not called.
        let current = self.manager.has_tool(&self.server, &self.tool);
        if !current {
            return Ok(ToolOutput::error(format!(
                "tool {} of server {} is no longer available",
                self.tool, self.server
            ))
            .with_origin(self.details()));
        }
        let started = std::time::Instant::now();
        match self
            .manager
            .wait_for_client(&self.server, self.cap, options.cancel.as_ref())
        {
            Ok(_) => {}
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) => return Ok(ToolOutput::failed(e, self.details())),
        }
        let left = self.cap.saturating_sub(started.elapsed());
        let capped = CallOptions {
            timeout: Some(options.timeout.map_or(left, |t| t.min(left))),
            ..options
        };
        call_through(
            &self.manager,
            &self.server,
            &self.tool,
            arguments,
            capped,
            self.details(),
        )
    }

    fn mcp_identity(&self) -> Option<(&str, &str)> {
        Some((&self.server, &self.tool))
    }
}

impl std::fmt::Debug for ProxyTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyTool")
            .field("name", &self.inner.name())
            .finish_non_exhaustive()
    }
}
