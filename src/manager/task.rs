//! One connect attempt of one server, on its own thread: resolve → connect → list tools → apply
//! the outcome → tell the gate → tear down what is nobody's.
//!
//! The order matters: the outcome reaches the state and the gate *before* any teardown runs, so
//! a failed handshake frees the startup gate at once, while its process is stopped on this
//! thread, which the manager keeps track of ([`super::close::Work`]) so disconnecting still
//! waits for that process to be gone. Old phases replaced under the state lock are moved out
//! and dropped after it is released: dropping the last clone of a client closes it, which is
//! I/O and reaches the manager again through the transport's close callback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Sender;

use super::eras::Claim;
use super::features::Features;
use super::handler::ManagedHandler;
use super::state::Phase;
use super::Shared;
use crate::cancel::CancelToken;
use crate::client::{Client, Endpoint, EraChoice, Leftover};
use crate::config::config_hash;
use crate::config::{resolve_cancellable, ServerConfig};
use crate::error::Error;
use crate::panic::Boundary;
use crate::protocol::{ProtocolVersion, Tool};
use crate::transport::Connector;

/// One connect task's outcome.
pub(crate) type Outcome = Result<(Client, Vec<Arc<Tool>>), Error>;

/// What a finished task still has to close, after it has reported.
enum Teardown {
    Nothing,
    /// A client nobody else holds (its listing failed, or its server was removed meanwhile).
    Client(Client),
    /// The transport of a failed handshake.
    Transport(Leftover),
}

impl Teardown {
    fn run(self) {
        match self {
            Teardown::Nothing => {}
            Teardown::Client(client) => client.close(),
            Teardown::Transport(leftover) => leftover.close(),
        }
    }
}

/// A connect attempt, with everything it needs.
pub(crate) struct Task {
    pub(crate) shared: Arc<Shared>,
    pub(crate) name: String,
    pub(crate) config: ServerConfig,
    pub(crate) attempt: u64,
    pub(crate) cancel: CancelToken,
    /// Wait this long first (a reconnect's backoff), cancellably.
    pub(crate) delay: Option<Duration>,
    /// The gate of the `connect_servers` call that started it, if any.
    pub(crate) done: Option<Sender<String>>,
    /// Set once that call's startup is over: outcomes are "late" from then on.
    pub(crate) startup_over: Arc<AtomicBool>,
}

impl Task {
    /// Starts the task on its `mcp-<name>-connect` thread.
    pub(crate) fn spawn(self) {
        let shared = Arc::clone(&self.shared);
        let name = self.name.clone();
        let attempt = self.attempt;
        let late = Arc::clone(&self.startup_over);
        let (panicked, done) = (Arc::clone(&shared), self.done.clone());
        let (failed, failed_late) = (name.clone(), Arc::clone(&late));
        let spawned = shared.work.spawn(
            &name,
            format!("mcp-{name}-connect"),
            Boundary::Connect,
            move || self.run(),
            // What the attempt opened was dropped (and so closed) as the panic unwound.
            move |e| {
                let late = failed_late.load(Ordering::SeqCst);
                panicked.panicked(&failed, Some(attempt), e, late);
                if let Some(done) = done {
                    let _ = done.send(failed);
                }
            },
        );
        if let Err(e) = spawned {
            let error = Error::io("cannot start a connect thread", e);
            shared.apply(
                &name,
                None,
                attempt,
                &Err(error),
                late.load(Ordering::SeqCst),
            );
        }
    }

    fn run(self) {
        let (outcome, teardown) = self.connect();
        let late = self.startup_over.load(Ordering::SeqCst);
        let applied =
            self.shared
                .apply(&self.name, Some(&self.config), self.attempt, &outcome, late);
        if let Some(done) = &self.done {
            let _ = done.send(self.name.clone());
        }
        // After the gate has heard: listing resources and prompts, and closing a failed or
        // abandoned connection, take time.
        let teardown = match (applied, outcome) {
            (Applied::Stale, Ok((client, _))) => Teardown::Client(client),
            (Applied::Current, Ok((client, _))) => {
                if Features::offered_by(&client) {
                    if let Err(e) = self.shared.refresh_features(&self.name) {
                        log::debug!("[{}] listing resources and prompts: {e}", self.name);
                    }
                }
                teardown
            }
            _ => teardown,
        };
        teardown.run();
    }

