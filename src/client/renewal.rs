//! The session a handshake settled (the server's `InitializeResult` and the negotiated
//! version), and a new one when a Streamable HTTP server forgot it.
//!
//! A server that restarted (or expired the session) answers 404 to a request that carries the
//! old `Mcp-Session-Id`. The transport reports it: that request fails with
//! [`Error::SessionExpired`], and so does every other one until an `initialize` succeeds (see
//! `transport::http`). The client then:
//! - runs the handshake again (`initialize`, `notifications/initialized`), bounded by the
//!   failed request's deadline: once, however many requests noticed at the same time (the
//!   first one leads; the others wait for it, each within its own deadline and cancel, and
//!   lead a new attempt if it failed). A request that starts meanwhile waits too. The
//!   leader's cancel is seen once its handshake ends: an `initialize` abandoned midway could
//!   leave the server a session the client never finished;
//! - takes the new server as it describes itself: [`Client::protocol_version`],
//!   [`Client::server_info`], [`Client::server_capabilities`] and
//!   [`Client::instructions`] return the new values from then on;
//! - tells the handler ([`ClientHandler::on_session_reinitialized`]; the manager lists that
//!   server's tools, resources and prompts again);
//! - re-sends the request if it only reads or lists ([`methods::IDEMPOTENT`]), and fails any other
//!   with [`Error::SessionExpired`]: a tool call may have had effects.
//!
//! What the old session held on the server (resource subscriptions, the log level) is not
//! replayed. The 2026-07-28 era has no session, so none of this happens there.
//!
//! Locks: the settled state is a snapshot behind a read-write lock, read by cloning an `Arc`
//! and replaced when a handshake is done; the lock of the running re-initialization is never
//! held across I/O or a callback.
//!
//! [`ClientHandler::on_session_reinitialized`]: super::ClientHandler::on_session_reinitialized

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};
use serde_json::value::RawValue;
use serde_json::Value;

use super::era::handshake;
use super::{tasks, Client, ProgressFn, Wait};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::protocol::{
    methods, Implementation, InitializeResult, Progress, ProtocolVersion, ServerCapabilities,
};

/// What a handshake settled.
struct Settled {
    init: Arc<InitializeResult>,
    version: ProtocolVersion,
}

/// A client's session: what its last handshake settled, and the re-initialization running.
pub(super) struct Session {
    settled: RwLock<Settled>,
    /// How many handshakes came after the first; bumped after `settled` is replaced.
    epoch: AtomicU64,
    /// The running re-initialization: its receiver disconnects when the round ends.
    renewal: Mutex<Option<Receiver<()>>>,
    /// Whether `renewal` holds a round, read without its lock by every request.
    renewing: AtomicBool,
    /// Whether the server runs tool calls as tasks on request (read on every tool call).
    tool_tasks: AtomicBool,
}

impl Session {
    /// The session the first handshake (or a 2026-07-28 discovery) settled.
    pub(super) fn new(init: InitializeResult, version: ProtocolVersion) -> Session {
        Session {
            tool_tasks: AtomicBool::new(tasks::runs_tool_tasks(&init.capabilities)),
            settled: RwLock::new(Settled {
                init: Arc::new(init),
                version,
            }),
            epoch: AtomicU64::new(0),
            renewal: Mutex::new(None),
            renewing: AtomicBool::new(false),
        }
    }

    /// Whether the server runs tool calls as tasks on request.
    pub(super) fn runs_tool_tasks(&self) -> bool {
        self.tool_tasks.load(Ordering::Relaxed)
    }

    fn install(&self, init: InitializeResult, version: ProtocolVersion) {
        self.tool_tasks.store(
            tasks::runs_tool_tasks(&init.capabilities),
            Ordering::Relaxed,
        );
        *self.settled.write() = Settled {
            init: Arc::new(init),
            version,
        };
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

/// The leader's hold on a re-initialization round: dropping it ends the round and wakes
/// whoever waits for it (on a panic too).
struct Round<'a> {
    session: &'a Session,
    _done: Sender<()>,
}

impl Drop for Round<'_> {
    fn drop(&mut self) {
        *self.session.renewal.lock() = None;
        self.session.renewing.store(false, Ordering::SeqCst);
    }
}

