//! The manager: many servers, from discovery to shutdown.
//!
#![doc = include_str!("../../docs/manager.md")]

// Read it top-down, one phase per file:
// 1. `startup`: [`McpManager::connect_servers`] = start (one task per server) → the gate
//    (wait until every task is done or `startup_timeout` passed) → after the gate (cached
//    tools become deferred tools for servers still connecting; without a cache entry, wait for
//    them: a host never starts without a server's tools).
// 2. `task`: one attempt of one server on its own thread: resolve → connect → list tools →
//    apply the outcome (tools, cache, late errors, listeners) → tell the gate → tear down what
//    is nobody's. A failed handshake frees the gate before its process is stopped.
// 3. `runtime`: `tools/list_changed` refreshes a server's tools (coalesced); a dead transport
//    is noticed at once (status `disconnected` with the reason, tools withdrawn, listeners
//    told); an opt-in [`ReconnectPolicy`] reconnects.
// 4. `close`: [`McpManager::disconnect_server`] / [`McpManager::disconnect_all`]: registries
//    first, then every connection stopped in parallel (attempts still connecting or resolving
//    their `!command` values too); they return once every thread the manager started for those
//    servers has ended (so their processes are gone), bounded by `disconnect_wait`.
//
// The state lock (`state.rs`) is never held across I/O, a callback, or the drop of a client:
// values are moved out, the lock released, then acted on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::select;
use parking_lot::Mutex;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::client::{CallOptions, Client};
use crate::config::{ServerConfig, SourceMeta};
use crate::error::Error;
use crate::protocol::{CallToolResult, Tool};

#[cfg(feature = "oauth")]
mod auth;
#[cfg(not(feature = "oauth"))]
mod auth_off;
pub(crate) mod cache;
mod caught;
mod close;
mod eras;
mod features;
mod handler;
pub(crate) mod naming;
mod options;
mod output;
mod runtime;
mod startup;
mod state;
mod task;

pub use crate::manager::cache::{FileToolCache, ToolCache, CACHE_VERSION, DEFAULT_TTL};
pub use naming::{exposed_name, exposed_names, exposed_prefix};
pub use options::{ConnectReport, ManagerOptions, ReconnectPolicy, ServerStatus, STARTUP_TIMEOUT};

pub use features::Managed;
pub use output::{OutputBudget, DEFAULT_OUTPUT_TOKENS};

use close::Work;
use state::{Phase, Server, State};

/// A tool as the manager holds it: the raw definition and the server it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerTool {
    /// The server's configured name.
    pub server: String,
    /// The tool as the server listed it (or as the cache remembered it), shared with the
    /// manager rather than copied.
    pub tool: Arc<Tool>,
    /// True while the server is still connecting and the definition comes from the cache.
    pub deferred: bool,
    /// Where the server's config came from.
    pub source: Option<SourceMeta>,
}

/// A listener of changes: given the servers whose tools (or features) changed.
type Listener = Arc<dyn Fn(&[String]) + Send + Sync>;
type FeaturesListener = Listener;

/// Many MCP servers. Cheap to clone; every clone is the same manager.
#[derive(Clone)]
pub struct McpManager {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    options: ManagerOptions,
    state: Mutex<State>,
    listeners: Mutex<Vec<Listener>>,
    features_listeners: Mutex<Vec<FeaturesListener>>,
    next_attempt: AtomicU64,
    /// The number of the last tool snapshot taken (see `get_tools_numbered`).
    snapshots: AtomicU64,
    /// The manager's running threads (connect tasks, teardowns, refreshes), waited for on
    /// disconnect.
    work: Work,
    /// The eras of its HTTP server configs (see `eras`).
    eras: Arc<eras::Eras>,
    /// Where tool results that did not fit the output budget are written.
    spill: output::SpillDir,
}

