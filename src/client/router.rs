//! Routing what the server sends: responses to their waiting callers, server requests to the
//! host's handler (off the reader thread), notifications to their consumers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use crossbeam_channel::Sender;
use parking_lot::Mutex;
use serde_json::Value;

use super::era::Envelopes;
use super::handler::ClientHandler;
use super::reply::ReplyTx;
use crate::error::Error;
use crate::jsonrpc::{
    codes, empty_object, Message, Notification, Request, RequestId, Response, RpcError,
};
use crate::panic::Boundary;
use crate::protocol::{
    check_elicitation_mode, methods, ClientCapabilities, LoggingMessageParams, Progress,
};
use crate::transport::{Inbound, Transport};

/// How many server → client requests may be handled at once before we answer "overloaded".
const MAX_SERVER_REQUESTS: usize = 16;

/// Error responses no request waits for that are each logged at `warn`, per connection.
const UNSOLICITED_WARNINGS: u64 = 5;
/// After those, one `warn` summary per this many more (the rest go to `debug`).
const UNSOLICITED_SUMMARY_EVERY: u64 = 100;

/// Where a pending request's outcome goes.
pub(crate) struct Slot {
    /// The response (or the error that ended the request).
    pub response: ReplyTx,
    /// Progress notifications for this request, when the caller asked for them.
    pub progress: Option<Sender<Progress>>,
}

/// What the event thread hands to the handler, in arrival order.
enum Event {
    Notification(Notification),
    Log(LoggingMessageParams),
}

/// The pending map is split in shards by id, so concurrent callers rarely meet on one lock.
const SHARDS: usize = 8;

pub(crate) struct Router {
    server: String,
    shards: Vec<Mutex<HashMap<i64, Slot>>>,
    /// Set (before any shard is drained) once the connection has ended.
    is_closed: AtomicBool,
    closed: Mutex<Option<Error>>,
    handler: Arc<dyn ClientHandler>,
    declared: ClientCapabilities,
    /// Where answers go: the transport, and the session's envelopes to send them in.
    outbound: OnceLock<(Weak<dyn Transport>, Arc<Envelopes>)>,
    /// The event thread's queue, started with the first notification that needs it (many
    /// servers never send one).
    events: OnceLock<Option<Sender<Event>>>,
    server_requests: Arc<AtomicUsize>,
    /// Error responses received that no request waited for.
    unsolicited: AtomicU64,
    /// The ids of our open `subscriptions/listen` requests (2026-07-28).
    subscriptions: Mutex<std::collections::HashSet<i64>>,
    /// The trace context the connection was made in (its connect's span): what a notification
    /// without a context of its own, and the connection's end, are traced under.
    origin: crate::telemetry::Carried,
}

impl Router {
    pub(crate) fn new(
        server: &str,
        handler: Arc<dyn ClientHandler>,
        declared: ClientCapabilities,
    ) -> Router {
        Router {
            server: server.to_owned(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            is_closed: AtomicBool::new(false),
            closed: Mutex::new(None),
            handler,
            declared,
            outbound: OnceLock::new(),
            events: OnceLock::new(),
            server_requests: Arc::new(AtomicUsize::new(0)),
            unsolicited: AtomicU64::new(0),
            subscriptions: Mutex::new(std::collections::HashSet::new()),
            origin: crate::telemetry::Carried::here(),
        }
    }

    /// The capabilities the client declared (extensions included).
    pub(crate) fn declared(&self) -> &ClientCapabilities {
        &self.declared
    }

    /// Notes an open (`open`) or ended `subscriptions/listen` request.
    pub(crate) fn subscription(&self, id: i64, open: bool) {
        let mut subs = self.subscriptions.lock();
        if open {
            subs.insert(id);
        } else {
            subs.remove(&id);
        }
    }

    /// Whether a notification belongs to us: one that names a subscription must name one of
    /// ours (on stdio every subscription shares one stream).
    fn is_ours(&self, n: &Notification) -> bool {
        let Some(id) = n
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(crate::protocol::stateless::META_SUBSCRIPTION_ID))
        else {
            return true;
        };
        let id = id
            .as_i64()
            .or_else(|| id.as_str().and_then(|s| s.parse().ok()));
        id.is_some_and(|id| self.subscriptions.lock().contains(&id))
    }

