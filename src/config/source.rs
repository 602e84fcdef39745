//! Where a server config came from, and the [`ConfigSource`] trait every source implements.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::server::ServerConfig;

/// Whether a config file belongs to the user or to the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// In the user's home: trusted, applies everywhere (or, like Claude Code's per-project
    /// entries in `~/.claude.json`, written by the user for one project).
    User,
    /// Inside the project directory: comes with the project (`enableProjectConfig: false`
    /// drops these).
    Project,
}

impl Level {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::User => "user",
            Level::Project => "project",
        }
    }
}

/// Where one server config was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceMeta {
    /// The source's id, e.g. `claude`, `codex`, `mcp-json`.
    pub provider: String,
    /// Its display name, e.g. `Claude Code`.
    pub provider_name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// User or project.
    pub level: Level,
}

/// What discovery looks at.
#[derive(Debug, Clone)]
pub struct DiscoveryContext {
    /// The project directory.
    pub cwd: PathBuf,
    /// The user's home directory.
    pub home: PathBuf,
    /// The user's config directory in the XDG sense: `$XDG_CONFIG_HOME`, else `~/.config`
    /// (Linux and macOS: Zed, Goose and opencode use it on both), `%APPDATA%` on Windows.
    /// With an explicit home in the options, `<home>/.config` (`<home>/AppData/Roaming` on
    /// Windows), so that nothing outside that home is read.
    pub config_dir: PathBuf,
}

impl DiscoveryContext {
    /// Where desktop applications keep their settings: `~/Library/Application Support` on
    /// macOS, `%APPDATA%` on Windows, the config directory elsewhere.
    pub fn app_data_dir(&self) -> PathBuf {
        if cfg!(target_os = "macos") {
            self.home.join("Library").join("Application Support")
        } else {
            self.config_dir.clone()
        }
    }
}

/// What the tool that owns a file decided about one of its servers, where the tool keeps such
/// state (Claude Code's approval lists and `disabledMcpServers`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum ToolVerdict {
    /// Nothing: the usual rules apply.
    #[default]
    None,
    /// The user approved this project server in that tool (the text says where).
    Approved(String),
    /// The user rejected this project server in that tool (the text says where).
    Rejected(String),
    /// The tool has the server turned off (the text says where).
    Disabled(String),
}

/// One server a source found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FoundServer {
    /// Its name (the key in the file).
    pub(crate) name: String,
    /// Its config, in the `.mcp.json` shape, with `${VAR}` expanded.
    pub config: ServerConfig,
    /// The file it came from.
    pub path: PathBuf,
    /// User or project.
    pub level: Level,
    /// What the owning tool decided about it.
    pub verdict: ToolVerdict,
}

/// A server a source found but could not turn into a config (an unresolvable VS Code input,
/// an entry of the wrong shape, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerProblem {
    /// The server's name.
    pub name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// What one source produced: servers in priority order (first wins), warnings about files that
/// could not be read, and per-server problems.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceOutput {
    /// The servers, highest priority first (added with [`SourceOutput::entry`]).
    pub(crate) servers: Vec<FoundServer>,
    /// One line per file that could not be read or parsed, naming the file.
    pub warnings: Vec<String>,
    /// Servers that could not be turned into configs.
    pub problems: Vec<ServerProblem>,
}

impl SourceOutput {
    /// Records a file that failed.
    pub fn warn(&mut self, path: &Path, message: impl std::fmt::Display) {
        self.warnings.push(format!("{}: {message}", path.display()));
    }

    /// Records one converted entry: a server, or the problem that kept it out.
    pub fn entry(
        &mut self,
        name: &str,
        path: &Path,
        level: Level,
        converted: Result<ServerConfig, String>,
    ) {
        match converted {
            Ok(config) => self.servers.push(FoundServer {
                name: name.to_owned(),
                config,
                path: path.to_path_buf(),
                level,
                verdict: ToolVerdict::None,
            }),
            Err(message) => self.problems.push(ServerProblem {
                name: name.to_owned(),
                path: path.to_path_buf(),
                message,
            }),
        }
    }
}

/// A place users keep MCP server configs. Hosts can add their own.
pub trait ConfigSource: Send + Sync {
    /// A short id, e.g. `claude`.
    fn id(&self) -> &str;
    /// The name to show, e.g. `Claude Code`.
    fn display_name(&self) -> &str;
    /// Reads the source's files. A missing file is not an error; an unreadable or malformed one
    /// is a warning, and the source's other files still load.
    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput;
}
