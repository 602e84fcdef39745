//! The manager: many servers, the seed's lifecycle.
//!
//! Read it top-down, one phase per function:
//! 1. [`McpManager::connect_servers`] = `start` (one task per server:
//!    validate → resolve → connect → list tools → write the cache) → `gate`
//!    (wait until every task is done or `startup_timeout` passed) →
//!    `after_gate` (cached tools become deferred tools for servers
//!    still connecting; without a cache entry, wait for them, the seed's rule).
//! 2. `background`: every task, whenever it ends, replaces its server's
//!    tools, writes the cache and, after startup, logs late errors and tells the
//!    `on_tools_changed` listeners.
//! 3. Runtime: `tools/list_changed` refreshes a server's tools; a dead transport is noticed at
//!    once (status `disconnected` with the reason); an opt-in [`ReconnectPolicy`] reconnects.
//! 4. [`McpManager::disconnect_server`] / [`McpManager::disconnect_all`]: registries first,
//!    then every transport closed in parallel (connections still being set up too), bounded by
//!    the close grace period.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::Value;

use crate::cache::config_hash;
use crate::config::{resolve_server_config, validate_server_config, ServerConfig, SourceMeta};
use crate::protocol::{CallToolResult, Tool};
use crate::{CallOptions, CancelToken, Client, Error};

mod handler;
mod options;
mod state;

pub use options::{
    ConnectReport, ConnectionState, ManagerOptions, ReconnectPolicy, ServerStatus, ToolsChanged,
    STARTUP_TIMEOUT,
};

use handler::ManagedHandler;
use state::{Phase, Server, State};

/// A tool as the manager holds it: the raw definition and the server it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedTool {
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

type Listener = Arc<dyn Fn(&ToolsChanged) + Send + Sync>;

/// Many MCP servers. Cheap to clone; every clone is the same manager.
#[derive(Clone)]
pub struct McpManager {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    options: ManagerOptions,
    state: Mutex<State>,
    listeners: Mutex<Vec<Listener>>,
    next_attempt: AtomicU64,
}

/// One connect task's outcome.
type Outcome = Result<(Client, Vec<Arc<Tool>>), Error>;

impl McpManager {
    /// A manager with no servers.
    pub fn new(options: ManagerOptions) -> McpManager {
        McpManager {
            shared: Arc::new(Shared {
                options,
                state: Mutex::new(State::default()),
                listeners: Mutex::new(Vec::new()),
                next_attempt: AtomicU64::new(1),
            }),
        }
    }

    /// The options it was built with.
    pub fn options(&self) -> &ManagerOptions {
        &self.shared.options
    }

    /// Connects `configs` in parallel, each on its own thread, and returns after the startup
    /// gate (see the module docs). Servers already connected or connecting are skipped.
    pub fn connect_servers(
        &self,
        configs: &BTreeMap<String, ServerConfig>,
        sources: &BTreeMap<String, SourceMeta>,
    ) -> ConnectReport {
        let mut report = ConnectReport::default();
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<String>();
        let startup_over = Arc::new(AtomicBool::new(false));
        let started = self.start(configs, sources, &mut report, &done_tx, &startup_over);
        let still_pending = self.gate(&done_rx, started);
        self.after_gate(&done_rx, still_pending, &mut report);
        // From here on, tasks finishing are "late": they log their errors and notify listeners.
        startup_over.store(true, Ordering::SeqCst);
        self.fill_report(configs, &mut report);
        report
    }

    /// Phase 1: record each server and start its task. Returns the names of the started tasks.
    fn start(
        &self,
        configs: &BTreeMap<String, ServerConfig>,
        sources: &BTreeMap<String, SourceMeta>,
        report: &mut ConnectReport,
        done: &Sender<String>,
        startup_over: &Arc<AtomicBool>,
    ) -> HashSet<String> {
        let mut started = HashSet::new();
        for (name, config) in configs {
            let source = sources.get(name).cloned();
            let problems = validate_server_config(name, config);
            let mut state = self.shared.state.lock();
            if let Some(existing) = state.servers.get_mut(name) {
                if existing.attempt().is_some() {
                    existing.source = source.or(existing.source.take());
                    report.skipped.push(name.clone());
                    continue;
                }
            }
            if !problems.is_empty() {
                let error = Error::Config {
                    message: problems.join("; "),
                };
                let mut server = Server::new(config.clone(), source, 0, CancelToken::new());
                server.phase = Phase::Disconnected;
                server.last_error = Some(error.clone());
                state.servers.insert(name.clone(), server);
                report.errors.insert(name.clone(), error);
                continue;
            }
            let attempt = self.shared.next_attempt.fetch_add(1, Ordering::SeqCst);
            let cancel = CancelToken::new();
            state.servers.insert(
                name.clone(),
                Server::new(config.clone(), source, attempt, cancel.clone()),
            );
            state.notify();
            drop(state);
            self.shared.spawn_task(
                name,
                config.clone(),
                attempt,
                cancel,
                None,
                done.clone(),
                Arc::clone(startup_over),
            );
            started.insert(name.clone());
        }
        started
    }

