//! Gemini CLI: `<cwd>/.gemini/settings.json` (project), then `~/.gemini/settings.json` (user).
//! `httpUrl` is a Streamable HTTP server, `url` a legacy SSE one; `includeTools` /
//! `excludeTools` are the tool filters.

use serde_json::Value;

use super::{load_project_and_user, standard_entry};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, SourceOutput};

/// Gemini CLI's `settings.json` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gemini;

fn entry(name: &str, mut entry: Value) -> Result<ServerConfig, String> {
    if let Some(obj) = entry.as_object_mut() {
        if let Some(http) = obj.remove("httpUrl") {
            obj.insert("url".into(), http);
            obj.entry("type").or_insert_with(|| "http".into());
        } else if obj.contains_key("url") {
            obj.entry("type").or_insert_with(|| "sse".into());
        }
        for (from, to) in [
            ("includeTools", "enabledTools"),
            ("excludeTools", "disabledTools"),
        ] {
            if let Some(v) = obj.remove(from) {
                obj.insert(to.into(), v);
            }
        }
    }
    standard_entry(name, entry)
}

impl ConfigSource for Gemini {
    fn id(&self) -> &str {
        "gemini"
    }

    fn display_name(&self) -> &str {
        "Gemini CLI"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        load_project_and_user(
            &ctx.cwd.join(".gemini").join("settings.json"),
            &ctx.home.join(".gemini").join("settings.json"),
            &entry,
        )
    }
}