/// The most bytes of a server's `instructions` the client hands on (a server's text for the
/// model should be a few paragraphs; a megabyte of it is an attack on the context window).
pub const MAX_INSTRUCTIONS_BYTES: usize = 16 * 1024;

/// `text` cut at [`MAX_INSTRUCTIONS_BYTES`], on a character boundary.
fn capped(text: &str) -> String {
    if text.len() <= MAX_INSTRUCTIONS_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_INSTRUCTIONS_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

impl Session {
    /// The latest handshake's protocol revision.
    pub(super) fn version(&self) -> ProtocolVersion {
        self.settled.read().version
    }
}

impl Client {
    /// The negotiated protocol revision (the latest handshake's, after a re-initialization).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.session.version()
    }

    /// The server's `initialize` result: a snapshot of the latest handshake's (a server that
    /// forgot the session may come back different).
    pub(crate) fn initialize_result(&self) -> Arc<InitializeResult> {
        Arc::clone(&self.inner.session.settled.read().init)
    }

    /// Who the server says it is (its `serverInfo`: name, version, title, ...), as of the
    /// latest handshake (a server that forgot the session may come back different).
    pub fn server_info(&self) -> Implementation {
        self.initialize_result().server_info.clone()
    }

    /// The server's capabilities, as of the latest handshake.
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.initialize_result().capabilities.clone()
    }

    /// The server's instructions for the model, if it gave any (as of the latest handshake),
    /// cut at [`MAX_INSTRUCTIONS_BYTES`] on a character boundary.
    pub fn instructions(&self) -> Option<String> {
        self.initialize_result().instructions.as_deref().map(capped)
    }

    /// A request of the handshake era: when the server forgot the session, a new one is
    /// established and the request re-sent if it is idempotent ([`methods::IDEMPOTENT`]) (see the module docs).
    pub(super) fn handshake_request(
        &self,
        method: &str,
        params: Option<Value>,
        wait: Wait<'_>,
    ) -> Result<Box<RawValue>, Error> {
        let inner = &*self.inner;
        let session = &inner.session;
        let Wait {
            timeout,
            hard_deadline,
            cancel,
            mut on_progress,
            notify_cancel,
        } = wait;
        let deadline = (Instant::now() + timeout).min(hard_deadline);
        let own_timeout = |e: Error| match e {
            Error::Timeout { .. } => Error::Timeout {
                method: method.to_owned(),
                after: timeout,
            },
            other => other,
        };
        if session.renewing.load(Ordering::SeqCst) {
            // Sent now, it would find no session: wait for the new one first.
            let running = session.renewal.lock().clone();
            if let Some(round) = running {
                wait_for(&round, deadline, cancel.as_ref()).map_err(own_timeout)?;
            }
        }
        let epoch = session.epoch.load(Ordering::SeqCst);
        let again = methods::IDEMPOTENT
            .contains(&method)
            .then(|| params.clone());
        let first = Wait {
            timeout,
            hard_deadline,
            cancel: cancel.clone(),
            on_progress: reborrow(&mut on_progress),
            notify_cancel,
        };
        let (outcome, cause) = inner.conn.request_traced(method, params, first);
        match outcome {
            Err(Error::SessionExpired) => {}
            other => return other,
        }
        // The new session's handshake is the child of the request that found the old one gone.
        let renewed = {
            let _cause = cause.attach();
            self.renew(epoch, deadline, cancel.as_ref())
        };
        let Some(params) = again else {
            return Err(Error::SessionExpired);
        };
        renewed.map_err(own_timeout)?;
        log::debug!(
            "[{}] re-sending {method} on the new session",
            inner.conn.name
        );
        let wait = Wait {
            timeout,
            // The same deadline as the first time (with progress, the same hard bound).
            hard_deadline: if on_progress.is_some() {
                hard_deadline
            } else {
                deadline
            },
            cancel,
            on_progress,
            notify_cancel,
        };
        inner.conn.request_raw(method, params, wait)
    }

    /// Makes sure a session newer than the one of `seen` exists: leads the handshake, or waits
    /// for the one running (and leads the next if that one failed), all by `deadline`;
    /// `cancel` ends a wait, not a handshake.
    fn renew(
        &self,
        seen: u64,
        deadline: Instant,
        cancel: Option<&CancelToken>,
    ) -> Result<(), Error> {
        let session = &self.inner.session;
        loop {
            let running = {
                let mut renewal = session.renewal.lock();
                if session.epoch.load(Ordering::SeqCst) != seen {
                    // A new session came after this request was sent.
                    return Ok(());
                }
                match renewal.clone() {
                    Some(round) => round,
                    None => {
                        let (done, round) = crossbeam_channel::bounded(0);
                        *renewal = Some(round);
                        session.renewing.store(true, Ordering::SeqCst);
                        drop(renewal);
                        let round = Round {
                            session,
                            _done: done,
                        };
                        return self.lead(round, deadline);
                    }
                }
            };
            wait_for(&running, deadline, cancel)?;
        }
    }

    /// Runs the handshake again for `round`, by `deadline`; tells the handler once it
    /// succeeded.
    fn lead(&self, round: Round<'_>, deadline: Instant) -> Result<(), Error> {
        let inner = &*self.inner;
        let name = &inner.conn.name;
        log::info!("[{name}] the server forgot the session; initializing a new one");
        let wait = Wait {
            timeout: deadline.saturating_duration_since(Instant::now()),
            hard_deadline: deadline,
            cancel: None,
            on_progress: None,
            notify_cancel: false,
        };
        let outcome = handshake::initialize(&inner.conn, &inner.client_info, wait);
        let outcome = outcome.map(|(init, version)| inner.session.install(init, version));
        drop(round);
        match outcome {
            Ok(()) => {
                log::info!(
                    "[{name}] new session established (protocol {})",
                    self.protocol_version()
                );
                inner.conn.handler.on_session_reinitialized(name);
                Ok(())
            }
            Err(e) => {
                log::warn!("[{name}] the server forgot the session, and a new one failed: {e}");
                Err(e)
            }
        }
    }
}

