//! VS Code, in its real shape: top-level `servers` (each with `type` `stdio`, `http` or `sse`),
//! `inputs`, and an optional `envFile` per server. Files, highest first: the workspace's
//! `<cwd>/.vscode/mcp.json` (project), the user profile's `mcp.json` (user:
//! `~/.config/Code/User/mcp.json` on Linux, `~/Library/Application Support/Code/User/mcp.json`
//! on macOS, `%APPDATA%\Code\User\mcp.json` on Windows), then the older `mcp` key (`servers`,
//! `inputs`) of the user's `settings.json` in the same directory.
//!
//! VS Code's own proxy (`"http.proxy"` in the user's `settings.json`, unless `"http.proxySupport"`
//! is `"off"`) is the proxy of its remote servers that name none.
//!
//! A server's `sandboxEnabled` and `sandbox` are its sandbox (see the transport module); a
//! `sandbox` at the top of the file is the rules of each server that has none of its own.
//!
//! Its variables `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`,
//! `${pathSeparator}` / `${/}` and `${env:NAME}` are replaced; `${input:ID}` is replaced by the
//! input's `default` when it has one, and otherwise makes the server fail with a message that
//! says why (VS Code would prompt for it; we cannot).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{apply_env_file, plain_entry, read_json, servers_at, EDITOR_VARS};
use crate::config::expand::{expand_editor_value, EditorVars};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// VS Code's workspace and user `mcp.json`, and the `mcp` key of its user settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct VsCode;

impl VsCode {
    /// The user profile directory (`Code/User` in the platform's app data directory).
    pub fn user_dir(ctx: &DiscoveryContext) -> std::path::PathBuf {
        ctx.app_data_dir().join("Code").join("User")
    }
}

impl ConfigSource for VsCode {
    fn id(&self) -> &str {
        "vscode"
    }

    fn display_name(&self) -> &str {
        "VS Code"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let user = VsCode::user_dir(ctx);
        let proxy = editor_proxy(&user.join("settings.json"));
        let files: [(std::path::PathBuf, Level, &[&str]); 3] = [
            (
                ctx.cwd.join(".vscode").join("mcp.json"),
                Level::Project,
                &[],
            ),
            (user.join("mcp.json"), Level::User, &[]),
            (user.join("settings.json"), Level::User, &["mcp"]),
        ];
        for (path, level, prefix) in &files {
            let Some(root) = read_json(&mut out, path) else {
                continue;
            };
            let mut node = &root;
            for key in *prefix {
                match node.get(key) {
                    Some(n) => node = n,
                    None => break,
                }
            }
            if !prefix.is_empty() && root.get(prefix[0]).is_none() {
                continue;
            }
            load_file(&mut out, ctx, path, *level, node, proxy.as_ref());
        }
        out
    }
}

/// The editor's own proxy setting (`http.proxy`) and its exceptions (`http.noProxy`), unless
/// its proxy support is off.
fn editor_proxy(settings: &Path) -> Option<(String, Vec<String>)> {
    let root = crate::config::jsonc::read(settings).ok()?;
    if root.get("http.proxySupport").and_then(Value::as_str) == Some("off") {
        return None;
    }
    let proxy = root.get("http.proxy")?.as_str()?.trim();
    let exceptions = crate::config::jsonc::strings(root.get("http.noProxy")).unwrap_or_default();
    (!proxy.is_empty()).then(|| (proxy.to_owned(), exceptions))
}

fn load_file(
    out: &mut SourceOutput,
    ctx: &DiscoveryContext,
    path: &Path,
    level: Level,
    root: &Value,
    proxy: Option<&(String, Vec<String>)>,
) {
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
    let mut known = EDITOR_VARS.to_vec();
    known.extend(["input", "workspaceRoot"]);
    // A `sandbox` at the top of the file is the default of every server that enables the
    // sandbox without rules of its own (VS Code has read it in both places).
    let root_sandbox = root.get("sandbox").cloned();
    let convert = |name: &str, mut entry: Value| -> Result<ServerConfig, String> {
        if let (Some(shared), Some(object)) = (&root_sandbox, entry.as_object_mut()) {
            if !object.contains_key("sandbox") {
                object.insert("sandbox".into(), shared.clone());
            }
        }
        let vars = EditorVars {
            cwd: &ctx.cwd,
            home: &ctx.home,
            inputs: Some(&defaults),
            known: &known,
        };
        expand_editor_value(&mut entry, &vars).map_err(|id| {
            format!(
                "Server \"{name}\" uses ${{input:{id}}}, which VS Code asks for when the server starts; \
                 put the value in the config or in an environment variable instead"
            )
        })?;
        let env_file = entry
            .as_object_mut()
            .and_then(|o| o.remove("envFile"))
            .and_then(|v| v.as_str().map(str::to_owned));
        let mut config = plain_entry(entry)?;
        if let Some(file) = env_file {
            apply_env_file(&mut config, &ctx.cwd.join(file))?;
        }
        if let (Some(url), Some((proxy, exceptions)), None) = (&config.url, proxy, &config.proxy) {
            config.proxy = super::editor_proxy(url, proxy, exceptions);
        }
        Ok(config)
    };
    servers_at(out, root, path, level, &["servers"], &convert);
}