    /// The queue of the event thread, which this starts on first use. It ends when the router
    /// (the only sender) is dropped.
    fn events(&self) -> Option<&Sender<Event>> {
        self.events
            .get_or_init(|| {
                let (events, rx) = crossbeam_channel::unbounded::<Event>();
                let name = self.server.clone();
                let h = Arc::clone(&self.handler);
                let origin = self.origin.clone();
                // A handler that panics on one event is logged, and hears the next.
                let deliver = move || {
                    // The connection's context, not that of whichever thread started this one.
                    let _origin = origin.attach();
                    for event in rx.iter() {
                        let _ = crate::panic::catch(Boundary::Events, || match event {
                            Event::Log(m) => {
                                h.on_log_message(&name, m.level, m.logger.as_deref(), &m.data)
                            }
                            Event::Notification(n) => {
                                // What the handlers start (a refresh) is traced under it.
                                let _span = crate::telemetry::receiving(
                                    &n.method,
                                    n.params.as_ref(),
                                    &origin,
                                );
                                if n.method == methods::TOOLS_LIST_CHANGED {
                                    h.on_tools_list_changed(&name)
                                } else {
                                    h.on_notification(&name, &n.method, n.params.as_ref())
                                }
                            }
                        });
                    }
                };
                crate::panic::spawn_in(
                    format!("mcp-{}-events", self.server),
                    "the notification thread",
                    deliver,
                    |_| {},
                )
                .ok()
                .map(|_| events)
            })
            .as_ref()
    }

    /// Gives the router the transport it answers server requests on, and the session's
    /// envelopes the answers go in.
    pub(crate) fn attach(&self, transport: &Arc<dyn Transport>, envelopes: &Arc<Envelopes>) {
        let _ = self
            .outbound
            .set((Arc::downgrade(transport), Arc::clone(envelopes)));
    }

    fn shard(&self, id: i64) -> &Mutex<HashMap<i64, Slot>> {
        &self.shards[id.rem_euclid(SHARDS as i64) as usize]
    }

    /// Registers a pending request. Fails if the connection has already ended.
    pub(crate) fn register(&self, id: i64, slot: Slot) -> Result<(), Error> {
        let mut shard = self.shard(id).lock();
        // `fail_all` sets the flag before it drains the shards: either it sees this slot, or
        // this check sees the flag.
        if self.is_closed.load(Ordering::SeqCst) {
            drop(shard);
            return Err(self.closed().unwrap_or_else(Error::closed_by_owner));
        }
        shard.insert(id, slot);
        Ok(())
    }

    /// Drops a pending request (timed out or cancelled); a late response is then ignored.
    pub(crate) fn forget(&self, id: i64) {
        self.shard(id).lock().remove(&id);
    }

    fn take(&self, id: i64) -> Option<Slot> {
        self.shard(id).lock().remove(&id)
    }

    /// Why the connection ended, once it has.
    pub(crate) fn closed(&self) -> Option<Error> {
        self.closed.lock().clone()
    }

    /// Ends the connection: every pending request fails with `error` (the first reason wins).
    pub(crate) fn fail_all(&self, error: Error) {
        let (error, first) = {
            let mut closed = self.closed.lock();
            let first = closed.is_none();
            let error = closed.get_or_insert(error).clone();
            self.is_closed.store(true, Ordering::SeqCst);
            (error, first)
        };
        let slots: Vec<Slot> = self
            .shards
            .iter()
            .flat_map(|s| std::mem::take(&mut *s.lock()).into_values())
            .collect();
        // The handler hears first, so whoever a failed call wakes finds the news already known
        // (a manager's status says `disconnected` before any caller sees the error).
        if first {
            // What the end sets off (a reconnect) is traced under the connection's connect.
            let _origin = self.origin.attach();
            self.handler.on_connection_closed(&self.server, &error);
        }
        for slot in slots {
            slot.response.send(Err(error.clone()));
        }
    }

    fn send(&self, message: &Message) {
        let Some((transport, envelopes)) = self.outbound.get() else {
            return;
        };
        let Some(transport) = transport.upgrade() else {
            return;
        };
        if let Err(e) = transport.send(message, &envelopes.envelope(message)) {
            log::debug!("[{}] could not answer the server: {e}", self.server);
        }
    }

