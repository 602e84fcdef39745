//! Gemini CLI, as Gemini CLI reads it. Files, highest first: `<cwd>/.gemini/settings.json`
//! (project), `~/.gemini/settings.json` (user), then the `mcpServers` of each installed
//! extension's `gemini-extension.json` (`~/.gemini/extensions/<name>/`, user; and
//! `<cwd>/.gemini/extensions/<name>/`, project): a server in `settings.json` wins over an
//! extension's of the same name, as in Gemini CLI.
//!
//! An entry: `httpUrl` is a Streamable HTTP server, `url` a legacy SSE one; `includeTools` /
//! `excludeTools` are the tool filters; `timeout` (ms) bounds the connect and every tool call,
//! and without it tool calls get Gemini's default of 600 s; `trust` (skip Gemini's own
//! confirmations) has no meaning here and is kept as written. `$VAR` and `${VAR}` are replaced
//! by the variable's value in every string (Gemini CLI's syntax; an unset one stays as
//! written); in an extension, also `${extensionPath}`, `${workspacePath}` and `${/}`.
//!
//! The top-level `mcp.allowed` (only these servers) and `mcp.excluded` (never these) lists
//! turn servers off: `allowed` from the project file when it has one, else the user's;
//! `excluded` from both.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{plain_entry, read_json, rename, servers_at};
use crate::config::expand::{expand_dollar_value, process_env};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput, ToolVerdict};

/// Gemini CLI's default bound on a tool call.
pub const GEMINI_DEFAULT_TIMEOUT_MS: u64 = 600_000;

/// Gemini CLI's `settings.json` files and extensions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gemini;

fn entry(mut entry: Value, extra: &dyn Fn(&str) -> Option<String>) -> Result<ServerConfig, String> {
    expand_dollar_value(&mut entry, &|name| {
        extra(name).or_else(|| process_env(name))
    });
    if let Some(obj) = entry.as_object_mut() {
        if let Some(http) = obj.remove("httpUrl") {
            obj.insert("url".into(), http);
            obj.entry("type").or_insert_with(|| "http".into());
        } else if obj.contains_key("url") {
            obj.entry("type").or_insert_with(|| "sse".into());
        }
    }
    rename(&mut entry, "includeTools", "enabledTools");
    rename(&mut entry, "excludeTools", "disabledTools");
    let mut config = plain_entry(entry)?;
    config.tool_timeout_ms = config
        .tool_timeout_ms
        .or(config.timeout_ms)
        .or(Some(GEMINI_DEFAULT_TIMEOUT_MS));
    Ok(config)
}

fn names(root: Option<&Value>, key: &str) -> Option<HashSet<String>> {
    crate::config::jsonc::strings(root?.get("mcp")?.get(key))
}

fn load_extensions(out: &mut SourceOutput, dir: &Path, level: Level, ctx: &DiscoveryContext) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for ext in dirs {
        let manifest = ext.join("gemini-extension.json");
        let Some(root) = read_json(out, &manifest) else {
            continue;
        };
        let ext_path = ext.to_string_lossy().into_owned();
        let workspace = ctx.cwd.to_string_lossy().into_owned();
        let vars = move |name: &str| match name {
            "extensionPath" => Some(ext_path.clone()),
            "workspacePath" => Some(workspace.clone()),
            "/" | "pathSeparator" => Some(std::path::MAIN_SEPARATOR.to_string()),
            _ => None,
        };
        let convert = |_: &str, mut e: Value| {
            // `${/}` is not a variable name `$`-expansion knows: replace it first.
            replace_all(&mut e, "${/}", std::path::MAIN_SEPARATOR_STR);
            entry(e, &vars)
        };
        servers_at(out, &root, &manifest, level, &["mcpServers"], &convert);
    }
}

fn replace_all(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_all(v, from, to)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_all(v, from, to)),
        _ => {}
    }
}

impl ConfigSource for Gemini {
    fn id(&self) -> &str {
        "gemini"
    }

    fn display_name(&self) -> &str {
        "Gemini CLI"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let project_file = ctx.cwd.join(".gemini").join("settings.json");
        let user_file = ctx.home.join(".gemini").join("settings.json");
        let project = read_json(&mut out, &project_file);
        let user = read_json(&mut out, &user_file);
        let plain = |_: &str, e: Value| entry(e, &|_| None);
        if let Some(root) = &project {
            servers_at(
                &mut out,
                root,
                &project_file,
                Level::Project,
                &["mcpServers"],
                &plain,
            );
        }
        if let Some(root) = &user {
            servers_at(
                &mut out,
                root,
                &user_file,
                Level::User,
                &["mcpServers"],
                &plain,
            );
        }
        load_extensions(
            &mut out,
            &ctx.home.join(".gemini").join("extensions"),
            Level::User,
            ctx,
        );
        load_extensions(
            &mut out,
            &ctx.cwd.join(".gemini").join("extensions"),
            Level::Project,
            ctx,
        );
        let allowed =
            names(project.as_ref(), "allowed").or_else(|| names(user.as_ref(), "allowed"));
        let mut excluded = names(project.as_ref(), "excluded").unwrap_or_default();
        excluded.extend(names(user.as_ref(), "excluded").unwrap_or_default());
        for server in &mut out.servers {
            if excluded.contains(&server.name) {
                server.verdict =
                    ToolVerdict::Disabled("listed in mcp.excluded (Gemini CLI)".into());
            } else if allowed.as_ref().is_some_and(|a| !a.contains(&server.name)) {
                server.verdict = ToolVerdict::Disabled("not in mcp.allowed (Gemini CLI)".into());
            }
        }
        out
    }
}
