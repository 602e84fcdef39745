//! The built-in config sources, one file each, and the helpers they share.
//!
//! Priority, highest first: the host's own config, Claude Code, Codex, Gemini CLI, Cursor,
//! Windsurf, VS Code, then the project root's `mcp.json` / `.mcp.json`.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::expand::{expand_value, process_env};
use super::file::CONFIG_FILE_CAP;
use super::jsonc::{self, ReadError};
use super::server::ServerConfig;
use super::source::{ConfigSource, Level, SourceOutput};

mod claude;
mod codex;
mod cursor;
mod file;
mod gemini;
mod mcp_json;
mod own;
mod vscode;
mod windsurf;

pub use claude::ClaudeCode;
pub use codex::Codex;
pub use cursor::Cursor;
pub use file::McpJsonFile;
pub use gemini::Gemini;
pub use mcp_json::McpJson;
pub use own::{HostConfig, DEFAULT_DIR_NAME};
pub use vscode::VsCode;
pub use windsurf::Windsurf;

/// Every built-in source in priority order, with `host` as the first.
pub fn default_sources(host: HostConfig) -> Vec<Arc<dyn ConfigSource>> {
    vec![
        Arc::new(host),
        Arc::new(ClaudeCode::default()),
        Arc::new(Codex),
        Arc::new(Gemini),
        Arc::new(Cursor),
        Arc::new(Windsurf),
        Arc::new(VsCode),
        Arc::new(McpJson),
    ]
}

/// The usual pair of files: a project one, then a user one, each with its servers under
/// `mcpServers`.
pub(crate) fn load_project_and_user(
    project: &Path,
    user: &Path,
    convert: &dyn Fn(&str, Value) -> Result<ServerConfig, String>,
) -> SourceOutput {
    let mut out = SourceOutput::default();
    load_json_servers(&mut out, project, Level::Project, &["mcpServers"], convert);
    load_json_servers(&mut out, user, Level::User, &["mcpServers"], convert);
    out
}

/// Reads the servers object at `key_path` of a JSON file, converting each entry. A missing
/// file or key is nothing; a malformed file is a warning; a bad entry is a problem.
pub(crate) fn load_json_servers(
    out: &mut SourceOutput,
    path: &Path,
    level: Level,
    key_path: &[&str],
    convert: &dyn Fn(&str, Value) -> Result<ServerConfig, String>,
) {
    if let Some(root) = read_json(out, path) {
        servers_at(out, &root, path, level, key_path, convert);
    }
}

/// Reads a JSON (with comments) file; `None` when missing or (with a warning) malformed, not
/// a regular file, or over the 4 MiB cap.
pub(crate) fn read_json(out: &mut SourceOutput, path: &Path) -> Option<Value> {
    read_json_capped(out, path, CONFIG_FILE_CAP)
}

/// [`read_json`] with another size cap.
pub(crate) fn read_json_capped(out: &mut SourceOutput, path: &Path, cap: u64) -> Option<Value> {
    match jsonc::read_capped(path, cap) {
        Ok(v) => Some(v),
        Err(ReadError::Missing) => None,
        Err(ReadError::Bad(e)) => {
            out.warn(path, e);
            None
        }
    }
}

/// Converts the servers object at `key_path` inside `root`.
pub(crate) fn servers_at(
    out: &mut SourceOutput,
    root: &Value,
    path: &Path,
    level: Level,
    key_path: &[&str],
    convert: &dyn Fn(&str, Value) -> Result<ServerConfig, String>,
) {
    let mut node = root;
    for key in key_path {
        match node.get(key) {
            Some(next) => node = next,
            None => return,
        }
    }
    let Some(servers) = node.as_object() else {
        if !node.is_null() {
            out.warn(path, format!("\"{}\" is not an object", key_path.join(".")));
        }
        return;
    };
    for (name, entry) in servers {
        out.entry(name, path, level, convert(name, entry.clone()));
    }
}

/// The `.mcp.json` entry shape, with `${VAR}` expanded.
pub(crate) fn standard_entry(_name: &str, mut entry: Value) -> Result<ServerConfig, String> {
    if !entry.is_object() {
        return Err("the server entry is not an object".into());
    }
    expand_value(&mut entry, &process_env);
    serde_json::from_value(entry).map_err(|e| e.to_string())
}
