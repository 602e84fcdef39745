//! The pages `mcp app` serves, and the state they share with the command: the host page and
//! its relay (`/from-view`, `/to-view`) on one port, the sandbox proxy on another (another
//! origin). Every page load is a View of its own (a generation): what an older page sends or
//! asks for is refused (410), and what was asked for it is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, TrySendError};
use mcp_runtime::host::{AppBridge, AppEvent, APP_SANDBOX_PROXY_HTML};
use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use crate::app_http::{Handler, Request, Response};

/// How long a request for messages waits for one.
const POLL_WAIT: Duration = Duration::from_secs(20);

/// The page shown now: its generation and its bridge.
pub struct View {
    pub generation: u64,
    pub bridge: AppBridge,
}

/// What the pages' threads and the command share.
pub struct Shared {
    pub view: Mutex<View>,
    /// Woken when there are messages for the page, the page changed, or the command ends.
    pub wake: Condvar,
    /// Requests for messages in flight, and when the last one began or ended.
    pub polls: Mutex<(usize, Option<Instant>)>,
    pub closed: AtomicBool,
    /// The View answered `ui/resource-teardown`.
    pub torn_down: AtomicBool,
    /// The View's events for the command, with the generation they belong to (bounded).
    pub events: Sender<(u64, AppEvent)>,
    /// A bridge for a new page: the tool's input and result already given.
    pub fresh: Box<dyn Fn() -> AppBridge + Send + Sync>,
}

impl Shared {
    /// Answers request `id` of generation `generation`, unless that page is gone.
    pub fn answer(&self, generation: u64, id: u64, outcome: Result<Value, String>) {
        let mut view = self.view.lock();
        if view.generation == generation {
            view.bridge.answer(id, outcome);
        }
        drop(view);
        self.wake.notify_all();
    }

    /// Asks the View to clean up and waits (at most `bound`) for it to answer; nothing to wait
    /// for when it is not showing or no page is listening.
    pub fn close_view(&self, bound: Duration) {
        let asked = self.view.lock().bridge.teardown();
        self.wake.notify_all();
        if asked && self.polls.lock().0 > 0 {
            let deadline = Instant::now() + bound;
            let mut view = self.view.lock();
            while !self.torn_down.load(Ordering::SeqCst) {
                if self.wake.wait_until(&mut view, deadline).timed_out() {
                    break;
                }
            }
        }
        self.closed.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }
}

/// The request of an event that carries one.
fn request_of(event: &AppEvent) -> Option<u64> {
    match event {
        AppEvent::CallTool { id, .. }
        | AppEvent::ReadResource { id, .. }
        | AppEvent::OpenLink { id, .. }
        | AppEvent::Message { id, .. }
        | AppEvent::UpdateModelContext { id, .. }
        | AppEvent::DownloadFile { id, .. } => Some(*id),
        _ => None,
    }
}

/// The host page and its relay.
pub struct HostPages {
    pub shared: Arc<Shared>,
    /// `127.0.0.1:PORT`: the only `Host` answered.
    pub host_at: String,
    pub token: String,
    /// The page, `{{PAGE}}` standing for its generation.
    pub page_html: String,
    pub policy: String,
}

impl HostPages {
    /// The generation a relay request names, when it is the run's and the page shown now.
    fn page_of(&self, r: &Request) -> Result<u64, Response> {
        if r.header("x-mcp-app") != Some(self.token.as_str()) {
            return Err(Response::text(403, "not for this page"));
        }
        let named = r
            .header("x-mcp-app-page")
            .and_then(|g| g.parse::<u64>().ok());
        let now = self.shared.view.lock().generation;
        match named {
            Some(g) if g == now && !self.shared.closed.load(Ordering::SeqCst) => Ok(g),
            _ => Err(Response::text(410, "this page is no longer the App's")),
        }
    }
}

