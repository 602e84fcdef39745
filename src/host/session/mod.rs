//! The agent session a host builds at startup: its tools and what the servers offer.
//!
//! The session holds the host's own tools and the MCP tools, with an active set (in a
//! registry of its own, `registry`). [`create_agent_session`] runs the loader (unless MCP is off), registers the MCP tools, logs
//! per-server errors and keeps the manager. [`AgentSession::refresh_mcp_tools`] swaps the MCP
//! tools for a new set without touching the host's own tools or their active state; by default
//! the session does that by itself whenever the manager's tool set changes (a late server, a
//! `tools/list_changed`, a disconnect). Hosts that keep their own list of tools mirror the
//! session's through [`AgentSession::on_refresh`].
//!
//! Beside tools, the session keeps what the servers offer a host: resources, resource
//! templates and prompts (each prompt with its command name, `mcp_<server>_<prompt>`), as a
//! snapshot that follows the manager's `on_features_changed` the way the tools follow
//! `on_tools_changed`; [`AgentSession::on_features_refresh`] tells a host of each change.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::{DiscoveredServer, DiscoveryOptions};
use crate::error::Error;
use crate::host::loader::{
    load_with_manager, loaded_tools_numbered, try_load_all_mcp_configs, LoadError,
};
use crate::manager::cache::{FileToolCache, ToolCache};
use crate::manager::{ConnectReport, ManagerOptions, McpManager};
use crate::tool::AgentTool;

mod features;
mod on_demand;
mod registry;

use features::McpFeatures;
use on_demand::OnDemand;
pub use on_demand::ToolSearchOptions;
pub(crate) use registry::ToolRegistry;

pub(crate) type Listener = Arc<dyn Fn(&AgentSession) + Send + Sync>;
type ManagerHook = Arc<dyn Fn(&McpManager) + Send + Sync>;

/// How to create a session.
#[derive(Clone)]
pub struct SessionOptions {
    /// The project directory.
    pub cwd: PathBuf,
    /// Whether to use MCP at all (default true). False skips discovery entirely.
    pub enable_mcp: bool,
    /// Discovery: project configs on or off, the policy for project servers nobody approved
    /// yet (`project_trust`: without a choice they are reported by
    /// [`AgentSession::needs_approval`], never started), home, the host's own files, extra
    /// sources.
    pub config: DiscoveryOptions,
    /// The manager: the gate, the tool cache, OAuth credentials, the connection template. Its
    /// `project_dir` is set to `cwd` (see [`SessionOptions::manager_options`]).
    pub manager: ManagerOptions,
    /// Whether a manager without a `cache` gets the file-backed one in the user's cache
    /// directory (`$XDG_CACHE_HOME/mcp-runtime`, else `~/.cache/mcp-runtime`), so servers
    /// still connecting after the gate are offered from what they listed last time. Default
    /// true; false runs without a tool cache (unless `manager.cache` names one).
    pub default_cache: bool,
    /// Called with the manager once it exists, before any server connects: a host that must be
    /// able to close every server from elsewhere (a signal handler) takes its clone here.
    pub on_manager: Option<ManagerHook>,
    /// The host's own tools.
    pub host_tools: Vec<Arc<dyn AgentTool>>,
    /// Refresh the MCP tools by itself when the manager's tool set changes, and the
    /// resources, templates and prompts when those change (default true).
    pub auto_refresh: bool,
    /// Whether (and how) MCP tools' schemas are offered on demand, behind a search tool,
    /// instead of all at once (default `None`: never). See [`ToolSearchOptions`].
    pub tool_search: Option<ToolSearchOptions>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            cwd: std::env::current_dir().unwrap_or_default(),
            enable_mcp: true,
            config: DiscoveryOptions::default(),
            manager: ManagerOptions::default(),
            default_cache: true,
            on_manager: None,
            host_tools: Vec::new(),
            auto_refresh: true,
            tool_search: None,
        }
    }
}

impl SessionOptions {
    /// The manager options the session uses: `manager` with its `project_dir` set to `cwd`,
    /// the default cache when `default_cache` and no cache is given, and the user's own
    /// file's `proxy` and `caFile` where the HTTP options set none.
    pub fn manager_options(&self) -> ManagerOptions {
        let mut options = self.manager.clone();
        options.project_dir = self.cwd.clone();
        let user_file = self.config.host.user_file(&self.config.context(&self.cwd));
        let (proxy, ca_file) = crate::config::network_settings(&user_file);
        let http = &mut options.connect.http;
        http.proxy = http.proxy.take().or(proxy);
        http.ca_file = http.ca_file.take().or(ca_file);
        if options.cache.is_none() && self.default_cache {
            options.cache = Some(Arc::new(FileToolCache::user_default()) as Arc<dyn ToolCache>);
        }
        options
    }
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("cwd", &self.cwd)
            .field("enable_mcp", &self.enable_mcp)
            .field("config", &self.config)
            .field("manager", &self.manager)
            .field("default_cache", &self.default_cache)
            .field("host_tools", &self.host_tools.len())
            .field("auto_refresh", &self.auto_refresh)
            .field("tool_search", &self.tool_search)
            .finish_non_exhaustive()
    }
}

