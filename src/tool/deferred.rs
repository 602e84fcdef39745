//! [`DeferredMcpTool`]: a tool known from the cache while its server is still connecting.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Aborted, AgentTool, Spec, ToolContext, ToolOutput};
use crate::error::Error;
use crate::manager::McpManager;

/// A tool whose definition came from the cache; a call waits for the server's connection (its
/// handshake, not its tool listing), bounded by the smaller of the caller's timeout and the
/// server's connect timeout and by the caller's cancel signal, then calls it with what is left
/// of the caller's timeout.
#[derive(Clone)]
pub struct DeferredMcpTool {
    pub(crate) spec: Spec,
    pub(crate) manager: McpManager,
    pub(crate) wait: Duration,
}

impl AgentTool for DeferredMcpTool {
    spec_accessors!();

    fn execute(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, Aborted> {
        let started = Instant::now();
        let bound = ctx.timeout.map_or(self.wait, |t| t.min(self.wait));
        let waited = self
            .manager
            .wait_for_client(&self.spec.server, bound, ctx.cancel.as_ref());
        match waited {
            Ok(_) => {
                let left = ctx.timeout.map(|t| t.saturating_sub(started.elapsed()));
                let ctx = ToolContext {
                    timeout: left,
                    ..ctx.clone()
                };
                self.spec.call(&self.manager, arguments, &ctx)
            }
            Err(Error::Cancelled) => Err(Aborted),
            // The caller's own bound ran out first: a timeout of its call, not of the server.
            Err(Error::ConnectTimeout { .. }) if bound < self.wait => {
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

impl std::fmt::Debug for DeferredMcpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredMcpTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}
