//! Continue: the `mcpServers` list of `~/.continue/config.yaml` (user), and the block files in
//! `<cwd>/.continue/mcpServers/` (project) and `~/.continue/mcpServers/` (user): YAML blocks
//! (`name`, `version`, `schema`, `mcpServers: [...]`) and JSON files in the Claude / Cursor
//! shape (`{"mcpServers": {...}}`), which Continue picks up as they are. Files in a directory
//! are read in name order; `config.yaml` comes first.
//!
//! A YAML entry: `name`, `command`, `args`, `env`, `cwd`, `type` (`stdio`, `sse`,
//! `streamable-http`), `url`, `requestOptions.headers`, `connectionTimeout` (ms). Continue's
//! `${{ secrets.NAME }}` and `${{ inputs.NAME }}` live in Continue Hub and cannot be read here:
//! a server that uses one is reported as a problem that says so.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::yaml::read_yaml;
use super::{plain_entry, read_json, servers_at};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Continue's `config.yaml` and `mcpServers` block files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Continue;

fn uses_hub_values(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("${{"),
        Value::Array(a) => a.iter().any(uses_hub_values),
        Value::Object(m) => m.values().any(uses_hub_values),
        _ => false,
    }
}

fn convert(entry: &Value) -> Result<ServerConfig, String> {
    if uses_hub_values(entry) {
        return Err(
            "uses ${{ secrets.* }} or ${{ inputs.* }}, which Continue resolves from Continue Hub; \
             put the value in the environment or the file instead"
                .into(),
        );
    }
    let Some(obj) = entry.as_object() else {
        return Err("the server entry is not a mapping".into());
    };
    let mut out = Map::new();
    for key in ["command", "args", "env", "cwd", "url", "type"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(h) = obj.get("requestOptions").and_then(|r| r.get("headers")) {
        out.insert("headers".into(), h.clone());
    }
    if let Some(t) = obj.get("connectionTimeout") {
        out.insert("timeout".into(), t.clone());
    }
    plain_entry(Value::Object(out))
}

fn load_list(out: &mut SourceOutput, root: &Value, path: &Path, level: Level) {
    let Some(list) = root.get("mcpServers") else {
        return;
    };
    let Some(list) = list.as_array() else {
        if !list.is_null() {
            out.warn(path, "\"mcpServers\" is not a list");
        }
        return;
    };
    for (i, entry) in list.iter().enumerate() {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("mcp-server-{}", i + 1));
        out.entry(&name, path, level, convert(entry));
    }
}

fn load_dir(out: &mut SourceOutput, dir: &Path, level: Level) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    for file in files {
        match file.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => {
                if let Some(root) = read_yaml(out, &file) {
                    load_list(out, &root, &file, level);
                }
            }
            Some("json") => {
                if let Some(root) = read_json(out, &file) {
                    servers_at(out, &root, &file, level, &["mcpServers"], &|_, e| {
                        plain_entry(e)
                    });
                }
            }
            _ => {}
        }
    }
}

impl ConfigSource for Continue {
    fn id(&self) -> &str {
        "continue"
    }

    fn display_name(&self) -> &str {
        "Continue"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let user = ctx.home.join(".continue");
        let config = user.join("config.yaml");
        if let Some(root) = read_yaml(&mut out, &config) {
            load_list(&mut out, &root, &config, Level::User);
        }
        load_dir(
            &mut out,
            &ctx.cwd.join(".continue").join("mcpServers"),
            Level::Project,
        );
        load_dir(&mut out, &user.join("mcpServers"), Level::User);
        out
    }
}
