//! JetBrains Junie: `<cwd>/.junie/mcp/mcp.json` (project), then `~/.junie/mcp/mcp.json`
//! (user), in the `.mcp.json` shape. No variables.

use super::{load_project_and_user, plain_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, SourceOutput};

/// Junie's `mcp.json` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Junie;

impl ConfigSource for Junie {
    fn id(&self) -> &str {
        "junie"
    }

    fn display_name(&self) -> &str {
        "Junie"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        load_project_and_user(
            &ctx.cwd.join(".junie").join("mcp").join("mcp.json"),
            &ctx.home.join(".junie").join("mcp").join("mcp.json"),
            &|_, e| plain_entry(e),
        )
    }
}
