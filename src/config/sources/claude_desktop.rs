//! Claude Desktop: `claude_desktop_config.json` in the app's settings directory, user-level:
//! `~/Library/Application Support/Claude/` on macOS, `%APPDATA%\Claude\` on Windows, and
//! `~/.config/Claude/` on Linux (where Claude Desktop has no official build; the community
//! builds use that path). The `.mcp.json` shape; Claude Desktop expands no variables.

use super::{load_json_servers, plain_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Claude Desktop's `claude_desktop_config.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaudeDesktop;

impl ClaudeDesktop {
    /// The config file.
    pub fn config_file(ctx: &DiscoveryContext) -> std::path::PathBuf {
        ctx.app_data_dir()
            .join("Claude")
            .join("claude_desktop_config.json")
    }
}

impl ConfigSource for ClaudeDesktop {
    fn id(&self) -> &str {
        "claude-desktop"
    }

    fn display_name(&self) -> &str {
        "Claude Desktop"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        load_json_servers(
            &mut out,
            &ClaudeDesktop::config_file(ctx),
            Level::User,
            &["mcpServers"],
            &|_, e| plain_entry(e),
        );
        out
    }
}