    fn on_response(&self, response: Response) {
        let Some(id) = response.id.as_ref().and_then(RequestId::as_i64) else {
            // Not an id of ours at all (null, or a string that is no number).
            match &response.outcome {
                Err(e) => self.unsolicited_error(response.id.as_ref(), e),
                Ok(_) => log::debug!(
                    "[{}] ignoring a response for {}, which no request waits for",
                    self.server,
                    describe_id(response.id.as_ref())
                ),
            }
            return;
        };
        match self.take(id) {
            Some(slot) => {
                slot.response.send(response.outcome.map_err(Error::from));
            }
            // A late answer (its caller timed out or cancelled: servers often answer a
            // cancelled request with an error) is normal.
            None => log::debug!(
                "[{}] ignoring a response to an unknown or finished request {id}",
                self.server
            ),
        }
    }

    /// An error response whose id is none of ours (null: the server could not even read the
    /// id of what it complains about). Worth a warning, but a server repeating it must not
    /// flood the log: the first [`UNSOLICITED_WARNINGS`] are logged, then one summary per
    /// [`UNSOLICITED_SUMMARY_EVERY`] more (the rest at `debug`).
    fn unsolicited_error(&self, id: Option<&RequestId>, e: &RpcError) {
        let n = self.unsolicited.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= UNSOLICITED_WARNINGS {
            log::warn!(
                "[{}] the server sent an error response for {}, which no request waits for: {} {}{}",
                self.server,
                describe_id(id),
                e.code,
                e.message,
                if n == UNSOLICITED_WARNINGS {
                    " (further ones are counted, not logged)"
                } else {
                    ""
                }
            );
        } else if (n - UNSOLICITED_WARNINGS) % UNSOLICITED_SUMMARY_EVERY == 0 {
            log::warn!(
                "[{}] the server has sent {n} error responses no request waits for (the latest \
                 for {}: {} {})",
                self.server,
                describe_id(id),
                e.code,
                e.message
            );
        } else {
            log::debug!(
                "[{}] an error response for {}, which no request waits for: {} {}",
                self.server,
                describe_id(id),
                e.code,
                e.message
            );
        }
    }

    fn on_request(&self, request: Request) {
        let declared = |cap: &Option<Value>| cap.is_some();
        let supported = match request.method.as_str() {
            methods::PING => {
                self.send(&Message::result(request.id, empty_object()));
                return;
            }
            methods::ROOTS_LIST => declared(&self.declared.roots),
            methods::SAMPLING_CREATE_MESSAGE => declared(&self.declared.sampling),
            methods::ELICITATION_CREATE => declared(&self.declared.elicitation),
            _ => false,
        };
        if !supported {
            self.send(&Message::error(
                request.id,
                RpcError::method_not_found(&request.method),
            ));
            return;
        }
        if let (methods::ELICITATION_CREATE, Some(declared)) =
            (request.method.as_str(), &self.declared.elicitation)
        {
            let params = request.params.as_ref().unwrap_or(&Value::Null);
            if let Err(e) = check_elicitation_mode(declared, params) {
                self.send(&Message::error(request.id, e));
                return;
            }
        }
        if self.server_requests.fetch_add(1, Ordering::SeqCst) >= MAX_SERVER_REQUESTS {
            self.server_requests.fetch_sub(1, Ordering::SeqCst);
            self.send(&Message::error(
                request.id,
                RpcError::new(codes::SERVER_ERROR, "client overloaded"),
            ));
            return;
        }
        let handler = Arc::clone(&self.handler);
        let outbound = self.outbound.get().cloned();
        // The count goes down however this ends: answered, panicked, or never started.
        let counted = Uncount(Arc::clone(&self.server_requests));
        let server = self.server.clone();
        let reply_to = (request.id.clone(), outbound.clone());
        // The handler is behind a catch (a panic in it is an error answer); a panic of ours
        // here is answered as an error too: the server must not wait for the answer.
        let _ = crate::panic::spawn(
            format!("mcp-{}-request", self.server),
            Boundary::ServerRequest,
            move || {
                let _counted = counted;
                let id = request.id.clone();
                // Its span continues the server's context, current while the host answers.
                let serving = crate::telemetry::serving(
                    &request.method,
                    &id_text(&id),
                    request.params.as_ref(),
                );
                let reply = match answer(&*handler, &server, request) {
                    Ok(v) => {
                        serving.finish(None);
                        Message::result(id, v)
                    }
                    Err(e) => {
                        serving.finish(Some((e.code, &e.message)));
                        Message::error(id, e)
                    }
                };
                send_reply(outbound.as_ref(), &reply);
            },
            move |e| {
                let (id, outbound) = reply_to;
                let error = RpcError::new(codes::INTERNAL_ERROR, e.to_string());
                send_reply(outbound.as_ref(), &Message::error(id, error));
            },
        );
    }

