//! Cline and Roo Code, the two VS Code extensions that keep MCP servers in their own files.
//!
//! - **Cline**: `cline_mcp_settings.json` in VS Code's global storage
//!   (`<VS Code user dir>/globalStorage/saoudrizwan.claude-dev/settings/`), user-level.
//! - **Roo Code**: `<cwd>/.roo/mcp.json` (project, which wins as in Roo Code), then
//!   `mcp_settings.json` in its global storage
//!   (`<VS Code user dir>/globalStorage/rooveterinaryinc.roo-cline/settings/`).
//!
//! Both: `mcpServers` with `command`, `args`, `env`, `url`, `headers`, `type` (Cline's
//! `streamableHttp`, Roo's `streamable-http`; Cline's older `transportType` too), `disabled`,
//! `timeout` in **seconds** (default 60, the bound on each call), and `disabledTools`. The
//! auto-approval lists (`autoApprove`, `alwaysAllow`) are ignored with a note: every call here
//! goes through the host. Roo Code replaces `${env:NAME}` (and, in a project file,
//! `${workspaceFolder}`); Cline expands nothing.

use serde_json::Value;

use super::{editor_entry, load_json_servers, plain_entry, rename, seconds_as_ms};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};
use crate::config::sources::VsCode;

/// The default bound on a call in both extensions.
const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// Cline's `cline_mcp_settings.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cline;

/// Roo Code's `.roo/mcp.json` and `mcp_settings.json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RooCode;

/// Shared conversion: `convert` does the variables and the `.mcp.json` shape.
fn entry(
    name: &str,
    mut entry: Value,
    convert: &dyn Fn(Value) -> Result<ServerConfig, String>,
) -> Result<ServerConfig, String> {
    rename(&mut entry, "transportType", "type");
    let mut timeout = None;
    if let Some(obj) = entry.as_object_mut() {
        for key in ["autoApprove", "alwaysAllow"] {
            if obj.remove(key).is_some() {
                log::info!("MCP server {name}: {key} is not used (the host approves each call)");
            }
        }
        timeout = obj.remove("timeout");
    }
    let mut config = convert(entry)?;
    let ms = seconds_as_ms(timeout.as_ref()).unwrap_or(DEFAULT_TIMEOUT_SECS * 1000);
    config.tool_timeout_ms = Some(ms);
    Ok(config)
}

impl ConfigSource for Cline {
    fn id(&self) -> &str {
        "cline"
    }

    fn display_name(&self) -> &str {
        "Cline"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let path = VsCode::user_dir(ctx)
            .join("globalStorage")
            .join("saoudrizwan.claude-dev")
            .join("settings")
            .join("cline_mcp_settings.json");
        load_json_servers(&mut out, &path, Level::User, &["mcpServers"], &|name, e| {
            entry(name, e, &plain_entry)
        });
        out
    }
}

impl ConfigSource for RooCode {
    fn id(&self) -> &str {
        "roo"
    }

    fn display_name(&self) -> &str {
        "Roo Code"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let project = ctx.cwd.join(".roo").join("mcp.json");
        let global = VsCode::user_dir(ctx)
            .join("globalStorage")
            .join("rooveterinaryinc.roo-cline")
            .join("settings")
            .join("mcp_settings.json");
        let vars: &[&str] = &["env", "workspaceFolder"];
        load_json_servers(
            &mut out,
            &project,
            Level::Project,
            &["mcpServers"],
            &|name, e| entry(name, e, &|e| editor_entry(ctx, vars, false, e)),
        );
        load_json_servers(
            &mut out,
            &global,
            Level::User,
            &["mcpServers"],
            &|name, e| entry(name, e, &|e| editor_entry(ctx, &["env"], false, e)),
        );
        out
    }
}