/// Waits until `round` ends, bounded by `deadline` and `cancel`.
fn wait_for(
    round: &Receiver<()>,
    deadline: Instant,
    cancel: Option<&CancelToken>,
) -> Result<(), Error> {
    let never = crossbeam_channel::never();
    let cancelled = cancel.map(CancelToken::receiver).unwrap_or(&never);
    let left = deadline.saturating_duration_since(Instant::now());
    crossbeam_channel::select! {
        recv(round) -> _ => Ok(()),
        recv(cancelled) -> _ => Err(Error::Cancelled),
        default(left) => Err(Error::Timeout {
            method: methods::INITIALIZE.to_owned(),
            after: left,
        }),
    }
}

/// A progress callback lent for one round of a request, so the next round can have it too.
fn reborrow<'b>(on_progress: &'b mut Option<ProgressFn<'_>>) -> Option<ProgressFn<'b>> {
    on_progress
        .as_mut()
        .map(|cb| Box::new(move |p: &Progress| cb(p)) as ProgressFn<'b>)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_are_cut_on_a_character_boundary() {
        assert_eq!(capped("short"), "short");
        let long = "é".repeat(MAX_INSTRUCTIONS_BYTES);
        let cut = capped(&long);
        assert!(cut.len() <= MAX_INSTRUCTIONS_BYTES && cut.len() > MAX_INSTRUCTIONS_BYTES - 2);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