impl McpManager {
    /// A manager with no servers: a host that keeps its own list of servers (rather than
    /// discovering them with a session) connects them with
    /// [`connect_servers`](McpManager::connect_servers) and calls their tools through the
    /// tool objects the host layer builds.
    ///
    /// ```no_run
    /// use std::collections::BTreeMap;
    /// use mcp_runtime::{CallOptions, ManagerOptions, McpManager, ServerConfig};
    ///
    /// let manager = McpManager::new(ManagerOptions::default());
    /// let mut servers = BTreeMap::new();
    /// servers.insert(
    ///     "memory".to_owned(),
    ///     ServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-memory"]),
    /// );
    /// let report = manager.connect_servers(&servers); // after the 250 ms gate at most
    /// println!("connected {:?}, failed {:?}", report.connected, report.errors);
    /// for tool in mcp_runtime::host::loaded_tools(&manager) {
    ///     println!("{}", tool.name()); // mcp_memory_create_entities, ...
    /// }
    /// manager.close();
    /// ```
    pub fn new(mut options: ManagerOptions) -> McpManager {
        // The host's cache runs behind a catch: a panic in it is a miss, or a failed write.
        options.cache = options.cache.map(caught::CaughtCache::wrap);
        // A host's `Duration::MAX` ("no bound") is a year: no deadline made of it overflows.
        options.connect = options.connect.capped();
        options.startup_timeout = crate::cancel::capped(options.startup_timeout);
        options.disconnect_wait = crate::cancel::capped(options.disconnect_wait);
        if let Some(policy) = &mut options.reconnect {
            policy.window = crate::cancel::capped(policy.window);
            for d in &mut policy.backoff {
                *d = crate::cancel::capped(*d);
            }
        }
        McpManager {
            shared: Arc::new(Shared {
                options,
                state: Mutex::new(State::default()),
                listeners: Mutex::new(Vec::new()),
                features_listeners: Mutex::new(Vec::new()),
                next_attempt: AtomicU64::new(1),
                snapshots: AtomicU64::new(0),
                work: Work::new(),
                eras: Arc::default(),
                spill: output::SpillDir::default(),
            }),
        }
    }

    /// The options it was built with.
    pub fn options(&self) -> &ManagerOptions {
        &self.shared.options
    }

    /// A server's state and last error.
    pub fn connection_status(&self, name: &str) -> ServerStatus {
        let state = self.shared.state.lock();
        match state.servers.get(name) {
            Some(s) => match s.phase {
                Phase::Connected { .. } => ServerStatus::Connected,
                Phase::Connecting { .. } => ServerStatus::Connecting {
                    last_error: s.last_error.clone(),
                },
                Phase::Disconnected => ServerStatus::Disconnected {
                    error: s.last_error.clone(),
                },
            },
            None => ServerStatus::Disconnected { error: None },
        }
    }

    /// The sandbox a stdio server runs in, with its rules as the kernel gets them (paths
    /// resolved against the project), or `None` when it runs unconfined (or is not known).
    /// A host decides from it how much to confirm, as VS Code auto-approves the tool calls
    /// of a sandboxed server.
    pub fn sandbox(&self, name: &str) -> Option<crate::transport::Sandbox> {
        let config = self.shared.config_of(name)?;
        crate::config::sandbox::rules(&config, &self.shared.options.project_dir)
            .ok()
            .flatten()
    }

    /// Every known server's name, in order.
    pub fn server_names(&self) -> Vec<String> {
        self.shared.state.lock().servers.keys().cloned().collect()
    }

    /// Where a server's config came from.
    pub fn source(&self, name: &str) -> Option<SourceMeta> {
        self.shared
            .state
            .lock()
            .servers
            .get(name)
            .and_then(|s| s.source.clone())
    }

    /// A server's (unresolved) config.
    pub fn config(&self, name: &str) -> Option<ServerConfig> {
        self.shared.config_of(name)
    }

    /// The connected client of a server.
    pub fn client(&self, name: &str) -> Option<Client> {
        self.shared
            .state
            .lock()
            .servers
            .get(name)
            .and_then(|s| s.client().cloned())
    }

