//! Discovery: run every source, merge by server name (the highest-priority source wins whole,
//! no field merging), then filter: project-level servers when project config is off, the
//! user's `disabledServers` / `enabledServers` lists, `enabled: false`, and Exa servers.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::exa;
use super::jsonc;
use super::server::ServerConfig;
use super::source::{ConfigSource, DiscoveryContext, Level, ServerProblem, SourceMeta};
use super::sources::{default_sources, HostConfig};

/// How to discover.
#[derive(Clone)]
pub struct LoadOptions {
    /// Whether project-level servers count (default true).
    pub enable_project_config: bool,
    /// Whether Exa servers are dropped and their keys returned (default true).
    pub filter_exa: bool,
    /// The home directory (default: `$HOME`).
    pub home: Option<PathBuf>,
    /// The host's own config locations (the first source, and the files the writer edits).
    pub host: HostConfig,
    /// The sources, highest priority first (default: [`default_sources`] with `host`). A host
    /// adds its own by building this list.
    pub sources: Option<Vec<Arc<dyn ConfigSource>>>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            enable_project_config: true,
            filter_exa: true,
            home: None,
            host: HostConfig::default(),
            sources: None,
        }
    }
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("enable_project_config", &self.enable_project_config)
            .field("filter_exa", &self.filter_exa)
            .field("home", &self.home)
            .field("host", &self.host)
            .field(
                "sources",
                &self
                    .sources
                    .as_ref()
                    .map(|s| s.iter().map(|s| s.id().to_owned()).collect::<Vec<_>>()),
            )
            .finish()
    }
}

impl LoadOptions {
    /// The discovery context for `cwd`.
    pub fn context(&self, cwd: &Path) -> DiscoveryContext {
        DiscoveryContext {
            cwd: cwd.to_path_buf(),
            home: self.home.clone().unwrap_or_else(home_dir),
        }
    }
}

/// The user's home directory (`$HOME`, or `%USERPROFILE%` on Windows).
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Every server discovery saw, for diagnostics (`mcp servers`, `/mcp list`).
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredServer {
    /// Its name.
    pub name: String,
    /// Its config as found.
    pub config: ServerConfig,
    /// Where it was found.
    pub source: SourceMeta,
    /// Whether it will be connected (false when disabled or filtered out).
    pub enabled: bool,
    /// Whether a higher-priority source has a server of the same name.
    pub shadowed: bool,
    /// Why it is not connected, when it is not.
    pub skipped: Option<String>,
}

/// What discovery found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedConfigs {
    /// The servers to connect, by name.
    pub configs: BTreeMap<String, ServerConfig>,
    /// Where each of them came from.
    pub sources: BTreeMap<String, SourceMeta>,
    /// API keys of the Exa servers that were filtered out.
    pub exa_api_keys: Vec<String>,
    /// Files that could not be read, one line each naming the file.
    pub warnings: Vec<String>,
    /// Servers found but unusable (an unresolvable input, a malformed entry).
    pub problems: Vec<ServerProblem>,
    /// Every entry seen, winners first in priority order, then the shadowed ones.
    pub discovered: Vec<DiscoveredServer>,
}

/// Discovers the MCP servers for the project at `cwd`. Never fails as a whole: a source that
/// cannot be read becomes a warning.
pub fn load_all_mcp_configs(cwd: &Path, options: &LoadOptions) -> LoadedConfigs {
    let ctx = options.context(cwd);
    let sources = options
        .sources
        .clone()
        .unwrap_or_else(|| default_sources(options.host.clone()));
    let mut out = LoadedConfigs::default();
    let mut winners: Vec<DiscoveredServer> = Vec::new();
    let mut shadowed: Vec<DiscoveredServer> = Vec::new();
    let mut ignored: Vec<DiscoveredServer> = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    for source in &sources {
        let found = source.load(&ctx);
        for w in found.warnings {
            log::warn!("[{}] {w}", source.display_name());
            out.warnings
                .push(format!("[{}] {w}", source.display_name()));
        }
        for p in found.problems {
            if taken.insert(p.name.clone()) {
                out.problems.push(p);
            }
        }
        for server in found.servers {
            let entry = DiscoveredServer {
                source: SourceMeta {
                    provider: source.id().to_owned(),
                    provider_name: source.display_name().to_owned(),
                    path: server.path,
                    level: server.level,
                },
                enabled: server.config.is_enabled(),
                name: server.name,
                config: server.config,
                shadowed: false,
                skipped: None,
            };
            if !options.enable_project_config && entry.source.level == Level::Project {
                // Dropped before the merge, so a user-level server of the same name still wins.
                ignored.push(DiscoveredServer {
                    enabled: false,
                    skipped: Some("project-level config is disabled".into()),
                    ..entry
                });
            } else if taken.insert(entry.name.clone()) {
                winners.push(entry);
            } else {
                shadowed.push(DiscoveredServer {
                    shadowed: true,
                    enabled: false,
                    skipped: Some("shadowed by a higher-priority source".into()),
                    ..entry
                });
            }
        }
    }
    let lists = ServerLists::read(&options.host.user_file(&ctx));
    for server in &mut winners {
        server.skipped = skip_reason(server, &lists);
        if server.skipped.is_none()
            && options.filter_exa
            && exa::is_exa(&server.name, &server.config)
        {
            out.exa_api_keys.extend(exa::exa_api_key(&server.config));
            server.skipped = Some("an Exa server (the host uses its key natively)".into());
        }
        server.enabled = server.skipped.is_none();
        if server.enabled {
            out.configs
                .insert(server.name.clone(), server.config.clone());
            out.sources
                .insert(server.name.clone(), server.source.clone());
        }
    }
    out.exa_api_keys.dedup();
    out.discovered = winners;
    out.discovered.extend(ignored);
    out.discovered.extend(shadowed);
    out
}

fn skip_reason(server: &DiscoveredServer, lists: &ServerLists) -> Option<String> {
    if lists.disabled.contains(&server.name) {
        return Some("listed in disabledServers".into());
    }
    if !server.config.is_enabled() && !lists.enabled.contains(&server.name) {
        return Some("enabled: false".into());
    }
    None
}

/// The user-level host config's `disabledServers` (always wins) and `enabledServers` (turns
/// on a server that a file we do not own disables).
#[derive(Debug, Default)]
pub(crate) struct ServerLists {
    pub disabled: HashSet<String>,
    pub enabled: HashSet<String>,
}

impl ServerLists {
    pub(crate) fn read(user_file: &Path) -> ServerLists {
        let Ok(root) = jsonc::read(user_file) else {
            return ServerLists::default();
        };
        let list = |key: &str| -> HashSet<String> {
            root.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        ServerLists {
            disabled: list("disabledServers"),
            enabled: list("enabledServers"),
        }
    }
}