    /// Resolve → connect → list (filtered). Whatever is left to close on failure comes back
    /// with the error.
    fn connect(&self) -> (Outcome, Teardown) {
        let cancelled = match self.delay {
            Some(d) => !matches!(
                self.cancel.receiver().recv_timeout(d),
                Err(crossbeam_channel::RecvTimeoutError::Timeout)
            ),
            None => self.cancel.is_cancelled(),
        };
        if cancelled {
            return (Err(Error::Cancelled), Teardown::Nothing);
        }
        let through =
            (self.shared.options.connector.as_ref()).and_then(|c| c(&self.name, &self.config));
        let opened = match through {
            Some(connector) => self.open_through(&connector),
            None => self.open(),
        };
        match opened {
            Ok(client) => self.list(client),
            Err(failed) => failed,
        }
    }

    /// The handler of this attempt's connection: the host's, behind the manager's.
    fn handler(&self) -> Arc<dyn crate::client::ClientHandler> {
        Arc::new(ManagedHandler::new(
            Arc::downgrade(&self.shared),
            &self.name,
            self.attempt,
            Arc::clone(&self.shared.options.connect.handler),
        ))
    }

    /// Connects through the manager's [`connector`](crate::manager::ManagerOptions::connector).
    fn open_through(&self, connector: &dyn Connector) -> Result<Client, (Outcome, Teardown)> {
        let mut options = self.config.connect_options(&self.shared.options.connect);
        options.cancel = Some(self.cancel.clone());
        options.handler = self.handler();
        if self.cancel.is_cancelled() {
            return Err((Err(Error::Cancelled), Teardown::Nothing));
        }
        Client::connect_through(&self.name, connector, &options).map_err(|failure| {
            let teardown = failure
                .leftover
                .map_or(Teardown::Nothing, Teardown::Transport);
            (Err(failure.error), teardown)
        })
    }

    /// Resolves the config and connects by its transport.
    fn open(&self) -> Result<Client, (Outcome, Teardown)> {
        let shared = &self.shared;
        let resolved = match resolve_cancellable(
            &self.name,
            &self.config,
            shared.options.auth.as_deref(),
            &self.cancel,
        ) {
            Ok(r) => r,
            Err(e) => return Err((Err(e), Teardown::Nothing)),
        };
        let mut endpoint = match resolved.endpoint(&shared.options.project_dir) {
            Ok(e) => e,
            Err(e) => return Err((Err(e), Teardown::Nothing)),
        };
        if let Err(e) = shared.attach_oauth(&self.config, &mut endpoint) {
            return Err((Err(e), Teardown::Nothing));
        }
        let mut options = self.config.connect_options(&shared.options.connect);
        options.cancel = Some(self.cancel.clone());
        let hash = config_hash(&self.config);
        // The era this config's server spoke last time spares it the probe.
        if let (EraChoice::Detect, Some(cache)) = (options.era, &shared.options.cache) {
            let remembered = cache.era(&self.name, &hash);
            if let Some(v) = remembered.as_deref().and_then(ProtocolVersion::parse) {
                options.era = EraChoice::Remembered(v);
            }
        }
        // Connections to one Streamable HTTP server config share its era: one probes, the
        // others wait for its verdict (within their own connect timeout) instead of probing
        // too. Not a bare URL: it may turn out to be legacy SSE, which no probe verdict says.
        let http = matches!(endpoint, Endpoint::Http(_));
        let configured = options.timeout;
        let _flight = if http && options.era == EraChoice::Detect {
            let waiting = std::time::Instant::now();
            let (claim, waited) =
                shared
                    .eras
                    .claim(&hash, waiting + configured, Some(&self.cancel));
            if waited {
                options.timeout = configured.saturating_sub(waiting.elapsed());
            }
            if waited && options.timeout.is_zero() && !self.cancel.is_cancelled() {
                // The whole bound went waiting for another connect's probe.
                let error = Error::ConnectTimeout {
                    server: self.name.clone(),
                    after: configured,
                    stderr_tail: Vec::new(),
                    skipped_stdout: None,
                };
                return Err((Err(error), Teardown::Nothing));
            }
            match claim {
                Claim::Known(v) => {
                    options.era = EraChoice::Remembered(v);
                    None
                }
                Claim::Probe(flight) => {
                    let flight = Arc::new(flight);
                    let weak = Arc::downgrade(&flight);
                    let host = options.on_era_found.take();
                    options.on_era_found = Some(Arc::new(move |v| {
                        if let Some(f) = weak.upgrade() {
                            f.found(v);
                        }
                        if let Some(host) = &host {
                            host(v);
                        }
                    }));
                    Some(flight)
                }
                Claim::Alone => None,
            }
        } else {
            None
        };
        options.handler = self.handler();
        // A disconnect may have come while values were resolved: start nothing then.
        if self.cancel.is_cancelled() {
            return Err((Err(Error::Cancelled), Teardown::Nothing));
        }
        match Client::connect_leaving(&self.name, &endpoint, &options) {
            Ok(c) => {
                if http {
                    shared.eras.learn(&hash, c.protocol_version());
                }
                Ok(c)
            }
            Err(failure) => {
                let teardown = failure
                    .leftover
                    .map_or(Teardown::Nothing, Teardown::Transport);
                let error = configured_bound(failure.error, options.timeout, configured);
                // (A no-op unless waiting took part of the bound.)
                Err((Err(error), teardown))
            }
        }
    }

