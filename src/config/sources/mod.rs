//! The built-in config sources, one file each, and the helpers they share.
//!
//! Priority, highest first: the host's own config, Claude Code, Claude Desktop, Codex, Gemini
//! CLI, Cursor, Windsurf, VS Code, Zed, opencode, Goose, Cline, Roo Code, Continue, Amazon Q,
//! Junie, then the project root's `mcp.json`. Each source expands its own tool's variable
//! syntax only (see `config::expand`), and reads files through `read_text` (regular files,
//! size caps).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::expand::{expand_editor_value, expand_value, process_env, EditorVars};
use super::file::{read_text, CONFIG_FILE_CAP};
use super::jsonc::{self, ReadError};
use super::server::ServerConfig;
use super::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

mod amazonq;
mod claude;
mod claude_desktop;
mod cline;
mod codex;
mod continue_dev;
mod cursor;
mod file;
mod gemini;
mod goose;
mod junie;
mod mcp_json;
mod opencode;
mod own;
mod vscode;
mod windsurf;
pub(crate) mod yaml;
mod zed;

pub use amazonq::AmazonQ;
pub(crate) use claude::ClaudeCode;
pub use claude_desktop::ClaudeDesktop;
pub use cline::{Cline, RooCode};
pub use codex::Codex;
pub use continue_dev::Continue;
pub use cursor::Cursor;
pub(crate) use file::McpJsonFile;
pub use gemini::{Gemini, GEMINI_DEFAULT_TIMEOUT_MS};
pub use goose::Goose;
pub use junie::Junie;
pub use mcp_json::ProjectMcpJson;
pub use opencode::OpenCode;
pub use own::{HostConfig, DEFAULT_DIR_NAME};
pub use vscode::VsCode;
pub use windsurf::Windsurf;
pub use zed::Zed;

/// The built-in source with this id (`claude`, `claude-desktop`, `codex`, `gemini`,
/// `cursor`, `windsurf`, `vscode`, `zed`, `opencode`, `goose`, `cline`, `roo`, `continue`,
/// `amazonq`, `junie`, `mcp-json`), for a host that reads only some of them
/// ([`DiscoveryOptions::sources`](crate::config::DiscoveryOptions::sources)).
pub fn builtin_source(id: &str) -> Option<Arc<dyn ConfigSource>> {
    default_sources(HostConfig::default())
        .into_iter()
        .skip(1)
        .find(|s| s.id() == id)
}

/// A source reading one `{"mcpServers": {...}}` file, its servers project-level (they come
/// with neither the user's own files nor a tool's): for a `--config FILE` host, or an extra
/// location of the host's own.
pub fn file_source(path: impl Into<std::path::PathBuf>) -> Arc<dyn ConfigSource> {
    Arc::new(McpJsonFile::new(path))
}

