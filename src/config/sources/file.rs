//! One `.mcp.json`-shaped file as a source (for `--config`-style hosts, or a host's own extra
//! location).

use std::path::PathBuf;

use super::{load_json_servers, standard_entry};
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// The servers of one `{"mcpServers": {...}}` file.
#[derive(Debug, Clone)]
pub(crate) struct McpJsonFile {
    /// The file.
    pub(crate) path: PathBuf,
    /// Its level (project by default: it is not the user's).
    pub(crate) level: Level,
}

impl McpJsonFile {
    /// A project-level source reading `path`.
    pub(crate) fn new(path: impl Into<PathBuf>) -> McpJsonFile {
        McpJsonFile {
            path: path.into(),
            level: Level::Project,
        }
    }
}

impl ConfigSource for McpJsonFile {
    fn id(&self) -> &str {
        "mcp-json"
    }

    fn display_name(&self) -> &str {
        "MCP Config"
    }

    fn load(&self, _ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        if !self.path.exists() {
            out.warn(&self.path, "no such file");
            return out;
        }
        load_json_servers(
            &mut out,
            &self.path,
            self.level,
            &["mcpServers"],
            &standard_entry,
        );
        out
    }
}