    /// Phase 2: the gate. Returns as soon as every task is done, or when the startup timeout
    /// has passed, with the names still pending.
    fn gate(&self, done: &Receiver<String>, mut pending: HashSet<String>) -> HashSet<String> {
        let deadline = Instant::now() + self.shared.options.startup_timeout;
        while !pending.is_empty() {
            match done.recv_deadline(deadline) {
                Ok(name) => {
                    pending.remove(&name);
                }
                Err(_) => break,
            }
        }
        pending
    }

    /// Phase 3: servers still connecting get deferred tools from the cache; the others are
    /// waited for (the seed's rule), unless the host asked not to.
    fn after_gate(
        &self,
        done: &Receiver<String>,
        pending: HashSet<String>,
        report: &mut ConnectReport,
    ) {
        let mut uncached = HashSet::new();
        for name in pending {
            if !self.shared.offer_cached_tools(&name) {
                uncached.insert(name);
            }
        }
        if uncached.is_empty() || !self.shared.options.wait_without_cache {
            return;
        }
        // Every task is bounded by its connect and list timeouts; this is the backstop.
        let connect = &self.shared.options.connect;
        let longest = self.longest_connect_timeout().max(connect.timeout) + connect.request_timeout;
        let deadline = Instant::now() + longest + Duration::from_secs(5);
        while !uncached.is_empty() {
            match done.recv_deadline(deadline) {
                Ok(name) => {
                    uncached.remove(&name);
                }
                Err(_) => {
                    log::warn!("giving up waiting for {uncached:?} at startup");
                    report.pending.extend(uncached.drain());
                }
            }
        }
    }

    fn longest_connect_timeout(&self) -> Duration {
        let state = self.shared.state.lock();
        state
            .servers
            .values()
            .filter_map(|s| s.config.timeout())
            .max()
            .unwrap_or_default()
    }

    fn fill_report(&self, configs: &BTreeMap<String, ServerConfig>, report: &mut ConnectReport) {
        let state = self.shared.state.lock();
        for name in configs.keys() {
            if report.skipped.contains(name)
                || report.errors.contains_key(name)
                || report.pending.contains(name)
            {
                continue;
            }
            let Some(server) = state.servers.get(name) else {
                continue;
            };
            match &server.phase {
                Phase::Connected { .. } => report.connected.push(name.clone()),
                Phase::Connecting { .. } if server.deferred => report.deferred.push(name.clone()),
                Phase::Connecting { .. } => report.pending.push(name.clone()),
                Phase::Disconnected => {
                    let error = server.last_error.clone().unwrap_or(Error::NotConnected {
                        server: name.clone(),
                    });
                    report.errors.insert(name.clone(), error);
                }
            }
        }
    }

