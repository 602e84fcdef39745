//! The host's own config: `<cwd>/<dir>/mcp.json` (project) then `<user dir>/mcp.json` (user),
//! project first. These are the files `/mcp add` and friends write; the user file may also hold
//! `disabledServers` / `enabledServers` lists that toggle servers from files we do not own.

use std::path::PathBuf;

use super::{load_project_and_user, standard_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, SourceOutput};

/// The default directory name, in the project and in the home directory.
pub const DEFAULT_DIR_NAME: &str = ".mcp-runtime";

/// Where the host keeps its own MCP config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// The source id (default `host`).
    pub id: String,
    /// The name shown for it (default `mcp-runtime`).
    pub display_name: String,
    /// The directory inside the project (default `.mcp-runtime`).
    pub project_dir: String,
    /// The user's directory (default `<home>/.mcp-runtime`); `None` uses the default.
    pub user_dir: Option<PathBuf>,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            id: "host".into(),
            display_name: "mcp-runtime".into(),
            project_dir: DEFAULT_DIR_NAME.into(),
            user_dir: None,
        }
    }
}

impl HostConfig {
    /// The project-level file.
    pub fn project_file(&self, ctx: &DiscoveryContext) -> PathBuf {
        ctx.cwd.join(&self.project_dir).join("mcp.json")
    }

    /// The user-level file.
    pub fn user_file(&self, ctx: &DiscoveryContext) -> PathBuf {
        self.user_dir
            .clone()
            .unwrap_or_else(|| ctx.home.join(DEFAULT_DIR_NAME))
            .join("mcp.json")
    }
}

impl ConfigSource for HostConfig {
    fn id(&self) -> &str {
        &self.id
    }

    fn display_name(&self) -> &str {
        &self.display_name
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        load_project_and_user(
            &self.project_file(ctx),
            &self.user_file(ctx),
            &standard_entry,
        )
    }
}
