//! Cursor: `<cwd>/.cursor/mcp.json` (project), then `~/.cursor/mcp.json` (user), as Cursor
//! reads them: its variables `${env:NAME}`, `${userHome}`, `${workspaceFolder}`,
//! `${workspaceFolderBasename}` and `${pathSeparator}` / `${/}` are replaced (no other syntax:
//! a `${NAME}` stays as written, as in Cursor), and a stdio server's `envFile` (a dotenv file,
//! relative to the project) is read into its `env` (an entry written in `env` wins).

use super::{editor_entry, load_project_and_user, EDITOR_VARS};
use crate::config::source::{ConfigSource, DiscoveryContext, SourceOutput};

/// Cursor's `mcp.json` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor;

impl ConfigSource for Cursor {
    fn id(&self) -> &str {
        "cursor"
    }

    fn display_name(&self) -> &str {
        "Cursor"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        load_project_and_user(
            &ctx.cwd.join(".cursor").join("mcp.json"),
            &ctx.home.join(".cursor").join("mcp.json"),
            &|_, entry| editor_entry(ctx, EDITOR_VARS, true, entry),
        )
    }
}