/// A host session: its tool registry and (with MCP on) the manager behind the MCP tools.
/// Cheap to clone.
#[derive(Clone)]
pub struct AgentSession {
    inner: Arc<Inner>,
}

struct Inner {
    cwd: PathBuf,
    config: DiscoveryOptions,
    manager: Option<McpManager>,
    registry: Mutex<ToolRegistry>,
    /// Taken after `registry`, never before it.
    on_demand: Mutex<OnDemand>,
    /// The number of the last registry snapshot taken, and of the last one handed to the
    /// listeners.
    snapshots: AtomicU64,
    delivered: Mutex<u64>,
    listeners: Mutex<Vec<Listener>>,
    features: Mutex<McpFeatures>,
    /// Held by a features refresh from its reading to its storing.
    refreshing: Mutex<()>,
    features_listeners: Mutex<Vec<Listener>>,
    startup_errors: Vec<LoadError>,
    exa_api_keys: Vec<String>,
    needs_approval: Mutex<Vec<DiscoveredServer>>,
    /// Config files that could not be read, at startup.
    warnings: Vec<String>,
    /// The manager's report of the startup (none with MCP off).
    report: Option<ConnectReport>,
}

impl Inner {
    /// A session's state with nothing loaded yet.
    fn new(
        cwd: PathBuf,
        config: DiscoveryOptions,
        registry: ToolRegistry,
        manager: Option<McpManager>,
    ) -> Inner {
        Inner {
            cwd,
            config,
            manager,
            registry: Mutex::new(registry),
            on_demand: Mutex::new(OnDemand::default()),
            snapshots: AtomicU64::new(0),
            delivered: Mutex::new(0),
            listeners: Mutex::new(Vec::new()),
            features: Mutex::new(McpFeatures::default()),
            refreshing: Mutex::new(()),
            features_listeners: Mutex::new(Vec::new()),
            startup_errors: Vec::new(),
            exa_api_keys: Vec::new(),
            needs_approval: Mutex::new(Vec::new()),
            warnings: Vec::new(),
            report: None,
        }
    }
}

/// Creates a session: registers the host's tools, then (with MCP on) discovers, connects and
/// registers the MCP tools, logging each server's error. It never fails as a whole: a server
/// that failed is one of [`AgentSession::startup_errors`], one that waits for the user's
/// approval one of [`AgentSession::needs_approval`].
///
/// ```no_run
/// use mcp_runtime::{create_agent_session, CallOptions, SessionOptions};
///
/// let session = create_agent_session(SessionOptions {
///     cwd: "/path/to/project".into(),
///     ..SessionOptions::default()
/// });
/// for e in session.startup_errors() {
///     eprintln!("{}: {}", e.path, e.error);
/// }
/// if let Some(tool) = session.tool("mcp_files_read") {
///     let out = tool.execute(serde_json::json!({"path": "a.txt"}), CallOptions::default())?;
///     println!("{}", out.model_text());
/// }
/// session.close();
/// # Ok::<(), mcp_runtime::Error>(())
/// ```
pub fn create_agent_session(options: SessionOptions) -> AgentSession {
    let mut registry = ToolRegistry::default();
    for tool in &options.host_tools {
        registry.add_host_tool(Arc::clone(tool));
    }
    let config = options.config.clone();
    if !options.enable_mcp {
        return AgentSession {
            inner: Arc::new(Inner::new(options.cwd, config, registry, None)),
        };
    }
    let manager = McpManager::new(options.manager_options());
    if let Some(hook) = &options.on_manager {
        hook(&manager);
    }
    let loaded = load_with_manager(manager, &options.cwd, &config);
    for e in &loaded.errors {
        log::warn!("MCP: {}: {}", e.path, e.error);
    }
    registry.replace_mcp_tools(loaded.tools);
    let mut inner = Inner::new(options.cwd, config, registry, Some(loaded.manager.clone()));
    inner.on_demand = Mutex::new(OnDemand::new(options.tool_search.clone()));
    inner.startup_errors = loaded.errors;
    inner.exa_api_keys = loaded.exa_api_keys;
    inner.needs_approval = Mutex::new(loaded.needs_approval);
    inner.warnings = loaded.warnings;
    inner.report = Some(loaded.report);
    let session = AgentSession {
        inner: Arc::new(inner),
    };
    {
        let mut registry = session.inner.registry.lock();
        let weak = Arc::downgrade(&session.inner);
        session.inner.on_demand.lock().apply(&mut registry, weak);
    }
    if options.auto_refresh {
        let weak: Weak<Inner> = Arc::downgrade(&session.inner);
        loaded.manager.on_tools_changed(move |_| {
            if let Some(inner) = weak.upgrade() {
                AgentSession { inner }.refresh_from_manager();
            }
        });
        let weak: Weak<Inner> = Arc::downgrade(&session.inner);
        loaded.manager.on_features_changed(move |_| {
            if let Some(inner) = weak.upgrade() {
                AgentSession { inner }.refresh_features();
            }
        });
    }
    // After the listener is in place: nothing listed during startup is missed (and, as a
    // refresh, it cannot overwrite a newer snapshot the listener stored meanwhile).
    session.refresh_features();
    session
}

