//! After startup: tool refreshes on `tools/list_changed` (coalesced), a transport that dies,
//! and the opt-in reconnect policy.
//!
//! Both events arrive on a connection's own threads (its event thread or its reader). Neither
//! does its work there: a refresh lists tools, a death closes the dead client and tells the
//! host's listeners, and a listener may call back into the manager (even disconnect). Both run
//! on manager threads ([`super::close::Work`]), which disconnecting waits for.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::features::Features;
use super::state::{Coalesce, Phase, Server};
use super::task::{allowed_tools, Applied, Task};
use super::Shared;
use crate::cancel::CancelToken;
use crate::config::config_hash;
use crate::error::Error;
use crate::panic::Boundary;

/// What a `list_changed` refreshes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refresh {
    /// `tools/list_changed`.
    Tools,
    /// `resources/list_changed`, `prompts/list_changed`.
    Features,
}

impl Refresh {
    fn flags(self, server: &mut Server) -> &mut Coalesce {
        match self {
            Refresh::Tools => &mut server.tools_refresh,
            Refresh::Features => &mut server.features_refresh,
        }
    }
}

/// The next attempt the reconnect policy scheduled.
pub(crate) struct Retry {
    attempt: u64,
    cancel: CancelToken,
    delay: Duration,
}

impl Shared {
    /// Re-lists a connected server's tools now, on the calling thread.
    pub(crate) fn refresh(&self, name: &str) -> Result<(), Error> {
        let (client, config, attempt) = {
            let state = self.state.lock();
            let Some(server) = state.servers.get(name) else {
                return Err(Error::not_connected(name));
            };
            match &server.phase {
                Phase::Connected { attempt, client } => {
                    (client.clone(), server.config.clone(), *attempt)
                }
                _ => return Err(server.not_connected(name)),
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
            let listing = client.tools_listing();
            if let Err(e) = cache.set_listing(name, &config_hash(&config), &tools, &listing) {
                log::debug!("[{name}] could not write the tool cache: {e}");
            }
        }
        if changed {
            self.tools_changed(vec![name.to_owned()]);
        }
        Ok(())
    }

    /// A `list_changed` arrived: refresh on a manager thread, one refresh in flight and at
    /// most one queued behind it, however many notifications come (a server that sends ten
    /// thousand gets a handful of list requests and cache writes, not ten thousand).
    pub(crate) fn request_refresh(self: &Arc<Self>, name: &str, kind: Refresh) {
        {
            let mut state = self.state.lock();
            let Some(server) = state.servers.get_mut(name) else {
                return;
            };
            let flags = kind.flags(server);
            if flags.running {
                flags.queued = true;
                return;
            }
            flags.running = true;
        }
        let shared = Arc::clone(self);
        let server = name.to_owned();
        let (after, failed) = (Arc::clone(self), name.to_owned());
        let on_panic = move |e: Error| {
            if let Some(entry) = after.state.lock().servers.get_mut(&failed) {
                let flags = kind.flags(entry);
                flags.running = false;
                flags.queued = false;
            }
            after.panicked(&failed, None, e, true);
        };
        let job = move || loop {
            let done = match kind {
                Refresh::Tools => shared.refresh(&server),
                Refresh::Features => shared.refresh_features(&server),
            };
            if let Err(e) = done {
                log::debug!("[{server}] refreshing after list_changed failed: {e}");
            }
            let mut state = shared.state.lock();
            let Some(entry) = state.servers.get_mut(&server) else {
                return;
            };
            let flags = kind.flags(entry);
            if flags.queued {
                flags.queued = false;
                continue;
            }
            flags.running = false;
            return;
        };
        let spawned = self.work.spawn(
            name,
            format!("mcp-{name}-refresh"),
            Boundary::Refresh,
            job,
            on_panic,
        );
        if let Err(e) = spawned {
            log::warn!("[{name}] cannot start a refresh thread: {e}");
            if let Some(server) = self.state.lock().servers.get_mut(name) {
                kind.flags(server).running = false;
            }
        }
    }

    /// The transport of a connected server died: its status says why, its tools go (or stay
    /// as deferred tools while the reconnect policy tries again), the dead client is closed
    /// and the listeners are told, on a manager thread.
    pub(crate) fn transport_died(self: &Arc<Self>, name: &str, attempt: u64, reason: &Error) {
        let (dead, retry, changed, features_changed) = {
            let mut state = self.state.lock();
            let Some(server) = state.servers.get_mut(name) else {
                return;
            };
            // Only the connected client's own death counts. A connection the same attempt
            // opened and dropped (a remembered era that failed, a respawn after the probe)
            // may report its end late, under the same attempt, once its replacement is
            // connected: its router's reason is set, the live client's is not.
            match &server.phase {
                Phase::Connected { attempt: a, client }
                    if *a == attempt && client.closed_reason().is_some() => {}
                _ => return,
            }
            log::warn!("[{name}] connection lost: {reason}");
            let dead = std::mem::replace(&mut server.phase, Phase::Disconnected);
            server.last_error = Some(reason.clone());
            let retry = self.schedule_reconnect(server, reason);
            let changed = !server.tools.is_empty();
            let features_changed = server.features != Features::default();
            server.features = Features::default();
            if retry.is_some() {
                // Calls wait for the new attempt, as at startup.
                server.deferred = true;
            } else {
                server.tools.clear();
                server.deferred = false;
            }
            state.notify();
            (dead, retry, changed, features_changed)
        };
        let shared = Arc::clone(self);
        let server = name.to_owned();
        // The next attempt starts however this thread ends: a scheduled attempt that never
        // started would leave the server "connecting" for good.
        let retry = Arc::new(parking_lot::Mutex::new(retry));
        let unstarted = Arc::clone(&retry);
        let on_panic = {
            let (shared, server, retry) = (Arc::clone(self), name.to_owned(), Arc::clone(&retry));
            move |_: Error| {
                let next = retry.lock().take();
                if let Some(next) = next {
                    shared.restart(&server, next);
                }
            }
        };
        let job = move || {
            if let Phase::Connected { client, .. } = dead {
                client.close();
            }
            let next = retry.lock().take();
            if let Some(next) = next {
                shared.restart(&server, next);
            }
            if changed {
                shared.tools_changed(vec![server.clone()]);
            }
            if features_changed {
                shared.features_changed(vec![server.clone()]);
            }
        };
        // A panic here is logged (the server is already disconnected, with its reason) and
        // the next attempt still starts.
        let spawned = self.work.spawn(
            name,
            format!("mcp-{name}-died"),
            Boundary::Teardown,
            job,
            on_panic,
        );
        if let Err(e) = spawned {
            log::warn!("[{name}] cannot start a teardown thread: {e}");
            let next = unstarted.lock().take();
            if let Some(next) = next {
                self.restart(name, next);
            }
        }
    }

    /// A manager thread of `name` panicked (`error`): a connect `attempt` still running fails
    /// with it, and a connected client is ended with it (its death is then handled as any
    /// other: status, tools, listeners).
    pub(crate) fn panicked(
        self: &Arc<Self>,
        name: &str,
        attempt: Option<u64>,
        error: Error,
        late: bool,
    ) {
        if let Some(attempt) = attempt {
            if let Applied::Current = self.apply(name, None, attempt, &Err(error.clone()), late) {
                return;
            }
        }
        let connected = match self.state.lock().servers.get(name).map(|s| &s.phase) {
            Some(Phase::Connected { attempt: a, client })
                if attempt.is_none_or(|attempt| attempt == *a) =>
            {
                Some(client.clone())
            }
            _ => None,
        };
        if let Some(client) = connected {
            client.fail(error);
        }
    }

    /// With a reconnect policy, turns a disconnected server into a connecting one and returns
    /// what its next task needs; `None` when there is no policy, the error is not worth a retry,
    /// or the burst breaker says stop.
    pub(crate) fn schedule_reconnect(&self, server: &mut Server, error: &Error) -> Option<Retry> {
        let policy = self.options.reconnect.as_ref()?;
        // A caught panic is retried as a death is (a server that was connected comes back;
        // the burst breaker stops a panic that recurs).
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
        let attempt = self.next_attempt();
        let cancel = CancelToken::new();
        // The phase it replaces is `Disconnected` (no client): nothing is dropped here.
        server.phase = Phase::Connecting {
            attempt,
            cancel: cancel.clone(),
            client: None,
        };
        Some(Retry {
            attempt,
            cancel,
            delay,
        })
    }

    /// Starts the attempt [`Shared::schedule_reconnect`] scheduled.
    pub(crate) fn restart(self: &Arc<Self>, name: &str, next: Retry) {
        log::info!("[{name}] reconnecting in {} ms", next.delay.as_millis());
        let Some(config) = self.config_of(name) else {
            return;
        };
        Task {
            shared: Arc::clone(self),
            name: name.to_owned(),
            config,
            attempt: next.attempt,
            cancel: next.cancel,
            delay: Some(next.delay),
            done: None,
            startup_over: Arc::new(AtomicBool::new(true)),
        }
        .spawn();
    }
}

impl Server {
    /// Whether a reconnect attempt is what is running (its deferred tools stay meanwhile).
    pub(crate) fn reconnecting(&self) -> bool {
        !self.reconnects.is_empty()
    }

    /// [`Error::NotConnected`] for this entry, with its last error as the reason.
    pub(crate) fn not_connected(&self, name: &str) -> Error {
        Error::NotConnected {
            server: name.to_owned(),
            reason: self.last_error.as_ref().map(ToString::to_string),
        }
    }
}
