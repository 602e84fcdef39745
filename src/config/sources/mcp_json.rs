//! The project root's `mcp.json`: the `.mcp.json` shape without the dot, which some tools and
//! many READMEs use, at the lowest priority. (`.mcp.json` itself is Claude Code's project scope
//! and is read by the Claude Code source, with Claude Code's precedence and approval state.)

use super::{load_json_servers, standard_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// `<cwd>/mcp.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProjectMcpJson;

impl ConfigSource for ProjectMcpJson {
    fn id(&self) -> &str {
        "mcp-json"
    }

    fn display_name(&self) -> &str {
        "MCP Config"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        load_json_servers(
            &mut out,
            &ctx.cwd.join("mcp.json"),
            Level::Project,
            &["mcpServers"],
            &standard_entry,
        );
        out
    }
}
