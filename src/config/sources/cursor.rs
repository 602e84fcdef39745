//! Cursor: `<cwd>/.cursor/mcp.json` (project), then `~/.cursor/mcp.json` (user).

use super::{load_project_and_user, standard_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, SourceOutput};

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
        load_project_and_user(
            &ctx.cwd.join(".cursor").join("mcp.json"),
            &ctx.home.join(".cursor").join("mcp.json"),
            &standard_entry,
        )
    }
}
