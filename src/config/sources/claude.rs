//! Claude Code. Its scopes, most specific first: the entry for this project inside
//! `~/.claude.json` (`projects[<cwd>].mcpServers`, the "local" scope: written by the user, so
//! user-level), then `<cwd>/.claude/.mcp.json` and `<cwd>/.claude/mcp.json` (project), then the
//! top-level `mcpServers` of `~/.claude.json` and `~/.claude/mcp.json` (user).

use super::{load_json_servers, read_json_capped, servers_at, standard_entry};
use crate::config::file::CLAUDE_STATE_CAP;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// Claude Code's config files.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaudeCode;

impl ConfigSource for ClaudeCode {
    fn id(&self) -> &str {
        "claude"
    }

    fn display_name(&self) -> &str {
        "Claude Code"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let state = ctx.home.join(".claude.json");
        // Also Claude Code's state file: tens of MiB for real users, hence its larger cap.
        let root = read_json_capped(&mut out, &state, CLAUDE_STATE_CAP);
        if let Some(root) = &root {
            // The project key is the absolute path as Claude Code saw it.
            let mut keys = vec![ctx.cwd.to_string_lossy().into_owned()];
            if let Ok(canonical) = ctx.cwd.canonicalize() {
                keys.push(canonical.to_string_lossy().into_owned());
            }
            keys.dedup();
            for key in &keys {
                servers_at(
                    &mut out,
                    root,
                    &state,
                    Level::User,
                    &["projects", key, "mcpServers"],
                    &standard_entry,
                );
            }
        }
        for file in [".mcp.json", "mcp.json"] {
            let path = ctx.cwd.join(".claude").join(file);
            load_json_servers(
                &mut out,
                &path,
                Level::Project,
                &["mcpServers"],
                &standard_entry,
            );
        }
        if let Some(root) = &root {
            servers_at(
                &mut out,
                root,
                &state,
                Level::User,
                &["mcpServers"],
                &standard_entry,
            );
        }
        let user = ctx.home.join(".claude").join("mcp.json");
        load_json_servers(
            &mut out,
            &user,
            Level::User,
            &["mcpServers"],
            &standard_entry,
        );
        out
    }
}
