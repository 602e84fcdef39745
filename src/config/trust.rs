//! The project trust gate: a server declared by a file inside the project (any source at
//! [`Level::Project`]) is neither connected nor are its `!command` / environment-name values
//! resolved until it is approved. A freshly cloned repository can bring a `.mcp.json` (or a
//! `.cursor/mcp.json`, a `.vscode/mcp.json`, ...) whose "server" is any command, or a remote
//! server with headers read from the user's environment: nothing of it runs before the user
//! says yes.
//!
//! - An approval is remembered by the hash of the server's unresolved config
//!   ([`config_hash`](super::config_hash)), per project directory and server name, in the user's own
//!   trust store (`<user dir>/trusted.json`, by default `~/.mcp-runtime/trusted.json`, mode
//!   0600, written atomically). A changed config has another hash, so it asks again.
//! - A server from a user-level file needs no approval.
//! - What happens to a project server nobody approved yet is the host's [`ProjectTrust`]
//!   policy: report it and start nothing (the default), ask the host, trust every project
//!   server for this run, or use user-level servers only.
//! - A tool's own approval state counts where the source reads one (Claude Code's
//!   `enabledMcpjsonServers` / `disabledMcpjsonServers` / `enableAllProjectMcpServers`).
//!
//! Concurrent approvals from two processes are read-modify-write of one small file: the last
//! writer wins, so at worst an approval is lost and the user is asked again (never the
//! reverse).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::discovery::DiscoveredServer;
use super::file::{read_text, ReadError, CONFIG_FILE_CAP};
use super::server::ServerConfig;
use super::source::{Level, SourceMeta};
use super::trust_facts::facts;
use crate::error::Error;
use crate::files::write_private;

/// The trust store's format version.
const STORE_VERSION: u32 = 1;

/// Where a server stands with the trust gate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TrustState {
    /// A user-level server: trusted, no approval needed.
    #[default]
    User,
    /// A project server the user approved (in the trust store, for this exact config).
    Approved,
    /// A project server approved by the tool that owns its file (the text says where, e.g.
    /// Claude Code's `enabledMcpjsonServers`).
    ApprovedByTool(String),
    /// A project server the host's policy trusts for this run only.
    TrustedForRun,
    /// A project server nobody approved yet (or whose config changed since): not started.
    NeedsApproval,
    /// A project server rejected (by the host's answer, the tool's own state, or the
    /// user-level-only policy): not started.
    Rejected(String),
}

impl TrustState {
    /// A short word for listings: `user`, `approved`, `approved (...)`, `trusted for this run`,
    /// `needs approval`, `rejected (...)`.
    pub fn describe(&self) -> String {
        match self {
            TrustState::User => "user".into(),
            TrustState::Approved => "approved".into(),
            TrustState::ApprovedByTool(why) => format!("approved ({why})"),
            TrustState::TrustedForRun => "trusted for this run".into(),
            TrustState::NeedsApproval => "needs approval".into(),
            TrustState::Rejected(why) => format!("rejected ({why})"),
        }
    }

    /// Whether the server may be started.
    pub fn allows_start(&self) -> bool {
        matches!(
            self,
            TrustState::User
                | TrustState::Approved
                | TrustState::ApprovedByTool(_)
                | TrustState::TrustedForRun
        )
    }
}

/// What a host answers when asked about one project server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustDecision {
    /// Start it, and remember the approval for this config (until it changes).
    Approve,
    /// Start it this time only (asked again by the next process).
    AllowOnce,
    /// Do not start it (asked again by the next process).
    Deny,
}

/// What the gate knows of one project server it decides on.
#[derive(Debug, Clone)]
pub(crate) struct TrustRequest {
    /// The server's name.
    pub(crate) name: String,
    /// Its unresolved config (`Debug` shows names of env/header entries, never values).
    pub(crate) config: ServerConfig,
    /// The file that declared it.
    pub(crate) source: SourceMeta,
    /// The project directory.
    pub(crate) project: PathBuf,
    /// The hash an approval is remembered by.
    pub(crate) hash: String,
}

type AskFn = dyn Fn(&DiscoveredServer) -> TrustDecision + Send + Sync;

/// The host's policy for project servers that are not approved yet.
#[derive(Clone, Default)]
pub enum ProjectTrust {
    /// Start none of them; report them (`needs approval`) with the file that declared them.
    /// The default.
    #[default]
    Report,
    /// Ask the host about each project server that would start, as discovered (its name,
    /// config, the file that declared it, and what changed since an earlier approval).
    /// [`TrustDecision::Approve`] is remembered in the trust store. Build it with
    /// [`ProjectTrust::ask`], which asks about each (server, config) at most once per policy
    /// value (its clones share the answers).
    Ask(Arc<AskFn>),
    /// Trust every project server, for this run only (nothing is remembered).
    TrustAll,
    /// Use user-level servers only: project servers are never started, approved or not.
    UserOnly,
}

