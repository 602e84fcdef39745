//! Startup: `connect_servers` / `connect_found` = start (one task per server) → the gate → after the gate
//! (deferred tools from the cache, or waiting for the uncached) → the report.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::features::Features;
use super::options::ConnectReport;
use super::state::{Phase, Server};
use super::task::Task;
use super::{McpManager, Shared};
use crate::cancel::CancelToken;
use crate::config::config_hash;
use crate::config::{validate_server_config, LoadedConfigs, ServerConfig, SourceMeta};
use crate::error::Error;
use crate::protocol::Tool;

impl McpManager {
    /// Connects `configs` in parallel, each on its own thread, and returns after the startup
    /// gate (see the module docs). Servers already connected or connecting are skipped.
    pub fn connect_servers(&self, configs: &BTreeMap<String, ServerConfig>) -> ConnectReport {
        self.connect_with(configs, &BTreeMap::new())
    }

    /// [`McpManager::connect_servers`] for the servers discovery found, each with the file it
    /// came from (shown in status, kept for reconnects and logins).
    pub fn connect_found(&self, found: &LoadedConfigs) -> ConnectReport {
        self.connect_with(&found.configs, &found.sources)
    }

    /// Connects `configs`, each with its source from `sources` where it has one.
    pub(crate) fn connect_with(
        &self,
        configs: &BTreeMap<String, ServerConfig>,
        sources: &BTreeMap<String, SourceMeta>,
    ) -> ConnectReport {
        let mut report = ConnectReport::default();
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<String>();
        let startup_over = Arc::new(AtomicBool::new(false));
        let started = self.start(configs, sources, &mut report, &done_tx, &startup_over);
        drop(done_tx);
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
            // Whatever entry this replaces is disconnected (no client): nothing to close.
            let entry = if problems.is_empty() {
                let attempt = self.shared.next_attempt();
                let cancel = CancelToken::new();
                let entry = Server::new(config.clone(), source, attempt, cancel.clone());
                Some((entry, attempt, cancel))
            } else {
                let error = Error::Config {
                    message: problems.join("; "),
                };
                let mut server = Server::new(config.clone(), source, 0, CancelToken::new());
                server.phase = Phase::Disconnected;
                server.last_error = Some(error.clone());
                state.servers.insert(name.clone(), server);
                report.errors.insert(name.clone(), error);
                None
            };
            let Some((entry, attempt, cancel)) = entry else {
                continue;
            };
            state.servers.insert(name.clone(), entry);
            state.notify();
            drop(state);
            Task {
                shared: Arc::clone(&self.shared),
                name: name.clone(),
                config: config.clone(),
                attempt,
                cancel,
                delay: None,
                done: Some(done.clone()),
                startup_over: Arc::clone(startup_over),
            }
            .spawn();
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
    /// waited for (a host never starts without a server's tools), unless the host asked not
    /// to.
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
        let longest =
            self.longest_connect_timeout().max(connect.timeout) * 2 + connect.request_timeout;
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
                    let error = server
                        .last_error
                        .clone()
                        .unwrap_or_else(|| Error::not_connected(name));
                    report.errors.insert(name.clone(), error);
                }
            }
        }
    }
}

impl Shared {
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
        // Read outside the lock (the JSON the cache kept, back into features).
        let features =
            (cache.get_features(name, &config_hash(&config))).and_then(Features::from_cached);
        let mut state = self.state.lock();
        match state.servers.get_mut(name) {
            Some(server) if matches!(server.phase, Phase::Connecting { .. }) => {
                server.tools = tools;
                server.deferred = true;
                if let Some(features) = features {
                    server.features = features;
                }
                true
            }
            // It finished in the meantime: its live tools are there already.
            Some(server) => matches!(server.phase, Phase::Connected { .. }),
            None => false,
        }
    }
}
