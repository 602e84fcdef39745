//! Codex: `<cwd>/.codex/config.toml` (project), then `$CODEX_HOME/config.toml` (user;
//! `CODEX_HOME` defaults to `~/.codex`), tables `[mcp_servers.<name>]`.
//!
//! `command`, `args`, `env`, `cwd`, `url`, `enabled`, `enabled_tools` and `disabled_tools` map
//! directly; `http_headers` are headers; `env_http_headers` (header → variable name) become
//! headers whose value is the variable's name, and `bearer_token_env_var` becomes
//! `bearerTokenEnvVar`: both are read from the environment at connect time, like every other
//! value (nothing is read at discovery; a header whose variable is unset is sent with the
//! variable's name, the connect-time rule for a value that names no set variable, where Codex
//! leaves it out); `startup_timeout_sec` (or `startup_timeout_ms`) is the connect timeout and
//! `tool_timeout_sec` the tool-call timeout. `env_vars` needs nothing: servers inherit the
//! environment. `sandbox_enabled` and a `sandbox` table (`filesystem.allow_write`, ...: VS
//! Code's keys in snake case, or as VS Code spells them) are the sandbox.
//!
//! Without the `toml` feature no TOML is parsed: a `config.toml` that is there is skipped with
//! a warning naming it and the feature.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::file::{read_text, ReadError, CONFIG_FILE_CAP};
use crate::config::jsonc::strings;
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Codex's `config.toml` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Codex;

impl ConfigSource for Codex {
    fn id(&self) -> &str {
        "codex"
    }

    fn display_name(&self) -> &str {
        "OpenAI Codex"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        load_file(
            &mut out,
            &ctx.cwd.join(".codex").join("config.toml"),
            Level::Project,
        );
        load_file(&mut out, &codex_home(ctx).join("config.toml"), Level::User);
        out
    }
}

/// `$CODEX_HOME` when set to an absolute path, else `~/.codex`.
fn codex_home(ctx: &DiscoveryContext) -> std::path::PathBuf {
    std::env::var_os("CODEX_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| ctx.home.join(".codex"))
}

fn load_file(out: &mut SourceOutput, path: &Path, level: Level) {
    let text = match read_text(path, CONFIG_FILE_CAP) {
        Ok(t) => t,
        Err(ReadError::Missing) => return,
        Err(ReadError::Bad(e)) => return out.warn(path, e),
    };
    let root = match parse(&text) {
        Ok(v) => v,
        Err(e) => return out.warn(path, e),
    };
    let Some(servers) = root.get("mcp_servers") else {
        return;
    };
    let Some(servers) = servers.as_object() else {
        return out.warn(path, "\"mcp_servers\" is not a table");
    };
    for (name, entry) in servers {
        out.entry(name, path, level, convert(entry));
    }
}

/// The TOML text as JSON.
#[cfg(feature = "toml")]
fn parse(text: &str) -> Result<Value, String> {
    toml::from_str(text).map_err(|e| format!("malformed TOML: {}", e.message()))
}

/// Without the `toml` feature: every file is refused, saying so.
#[cfg(not(feature = "toml"))]
fn parse(_text: &str) -> Result<Value, String> {
    Err(
        "skipped: Codex's config.toml needs the \"toml\" feature, which this build of \
         mcp-runtime leaves out"
            .into(),
    )
}

fn table(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| match v {
                    Value::String(s) => Some((k.clone(), s.clone())),
                    Value::Number(n) => Some((k.clone(), n.to_string())),
                    Value::Bool(b) => Some((k.clone(), b.to_string())),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

fn seconds_to_ms(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_f64)
        .filter(|s| *s > 0.0)
        .map(|s| (s * 1000.0) as u64)
}

fn convert(entry: &Value) -> Result<ServerConfig, String> {
    let Some(obj) = entry.as_object() else {
        return Err("the server entry is not a table".into());
    };
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut headers = table(obj.get("http_headers"));
    // Resolved at connect time: a header value that names a set variable takes its value.
    headers.extend(table(obj.get("env_http_headers")));
    let url = text("url");
    Ok(ServerConfig {
        transport: url.as_ref().map(|_| "http".to_owned()),
        command: text("command"),
        args: strings(obj.get("args")).unwrap_or_default(),
        env: table(obj.get("env")),
        cwd: text("cwd"),
        url,
        headers,
        enabled: obj.get("enabled").and_then(Value::as_bool),
        disabled: None,
        timeout_ms: seconds_to_ms(obj.get("startup_timeout_sec"))
            .or_else(|| obj.get("startup_timeout_ms").and_then(Value::as_u64)),
        tool_timeout_ms: seconds_to_ms(obj.get("tool_timeout_sec")),
        bearer_token_env_var: text("bearer_token_env_var"),
        auth: None,
        oauth: None,
        proxy: None,
        ca_file: None,
        client_cert: None,
        client_key: None,
        enabled_tools: strings(obj.get("enabled_tools")),
        disabled_tools: strings(obj.get("disabled_tools")),
        sandbox_enabled: (obj
            .get("sandbox_enabled")
            .or_else(|| obj.get("sandboxEnabled")))
        .and_then(Value::as_bool),
        sandbox: obj.get("sandbox").map(camel_case),
        extra: Map::new(),
    })
}

/// The sandbox table with its keys in VS Code's spelling (`allow_write` is `allowWrite`).
fn camel_case(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let mut key = String::with_capacity(k.len());
                    let mut upper = false;
                    for c in k.chars() {
                        match c {
                            '_' => upper = true,
                            c if upper => {
                                key.extend(c.to_uppercase());
                                upper = false;
                            }
                            c => key.push(c),
                        }
                    }
                    (key, camel_case(v))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(all(test, not(feature = "toml")))]
mod tests {
    use super::*;

    #[test]
    fn without_the_feature_the_file_is_skipped_naming_it() {
        let dir = std::env::temp_dir().join(format!("mcp-codex-lean-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, "[mcp_servers.x]\ncommand = \"x\"\n").unwrap();
        let mut out = SourceOutput::default();
        load_file(&mut out, &path, Level::User);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(out.servers.is_empty());
        let [warning] = &out.warnings[..] else {
            panic!("{:?}", out.warnings);
        };
        assert!(
            warning.contains("config.toml") && warning.contains("\"toml\" feature"),
            "{warning}"
        );
    }
}
