//! Zed: `context_servers` in `<cwd>/.zed/settings.json` (project) and the user's
//! `settings.json` (`~/.config/zed/settings.json` on Linux and macOS, `%APPDATA%\Zed\` on
//! Windows), project first as in Zed. Both entry shapes Zed has used: `{"command": "npx",
//! "args": [...], "env": {...}}` and the older `{"command": {"path": ..., "args": [...],
//! "env": {...}}, "settings": {...}}`; a remote server is `{"url": ..., "headers": {...}}`.
//! An entry with neither a command nor a URL configures a server a Zed extension provides: it
//! is not an MCP server config, and is skipped. Zed expands no variables.

use serde_json::Value;

use super::{plain_entry, read_json};
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Zed's `settings.json` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Zed;

impl Zed {
    /// The user's settings file.
    pub fn user_file(ctx: &DiscoveryContext) -> std::path::PathBuf {
        let dir = if cfg!(windows) { "Zed" } else { "zed" };
        ctx.config_dir.join(dir).join("settings.json")
    }
}

fn load_file(out: &mut SourceOutput, path: &std::path::Path, level: Level) {
    let Some(root) = read_json(out, path) else {
        return;
    };
    let Some(servers) = root.get("context_servers") else {
        return;
    };
    let Some(servers) = servers.as_object() else {
        return out.warn(path, "\"context_servers\" is not an object");
    };
    // Zed's own proxy (`"proxy"` at the top of its settings) is the proxy of its remote
    // servers, unless one names its own.
    let proxy = root
        .get("proxy")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty());
    for (name, entry) in servers {
        let mut entry = entry.clone();
        if let Some(obj) = entry.as_object_mut() {
            let url = obj.get("url").and_then(Value::as_str);
            if let (Some(proxy), Some(url), false) = (proxy, url, obj.contains_key("proxy")) {
                if let Some(p) = super::editor_proxy(url, proxy, &[]) {
                    obj.insert("proxy".into(), Value::String(p));
                }
            }
            if let Some(Value::Object(cmd)) = obj.get("command").cloned() {
                obj.remove("command");
                for (from, to) in [("path", "command"), ("args", "args"), ("env", "env")] {
                    if let Some(v) = cmd.get(from) {
                        obj.insert(to.into(), v.clone());
                    }
                }
            }
            if !obj.contains_key("command") && !obj.contains_key("url") {
                log::debug!("Zed context server {name} comes from a Zed extension; skipped");
                continue;
            }
            obj.remove("source");
        }
        out.entry(name, path, level, plain_entry(entry));
    }
}

impl ConfigSource for Zed {
    fn id(&self) -> &str {
        "zed"
    }

    fn display_name(&self) -> &str {
        "Zed"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        load_file(
            &mut out,
            &ctx.cwd.join(".zed").join("settings.json"),
            Level::Project,
        );
        load_file(&mut out, &Zed::user_file(ctx), Level::User);
        out
    }
}