impl AgentSession {
    /// The manager (None when MCP is off).
    pub fn manager(&self) -> Option<&McpManager> {
        self.inner.manager.as_ref()
    }

    /// The project directory.
    pub fn cwd(&self) -> &std::path::Path {
        &self.inner.cwd
    }

    /// The discovery settings the session uses (for reloads).
    pub fn config_options(&self) -> &DiscoveryOptions {
        &self.inner.config
    }

    /// The errors of the startup load.
    pub fn startup_errors(&self) -> &[LoadError] {
        &self.inner.startup_errors
    }

    /// API keys of the Exa servers discovery filtered out.
    pub fn exa_api_keys(&self) -> &[String] {
        &self.inner.exa_api_keys
    }

    /// The config files that could not be read at startup (each in words).
    pub fn warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The manager's report of the startup: the servers connected, still connecting (with
    /// deferred tools from the cache), failed, and left out. None with MCP off.
    pub fn startup_report(&self) -> Option<&ConnectReport> {
        self.inner.report.as_ref()
    }

    /// Every tool (the host's own and the MCP tools), by name.
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        self.inner.registry.lock().all()
    }

    /// Whether the tool `name` is active.
    pub fn is_tool_active(&self, name: &str) -> bool {
        self.inner.registry.lock().is_active(name)
    }

    /// Whether `name` is an MCP tool's (not one of the host's own).
    pub fn is_mcp_tool(&self, name: &str) -> bool {
        self.inner.registry.lock().is_mcp_tool(name)
    }

    /// The names of the MCP tools.
    pub fn mcp_tool_names(&self) -> Vec<String> {
        self.inner.registry.lock().mcp_tool_names()
    }

    /// The active tools.
    pub fn active_tools(&self) -> Vec<Arc<dyn AgentTool>> {
        self.inner.registry.lock().active()
    }

    /// Makes a tool (in)active. With schemas on demand, activating an MCP tool offers it
    /// (as a search that found it would) and deactivating one drops it.
    pub fn set_tool_active(&self, name: &str, active: bool) -> bool {
        let mut registry = self.inner.registry.lock();
        let mut on_demand = self.inner.on_demand.lock();
        if on_demand.on && registry.is_mcp_tool(name) {
            if active {
                on_demand.offered.insert(name.to_owned());
            } else {
                on_demand.offered.remove(name);
            }
        }
        registry.set_active(name, active)
    }

    /// The number of a change to the registry (taken under the registry's lock, so the
    /// numbers follow the changes).
    fn snapshot(&self) -> u64 {
        self.inner.snapshots.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Tells the listeners of change `n`, unless a later change was told already (two changes
    /// on two threads: the later one's listeners see the registry as it is).
    fn notify(&self, n: u64) {
        {
            let mut delivered = self.inner.delivered.lock();
            if n < *delivered {
                return;
            }
            *delivered = n;
        }
        let listeners: Vec<Listener> = self.inner.listeners.lock().clone();
        for l in listeners {
            l(self);
        }
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn AgentTool>> {
        self.inner.registry.lock().get(name).map(Arc::clone)
    }

    /// Called after every refresh of the tools, with the session (to mirror its
    /// [`tools`](AgentSession::tools) or [`active_tools`](AgentSession::active_tools) in a
    /// host's own list). Called with no lock of the session held.
    pub fn on_refresh(&self, listener: impl Fn(&AgentSession) + Send + Sync + 'static) {
        self.inner.listeners.lock().push(Arc::new(listener));
    }

    /// Removes every MCP tool, registers `tools`, and activates them; the host's own tools and
    /// their active state stay.
    pub fn refresh_mcp_tools(&self, tools: Vec<Arc<dyn AgentTool>>) {
        self.apply_mcp_tools(|registry| {
            registry.replace_mcp_tools(tools);
            true
        });
    }

    /// Changes the registry's MCP tools by `replace` (false: it changed nothing), then brings
    /// the on-demand tools up to date and tells the listeners.
    fn apply_mcp_tools(&self, replace: impl FnOnce(&mut ToolRegistry) -> bool) {
        let snapshot = {
            let mut registry = self.inner.registry.lock();
            if !replace(&mut registry) {
                return;
            }
            let weak = Arc::downgrade(&self.inner);
            self.inner.on_demand.lock().apply(&mut registry, weak);
            self.snapshot()
        };
        self.notify(snapshot);
    }

    /// Refreshes from the manager's current tool set (and its resources, templates and
    /// prompts).
    pub fn refresh_from_manager(&self) {
        if let Some(m) = &self.inner.manager {
            // Numbered: listeners run on any manager thread, and two refreshes that overlap
            // may apply in either order; the older snapshot is then dropped.
            let (number, tools) = loaded_tools_numbered(m);
            self.apply_mcp_tools(|registry| registry.replace_mcp_tools_from(number, tools));
            self.refresh_features();
        }
    }

    /// Waits for a late server; once it is connected, refreshes so its tools are registered.
    pub fn wait_for_server(&self, name: &str, timeout: Duration) -> Result<(), Error> {
        let manager = self
            .inner
            .manager
            .as_ref()
            .ok_or_else(|| Error::not_connected(name))?;
        manager.wait_for_connection(name, timeout, None)?;
        if manager.connection_status(name).is_connected() {
            self.refresh_from_manager();
        }
        Ok(())
    }

    /// The project servers that waited for approval at the last discovery: not started,
    /// nothing of them resolved.
    pub fn needs_approval(&self) -> Vec<DiscoveredServer> {
        self.inner.needs_approval.lock().clone()
    }

    /// Discovers again (with the session's settings, `enable_project_config` and the trust
    /// policy included). A discovery that fails outright is the synthetic
    /// `{ path: ".mcp.json", error }`.
    pub fn discover(&self) -> Result<crate::config::LoadedConfigs, LoadError> {
        let loaded = try_load_all_mcp_configs(&self.inner.cwd, &self.inner.config)?;
        *self.inner.needs_approval.lock() = loaded.needs_approval().into_iter().cloned().collect();
        Ok(loaded)
    }

    /// Discovers again and connects what is not connected yet, then refreshes. `None` when
    /// MCP is off; a failed discovery connects and changes nothing.
    pub fn discover_and_connect(&self) -> Option<Result<ConnectReport, LoadError>> {
        let manager = self.inner.manager.as_ref()?;
        Some(self.discover().map(|loaded| {
            let report = manager.connect_found(&loaded);
            self.refresh_from_manager();
            report
        }))
    }

    /// The `/mcp reload` flow: discovers first and only then disconnects every server and
    /// connects the new set. When discovery fails, nothing is disconnected: the servers and
    /// their tools stay as they were, and the error is returned. `None` when MCP is off.
    pub fn reload(&self) -> Option<Result<ConnectReport, LoadError>> {
        let manager = self.inner.manager.as_ref()?;
        Some(self.discover().map(|loaded| {
            manager.disconnect_all();
            let report = manager.connect_found(&loaded);
            self.refresh_from_manager();
            report
        }))
    }

    /// Disconnects every server (the session's tools lose their MCP tools) and removes the
    /// temporary directory of results written out, if any ([`McpManager::close`]).
    pub fn close(&self) {
        if let Some(m) = &self.inner.manager {
            m.close();
        }
        self.refresh_mcp_tools(Vec::new());
        self.refresh_features();
    }
}

impl std::fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSession")
            .field("cwd", &self.inner.cwd)
            .field("mcp", &self.inner.manager.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_cache_is_on_by_default_and_can_be_turned_off() {
        let options = SessionOptions {
            cwd: "/project".into(),
            ..SessionOptions::default()
        };
        let on = options.manager_options();
        assert!(
            on.cache.is_some(),
            "a file cache in the user's cache directory"
        );
        assert_eq!(on.project_dir, options.cwd);
        let off = SessionOptions {
            default_cache: false,
            ..options
        };
        assert!(off.manager_options().cache.is_none());
        // A cache the host gives is kept either way.
        let mut own = off.clone();
        own.manager.cache = Some(Arc::new(FileToolCache::new("/elsewhere")));
        assert!(own.manager_options().cache.is_some());
    }
}