impl ProjectTrust {
    /// A policy that asks `ask` about each project server not approved yet, at most once per
    /// (server, config): a later question about the same gets the earlier answer (`Approve`
    /// and `AllowOnce` as `AllowOnce`, `Deny` as `Deny`).
    pub fn ask(ask: impl Fn(&DiscoveredServer) -> TrustDecision + Send + Sync + 'static) -> Self {
        // `(name, config hash)` → whether it may start, for answers not remembered in the store.
        let answers: Mutex<HashMap<(String, String), bool>> = Mutex::new(HashMap::new());
        ProjectTrust::Ask(Arc::new(move |server: &DiscoveredServer| {
            let key = (server.name.clone(), super::config_hash(&server.config));
            if let Some(allowed) = answers.lock().get(&key).copied() {
                return if allowed {
                    TrustDecision::AllowOnce
                } else {
                    TrustDecision::Deny
                };
            }
            // Asked without the lock held: the host may take its time (or ask a person).
            let decision = ask(server);
            answers.lock().insert(key, decision != TrustDecision::Deny);
            decision
        }))
    }
}

impl std::fmt::Debug for ProjectTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProjectTrust::Report => "Report",
            ProjectTrust::Ask(_) => "Ask",
            ProjectTrust::TrustAll => "TrustAll",
            ProjectTrust::UserOnly => "UserOnly",
        })
    }
}

/// One remembered approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Approval {
    /// The hash of the approved (unresolved) config.
    pub hash: String,
    /// The file that declared the server when it was approved.
    pub path: PathBuf,
    /// When, in milliseconds since the Unix epoch.
    pub approved_at: u64,
    /// What was approved, for telling what changed since: the program, its arguments, the
    /// URL with its secrets masked, and digests (never values) of environment values,
    /// headers and every other setting.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facts: BTreeMap<String, String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    /// Project directory → server name → approval.
    #[serde(default)]
    projects: BTreeMap<String, BTreeMap<String, Approval>>,
}

/// The user's remembered approvals of project servers: one JSON file, mode 0600.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// A store in `path`.
    pub fn new(path: impl Into<PathBuf>) -> TrustStore {
        TrustStore { path: path.into() }
    }

    /// The key of a project: its canonical path (as given when it cannot be resolved).
    fn project_key(project: &Path) -> String {
        project
            .canonicalize()
            .unwrap_or_else(|_| project.to_path_buf())
            .to_string_lossy()
            .into_owned()
    }

    fn read(&self) -> Result<StoreFile, String> {
        match read_text(&self.path, CONFIG_FILE_CAP) {
            Ok(text) => {
                let file: StoreFile = serde_json::from_str(&text)
                    .map_err(|e| format!("{}: malformed: {e}", self.path.display()))?;
                if file.version != STORE_VERSION {
                    return Err(format!(
                        "{}: unknown version {}",
                        self.path.display(),
                        file.version
                    ));
                }
                Ok(file)
            }
            Err(ReadError::Missing) => Ok(StoreFile {
                version: STORE_VERSION,
                ..StoreFile::default()
            }),
            Err(ReadError::Bad(e)) => Err(format!("{}: {e}", self.path.display())),
        }
    }

    /// The approvals for `project`, by server name. An unreadable store approves nothing (and
    /// is logged).
    pub fn approvals(&self, project: &Path) -> BTreeMap<String, Approval> {
        match self.read() {
            Ok(mut file) => file
                .projects
                .remove(&Self::project_key(project))
                .unwrap_or_default(),
            Err(e) => {
                log::warn!("trust store {e}; no project server counts as approved");
                BTreeMap::new()
            }
        }
    }

    /// Whether `name` in `project` is approved for exactly the config with `hash`.
    #[cfg(test)]
    fn is_approved(&self, project: &Path, name: &str, hash: &str) -> bool {
        self.approvals(project)
            .get(name)
            .is_some_and(|a| a.hash == hash)
    }

    /// Remembers the approval of `name` in `project` for exactly `config`, declared in
    /// `declared_in`. A malformed store is refused, not overwritten.
    pub fn approve(
        &self,
        project: &Path,
        name: &str,
        config: &ServerConfig,
        declared_in: &Path,
    ) -> Result<(), Error> {
        let hash = super::config_hash(config);
        let facts = facts(config);
        self.edit(|file| {
            let approved_at = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            file.projects
                .entry(Self::project_key(project))
                .or_default()
                .insert(
                    name.to_owned(),
                    Approval {
                        hash,
                        path: declared_in.to_path_buf(),
                        approved_at,
                        facts,
                    },
                );
            true
        })
        .map(|_| ())
    }

    /// Forgets the approval of `name` in `project`; false when there was none.
    pub fn revoke(&self, project: &Path, name: &str) -> Result<bool, Error> {
        self.edit(|file| {
            let key = Self::project_key(project);
            let Some(servers) = file.projects.get_mut(&key) else {
                return false;
            };
            let removed = servers.remove(name).is_some();
            if servers.is_empty() {
                file.projects.remove(&key);
            }
            removed
        })
    }

    fn edit(&self, change: impl FnOnce(&mut StoreFile) -> bool) -> Result<bool, Error> {
        let mut file = self.read().map_err(|message| Error::Config {
            message: format!("trust store {message}; fix or remove it first"),
        })?;
        if !change(&mut file) {
            return Ok(false);
        }
        let text = serde_json::to_vec_pretty(&file).map_err(|e| Error::Config {
            message: format!("trust store: {e}"),
        })?;
        write_private(&self.path, &text)?;
        Ok(true)
    }
}

