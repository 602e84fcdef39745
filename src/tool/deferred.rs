//! [`DeferredMcpTool`]: a tool known from the cache while its server is still connecting.

use std::time::Duration;

use serde_json::Value;

use super::{Aborted, Spec, Tool, ToolContext, ToolOutput};
use crate::manager::McpManager;
use crate::Error;

/// A tool whose definition came from the cache; a call waits for the server's connection
/// (bounded by the server's connect timeout and the caller's cancel signal), then calls it.
#[derive(Clone)]
pub struct DeferredMcpTool {
    pub(crate) spec: Spec,
    pub(crate) manager: McpManager,
    pub(crate) wait: Duration,
}

impl Tool for DeferredMcpTool {
    spec_accessors!();

    fn execute(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, Aborted> {
        match self
            .manager
            .wait_for_connection(&self.spec.server, self.wait, ctx.cancel.as_ref())
        {
            Ok(_) => self.spec.call(&self.manager, arguments, ctx),
            Err(Error::Cancelled) => Err(Aborted),
            Err(e) => Ok(ToolOutput::error(e, self.spec.details())),
        }
    }
}

impl std::fmt::Debug for DeferredMcpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredMcpTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}
