//! Cursor: `<cwd>/.cursor/mcp.json` (project), then `~/.cursor/mcp.json` (user).

use super::{load_json_servers, standard_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Cursor's `mcp.json` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor;

impl ConfigSource for Cursor {
    fn id(&self) -> &str {
        "cursor"
    }

    fn display_name(&self) -> &str {
        "Cursor"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let project = ctx.cwd.join(".cursor").join("mcp.json");
        load_json_servers(
            &mut out,
            &project,
            Level::Project,
            &["mcpServers"],
            &standard_entry,
        );
        let user = ctx.home.join(".cursor").join("mcp.json");
        load_json_servers(
            &mut out,
            &user,
            Level::User,
            &["mcpServers"],
            &standard_entry,
        );
        out
    }
}