/// Every built-in source in priority order, with `host` as the first.
pub fn default_sources(host: HostConfig) -> Vec<Arc<dyn ConfigSource>> {
    vec![
        Arc::new(host),
        Arc::new(ClaudeCode::default()),
        Arc::new(ClaudeDesktop),
        Arc::new(Codex),
        Arc::new(Gemini),
        Arc::new(Cursor),
        Arc::new(Windsurf),
        Arc::new(VsCode),
        Arc::new(Zed),
        Arc::new(OpenCode),
        Arc::new(Goose),
        Arc::new(Cline),
        Arc::new(RooCode),
        Arc::new(Continue),
        Arc::new(AmazonQ),
        Arc::new(Junie),
        Arc::new(ProjectMcpJson),
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

/// The `.mcp.json` entry shape as written, no variable expanded (for sources that expanded
/// their own tool's syntax already, or whose tool has none).
pub(crate) fn plain_entry(entry: Value) -> Result<ServerConfig, String> {
    if !entry.is_object() {
        return Err("the server entry is not an object".into());
    }
    serde_json::from_value(entry).map_err(|e| e.to_string())
}

/// The variables of the VS Code family (Cursor's documented set).
pub(crate) const EDITOR_VARS: &[&str] = &[
    "env",
    "userHome",
    "workspaceFolder",
    "workspaceFolderBasename",
    "pathSeparator",
    "/",
];

/// An entry of an editor of the VS Code family: its variables expanded (only those in
/// `known`), `envFile` read (relative to the project) when the tool has one, then the
/// `.mcp.json` shape.
pub(crate) fn editor_entry(
    ctx: &DiscoveryContext,
    known: &[&str],
    env_file: bool,
    mut entry: Value,
) -> Result<ServerConfig, String> {
    let vars = EditorVars {
        cwd: &ctx.cwd,
        home: &ctx.home,
        inputs: None,
        known,
    };
    expand_editor_value(&mut entry, &vars)
        .map_err(|id| format!("${{input:{id}}} is not supported here"))?;
    let env_file = entry
        .as_object_mut()
        .filter(|_| env_file)
        .and_then(|o| o.remove("envFile"))
        .and_then(|v| v.as_str().map(str::to_owned));
    let mut config = plain_entry(entry)?;
    if let Some(file) = env_file {
        apply_env_file(&mut config, &ctx.cwd.join(file))?;
    }
    Ok(config)
}

/// Adds a dotenv file's variables to `env` (an entry written in `env` wins).
/// An editor's own proxy (Zed's `proxy`, VS Code's `http.proxy`) for the remote server at
/// `url`, as the editor would use it: not for a loopback host, nor one the environment's
/// `no_proxy` or the editor's own exceptions (`no_proxy`: VS Code's `http.noProxy`) name. The
/// server's own `proxy` is used for any host, so an editor's is only given where it applies.
pub(crate) fn editor_proxy(url: &str, proxy: &str, no_proxy: &[String]) -> Option<String> {
    use crate::net::proxy::{NoProxy, ProxyEnv};
    let host = crate::net::url::Url::parse(url).ok()?.host;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let bypassed = ProxyEnv::from_process().bypasses(host)
        || NoProxy::parse(&no_proxy.join(",")).matches(host);
    (!bypassed).then(|| proxy.to_owned())
}

pub(crate) fn apply_env_file(config: &mut ServerConfig, file: &Path) -> Result<(), String> {
    let vars = read_env_file(file).map_err(|e| format!("envFile {}: {e}", file.display()))?;
    for (k, v) in vars {
        config.env.entry(k).or_insert(v);
    }
    Ok(())
}

/// Reads a dotenv file: `KEY=VALUE` lines, `#` comments, optional `export`, quotes stripped.
fn read_env_file(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = read_text(path, CONFIG_FILE_CAP).map_err(|e| match e {
        ReadError::Missing => "no such file".to_owned(),
        ReadError::Bad(e) => e,
    })?;
    let mut vars = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(v);
        vars.insert(k.trim().to_owned(), v.to_owned());
    }
    Ok(vars)
}

/// Renames `from` to `to` in an entry (when `to` is not set already).
pub(crate) fn rename(entry: &mut Value, from: &str, to: &str) {
    if let Some(obj) = entry.as_object_mut() {
        if !obj.contains_key(to) {
            if let Some(v) = obj.remove(from) {
                obj.insert(to.to_owned(), v);
            }
        }
    }
}

/// A timeout in seconds (a number or a numeric string) as milliseconds.
pub(crate) fn seconds_as_ms(v: Option<&Value>) -> Option<u64> {
    let secs = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    (secs > 0.0).then_some((secs * 1000.0) as u64)
}

/// The `.mcp.json` entry shape, with `${VAR}` expanded.
pub(crate) fn standard_entry(_name: &str, mut entry: Value) -> Result<ServerConfig, String> {
    if !entry.is_object() {
        return Err("the server entry is not an object".into());
    }
    expand_value(&mut entry, &process_env);
    serde_json::from_value(entry).map_err(|e| e.to_string())
}
