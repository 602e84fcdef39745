//! The project root's `mcp.json` and `.mcp.json`: the shape Claude Code and many tools share,
//! at the lowest priority.

use super::{load_json_servers, standard_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// `<cwd>/mcp.json`, then `<cwd>/.mcp.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpJson;

impl ConfigSource for McpJson {
    fn id(&self) -> &str {
        "mcp-json"
    }

    fn display_name(&self) -> &str {
        "MCP Config"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        for file in ["mcp.json", ".mcp.json"] {
            load_json_servers(
                &mut out,
                &ctx.cwd.join(file),
                Level::Project,
                &["mcpServers"],
                &standard_entry,
            );
        }
        out
    }
}
