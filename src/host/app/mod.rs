//! The host's side of an MCP App, as a value: the JSON-RPC a View speaks over `postMessage`
//! (the `io.modelcontextprotocol/ui` extension, stable 2026-01-26) in, messages for the View
//! and requests for the host out, with no I/O of its own.
//!
//! A host renders the View in a frame ([`AppBridge::sandbox`] says how), hands every message
//! the frame posts to [`AppBridge::receive`], posts what [`AppBridge::take_messages`] returns
//! back to the frame, and acts on the [`AppEvent`]s: calls a tool of the App's server,
//! reads a resource, opens a link, takes a message for the conversation. What the extension
//! decides is decided here: `ui/initialize` is answered with the host's capabilities and the
//! tool's context; nothing reaches the View before it says it is initialized (the tool's
//! input and result wait); a View calls only tools of its own server whose visibility names
//! `"app"`; a link is opened only when it is `http` or `https`; requests the host did not
//! enable are refused with "method not found"; a View gets at most [`APP_MAX_PENDING`] requests
//! in flight.
//!
//! ```
//! use mcp_runtime::host::{AppBridge, AppHostOptions, AppEvent};
//! use mcp_runtime::client::AppPage;
//! use mcp_runtime::protocol::Tool;
//! use serde_json::json;
//!
//! let tool: Tool = serde_json::from_value(json!({"name": "get-time", "inputSchema": {},
//!     "_meta": {"ui": {"resourceUri": "ui://get-time/app.html"}}})).unwrap();
//! let page = AppPage { uri: "ui://get-time/app.html".into(), html: "<p>hi".into(), ui: None };
//! let mut bridge = AppBridge::new(&tool, &page, &[tool.clone()], AppHostOptions::default());
//! bridge.tool_result(json!({"content": [{"type": "text", "text": "12:00"}]}));
//! bridge.receive(&json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
//!     "params": {"protocolVersion": "2026-01-26", "appInfo": {"name": "v", "version": "1"},
//!                "appCapabilities": {}}}));
//! assert_eq!(bridge.take_messages().len(), 1); // the answer; the result waits
//! let ready = bridge.receive(&json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}));
//! assert!(matches!(ready, Some(AppEvent::Ready)));
//! assert_eq!(bridge.take_messages()[0]["method"], "ui/notifications/tool-result");
//! let call = bridge.receive(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
//!     "params": {"name": "get-time", "arguments": {}}}));
//! let Some(AppEvent::CallTool { id, name, .. }) = call else { panic!() };
//! assert_eq!(name, "get-time");
//! bridge.answer(id, Ok(json!({"content": []})));
//! assert_eq!(bridge.take_messages()[0]["id"], 2);
//! ```

mod requests;
mod sandbox;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use crate::client::AppPage;
use crate::protocol::{ResourceUi, Tool};

pub(crate) use sandbox::AppSandbox;
pub use sandbox::{APP_SANDBOX_PROXY_HTML, VIEW_SANDBOX};

/// The revision of the Apps protocol this bridge speaks.
pub const APPS_PROTOCOL_VERSION: &str = "2026-01-26";

/// The most requests a View may have waiting on the host; one more is refused.
pub const APP_MAX_PENDING: usize = 64;

/// The most notifications held for a View that is not initialized yet, beside its tool's
/// input and result (older ones are dropped).
const MAX_HELD: usize = 32;

/// The most messages waiting for the host to take them; past it, what the bridge would answer
/// by itself (pings, listings, refusals) is dropped: a View that floods the host gets no more
/// answers until the host catches up.
const MAX_OUTBOX: usize = 1024;