    /// A server's state and last error.
    pub fn connection_status(&self, name: &str) -> ServerStatus {
        let state = self.shared.state.lock();
        match state.servers.get(name) {
            Some(s) => ServerStatus {
                state: match s.phase {
                    Phase::Connected { .. } => ConnectionState::Connected,
                    Phase::Connecting { .. } => ConnectionState::Connecting,
                    Phase::Disconnected => ConnectionState::Disconnected,
                },
                error: s.last_error.clone(),
            },
            None => ServerStatus {
                state: ConnectionState::Disconnected,
                error: None,
            },
        }
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

    /// Waits until `name` is connected (its client) or has failed (its error), bounded by
    /// `timeout` and `cancel`.
    pub fn wait_for_connection(
        &self,
        name: &str,
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> Result<Client, Error> {
        let deadline = Instant::now() + timeout;
        let never = crossbeam_channel::never();
        let cancelled = cancel.map(CancelToken::receiver).unwrap_or(&never);
        loop {
            let wake = {
                let mut state = self.shared.state.lock();
                let Some(server) = state.servers.get(name) else {
                    return Err(Error::NotConnected {
                        server: name.to_owned(),
                    });
                };
                match &server.phase {
                    Phase::Connected { client, .. } => return Ok(client.clone()),
                    Phase::Disconnected => {
                        return Err(server.last_error.clone().unwrap_or(Error::NotConnected {
                            server: name.to_owned(),
                        }))
                    }
                    Phase::Connecting { .. } => {}
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
                    return Err(Error::ConnectTimeout { server: name.to_owned(), after: timeout, stderr_tail: Vec::new() })
                }
            }
        }
    }

    /// The current tools of every server (live ones, and deferred ones from the cache), by
    /// server then tool name.
    pub fn get_tools(&self) -> Vec<ManagedTool> {
        let state = self.shared.state.lock();
        let mut out = Vec::new();
        for (name, server) in &state.servers {
            for tool in &server.tools {
                out.push(ManagedTool {
                    server: name.clone(),
                    tool: tool.clone(),
                    deferred: server.deferred,
                    source: server.source.clone(),
                });
            }
        }
        out
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
    /// disconnects).
    pub fn on_tools_changed(&self, listener: impl Fn(&ToolsChanged) + Send + Sync + 'static) {
        self.shared.listeners.lock().push(Arc::new(listener));
    }

    /// Calls a tool of a connected server. The server's `enabledTools` / `disabledTools` apply
    /// here too; its `toolTimeout` is the default bound.
    pub fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, Error> {
        let (client, config) = {
            let state = self.shared.state.lock();
            let Some(s) = state.servers.get(server) else {
                return Err(Error::NotConnected {
                    server: server.to_owned(),
                });
            };
            (s.client().cloned(), s.config.clone())
        };
        if !config.tool_allowed(tool) {
            return Err(Error::Config {
                message: format!("tool {tool:?} of server {server:?} is turned off by its config"),
            });
        }
        let Some(client) = client else {
            return Err(Error::NotConnected {
                server: server.to_owned(),
            });
        };
        let mut options = options;
        if options.timeout.is_none() {
            options.timeout = config.tool_timeout();
        }
        client.call_tool(tool, arguments, options)
    }

    /// Re-lists a connected server's tools (on `tools/list_changed`, or when asked).
    pub fn refresh_server_tools(&self, name: &str) -> Result<(), Error> {
        self.shared.refresh(name)
    }

    /// Forgets a server: its entry (pending state, source, tools) goes first, then its
    /// connection (or connection attempt) is closed. Bounded by the close grace period.
    pub fn disconnect_server(&self, name: &str) {
        let removed = {
            let mut state = self.shared.state.lock();
            let removed = state.servers.remove(name);
            state.notify();
            removed
        };
        if let Some(server) = removed {
            let had_tools = !server.tools.is_empty();
            self.shared.close_all(server.stop().into_iter().collect());
            if had_tools {
                self.shared.tools_changed(vec![name.to_owned()]);
            }
        }
    }

    /// Forgets every server and closes every connection in parallel, connections still being
    /// set up included. Holds the caller at most the close grace period.
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
        let clients: Vec<Client> = removed.into_values().filter_map(Server::stop).collect();
        self.shared.close_all(clients);
        if !changed.is_empty() {
            self.shared.tools_changed(changed);
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

    #[allow(clippy::too_many_arguments)]
    fn spawn_task(
        self: &Arc<Self>,
        name: &str,
        config: ServerConfig,
        attempt: u64,
        cancel: CancelToken,
        delay: Option<Duration>,
        done: Sender<String>,
        startup_over: Arc<AtomicBool>,
    ) {
        let shared = Arc::clone(self);
        let task_name = name.to_owned();
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{name}-connect"))
            .spawn(move || {
                let waited = delay.map(|d| cancel.receiver().recv_timeout(d));
                let outcome = if cancel.is_cancelled()
                    || matches!(
                        waited,
                        Some(Err(crossbeam_channel::RecvTimeoutError::Disconnected))
                    ) {
                    Err(Error::Cancelled)
                } else {
                    shared.connect_and_list(&task_name, &config, attempt, &cancel)
                };
                shared.background(
                    &task_name,
                    &config,
                    attempt,
                    outcome,
                    startup_over.load(Ordering::SeqCst),
                );
                let _ = done.send(task_name);
            });
        if let Err(e) = spawned {
            let error = Error::Io {
                message: format!("cannot start a connect thread: {e}"),
            };
            self.background(name, &ServerConfig::default(), attempt, Err(error), true);
        }
    }

    /// The task: resolve → connect → list tools (filtered).
    fn connect_and_list(
        self: &Arc<Self>,
        name: &str,
        config: &ServerConfig,
        attempt: u64,
        cancel: &CancelToken,
    ) -> Outcome {
        let resolved = resolve_server_config(name, config, self.options.auth.as_deref());
        let endpoint = resolved.endpoint(&self.options.project_dir)?;
        let mut options = self.options.connect.clone();
        if let Some(t) = config.timeout() {
            options.timeout = t;
        }
        options.cancel = Some(cancel.clone());
        options.handler = Arc::new(ManagedHandler::new(
            Arc::downgrade(self),
            name,
            attempt,
            Arc::clone(&self.options.connect.handler),
        ));
        let client = Client::connect(name, &endpoint, options)?;
        // Let a disconnect reach this client while it lists its tools.
        {
            let mut state = self.state.lock();
            match state.servers.get_mut(name).map(|s| &mut s.phase) {
                Some(Phase::Connecting {
                    attempt: a,
                    client: slot,
                    ..
                }) if *a == attempt => *slot = Some(client.clone()),
                _ => {
                    drop(state);
                    client.close();
                    return Err(Error::Cancelled);
                }
            }
        }
        let tools = allowed_tools(&client, config)?;
        Ok((client, tools))
    }

    /// The background continuation of every task: apply its outcome (if the task still owns
    /// its server), write the cache, and after startup log late errors and tell listeners.
    fn background(
        self: &Arc<Self>,
        name: &str,
        config: &ServerConfig,
        attempt: u64,
        outcome: Outcome,
        late: bool,
    ) {
        let mut changed = false;
        let mut retry: Option<(u64, CancelToken, Duration)> = None;
        let stale = {
            let mut state = self.state.lock();
            let current = state.servers.get(name).and_then(Server::attempt) == Some(attempt)
                && matches!(
                    state.servers.get(name).map(|s| &s.phase),
                    Some(Phase::Connecting { .. })
                );
            if current {
                let server = state.servers.get_mut(name).expect("checked above");
                match &outcome {
                    Ok((client, tools)) => {
                        changed = server.deferred || server.tools != *tools;
                        // Shared definitions: the cache is written below, outside the lock.
                        server.tools = tools.clone();
                        server.deferred = false;
                        server.last_error = None;
                        server.ever_connected = true;
                        server.phase = Phase::Connected {
                            attempt,
                            client: client.clone(),
                        };
                    }
                    Err(e) => {
                        changed = !server.tools.is_empty() && !server.reconnecting();
                        if !server.reconnecting() {
                            server.tools.clear();
                            server.deferred = false;
                        }
                        server.last_error = Some(e.clone());
                        server.phase = Phase::Disconnected;
                        retry = self.schedule_reconnect(server, e);
                    }
                }
                state.notify();
            }
            !current
        };
        if stale {
            // Disconnected (or superseded) meanwhile: this task's connection is nobody's.
            if let Ok((client, _)) = outcome {
                client.close();
            }
            return;
        }
        match &outcome {
            Ok((_, tools)) => {
                if let Some(cache) = &self.options.cache {
                    if let Err(e) = cache.set(name, &config_hash(config), tools) {
                        log::debug!("[{name}] could not write the tool cache: {e}");
                    }
                }
            }
            Err(e) if late => log::warn!("[{name}] {e}"),
            Err(_) => {}
        }
        if let Some((attempt, cancel, delay)) = retry {
            self.restart(name, attempt, cancel, delay);
        }
        if late && changed {
            self.tools_changed(vec![name.to_owned()]);
        }
    }

    /// Cached tools for a server still connecting after the gate. False on a miss.
    fn offer_cached_tools(&self, name: &str) -> bool {
        let Some(cache) = &self.options.cache else {
            return false;
        };
        let Some(config) = self.config_of(name) else {
            return false;
        };
        let Some(tools) = cache.get(name, &config_hash(&config)) else {
            return false;
        };
        let tools: Vec<Arc<Tool>> = tools
            .into_iter()
            .filter(|t| config.tool_allowed(&t.name))
            .collect();
        let mut state = self.state.lock();
        match state.servers.get_mut(name) {
            Some(server) if matches!(server.phase, Phase::Connecting { .. }) => {
                server.tools = tools;
                server.deferred = true;
                true
            }
            // It finished in the meantime: its live tools are there already.
            Some(server) => matches!(server.phase, Phase::Connected { .. }),
            None => false,
        }
    }

    fn refresh(&self, name: &str) -> Result<(), Error> {
        let (client, config, attempt) = {
            let state = self.state.lock();
            let Some(server) = state.servers.get(name) else {
                return Err(Error::NotConnected {
                    server: name.to_owned(),
                });
            };
            match &server.phase {
                Phase::Connected { attempt, client } => {
                    (client.clone(), server.config.clone(), *attempt)
                }
                _ => {
                    return Err(Error::NotConnected {
                        server: name.to_owned(),
                    })
                }
            }
        };
        let tools = allowed_tools(&client, &config)?;
        let changed = {
            let mut state = self.state.lock();
            match state.servers.get_mut(name) {
                Some(server) if server.attempt() == Some(attempt) => {
                    let changed = server.tools != tools;
                    server.tools = tools.clone();
                    changed
                }
                _ => false,
            }
        };
        if let Some(cache) = &self.options.cache {
            let _ = cache.set(name, &config_hash(&config), &tools);
        }
        if changed {
            self.tools_changed(vec![name.to_owned()]);
        }
        Ok(())
    }

    /// The transport of a connected server died: its status says why; its tools stay (calls
    /// fail until a reconnect or reload), unless the reconnect policy starts a new attempt.
    pub(crate) fn transport_died(self: &Arc<Self>, name: &str, attempt: u64, reason: &Error) {
        let retry = {
            let mut state = self.state.lock();
            let Some(server) = state.servers.get_mut(name) else {
                return;
            };
            if !matches!(server.phase, Phase::Connected { attempt: a, .. } if a == attempt) {
                return;
            }
            log::warn!("[{name}] connection lost: {reason}");
            server.phase = Phase::Disconnected;
            server.last_error = Some(reason.clone());
            let retry = self.schedule_reconnect(server, reason);
            state.notify();
            retry
        };
        if let Some((attempt, cancel, delay)) = retry {
            self.restart(name, attempt, cancel, delay);
        }
    }

    /// With a reconnect policy, turns a disconnected server into a connecting one and returns
    /// what its next task needs; `None` when there is no policy, the error is not worth a retry,
    /// or the burst breaker says stop.
    fn schedule_reconnect(
        &self,
        server: &mut Server,
        error: &Error,
    ) -> Option<(u64, CancelToken, Duration)> {
        let policy = self.options.reconnect.as_ref()?;
        if matches!(
            error,
            Error::Cancelled | Error::Config { .. } | Error::UnsupportedProtocolVersion { .. }
        ) {
            return None;
        }
        // Only servers that were connected once are reconnected.
        if !server.ever_connected {
            return None;
        }
        let now = Instant::now();
        let delay = policy.next_delay(&server.reconnects, now)?;
        server
            .reconnects
            .retain(|t| now.duration_since(*t) < policy.window);
        server.reconnects.push(now);
        let attempt = self.next_attempt.fetch_add(1, Ordering::SeqCst);
        let cancel = CancelToken::new();
        server.phase = Phase::Connecting {
            attempt,
            cancel: cancel.clone(),
            client: None,
        };
        Some((attempt, cancel, delay))
    }

    fn restart(self: &Arc<Self>, name: &str, attempt: u64, cancel: CancelToken, delay: Duration) {
        log::info!("[{name}] reconnecting in {} ms", delay.as_millis());
        let Some(config) = self.config_of(name) else {
            return;
        };
        let (done, _) = crossbeam_channel::unbounded();
        self.spawn_task(
            name,
            config,
            attempt,
            cancel,
            Some(delay),
            done,
            Arc::new(AtomicBool::new(true)),
        );
    }

    /// Closes clients in parallel; waits at most the close grace period.
    fn close_all(&self, clients: Vec<Client>) {
        if clients.is_empty() {
            return;
        }
        let (tx, rx) = crossbeam_channel::unbounded::<()>();
        let count = clients.len();
        for client in clients {
            let done = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("mcp-{}-close", client.name()))
                .spawn(move || {
                    client.close();
                    let _ = done.send(());
                });
            if let Err(e) = spawned {
                log::warn!("cannot start a close thread: {e}");
                let _ = tx.send(());
            }
        }
        let deadline = Instant::now() + self.options.close_grace;
        for _ in 0..count {
            if rx.recv_deadline(deadline).is_err() {
                log::debug!("some servers are still closing; they finish in the background");
                break;
            }
        }
    }

    fn tools_changed(&self, servers: Vec<String>) {
        let listeners: Vec<Listener> = self.listeners.lock().clone();
        let event = ToolsChanged { servers };
        for listener in listeners {
            listener(&event);
        }
    }
}

impl Server {
    /// Whether a reconnect attempt is what is running (its deferred tools stay meanwhile).
    fn reconnecting(&self) -> bool {
        !self.reconnects.is_empty()
    }
}

/// A server's tools after its `enabledTools` / `disabledTools` filters, each definition shared
/// (the manager, the cache and every tool object built from it hold the same one).
fn allowed_tools(client: &Client, config: &ServerConfig) -> Result<Vec<Arc<Tool>>, Error> {
    Ok(client
        .list_tools()?
        .into_iter()
        .filter(|t| config.tool_allowed(&t.name))
        .map(Arc::new)
        .collect())
}