    /// Lists the new client's tools (filtered), letting a disconnect reach it meanwhile.
    fn list(&self, client: Client) -> (Outcome, Teardown) {
        let shared = &self.shared;
        // Let a disconnect (or a deferred tool's call) reach this client while it lists.
        {
            let mut state = shared.state.lock();
            match state.servers.get_mut(&self.name).map(|s| &mut s.phase) {
                Some(Phase::Connecting {
                    attempt: a,
                    client: slot,
                    ..
                }) if *a == self.attempt => *slot = Some(client.clone()),
                _ => {
                    drop(state);
                    return (Err(Error::Cancelled), Teardown::Client(client));
                }
            }
            state.notify();
        }
        match allowed_tools(&client, &self.config) {
            Ok(tools) => (Ok((client, tools)), Teardown::Nothing),
            Err(e) => (Err(e), Teardown::Client(client)),
        }
    }
}

/// Whether an outcome was applied to its server.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The task still owned its server: the state now shows the outcome.
    Current,
    /// The server was removed or taken over by another attempt meanwhile.
    Stale,
}

impl Shared {
    /// Applies a task's outcome if the task still owns its server, writes the cache, and after
    /// startup logs late errors and tells listeners. Nothing is closed or dropped under the lock.
    pub(crate) fn apply(
        self: &Arc<Self>,
        name: &str,
        config: Option<&ServerConfig>,
        attempt: u64,
        outcome: &Outcome,
        late: bool,
    ) -> Applied {
        let changed;
        let dead;
        let mut retry = None;
        let replaced: Option<Phase>;
        {
            let mut state = self.state.lock();
            let server = match state.servers.get_mut(name) {
                Some(s) if matches!(s.phase, Phase::Connecting { attempt: a, .. } if a == attempt) => {
                    s
                }
                _ => return Applied::Stale,
            };
            // A client that died after it listed and before this (its server exited, its
            // stream ended) reported its end while the phase was still connecting, which a
            // death does not touch: it is a failed attempt, not a connection.
            dead = match outcome {
                Ok((client, _)) => client.closed_reason(),
                Err(_) => None,
            };
            let failure = outcome.as_ref().err().or(dead.as_ref());
            let next = match (outcome, failure) {
                (Ok((client, tools)), None) => {
                    changed = server.deferred || server.tools != *tools;
                    server.tools = tools.clone();
                    server.deferred = false;
                    server.last_error = None;
                    server.ever_connected = true;
                    Phase::Connected {
                        attempt,
                        client: client.clone(),
                    }
                }
                (_, Some(e)) | (Err(e), None) => {
                    changed = !server.tools.is_empty() && !server.reconnecting();
                    if !server.reconnecting() {
                        server.tools.clear();
                        server.deferred = false;
                    }
                    server.last_error = Some(e.clone());
                    Phase::Disconnected
                }
            };
            replaced = Some(std::mem::replace(&mut server.phase, next));
            if let Some(e) = failure {
                retry = self.schedule_reconnect(server, e);
            }
            state.notify();
        }
        // The old phase holds a clone of the client at most: dropped here, outside the lock.
        drop(replaced);
        match (outcome, &dead) {
            (Ok((client, _)), Some(e)) => {
                if late {
                    log::warn!("[{name}] {e}");
                }
                client.close();
            }
            (Ok((_, tools)), None) => {
                if let (Some(cache), Some(config)) = (&self.options.cache, config) {
                    let listing = outcome.as_ref().map(|(c, _)| c.tools_listing());
                    let listing = listing.unwrap_or_default();
                    if let Err(e) = cache.set_listing(name, &config_hash(config), tools, &listing) {
                        log::debug!("[{name}] could not write the tool cache: {e}");
                    }
                }
            }
            (Err(e), _) if late => log::warn!("[{name}] {e}"),
            (Err(_), _) => {}
        }
        if let Some(next) = retry {
            self.restart(name, next);
        }
        if late && changed {
            self.tools_changed(vec![name.to_owned()]);
        }
        Applied::Current
    }
}