/// What a View asks of the host (already checked; see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum AppEvent {
    /// The View is initialized; what was held for it is in [`AppBridge::take_messages`].
    Ready,
    /// Call `name` on the App's server (a tool whose visibility names `"app"`) and answer with
    /// the `CallToolResult` (or an error).
    CallTool {
        /// The request to answer.
        id: u64,
        /// The tool's name on its server.
        name: String,
        /// Its arguments (an object).
        arguments: Value,
    },
    /// Read `uri` from the App's server and answer with the `ReadResourceResult`.
    ReadResource {
        /// The request to answer.
        id: u64,
        /// The resource.
        uri: String,
    },
    /// Open an `http`/`https` link in the user's browser (answer `{}`, or `{"isError": true}`
    /// when the host would not).
    OpenLink {
        /// The request to answer.
        id: u64,
        /// The URL.
        url: String,
    },
    /// A message for the conversation, as the user's (`ui/message`).
    Message {
        /// The request to answer.
        id: u64,
        /// `"user"`.
        role: String,
        /// Content blocks.
        content: Vec<Value>,
    },
    /// Context for the model's next turn, replacing what the View said before
    /// (`ui/update-model-context`).
    UpdateModelContext {
        /// The request to answer.
        id: u64,
        /// Content blocks.
        content: Vec<Value>,
        /// Structured context.
        structured_content: Option<Value>,
    },
    /// Files to download (`ui/download-file`: embedded resources or resource links).
    DownloadFile {
        /// The request to answer.
        id: u64,
        /// What to download.
        contents: Vec<Value>,
    },
    /// The View's content changed size (in CSS pixels).
    SizeChanged {
        /// Its width, when it says.
        width: Option<f64>,
        /// Its height, when it says.
        height: Option<f64>,
    },
    /// A log message (`notifications/message`).
    Log {
        /// Its level (`info`, `error`, ...).
        level: String,
        /// Its logger, when named.
        logger: Option<String>,
        /// What it says.
        data: Value,
    },
    /// The View asks to be closed; [`AppBridge::teardown`] asks it to clean up first.
    RequestTeardown,
    /// The View answered `ui/resource-teardown`: the host may remove it now.
    TornDown,
    /// The View gave up a request (`notifications/cancelled`); its answer, if any, is dropped.
    Cancelled {
        /// The request given up.
        id: u64,
    },
    /// The View now shows in this display mode (it asked, and the host offers the mode).
    DisplayMode(String),
}

/// What the host offers a View.
#[derive(Debug, Clone, PartialEq)]
pub struct AppHostOptions {
    /// The host's name and version, as the View is told.
    pub host_name: String,
    /// See `host_name`.
    pub host_version: String,
    /// Whether it opens links (`ui/open-link`).
    pub open_links: bool,
    /// Whether it takes messages for the conversation (`ui/message`).
    pub accept_messages: bool,
    /// Whether it takes context for the model (`ui/update-model-context`).
    pub accept_model_context: bool,
    /// Whether it downloads files (`ui/download-file`).
    pub accept_downloads: bool,
    /// The display modes it offers (`inline`, `fullscreen`, `pip`).
    pub display_modes: Vec<String>,
    /// Browser permissions it grants when a page asks (`camera`, `microphone`, `geolocation`,
    /// `clipboardWrite`).
    pub permissions: Vec<String>,
    /// More of the host's context (`theme`, `locale`, `timeZone`, `platform`, `styles`, ...),
    /// merged into what `ui/initialize` answers.
    pub context: Map<String, Value>,
}

