//! Discovery: run every source, merge by server name (the highest-priority source wins whole,
//! no field merging), then filter: project-level servers when project config is off, the
//! user's `disabledServers` / `enabledServers` lists, `enabled: false` / `disabled: true`, a
//! tool's own "off" state, and Exa servers; then the trust gate ([`super::trust`]): a
//! project-level server starts only once approved, by the user's trust store, the owning tool's
//! own approval state, or the host's [`ProjectTrust`] policy.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::exa;
use super::jsonc;
use super::server::ServerConfig;
use super::source::{
    ConfigSource, DiscoveryContext, Level, ServerProblem, SourceMeta, ToolVerdict,
};
use super::sources::{default_sources, HostConfig};
use super::trust::{self, ProjectTrust, TrustRequest, TrustState, TrustStore};
use super::trust_facts;
use crate::files::home_dir;

/// How to discover.
#[derive(Clone)]
pub struct DiscoveryOptions {
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
    /// What to do with project-level servers nobody approved yet (default
    /// [`ProjectTrust::Report`]: start none of them, report them as `needs approval`).
    pub project_trust: ProjectTrust,
    /// The file of remembered approvals (default: `trusted.json` in the host's user
    /// directory, `~/.mcp-runtime/trusted.json`).
    pub trust_store: Option<PathBuf>,
    /// How this host's user approves a project server, ending the message of a server that
    /// waits for approval ([`LoadedConfigs::approval_message`]); `{name}` stands for the
    /// server's name. Default: none (host-neutral words).
    pub approval_hint: Option<String>,
    /// The administrator's policy file, which allows or denies servers whatever user and
    /// project configs say (see *An administrator's policy* in the `config` module's docs). Default: the system-wide one
    /// (`/etc/mcp-runtime/policy.json` on Linux).
    pub policy_file: Option<PathBuf>,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        DiscoveryOptions {
            enable_project_config: true,
            filter_exa: true,
            home: None,
            host: HostConfig::default(),
            sources: None,
            project_trust: ProjectTrust::default(),
            trust_store: None,
            approval_hint: None,
            policy_file: None,
        }
    }
}

impl std::fmt::Debug for DiscoveryOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryOptions")
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
            .field("project_trust", &self.project_trust)
            .field("trust_store", &self.trust_store)
            .field("policy_file", &self.policy_file)
            .finish()
    }
}

impl DiscoveryOptions {
    /// The discovery context for `cwd`.
    pub fn context(&self, cwd: &Path) -> DiscoveryContext {
        let home = self.home.clone().unwrap_or_else(home_dir);
        let from_env = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let config_dir = match (&self.home, cfg!(windows)) {
            (Some(_), true) => home.join("AppData").join("Roaming"),
            (Some(_), false) => home.join(".config"),
            (None, true) => {
                from_env("APPDATA").unwrap_or_else(|| home.join("AppData").join("Roaming"))
            }
            (None, false) => from_env("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config")),
        };
        DiscoveryContext {
            cwd: cwd.to_path_buf(),
            home,
            config_dir,
        }
    }

    /// The trust store: `trust_store`, else `trusted.json` beside the host's user file.
    pub(crate) fn trust_store(&self, cwd: &Path) -> TrustStore {
        match &self.trust_store {
            Some(path) => TrustStore::new(path),
            None => {
                let user = self.host.user_file(&self.context(cwd));
                TrustStore::new(user.with_file_name("trusted.json"))
            }
        }
    }
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
    /// Where it stands with the trust gate (user-level servers are [`TrustState::User`]).
    pub trust: TrustState,
    /// A project server approved before for another config: what changed since, one line each
    /// (`args: server.js → evil.js`, `env KEY: changed`; never a value that may be secret).
    /// Empty otherwise.
    pub changes: Vec<String>,
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
    /// The host's [`DiscoveryOptions::approval_hint`].
    pub approval_hint: Option<String>,
    /// Every entry seen, winners first in priority order, then the shadowed ones.
    pub discovered: Vec<DiscoveredServer>,
}

impl LoadedConfigs {
    /// The project servers that wait for approval (not started, not resolved) and would
    /// start once approved: not shadowed, not disabled or filtered for another reason.
    pub fn needs_approval(&self) -> Vec<&DiscoveredServer> {
        let waiting = TrustState::NeedsApproval.describe();
        self.discovered
            .iter()
            .filter(|d| {
                !d.shadowed
                    && d.trust == TrustState::NeedsApproval
                    && d.skipped.as_deref() == Some(waiting.as_str())
            })
            .collect()
    }

    /// The message for `server`, a project server that waits for approval: where it is
    /// declared, what changed since its approval, the user's own server of the same name it
    /// keeps from being used, and how to approve it (the host's hint, or neutral words).
    pub fn approval_message(&self, server: &DiscoveredServer) -> String {
        let shadows = self
            .discovered
            .iter()
            .find(|d| d.shadowed && d.name == server.name && d.source.level == Level::User);
        trust::needs_approval_message(
            &server.name,
            &server.source.path,
            &server.changes,
            shadows.map(|d| d.source.path.as_path()),
            self.approval_hint.as_deref(),
        )
    }
}