/// A server's tools after its `enabledTools` / `disabledTools` filters, each definition shared
/// (the manager, the cache and every tool object built from it hold the same one).
pub(crate) fn allowed_tools(
    client: &Client,
    config: &ServerConfig,
) -> Result<Vec<Arc<Tool>>, Error> {
    Ok(client
        .list_tools()?
        .into_iter()
        .filter(|t| config.tool_allowed(&t.name))
        .map(Arc::new)
        .collect())
}

/// A connect's timeout error names the bound the host configured, not what was left of it
/// (`reduced`, at most) after waiting for another connect's era probe.
fn configured_bound(error: Error, reduced: Duration, configured: Duration) -> Error {
    if reduced == configured {
        return error;
    }
    match error {
        Error::ConnectTimeout {
            server,
            after,
            stderr_tail,
            skipped_stdout,
        } if after <= reduced => Error::ConnectTimeout {
            server,
            after: configured,
            stderr_tail,
            skipped_stdout,
        },
        Error::Timeout { method, after } if after <= reduced => Error::Timeout {
            method,
            after: configured,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected client whose server has gone: its end was reported while the phase was
    /// still connecting (which a death does not touch), so applying its outcome must not leave
    /// the server `connected` with a dead client that nothing reconnects.
    #[test]
    fn a_client_that_died_before_its_outcome_is_applied_is_a_failed_attempt() {
        use crate::manager::McpManager;
        use serde_json::json;
        use std::time::Instant;
        let (connector, server) = crate::transport::memory_pair();
        let answering = std::thread::spawn(move || {
            while let Ok(message) = server.receiver.recv() {
                if let (Some(id), Some("initialize")) =
                    (message.get("id"), message["method"].as_str())
                {
                    let result = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                                        "serverInfo": {"name": "mem", "version": "1"}});
                    let _ = server
                        .sender
                        .send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
                } else if message["method"] == "notifications/initialized" {
                    return; // The server goes: its end of the pipe is dropped.
                }
            }
        });
        let options = crate::client::ConnectOptions::default();
        let client = Client::with_transport("srv", connector, options).unwrap();
        answering.join().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while client.closed_reason().is_none() {
            assert!(
                Instant::now() < deadline,
                "the client never saw its server go"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let manager = McpManager::new(crate::manager::ManagerOptions::default());
        let config = ServerConfig::stdio("unused", ["unused"]);
        let entry = super::super::state::Server::new(config, None, 7, CancelToken::new());
        manager
            .shared
            .state
            .lock()
            .servers
            .insert("srv".into(), entry);
        let outcome: Outcome = Ok((client, Vec::new()));
        assert_eq!(
            manager.shared.apply("srv", None, 7, &outcome, false),
            Applied::Current
        );
        let status = manager.connection_status("srv");
        assert_eq!(status.as_str(), "disconnected");
        assert!(
            matches!(status.error(), Some(Error::TransportClosed { .. })),
            "{:?}",
            status.error()
        );
    }

    #[test]
    fn a_timeout_names_the_configured_bound_not_what_was_left_after_waiting() {
        let (reduced, configured) = (Duration::from_millis(400), Duration::from_secs(1));
        let connect = Error::ConnectTimeout {
            server: "s".into(),
            after: reduced,
            stderr_tail: Vec::new(),
            skipped_stdout: None,
        };
        assert!(matches!(
            configured_bound(connect, reduced, configured),
            Error::ConnectTimeout { after, .. } if after == configured
        ));
        let probe = Error::Timeout {
            method: "server/discover".into(),
            after: reduced,
        };
        assert!(matches!(
            configured_bound(probe, reduced, configured),
            Error::Timeout { after, .. } if after == configured
        ));
        // Another bound (a request's own) is left alone.
        let other = Error::Timeout {
            method: "tools/list".into(),
            after: Duration::from_secs(60),
        };
        assert!(matches!(
            configured_bound(other, reduced, configured),
            Error::Timeout { after, .. } if after == Duration::from_secs(60)
        ));
    }
}
