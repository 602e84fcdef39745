//! Windsurf: `~/.codeium/windsurf/mcp_config.json`, as Windsurf reads it: a remote server's URL
//! may be written `serverUrl`; `${env:NAME}` is replaced (Windsurf's only variable syntax here;
//! a `${NAME}` stays as written); `disabled: true` turns a server off and `disabledTools` hides
//! tools.

use serde_json::Value;

use super::{editor_entry, load_json_servers, rename};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Windsurf's `mcp_config.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Windsurf;

fn entry(ctx: &DiscoveryContext, mut entry: Value) -> Result<ServerConfig, String> {
    rename(&mut entry, "serverUrl", "url");
    editor_entry(ctx, &["env"], false, entry)
}

impl ConfigSource for Windsurf {
    fn id(&self) -> &str {
        "windsurf"
    }

    fn display_name(&self) -> &str {
        "Windsurf"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let user = ctx
            .home
            .join(".codeium")
            .join("windsurf")
            .join("mcp_config.json");
        load_json_servers(&mut out, &user, Level::User, &["mcpServers"], &|_, e| {
            entry(ctx, e)
        });
        out
    }
}