/// Discovers the MCP servers for the project at `cwd`. Never fails as a whole: a source that
/// cannot be read becomes a warning.
pub fn load_all_mcp_configs(cwd: &Path, options: &DiscoveryOptions) -> LoadedConfigs {
    let ctx = options.context(cwd);
    let sources = options
        .sources
        .clone()
        .unwrap_or_else(|| default_sources(options.host.clone()));
    let mut out = LoadedConfigs {
        approval_hint: options.approval_hint.clone(),
        ..LoadedConfigs::default()
    };
    let mut winners: Vec<(DiscoveredServer, ToolVerdict)> = Vec::new();
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
                trust: TrustState::User,
                changes: Vec::new(),
            };
            if !options.enable_project_config && entry.source.level == Level::Project {
                // Dropped before the merge, so a user-level server of the same name still wins.
                ignored.push(DiscoveredServer {
                    enabled: false,
                    skipped: Some("project-level config is disabled".into()),
                    ..entry
                });
            } else if taken.insert(entry.name.clone()) {
                winners.push((entry, server.verdict));
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
    let store = options.trust_store(cwd);
    let approvals = store.approvals(cwd);
    let mut discovered = Vec::with_capacity(winners.len());
    let policy_file =
        (options.policy_file.clone()).unwrap_or_else(super::policy::system_policy_file);
    let policy = super::policy::Policy::load(&policy_file);
    for (mut server, verdict) in winners {
        // The administrator's policy first: no list of the user's or the project's widens it.
        let refused = (policy.as_ref()).and_then(|p| p.refusal(&server.name, &server.config));
        server.skipped = refused.or_else(|| skip_reason(&server, &lists, &verdict));
        if server.source.level == Level::Project {
            let tool = match verdict {
                ToolVerdict::Approved(why) => Some(TrustState::ApprovedByTool(why)),
                ToolVerdict::Rejected(why) => Some(TrustState::Rejected(why)),
                _ => None,
            };
            let hash = super::config_hash(&server.config);
            server.changes = match approvals.get(&server.name) {
                Some(a) if a.hash != hash => {
                    trust_facts::changes(&a.facts, &trust_facts::facts(&server.config))
                }
                _ => Vec::new(),
            };
            let request = TrustRequest {
                name: server.name.clone(),
                hash,
                config: server.config.clone(),
                source: server.source.clone(),
                project: cwd.to_path_buf(),
            };
            // Only a server that would start is put to a host's question; the others get the
            // state the gate would give them without asking (for listings).
            let policy = match (&options.project_trust, server.skipped.is_some()) {
                (ProjectTrust::Ask(_), true) => &ProjectTrust::Report,
                (policy, _) => policy,
            };
            let trust = trust::evaluate(
                &request,
                &server,
                tool.as_ref(),
                approvals.get(&server.name),
                policy,
                &store,
            );
            server.trust = trust;
            if server.skipped.is_none() && !server.trust.allows_start() {
                server.skipped = Some(server.trust.describe());
            }
        }
        // The administrator's sandbox, after the trust gate (which hashed the config as
        // written): it makes the server stricter, never looser.
        if (policy.as_ref()).is_some_and(|p| p.requires_sandbox(&server.name, &server.config)) {
            server.config.sandbox_enabled = Some(true);
        }
        // After the gate: a project's Exa key is handed to the host only once approved (a
        // project file could name any of the user's variables as its "key").
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
        discovered.push(server);
    }
    out.exa_api_keys.dedup();
    out.discovered = discovered;
    out.discovered.extend(ignored);
    out.discovered.extend(shadowed);
    out
}

fn skip_reason(
    server: &DiscoveredServer,
    lists: &ServerLists,
    verdict: &ToolVerdict,
) -> Option<String> {
    if lists.disabled.contains(&server.name) {
        return Some("listed in disabledServers".into());
    }
    if lists.enabled.contains(&server.name) {
        return None;
    }
    if let ToolVerdict::Disabled(why) = verdict {
        return Some(why.clone());
    }
    if server.config.disabled == Some(true) {
        return Some("disabled: true".into());
    }
    if !server.config.is_enabled() {
        return Some("enabled: false".into());
    }
    None
}

/// The runtime-wide network settings of the user's own file (`~/.mcp-runtime/mcp.json`):
/// `"proxy"` (a proxy URL or `direct`) and `"caFile"` (relative to the file's folder; `~/` is
/// home) beside `mcpServers`, for every server that names none of its own.
pub(crate) fn network_settings(user_file: &Path) -> (Option<String>, Option<std::path::PathBuf>) {
    let Ok(root) = jsonc::read(user_file) else {
        return (None, None);
    };
    let text = |key: &str| {
        let value = root.get(key).and_then(serde_json::Value::as_str)?.trim();
        (!value.is_empty()).then(|| value.to_owned())
    };
    let ca_file = text("caFile").map(|f| {
        if f.starts_with("~/") {
            f.into()
        } else {
            user_file.parent().unwrap_or(Path::new("")).join(f)
        }
    });
    (text("proxy"), ca_file)
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
        let list =
            |key: &str| -> HashSet<String> { jsonc::strings(root.get(key)).unwrap_or_default() };
        ServerLists {
            disabled: list("disabledServers"),
            enabled: list("enabledServers"),
        }
    }
}