impl Default for AppHostOptions {
    fn default() -> Self {
        AppHostOptions {
            host_name: env!("CARGO_PKG_NAME").to_owned(),
            host_version: env!("CARGO_PKG_VERSION").to_owned(),
            open_links: false,
            accept_messages: false,
            accept_model_context: false,
            accept_downloads: false,
            display_modes: vec!["inline".to_owned()],
            permissions: Vec::new(),
            context: Map::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Waiting for `ui/initialize`.
    New,
    /// Answered it; waiting for `ui/notifications/initialized`.
    Initializing,
    Ready,
    /// `ui/resource-teardown` sent.
    TearingDown,
}

/// The host's side of one View (see the module docs).
pub struct AppBridge {
    options: AppHostOptions,
    tool: Tool,
    /// The server's tools by name: whether an App may call each.
    server_tools: HashMap<String, bool>,
    app_tools: Vec<Tool>,
    ui: Option<ResourceUi>,
    html: String,
    phase: Phase,
    display_mode: String,
    app_modes: Option<Vec<String>>,
    held_input: Option<Value>,
    held_result: Option<Value>,
    /// The last input and result sent, for a View that initializes again (it reloaded).
    last_input: Option<Value>,
    last_result: Option<Value>,
    held: Vec<Value>,
    outbox: Vec<Value>,
    /// The View's requests waiting for the host: by the number the host is given, the id the
    /// View sent.
    pending: BTreeMap<u64, Value>,
    /// The number of the next request handed to the host.
    next_request: u64,
    next_id: u64,
    teardown_id: Option<u64>,
}

impl AppBridge {
    /// A bridge for `tool`'s View, whose page is `page`, on a server whose tools are
    /// `server_tools`.
    pub fn new(
        tool: &Tool,
        page: &AppPage,
        server_tools: &[Tool],
        options: AppHostOptions,
    ) -> AppBridge {
        let display_mode = options
            .display_modes
            .first()
            .cloned()
            .unwrap_or_else(|| "inline".to_owned());
        let mut bridge = AppBridge {
            options,
            tool: tool.clone(),
            server_tools: HashMap::new(),
            app_tools: Vec::new(),
            ui: page.ui.clone(),
            html: page.html.clone(),
            phase: Phase::New,
            display_mode,
            app_modes: None,
            held_input: None,
            held_result: None,
            last_input: None,
            last_result: None,
            held: Vec::new(),
            outbox: Vec::new(),
            pending: BTreeMap::new(),
            next_request: 1,
            next_id: 1,
            teardown_id: None,
        };
        bridge.set_server_tools(server_tools);
        bridge
    }

    /// The server's tools changed (`list_changed`): what the View may call follows.
    pub fn set_server_tools(&mut self, tools: &[Tool]) {
        self.server_tools = tools
            .iter()
            .map(|t| (t.name.clone(), t.visible_to_app()))
            .collect();
        self.app_tools = tools
            .iter()
            .filter(|t| t.visible_to_app())
            .cloned()
            .collect();
    }

    /// The View's `Content-Security-Policy` (for the header of the page that frames it; the
    /// sandbox proxy's page carries it in a `<meta>` already): `default-src 'none'` and what
    /// the App's resource declared, plain origins only.
    pub fn csp(&self) -> String {
        sandbox::content_security_policy(self.ui.as_ref())
    }

    /// The View's frame's `allow` attribute: the browser permissions both asked for and
    /// granted (`camera`, `microphone`, `geolocation`, `clipboard-write`), `;`-separated
    /// (empty: none). Its `sandbox` attribute is [`VIEW_SANDBOX`].
    pub fn frame_allow(&self) -> String {
        let granted = sandbox::granted_permissions(self.ui.as_ref(), &self.options.permissions);
        sandbox::allow_attribute(&granted)
    }

    /// How to frame the View: its policy, attributes and page (see [`AppSandbox`]).
    pub(crate) fn sandbox(&self) -> AppSandbox {
        let csp = sandbox::content_security_policy(self.ui.as_ref());
        let granted = sandbox::granted_permissions(self.ui.as_ref(), &self.options.permissions);
        AppSandbox {
            html: sandbox::with_policy(&self.html, &csp),
            csp,
            frame_sandbox: VIEW_SANDBOX,
            frame_allow: sandbox::allow_attribute(&granted),
        }
    }

    /// Whether the View said it is initialized (and not torn down).
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// The messages to post to the frame, in order, since the last call.
    pub fn take_messages(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.outbox)
    }

    /// The tool's arguments, complete (`ui/notifications/tool-input`); held until the View is
    /// initialized (a later input replaces a held one).
    pub fn tool_input(&mut self, arguments: Value) {
        let message = notification(
            "ui/notifications/tool-input",
            json!({"arguments": arguments}),
        );
        self.last_input = Some(message.clone());
        if self.phase == Phase::Ready {
            self.outbox.push(message);
        } else {
            self.held_input = Some(message);
        }
    }

    /// Arguments still being written by the model (`ui/notifications/tool-input-partial`);
    /// dropped while the View is not initialized.
    pub fn tool_input_partial(&mut self, arguments: Value) {
        if self.phase == Phase::Ready {
            self.outbox.push(notification(
                "ui/notifications/tool-input-partial",
                json!({"arguments": arguments}),
            ));
        }
    }

    /// The tool's result (a `CallToolResult`, `ui/notifications/tool-result`); held until the
    /// View is initialized.
    pub fn tool_result(&mut self, result: Value) {
        let message = notification("ui/notifications/tool-result", result);
        self.last_result = Some(message.clone());
        if self.phase == Phase::Ready {
            self.outbox.push(message);
        } else {
            self.held_result = Some(message);
        }
    }

    /// The tool's call was cancelled (`ui/notifications/tool-cancelled`).
    pub fn tool_cancelled(&mut self, reason: Option<&str>) {
        let params = match reason {
            Some(r) => json!({"reason": r}),
            None => json!({}),
        };
        self.send_or_hold(notification("ui/notifications/tool-cancelled", params));
    }

    /// Some of the host's context changed (`ui/notifications/host-context-changed`: theme,
    /// size, ...).
    pub fn context_changed(&mut self, changed: Map<String, Value>) {
        for (k, v) in &changed {
            self.options.context.insert(k.clone(), v.clone());
        }
        self.send_or_hold(notification(
            "ui/notifications/host-context-changed",
            Value::Object(changed),
        ));
    }

    /// Asks the View to clean up (`ui/resource-teardown`); [`AppEvent::TornDown`] follows
    /// its answer. A View that is not initialized has nothing to clean up: `false`, and the
    /// host removes it at once.
    pub fn teardown(&mut self) -> bool {
        if self.phase != Phase::Ready {
            return false;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.teardown_id = Some(id);
        self.phase = Phase::TearingDown;
        self.outbox.push(json!({"jsonrpc": "2.0", "id": id,
                                "method": "ui/resource-teardown", "params": {}}));
        true
    }

    /// Answers a View's request: `Ok(result)`, or `Err(message)` (a JSON-RPC error; the
    /// message is shown to the App, so it must hold no secret). An answer to a request that
    /// is not waiting (answered, cancelled) is dropped.
    pub fn answer(&mut self, id: u64, outcome: Result<Value, String>) {
        let Some(id) = self.pending.remove(&id) else {
            return;
        };
        self.outbox.push(match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(message) => error(&id, -32603, &message),
        });
    }

    fn send_or_hold(&mut self, message: Value) {
        if self.phase == Phase::Ready {
            self.outbox.push(message);
        } else {
            if self.held.len() >= MAX_HELD {
                self.held.remove(0);
            }
            self.held.push(message);
        }
    }

    /// Queues a message the bridge answers by itself, unless the host is [`MAX_OUTBOX`]
    /// behind.
    fn reply(&mut self, message: Value) {
        if self.outbox.len() < MAX_OUTBOX {
            self.outbox.push(message);
        }
    }

    /// The View initializes again (it reloaded): what it was shown is shown again once it is.
    fn restart(&mut self) {
        self.phase = Phase::Initializing;
        self.pending.clear();
        self.held_input = self.last_input.clone();
        self.held_result = self.last_result.clone();
    }

    fn become_ready(&mut self) {
        self.phase = Phase::Ready;
        self.outbox.extend(self.held_input.take());
        self.outbox.extend(self.held_result.take());
        self.outbox.append(&mut self.held);
    }
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}
