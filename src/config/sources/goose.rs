//! Goose: the `extensions` of `~/.config/goose/config.yaml` (`%APPDATA%\Block\goose\config\
//! config.yaml` on Windows), user-level, as Goose documents them:
//!
//! - `type: stdio`: `cmd`, `args`, `envs` (environment), `timeout` (seconds; Goose's bound on
//!   each operation, so the connect and every call here), `enabled`, `available_tools` (a
//!   non-empty list exposes only those tools);
//! - `type: streamable_http`: `uri`, `headers`, and the same `timeout`, `enabled`,
//!   `available_tools`;
//! - `type: sse` (which Goose no longer supports): read as legacy SSE;
//! - `builtin` and `platform` extensions are Goose's own code, not MCP servers: skipped.
//!
//! `env_keys` name secrets Goose keeps in the system keyring; they cannot be read here, and a
//! server that needs them gets them only from the environment (a note says so).

use serde_json::{Map, Value};

use super::yaml::read_yaml;
use super::{plain_entry, seconds_as_ms};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Goose's `config.yaml`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Goose;

impl Goose {
    /// The config file.
    pub fn config_file(ctx: &DiscoveryContext) -> std::path::PathBuf {
        if cfg!(windows) {
            ctx.config_dir
                .join("Block")
                .join("goose")
                .join("config")
                .join("config.yaml")
        } else {
            ctx.config_dir.join("goose").join("config.yaml")
        }
    }
}

fn convert(entry: &Value) -> Result<Option<ServerConfig>, String> {
    let Some(obj) = entry.as_object() else {
        return Err("the extension is not a mapping".into());
    };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("stdio");
    let mut out = Map::new();
    match kind {
        "builtin" | "platform" | "frontend" | "inline_python" => return Ok(None),
        "stdio" => {
            out.insert("type".into(), "stdio".into());
            if let Some(cmd) = obj.get("cmd") {
                out.insert("command".into(), cmd.clone());
            }
            if let Some(args) = obj.get("args") {
                out.insert("args".into(), args.clone());
            }
            if let Some(envs) = obj.get("envs") {
                out.insert("env".into(), envs.clone());
            }
            if let Some(cwd) = obj.get("cwd") {
                out.insert("cwd".into(), cwd.clone());
            }
        }
        "streamable_http" | "sse" => {
            let t = if kind == "sse" { "sse" } else { "http" };
            out.insert("type".into(), t.into());
            if let Some(uri) = obj.get("uri") {
                out.insert("url".into(), uri.clone());
            }
            if let Some(headers) = obj.get("headers") {
                out.insert("headers".into(), headers.clone());
            }
        }
        other => return Err(format!("unknown extension type \"{other}\"")),
    }
    if let Some(enabled) = obj.get("enabled") {
        out.insert("enabled".into(), enabled.clone());
    }
    let tools = obj
        .get("available_tools")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty());
    if let Some(tools) = tools {
        out.insert("enabledTools".into(), Value::Array(tools.clone()));
    }
    let mut config = plain_entry(Value::Object(out))?;
    if let Some(ms) = seconds_as_ms(obj.get("timeout")) {
        config.timeout_ms = Some(ms);
        config.tool_timeout_ms = Some(ms);
    }
    Ok(Some(config))
}

impl ConfigSource for Goose {
    fn id(&self) -> &str {
        "goose"
    }

    fn display_name(&self) -> &str {
        "Goose"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let path = Goose::config_file(ctx);
        let Some(root) = read_yaml(&mut out, &path) else {
            return out;
        };
        let Some(extensions) = root.get("extensions") else {
            return out;
        };
        let Some(extensions) = extensions.as_object() else {
            if !extensions.is_null() {
                out.warn(&path, "\"extensions\" is not a mapping");
            }
            return out;
        };
        for (name, entry) in extensions {
            match convert(entry) {
                Ok(None) => {}
                Ok(Some(config)) => {
                    let keys = entry.get("env_keys").and_then(Value::as_array);
                    if keys.is_some_and(|k| !k.is_empty()) {
                        out.warn(
                            &path,
                            format!(
                                "extension \"{name}\": env_keys live in Goose's keyring, which is not read; \
                                 set them in the environment"
                            ),
                        );
                    }
                    out.entry(name, &path, Level::User, Ok(config));
                }
                Err(e) => out.entry(name, &path, Level::User, Err(e)),
            }
        }
        out
    }
}