/// Decides the trust state of one winning, enabled server. `approved` is the store's entry
/// for it, `tool` what the tool that owns the file decided.
pub(crate) fn evaluate(
    request: &TrustRequest,
    asking: &DiscoveredServer,
    tool: Option<&TrustState>,
    approved: Option<&Approval>,
    policy: &ProjectTrust,
    store: &TrustStore,
) -> TrustState {
    if request.source.level == Level::User {
        return TrustState::User;
    }
    if matches!(policy, ProjectTrust::UserOnly) {
        return TrustState::Rejected("the host uses user-level servers only".into());
    }
    if let Some(state @ TrustState::Rejected(_)) = tool {
        return state.clone();
    }
    if approved.is_some_and(|a| a.hash == request.hash) {
        return TrustState::Approved;
    }
    if let Some(state @ TrustState::ApprovedByTool(_)) = tool {
        return state.clone();
    }
    match policy {
        ProjectTrust::Report | ProjectTrust::UserOnly => TrustState::NeedsApproval,
        ProjectTrust::TrustAll => TrustState::TrustedForRun,
        ProjectTrust::Ask(ask) => match ask(asking) {
            TrustDecision::Approve => {
                match store.approve(
                    &request.project,
                    &request.name,
                    &request.config,
                    &request.source.path,
                ) {
                    Ok(()) => TrustState::Approved,
                    Err(e) => {
                        log::warn!(
                            "[{}] approved, but the approval could not be remembered: {e}",
                            request.name
                        );
                        TrustState::TrustedForRun
                    }
                }
            }
            TrustDecision::AllowOnce => TrustState::TrustedForRun,
            TrustDecision::Deny => TrustState::Rejected("refused by the host".into()),
        },
    }
}

/// The text a host shows for a project server that waits for approval: the file that
/// declared it, what changed since its approval, the user-level server of the same name it
/// hides (`shadows`: where that one is declared), and how to approve it: the host's `hint`
/// (`{name}` in it stands for the server's name) or, without one, host-neutral words.
pub(crate) fn needs_approval_message(
    name: &str,
    declared_in: &Path,
    changes: &[String],
    shadows: Option<&Path>,
    hint: Option<&str>,
) -> String {
    let mut text = format!(
        "Project MCP server \"{name}\" (declared in {}) needs approval before it is started or \
         any of its values resolved",
        declared_in.display()
    );
    if !changes.is_empty() {
        text.push_str(&format!(
            "; its config changed since it was approved ({})",
            changes.join("; ")
        ));
    }
    if let Some(user) = shadows {
        text.push_str(&format!(
            "; until then your own server \"{name}\" (declared in {}) is not used either, as \
             the project's takes its name",
            user.display()
        ));
    }
    match hint {
        Some(hint) => text.push_str(&format!(": {}", hint.replace("{name}", name))),
        None => text.push_str(": approve it where this application manages MCP servers"),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mcp-trust-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn approve_revoke_and_the_hash_must_match() {
        let d = dir("store");
        let store = TrustStore::new(d.join("state").join("trusted.json"));
        let project = d.join("p");
        std::fs::create_dir_all(&project).unwrap();
        let config = ServerConfig::stdio("node", ["server.js"]);
        let h1 = crate::config::config_hash(&config);
        assert!(!store.is_approved(&project, "s", &h1));
        store
            .approve(&project, "s", &config, &project.join(".mcp.json"))
            .unwrap();
        assert!(store.is_approved(&project, "s", &h1));
        assert_eq!(store.approvals(&project)["s"].facts["command"], "node");
        assert!(!store.is_approved(&project, "s", "h2"), "a changed config");
        assert!(!store.is_approved(&d, "s", &h1), "another project");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&store.path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(store.revoke(&project, "s").unwrap());
        assert!(!store.revoke(&project, "s").unwrap());
        assert!(!store.is_approved(&project, "s", &h1));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_malformed_store_approves_nothing_and_is_not_overwritten() {
        let d = dir("bad");
        let path = d.join("trusted.json");
        std::fs::write(&path, "{not json").unwrap();
        let store = TrustStore::new(&path);
        assert!(store.approvals(&d).is_empty());
        let config = ServerConfig::stdio("node", ["server.js"]);
        assert!(store.approve(&d, "s", &config, &d).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
        let _ = std::fs::remove_dir_all(&d);
    }
}
