//! VS Code: `<cwd>/.vscode/mcp.json` in its real shape: top-level `servers` (each with `type`
//! `stdio`, `http` or `sse`), `inputs`, and an optional `envFile` per server. Its variables
//! `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${pathSeparator}` and
//! `${env:NAME}` are replaced; `${input:ID}` is replaced by the input's `default` when it has
//! one, and otherwise makes the server fail with a message that says why (VS Code would prompt
//! for it; we cannot).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{read_json, servers_at, standard_entry};
use crate::config::file::{read_text, ReadError, CONFIG_FILE_CAP};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// VS Code's workspace `mcp.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct VsCode;

impl ConfigSource for VsCode {
    fn id(&self) -> &str {
        "vscode"
    }

    fn display_name(&self) -> &str {
        "VS Code"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let path = ctx.cwd.join(".vscode").join("mcp.json");
        let Some(root) = read_json(&mut out, &path) else {
            return out;
        };
        let defaults: BTreeMap<String, String> = root
            .get("inputs")
            .and_then(Value::as_array)
            .map(|inputs| {
                inputs
                    .iter()
                    .filter_map(|i| {
                        Some((
                            i.get("id")?.as_str()?.to_owned(),
                            i.get("default")?.as_str()?.to_owned(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let convert = |name: &str, mut entry: Value| -> Result<ServerConfig, String> {
            substitute(&mut entry, ctx, &defaults).map_err(|id| {
                format!(
                    "Server \"{name}\" uses ${{input:{id}}}, which VS Code asks for when the server starts; \
                     put the value in the config or in an environment variable instead"
                )
            })?;
            let env_file = entry
                .get("envFile")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut config = standard_entry(name, entry)?;
            if let Some(file) = env_file {
                let file = ctx.cwd.join(file);
                let vars =
                    read_env_file(&file).map_err(|e| format!("envFile {}: {e}", file.display()))?;
                for (k, v) in vars {
                    config.env.entry(k).or_insert(v);
                }
            }
            Ok(config)
        };
        servers_at(
            &mut out,
            &root,
            &path,
            Level::Project,
            &["servers"],
            &convert,
        );
        out
    }
}

/// Replaces VS Code's variables in every string; `Err(input id)` for an input without default.
fn substitute(
    value: &mut Value,
    ctx: &DiscoveryContext,
    inputs: &BTreeMap<String, String>,
) -> Result<(), String> {
    match value {
        Value::String(s) if s.contains("${") => *s = substitute_str(s, ctx, inputs)?,
        Value::Array(items) => {
            for v in items {
                substitute(v, ctx, inputs)?;
            }
        }
        Value::Object(map) => {
            for v in map.values_mut() {
                substitute(v, ctx, inputs)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn substitute_str(
    s: &str,
    ctx: &DiscoveryContext,
    inputs: &BTreeMap<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = &rest[start + 2..start + end];
        let replacement = match var {
            "workspaceFolder" | "workspaceRoot" => Some(ctx.cwd.to_string_lossy().into_owned()),
            "workspaceFolderBasename" => ctx
                .cwd
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()),
            "userHome" => Some(ctx.home.to_string_lossy().into_owned()),
            "pathSeparator" => Some(std::path::MAIN_SEPARATOR.to_string()),
            _ => match (var.strip_prefix("env:"), var.strip_prefix("input:")) {
                (Some(name), _) => Some(std::env::var(name).unwrap_or_default()),
                (_, Some(id)) => Some(inputs.get(id).cloned().ok_or_else(|| id.to_owned())?),
                _ => None,
            },
        };
        match replacement {
            Some(r) => out.push_str(&r),
            None => out.push_str(&rest[start..start + end + 1]),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
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
