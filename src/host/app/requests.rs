//! What a View sends, taken apart: its requests answered here or handed to the host, its
//! notifications turned into [`AppEvent`]s, its answers to the host's requests.

use serde_json::{json, Map, Value};

use super::{
    error, notification, sandbox, AppBridge, AppEvent, Phase, APPS_PROTOCOL_VERSION,
    APP_MAX_PENDING,
};

const METHOD_NOT_FOUND: i64 = -32601;
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
const INVALID_PARAMS: i64 = -32602;
const INVALID_REQUEST: i64 = -32600;

impl AppBridge {
    /// Takes one message the frame posted. Answers go to [`AppBridge::take_messages`]; what
    /// the host must act on is returned. Anything malformed is refused (a request) or
    /// dropped (anything else), and changes nothing.
    pub fn receive(&mut self, message: &Value) -> Option<AppEvent> {
        let object = message.as_object()?;
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return None;
        }
        let method = object.get("method").and_then(Value::as_str);
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        match (object.get("id"), method) {
            (Some(id), Some(method)) => {
                if !(id.is_string() || id.is_i64() || id.is_u64()) {
                    return None;
                }
                self.request(id, method, params)
            }
            (None, Some(method)) => self.notified(method, params),
            (Some(id), None) => self.answered(id),
            (None, None) => None,
        }
    }

    fn request(&mut self, id: &Value, method: &str, params: Value) -> Option<AppEvent> {
        let refuse = |bridge: &mut AppBridge, code: i64, message: &str| {
            bridge.reply(error(id, code, message));
            None
        };
        if self.phase == Phase::TearingDown {
            return refuse(self, INVALID_REQUEST, "the View is being torn down");
        }
        if self.pending.values().any(|waiting| waiting == id) {
            return refuse(self, INVALID_REQUEST, "a request with this id is in flight");
        }
        match method {
            "ui/initialize" => {
                if self.phase != Phase::New {
                    self.restart();
                }
                self.initialize(id, &params);
                return None;
            }
            "ping" => {
                self.reply(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
                return None;
            }
            "tools/list" => {
                let tools = json!({"tools": self.app_tools});
                self.reply(json!({"jsonrpc": "2.0", "id": id, "result": tools}));
                return None;
            }
            "ui/request-display-mode" => {
                let asked = params.get("mode").and_then(Value::as_str).unwrap_or("");
                let changed = self.display_mode_for(asked);
                self.reply(
                    json!({"jsonrpc": "2.0", "id": id, "result": {"mode": self.display_mode}}),
                );
                if let Some(mode) = &changed {
                    let mut context = Map::new();
                    context.insert("displayMode".into(), json!(mode));
                    self.context_changed(context);
                }
                return changed.map(AppEvent::DisplayMode);
            }
            _ => {}
        }
        if self.phase == Phase::New {
            return refuse(self, INVALID_REQUEST, "ui/initialize comes first");
        }
        if self.pending.len() >= APP_MAX_PENDING {
            return refuse(self, INVALID_REQUEST, "too many requests in flight");
        }
        let request_id = self.next_request;
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
        let list = |key: &str| {
            params
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let request = match method {
            "tools/call" => {
                let Some(name) = text("name") else {
                    return refuse(self, INVALID_PARAMS, "tools/call needs a name");
                };
                match self.server_tools.get(&name) {
                    Some(true) => {}
                    Some(false) => {
                        return refuse(self, INVALID_PARAMS, "that tool is not for Apps to call")
                    }
                    None => return refuse(self, INVALID_PARAMS, "no such tool on this server"),
                }
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => json!({}),
                    Some(args @ Value::Object(_)) => args.clone(),
                    Some(_) => return refuse(self, INVALID_PARAMS, "arguments are an object"),
                };
                AppEvent::CallTool {
                    id: request_id,
                    name,
                    arguments,
                }
            }
            "resources/read" => match text("uri") {
                Some(uri) => AppEvent::ReadResource {
                    id: request_id,
                    uri,
                },
                None => return refuse(self, INVALID_PARAMS, "resources/read needs a uri"),
            },
            "ui/open-link" if self.options.open_links => match text("url") {
                Some(url) if is_web_link(&url) => AppEvent::OpenLink {
                    id: request_id,
                    url,
                },
                _ => {
                    // Not a web link: refused as the extension says, with isError.
                    self.reply(json!({"jsonrpc": "2.0", "id": id, "result": {"isError": true}}));
                    return None;
                }
            },
            "ui/message" if self.options.accept_messages => match text("role").as_deref() {
                Some("user") => AppEvent::Message {
                    id: request_id,
                    role: "user".to_owned(),
                    content: list("content"),
                },
                _ => return refuse(self, INVALID_PARAMS, "a message's role is \"user\""),
            },
            "ui/update-model-context" if self.options.accept_model_context => {
                AppEvent::UpdateModelContext {
                    id: request_id,
                    content: list("content"),
                    structured_content: params.get("structuredContent").cloned(),
                }
            }
            "ui/download-file" if self.options.accept_downloads => AppEvent::DownloadFile {
                id: request_id,
                contents: list("contents"),
            },
            _ => return refuse(self, METHOD_NOT_FOUND, "method not found"),
        };
        self.next_request += 1;
        self.pending.insert(request_id, id.clone());
        Some(request)
    }

    fn initialize(&mut self, id: &Value, params: &Value) {
        self.app_modes = params
            .pointer("/appCapabilities/availableDisplayModes")
            .and_then(Value::as_array)
            .map(|modes| {
                modes
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            });
        if self.phase == Phase::New {
            self.phase = Phase::Initializing;
        }
        let o = &self.options;
        let mut caps = Map::new();
        caps.insert("serverTools".into(), json!({}));
        caps.insert("serverResources".into(), json!({}));
        caps.insert("logging".into(), json!({}));
        if o.open_links {
            caps.insert("openLinks".into(), json!({}));
        }
        if o.accept_downloads {
            caps.insert("downloadFile".into(), json!({}));
        }
        if o.accept_messages {
            caps.insert("message".into(), json!({"text": {}}));
        }
        if o.accept_model_context {
            caps.insert(
                "updateModelContext".into(),
                json!({"text": {}, "structuredContent": {}}),
            );
        }
        let csp = self
            .ui
            .as_ref()
            .and_then(|u| u.csp.as_ref())
            .map(sandbox::allowed_origins)
            .unwrap_or_default();
        let granted = sandbox::granted_permissions(self.ui.as_ref(), &o.permissions);
        caps.insert(
            "sandbox".into(),
            json!({"csp": csp, "permissions": granted}),
        );
        let mut context = o.context.clone();
        context.insert("toolInfo".into(), json!({"tool": self.tool}));
        context.insert("displayMode".into(), json!(self.display_mode));
        context.insert("availableDisplayModes".into(), json!(o.display_modes));
        context
            .entry("userAgent")
            .or_insert_with(|| json!(format!("{}/{}", o.host_name, o.host_version)));
        self.reply(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": APPS_PROTOCOL_VERSION,
            "hostInfo": {"name": o.host_name, "version": o.host_version},
            "hostCapabilities": caps,
            "hostContext": context,
        }}));
    }

    /// The mode the View shows in after asking for `asked`: it, when the host offers it and
    /// the View declared it (or declared nothing); `Some` when that is a change.
    fn display_mode_for(&mut self, asked: &str) -> Option<String> {
        let offered = self.options.display_modes.iter().any(|m| m == asked);
        let declared = self
            .app_modes
            .as_ref()
            .is_none_or(|modes| modes.iter().any(|m| m == asked));
        if !offered || !declared || asked == self.display_mode {
            return None;
        }
        self.display_mode = asked.to_owned();
        Some(self.display_mode.clone())
    }

    fn notified(&mut self, method: &str, params: Value) -> Option<AppEvent> {
        match method {
            "ui/notifications/initialized" if self.phase == Phase::Initializing => {
                self.become_ready();
                Some(AppEvent::Ready)
            }
            "ui/notifications/sandbox-proxy-ready" => {
                let page = self.sandbox();
                let granted =
                    sandbox::granted_permissions(self.ui.as_ref(), &self.options.permissions);
                let csp = self
                    .ui
                    .as_ref()
                    .and_then(|u| u.csp.as_ref())
                    .map(sandbox::allowed_origins);
                let mut params = json!({"html": page.html, "sandbox": page.frame_sandbox,
                                        "permissions": granted, "allow": page.frame_allow});
                if let Some(csp) = csp {
                    params["csp"] = json!(csp);
                }
                self.outbox.push(notification(
                    "ui/notifications/sandbox-resource-ready",
                    params,
                ));
                None
            }
            "ui/notifications/size-changed" => Some(AppEvent::SizeChanged {
                width: params.get("width").and_then(Value::as_f64),
                height: params.get("height").and_then(Value::as_f64),
            }),
            "notifications/message" => Some(AppEvent::Log {
                // One of the eight syslog levels MCP names; anything else is `info`.
                level: params
                    .get("level")
                    .and_then(Value::as_str)
                    .filter(|l| LEVELS.contains(l))
                    .unwrap_or("info")
                    .to_owned(),
                logger: params
                    .get("logger")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                data: params.get("data").cloned().unwrap_or(Value::Null),
            }),
            "ui/notifications/request-teardown" => Some(AppEvent::RequestTeardown),
            "notifications/cancelled" => {
                let id = params.get("requestId")?;
                let number =
                    (self.pending.iter()).find_map(|(n, waiting)| (waiting == id).then_some(*n))?;
                self.pending.remove(&number);
                Some(AppEvent::Cancelled { id: number })
            }
            _ => None,
        }
    }

    fn answered(&mut self, id: &Value) -> Option<AppEvent> {
        if self.teardown_id.is_some() && id.as_u64() == self.teardown_id {
            self.teardown_id = None;
            return Some(AppEvent::TornDown);
        }
        None
    }
}

/// Whether `url` is a link a host may open: `http` or `https`, nothing else (`javascript:`,
/// `file:`, `data:` and custom schemes are refused).
fn is_web_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://"))
        && !url.chars().any(|c| c.is_control() || c.is_whitespace())
}