    /// Waits until `name` is connected with its tools listed (its client) or has failed (its
    /// error), bounded by `timeout` and `cancel`.
    pub fn wait_for_connection(
        &self,
        name: &str,
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> Result<Client, Error> {
        self.wait_until(name, timeout, cancel, |server| match &server.phase {
            Phase::Connected { client, .. } => Some(Ok(client.clone())),
            Phase::Disconnected => Some(Err(server
                .last_error
                .clone()
                .unwrap_or_else(|| Error::not_connected(name)))),
            Phase::Connecting { .. } => None,
        })
    }

    /// Waits until `name` can be called: its handshake is done (its tools may still be being
    /// listed), bounded by `timeout` and `cancel`. A server that failed or died gives
    /// [`Error::NotConnected`] with the reason; a wait that runs out gives
    /// [`Error::ConnectTimeout`] (the server is still connecting).
    pub fn wait_for_client(
        &self,
        name: &str,
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> Result<Client, Error> {
        self.wait_until(name, timeout, cancel, |server| {
            if let Some(client) = server.usable_client() {
                return Some(Ok(client.clone()));
            }
            match server.phase {
                Phase::Disconnected => Some(Err(server.not_connected(name))),
                _ => None,
            }
        })
    }

    /// Waits until `settled` says the server's entry has an answer.
    fn wait_until(
        &self,
        name: &str,
        timeout: Duration,
        cancel: Option<&CancelToken>,
        settled: impl Fn(&Server) -> Option<Result<Client, Error>>,
    ) -> Result<Client, Error> {
        let deadline = Instant::now() + crate::cancel::capped(timeout);
        let never = crossbeam_channel::never();
        let cancelled = cancel.map(CancelToken::receiver).unwrap_or(&never);
        loop {
            let wake = {
                let mut state = self.shared.state.lock();
                let Some(server) = state.servers.get(name) else {
                    return Err(Error::not_connected(name));
                };
                if let Some(answer) = settled(server) {
                    return answer;
                }
                let (tx, rx) = crossbeam_channel::bounded(1);
                state.watchers.push(tx);
                rx
            };
            let left = deadline.saturating_duration_since(Instant::now());
            select! {
                recv(wake) -> _ => continue,
                recv(cancelled) -> _ => return Err(Error::Cancelled),
                default(left) => {
                    return Err(Error::ConnectTimeout {
                        server: name.to_owned(),
                        after: timeout,
                        stderr_tail: Vec::new(),
                        skipped_stdout: None,
                    })
                }
            }
        }
    }

    /// The current tools of every server (live ones, and deferred ones from the cache), by
    /// server then tool name. A 2026-07-28 server whose listing is past its `ttlMs` is
    /// re-listed in the background (its current tools are returned meanwhile).
    pub(crate) fn get_tools(&self) -> Vec<ServerTool> {
        self.get_tools_numbered().1
    }

    /// [`McpManager::get_tools`], numbered: the number is taken under the lock the tools are
    /// read under, so a later snapshot has a larger number, whatever thread took it and
    /// whenever it is applied (an older one must never replace a newer one).
    pub(crate) fn get_tools_numbered(&self) -> (u64, Vec<ServerTool>) {
        let state = self.shared.state.lock();
        let number = self.shared.snapshots.fetch_add(1, Ordering::SeqCst) + 1;
        let mut out = Vec::new();
        let mut connected = Vec::new();
        for (name, server) in &state.servers {
            if let Phase::Connected { client, .. } = &server.phase {
                connected.push((name.clone(), client.clone()));
            }
            for tool in &server.tools {
                out.push(ServerTool {
                    server: name.clone(),
                    tool: tool.clone(),
                    deferred: server.deferred,
                    source: server.source.clone(),
                });
            }
        }
        drop(state);
        for (name, client) in connected {
            if !client.tools_fresh() {
                self.shared.request_refresh(&name, runtime::Refresh::Tools);
            }
        }
        (number, out)
    }

    /// Whether `server` currently offers `tool` (live, or deferred from the cache).
    pub fn has_tool(&self, server: &str, tool: &str) -> bool {
        let state = self.shared.state.lock();
        state
            .servers
            .get(server)
            .is_some_and(|s| s.tools.iter().any(|t| t.name == tool))
    }

    /// Registers a listener for tool-set changes after startup (late servers, refreshes,
    /// disconnects), given the servers whose tools changed. A listener that panics is logged;
    /// the others, and the next change, are still told.
    pub fn on_tools_changed(&self, listener: impl Fn(&[String]) + Send + Sync + 'static) {
        self.shared.listeners.lock().push(Arc::new(listener));
    }

    /// Calls a tool of a connected server (or of one whose handshake is done and whose tools
    /// are still being listed): what every MCP tool object does when it is executed, the one
    /// call path a host has. The server's `enabledTools` / `disabledTools` apply here too;
    /// its `toolTimeout`, else its `timeout`, else the connection's request timeout, is the
    /// default bound.
    pub(crate) fn call_tool_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, Error> {
        let (client, config) = {
            let state = self.shared.state.lock();
            let Some(s) = state.servers.get(server) else {
                return Err(Error::not_connected(server));
            };
            match s.usable_client() {
                Some(client) => (client.clone(), s.config.clone()),
                None => return Err(s.not_connected(server)),
            }
        };
        if !config.tool_allowed(tool) {
            return Err(Error::Config {
                message: format!("tool {tool:?} of server {server:?} is turned off by its config"),
            });
        }
        let mut options = options;
        if options.timeout.is_none() {
            options.timeout = config.tool_timeout();
        }
        client.call_tool_with(tool, arguments, options)
    }

    /// Re-lists a connected server's tools (on `tools/list_changed`, or when asked).
    pub fn refresh_server_tools(&self, name: &str) -> Result<(), Error> {
        self.shared.refresh(name)
    }

    /// Forgets a server: its entry (pending state, source, tools) goes first, then its
    /// connection (or connection attempt, `!command` resolution included) is stopped. Returns
    /// when the server's process is gone, or after the close grace period at the most.
    pub fn disconnect_server(&self, name: &str) {
        let removed = {
            let mut state = self.shared.state.lock();
            let removed = state.servers.remove(name);
            state.notify();
            removed
        };
        let had_tools = removed.as_ref().is_some_and(|s| !s.tools.is_empty());
        let had_features = removed
            .as_ref()
            .is_some_and(|s| s.features != features::Features::default());
        let clients: Vec<Client> = removed.and_then(Server::stop).into_iter().collect();
        self.shared.close_and_wait(clients, Some(name));
        if had_tools {
            self.shared.tools_changed(vec![name.to_owned()]);
        }
        if had_features {
            self.shared.features_changed(vec![name.to_owned()]);
        }
    }

    /// The shutdown: disconnects every server ([`McpManager::disconnect_all`]) and removes the
    /// temporary directory of tool results written out ([`OutputBudget::spill`]), if any; no
    /// result is written to a temporary directory after that (a cut result's notice then says
    /// how to ask for less instead). What a host calls at exit (or `AgentSession::close`).
    pub fn close(&self) {
        self.disconnect_all();
        self.shared.spill.close();
    }

    /// The directory tool results are written to ([`OutputBudget::spill`]), made if need be.
    pub(crate) fn spill_dir(&self) -> Result<std::path::PathBuf, Error> {
        self.shared.spill.get(&self.shared.options.output_budget)
    }

    /// Forgets every server and stops every connection in parallel, connections still being
    /// set up (or resolving their values) included. Returns when every process it stopped is
    /// gone, or after the close grace period at the most. The manager stays usable (a reload
    /// disconnects everything, then connects the new set): at exit, [`McpManager::close`].
    pub fn disconnect_all(&self) {
        let removed = {
            let mut state = self.shared.state.lock();
            let removed = std::mem::take(&mut state.servers);
            state.notify();
            removed
        };
        let changed: Vec<String> = removed
            .iter()
            .filter(|(_, s)| !s.tools.is_empty())
            .map(|(n, _)| n.clone())
            .collect();
        let features_changed: Vec<String> = removed
            .iter()
            .filter(|(_, s)| s.features != features::Features::default())
            .map(|(n, _)| n.clone())
            .collect();
        let clients: Vec<Client> = removed.into_values().filter_map(Server::stop).collect();
        self.shared.close_and_wait(clients, None);
        if !changed.is_empty() {
            self.shared.tools_changed(changed);
        }
        if !features_changed.is_empty() {
            self.shared.features_changed(features_changed);
        }
    }
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.server_names())
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// A server's (unresolved) config, copied out of the state.
    fn config_of(&self, name: &str) -> Option<ServerConfig> {
        self.state
            .lock()
            .servers
            .get(name)
            .map(|s| s.config.clone())
    }

    /// A new attempt number.
    fn next_attempt(&self) -> u64 {
        self.next_attempt.fetch_add(1, Ordering::SeqCst)
    }

    fn tools_changed(&self, servers: Vec<String>) {
        let listeners: Vec<Listener> = self.listeners.lock().clone();
        caught::tell("an on_tools_changed listener", &listeners, &servers);
    }
}