    fn on_notification(&self, n: Notification) {
        match n.method.as_str() {
            methods::PROGRESS => {
                let Some(progress) = n
                    .params
                    .and_then(|p| serde_json::from_value::<Progress>(p).ok())
                else {
                    return;
                };
                let token = match &progress.progress_token {
                    Value::Number(n) => n.as_i64(),
                    Value::String(s) => s.parse().ok(),
                    _ => None,
                };
                let Some(token) = token else { return };
                let shard = self.shard(token).lock();
                if let Some(tx) = shard.get(&token).and_then(|s| s.progress.as_ref()) {
                    let _ = tx.send(progress);
                }
            }
            methods::LOG_MESSAGE => {
                if let Some(m) = n
                    .params
                    .and_then(|p| serde_json::from_value::<LoggingMessageParams>(p).ok())
                {
                    let target = format!("mcp::{}", self.server);
                    let data = match &m.data {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    match &m.logger {
                        Some(logger) => {
                            log::log!(target: &target, m.level.to_log_level(), "[{}] {logger}: {data}", self.server)
                        }
                        None => {
                            log::log!(target: &target, m.level.to_log_level(), "[{}] {data}", self.server)
                        }
                    }
                    if let Some(events) = self.events() {
                        let _ = events.send(Event::Log(m));
                    }
                }
            }
            methods::CANCELLED => {
                // We handle server requests to completion; a cancellation of one is only noted.
                log::debug!("[{}] the server cancelled one of its requests", self.server);
            }
            _ if !self.is_ours(&n) => {
                log::debug!(
                    "[{}] {} for a subscription that is not ours; ignored",
                    self.server,
                    n.method
                );
            }
            _ => {
                if n.method == crate::protocol::stateless::SUBSCRIPTIONS_ACKNOWLEDGED {
                    log::debug!("[{}] subscription acknowledged", self.server);
                }
                if let Some(events) = self.events() {
                    let _ = events.send(Event::Notification(n));
                }
            }
        }
    }
}

/// An id as telemetry records it (`jsonrpc.request.id`).
fn id_text(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => s.clone(),
    }
}

/// An id as the log names it.
fn describe_id(id: Option<&RequestId>) -> String {
    match id {
        None => "no id (null)".to_owned(),
        Some(RequestId::Number(n)) => format!("id {n}"),
        Some(RequestId::String(s)) => format!("id {s:?}"),
    }
}

fn answer(handler: &dyn ClientHandler, server: &str, request: Request) -> Result<Value, RpcError> {
    let params = request.params.unwrap_or_else(empty_object);
    match request.method.as_str() {
        methods::ROOTS_LIST => handler.list_roots(server).and_then(|roots| {
            serde_json::to_value(roots)
                .map(|roots| serde_json::json!({ "roots": roots }))
                .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, e.to_string()))
        }),
        methods::SAMPLING_CREATE_MESSAGE => handler.create_message(server, params),
        methods::ELICITATION_CREATE => handler.elicit(server, params),
        other => Err(RpcError::method_not_found(other)),
    }
}

impl Inbound for Router {
    fn on_message(&self, message: Message) {
        match message {
            Message::Response(r) => self.on_response(r),
            Message::Request(r) => self.on_request(r),
            Message::Notification(n) => self.on_notification(n),
        }
    }

    fn on_closed(&self, error: Error) {
        self.fail_all(error);
    }

    fn on_request_failed(&self, id: &RequestId, error: Error) {
        let Some(id) = id.as_i64() else { return };
        if let Some(slot) = self.take(id) {
            slot.response.send(Err(error));
        }
    }
}

/// Sends an answer to a server request on the connection, if it is still there.
fn send_reply(outbound: Option<&(Weak<dyn Transport>, Arc<Envelopes>)>, reply: &Message) {
    if let Some((transport, envelopes)) = outbound {
        if let Some(t) = transport.upgrade() {
            let _ = t.send(reply, &envelopes.envelope(reply));
        }
    }
}

/// Takes one off the count of server requests being answered when dropped.
struct Uncount(Arc<AtomicUsize>);

impl Drop for Uncount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