impl Handler for HostPages {
    fn admit(&self, r: &Request) -> Option<Response> {
        if r.header("host") != Some(self.host_at.as_str()) {
            return Some(Response::text(403, "wrong host"));
        }
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/") if r.param("t") == Some(self.token.as_str()) => None,
            ("POST", "/from-view") | ("GET", "/to-view") => self.page_of(r).err(),
            ("GET", _) | ("POST", _) => Some(Response::text(403, "not for this page")),
            _ => Some(Response::text(405, "method not allowed")),
        }
    }

    fn handle(&self, r: Request) -> Response {
        match r.path.as_str() {
            "/" => {
                // A new page (or a reload): a View of its own, with the tool's input and result.
                let generation = {
                    let mut view = self.shared.view.lock();
                    view.generation += 1;
                    view.bridge = (self.shared.fresh)();
                    view.generation
                };
                self.shared.torn_down.store(false, Ordering::SeqCst);
                self.shared.wake.notify_all();
                let html = self.page_html.replace("{{PAGE}}", &generation.to_string());
                Response::new(200, "text/html; charset=utf-8", html)
                    .with("Content-Security-Policy", self.policy.clone())
                    .with("Referrer-Policy", "origin")
            }
            "/from-view" => match self.page_of(&r) {
                Ok(generation) => self.relay_in(generation, &r.body),
                Err(refusal) => refusal,
            },
            _ => match self.page_of(&r) {
                Ok(generation) => self.relay_out(generation),
                Err(refusal) => refusal,
            },
        }
    }
}

impl HostPages {
    fn relay_in(&self, generation: u64, body: &[u8]) -> Response {
        let Ok(message) = serde_json::from_slice::<Value>(body) else {
            return Response::text(400, "not JSON");
        };
        let event = {
            let mut view = self.shared.view.lock();
            if view.generation != generation {
                return Response::text(410, "this page is no longer the App's");
            }
            let event = view.bridge.receive(&message);
            if event == Some(AppEvent::TornDown) {
                // Under the lock: `close_view` looks at it under the lock before it waits.
                self.shared.torn_down.store(true, Ordering::SeqCst);
            }
            event
        };
        self.shared.wake.notify_all();
        if let Some(event) = event {
            if let Err(TrySendError::Full((_, event))) =
                self.shared.events.try_send((generation, event))
            {
                // The command is behind: a request is refused, a notification dropped.
                if let Some(id) = request_of(&event) {
                    self.shared
                        .answer(generation, id, Err("the host is busy".to_owned()));
                }
            }
        }
        Response::new(200, "application/json", "{}")
    }

    /// Waits (at most [`POLL_WAIT`]) for messages for the View; 410 once the page is not the
    /// one shown or the command ends.
    fn relay_out(&self, generation: u64) -> Response {
        let mark = |delta: isize| {
            let mut polls = self.shared.polls.lock();
            polls.0 = polls.0.saturating_add_signed(delta);
            polls.1 = Some(Instant::now());
        };
        mark(1);
        let deadline = Instant::now() + POLL_WAIT;
        let messages = {
            let mut view = self.shared.view.lock();
            loop {
                if view.generation != generation {
                    break None;
                }
                let messages = view.bridge.take_messages();
                if !messages.is_empty() {
                    break Some(messages);
                }
                if self.shared.closed.load(Ordering::SeqCst) {
                    break None;
                }
                if self.shared.wake.wait_until(&mut view, deadline).timed_out() {
                    break Some(Vec::new());
                }
            }
        };
        mark(-1);
        match messages {
            Some(messages) => {
                Response::new(200, "application/json", Value::Array(messages).to_string())
            }
            None => Response::text(410, "this page is no longer the App's"),
        }
    }
}

/// The sandbox proxy, on its own origin.
pub struct SandboxPages {
    /// `127.0.0.1:PORT`: the only `Host` answered.
    pub sandbox_at: String,
    /// Its `Content-Security-Policy`: the App's, and who may frame it.
    pub policy: String,
}

impl Handler for SandboxPages {
    fn admit(&self, r: &Request) -> Option<Response> {
        if r.header("host") != Some(self.sandbox_at.as_str()) {
            return Some(Response::text(403, "wrong host"));
        }
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/sandbox") => None,
            _ => Some(Response::text(404, "not found")),
        }
    }

    fn handle(&self, _: Request) -> Response {
        Response::new(200, "text/html; charset=utf-8", APP_SANDBOX_PROXY_HTML)
            .with("Content-Security-Policy", self.policy.clone())
    }
}
