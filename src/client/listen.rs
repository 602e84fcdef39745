//! 2026-07-28 change notifications: one `subscriptions/listen` request per connection, open
//! for as long as the connection lives. Its notifications (`list_changed`, each naming the
//! subscription in `_meta`) are routed like any other, once the router knows the id is ours;
//! a stream that broke while the connection lives (an HTTP drop) is re-issued under a new id,
//! with a capped backoff and a bounded number of attempts. A stdio restart is a new
//! connection, which opens its own.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::era::{stamp, Envelopes, SessionEra};
use super::reply;
use super::router::{Router, Slot};
use super::Client;
use crate::error::Error;
use crate::jsonrpc::Message;
use crate::protocol::methods;
use crate::transport::Transport;

/// Broken listen streams re-issued in a row before we stop listening.
const MAX_RELISTENS: u32 = 5;
/// The longest pause before re-issuing one.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl Client {
    /// A client just built: a stateless one whose server announces change notifications starts
    /// listening for them.
    pub(super) fn started(client: Client) -> Client {
        let inner = &*client.inner;
        let SessionEra::Stateless(session) = &inner.era else {
            return client;
        };
        let init = client.initialize_result();
        let caps = &init.capabilities;
        let wants = |cap: &Option<Value>| {
            cap.as_ref()
                .and_then(|c| c.get("listChanged"))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let mut asked = Map::new();
        for (cap, key) in [
            (&caps.tools, "toolsListChanged"),
            (&caps.prompts, "promptsListChanged"),
            (&caps.resources, "resourcesListChanged"),
        ] {
            if wants(cap) {
                asked.insert(key.into(), Value::Bool(true));
            }
        }
        if asked.is_empty() {
            return client;
        }
        let params = stamp(session.meta(), json!({ "notifications": asked }));
        let listener = Listener {
            name: inner.conn.name.clone(),
            router: Arc::clone(&inner.conn.router),
            transport: Arc::clone(&inner.conn.transport),
            envelopes: Arc::clone(&inner.conn.envelopes),
            next_id: Arc::clone(&inner.conn.next_id),
            params,
        };
        // A panic here ends the connection with it: its notifications would stop silently.
        let (router, transport) = (
            Arc::clone(&inner.conn.router),
            Arc::clone(&inner.conn.transport),
        );
        let spawned = crate::panic::spawn(
            format!("mcp-{}-subscriptions", inner.conn.name),
            crate::panic::Boundary::Subscriptions,
            move || listener.run(),
            move |e| {
                router.fail_all(e);
                transport.close();
            },
        );
        if let Err(e) = spawned {
            log::warn!(
                "[{}] cannot listen for change notifications: {e}",
                inner.conn.name
            );
        }
        client
    }
}

/// What the listening thread holds: never the client itself, so dropping the last clone still
/// closes the connection (which ends the listen request).
struct Listener {
    name: String,
    router: Arc<Router>,
    transport: Arc<dyn Transport>,
    envelopes: Arc<Envelopes>,
    next_id: Arc<AtomicI64>,
    params: Value,
}

impl Listener {
    fn run(self) {
        let mut broken = 0;
        loop {
            let started = Instant::now();
            let outcome = self.listen_once();
            if self.router.closed().is_some() {
                return;
            }
            match outcome {
                Ok(_) => {
                    log::debug!("[{}] the server ended the subscription", self.name);
                    return;
                }
                Err(Error::Rpc { code, message, .. }) => {
                    log::debug!(
                        "[{}] subscriptions/listen refused ({code}: {message}); not listening",
                        self.name
                    );
                    return;
                }
                Err(e) => {
                    // A stream that lived a while before it broke starts the count again.
                    if started.elapsed() > MAX_BACKOFF {
                        broken = 0;
                    }
                    broken += 1;
                    if broken > MAX_RELISTENS {
                        log::warn!(
                            "[{}] the subscription stream broke {MAX_RELISTENS} times in a row ({e}); not listening",
                            self.name
                        );
                        return;
                    }
                    let pause = (Duration::from_millis(500) * 2u32.pow(broken)).min(MAX_BACKOFF);
                    log::debug!(
                        "[{}] the subscription stream broke ({e}); listening again in {pause:?}",
                        self.name
                    );
                    if !self.pause(pause) {
                        return;
                    }
                }
            }
        }
    }

    /// One listen request, until its stream ends: bounded by the connection (every pending
    /// request ends when it does).
    fn listen_once(&self) -> Result<Box<RawValue>, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = reply::pair(true);
        self.router.subscription(id, true);
        let registered = self.router.register(
            id,
            Slot {
                response: tx,
                progress: None,
            },
        );
        let outcome = registered.and_then(|()| {
            let message =
                Message::request(id, methods::SUBSCRIPTIONS_LISTEN, Some(self.params.clone()));
            self.transport
                .send(&message, &self.envelopes.envelope(&message))?;
            rx.recv()
                .unwrap_or_else(|_| Err(Error::closed("the connection was dropped")))
        });
        self.router.forget(id);
        self.router.subscription(id, false);
        outcome
    }

    /// Waits `pause`, or less if the connection ends first; false when it ended.
    fn pause(&self, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        while Instant::now() < until {
            if self.router.closed().is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100).min(until - Instant::now()));
        }
        self.router.closed().is_none()
    }
}
