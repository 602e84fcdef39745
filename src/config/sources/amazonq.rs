//! Amazon Q Developer: `<cwd>/.amazonq/mcp.json` (workspace, which wins) and
//! `~/.aws/amazonq/mcp.json` (global): `mcpServers` with `command`, `args`, `env`, `timeout`
//! (ms), `disabled`, and `type` / `url` / `headers` for remote servers. No variables.

use super::{load_project_and_user, plain_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, SourceOutput};

/// Amazon Q Developer's `mcp.json` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct AmazonQ;

impl ConfigSource for AmazonQ {
    fn id(&self) -> &str {
        "amazonq"
    }

    fn display_name(&self) -> &str {
        "Amazon Q"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        load_project_and_user(
            &ctx.cwd.join(".amazonq").join("mcp.json"),
            &ctx.home.join(".aws").join("amazonq").join("mcp.json"),
            &|_, e| plain_entry(e),
        )
    }
}
