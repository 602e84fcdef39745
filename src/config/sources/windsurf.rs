//! Windsurf: `~/.codeium/windsurf/mcp_config.json`, where a remote server's URL may be written
//! `serverUrl`.

use serde_json::Value;

use super::{load_json_servers, standard_entry};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Windsurf's `mcp_config.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Windsurf;

fn entry(name: &str, mut entry: Value) -> Result<ServerConfig, String> {
    if let Some(obj) = entry.as_object_mut() {
        if !obj.contains_key("url") {
            if let Some(url) = obj.remove("serverUrl") {
                obj.insert("url".into(), url);
            }
        }
    }
    standard_entry(name, entry)
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
        load_json_servers(&mut out, &user, Level::User, &["mcpServers"], &entry);
        out
    }
}
