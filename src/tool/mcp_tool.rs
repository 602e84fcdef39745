//! [`McpTool`]: a tool of a connected server.

use serde_json::Value;

use super::{Aborted, AgentTool, Spec, ToolContext, ToolOutput};
use crate::manager::McpManager;

/// A tool of a connected server; calls go through the manager to the server's connection.
#[derive(Clone)]
pub struct McpTool {
    pub(crate) spec: Spec,
    pub(crate) manager: McpManager,
}

impl AgentTool for McpTool {
    spec_accessors!();

    fn execute(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, Aborted> {
        if ctx.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(Aborted);
        }
        self.spec.call(&self.manager, arguments, ctx)
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}
