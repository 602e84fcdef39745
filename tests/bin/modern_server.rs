//! A stdio MCP server of the 2026-07-28 (stateless) revision, for the era tests.
//!
//! Flags:
//!   --mode M       modern (default): stateless only, `initialize` is refused with -32022;
//!                  dual: stateless, and the `initialize` handshake too;
//!                  legacy-exit: handshake only, and exits (as rmcp servers do) on any request
//!                  before `initialize`;
//!                  legacy-silent: handshake only, never answers a request before `initialize`
//!   --versions V   comma-separated stateless versions it speaks (default 2026-07-28); a request
//!                  with another version gets -32022 listing these and `2025-11-25` in dual mode
//!   --log PATH     append one line per process start (`start`) and per request (its method)
//!   --ttl MS       the `ttlMs` of `tools/list` (default 60000)
//!   --tasks        also list the tasks extension's tools (`modern_tasks.rs`)
//!   --slow-start   answer the first request only once the next one came (a server slow to
//!                  start: its answer to the probe arrives after the probe gave up)
//!   --hold-stdout P  start a process that keeps this server's stdout open until the test at
//!                  127.0.0.1:P releases it (the end of its output reaches the client late)
//!
//! Tools: echo (`message` back), meta (the request's `_meta` as structuredContent), ask (an
//! `elicitation/create` round, then what was answered), state (one round with only
//! `requestState`, checked on the retry), forever (input_required every round), bogus (an
//! unknown resultType), needs_roots (-32021 unless `roots` was declared), change (sends
//! `tools/list_changed` for a subscription that is not the client's, then for its own, then
//! `notifications/done`).
//!
//! `subscriptions/listen` is acknowledged and held open (its id is the subscription id).

use std::io::{BufRead, Write};

use serde_json::{json, Value};

mod modern_tasks;

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

struct Server {
    mode: String,
    versions: Vec<String>,
    log: Option<String>,
    ttl: u64,
    initialized: bool,
    out: std::io::Stdout,
    /// The id of the open `subscriptions/listen`.
    listen: Option<Value>,
    /// `--tasks`: the tasks extension's tools and methods.
    tasks: Option<modern_tasks::Tasks>,
    /// The capabilities `initialize` declared (the handshake).
    handshake_caps: Value,
}

/// `--stdout-holder PORT`: keeps the server's stdout open (it inherited it) until the test at
/// PORT releases it (or goes), in a process group of its own so the server's teardown does not
/// end it: the client's reader sees the end of the server's output only then.
fn hold_stdout(port: &str) {
    use std::io::Read;
    if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port.parse().unwrap_or(0))) {
        let _ = s.read(&mut [0u8]);
    }
}

// The holder is meant to outlive this server (it ends when the test releases it or goes, and
// is reaped by whoever inherits it).
#[allow(clippy::zombie_processes)]
fn spawn_stdout_holder(port: &str) {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().expect("own path");
    std::process::Command::new(exe)
        .args(["--stdout-holder", port])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start the stdout holder");
}

fn main() {
    let mut args = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("--stdout-holder") {
        return hold_stdout(&std::env::args().nth(2).unwrap_or_default());
    }
    let mut server = Server {
        mode: "modern".into(),
        versions: vec!["2026-07-28".into()],
        log: None,
        ttl: 60_000,
        initialized: false,
        out: std::io::stdout(),
        listen: None,
        tasks: None,
        handshake_caps: Value::Null,
    };
    let mut slow_start = false;
    while let Some(flag) = args.next() {
        if flag == "--tasks" {
            server.tasks = Some(modern_tasks::Tasks::default());
            continue;
        }
        if flag == "--slow-start" {
            slow_start = true;
            continue;
        }
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--mode" => server.mode = value,
            "--versions" => server.versions = value.split(',').map(str::to_owned).collect(),
            "--log" => server.log = Some(value),
            "--ttl" => server.ttl = value.parse().unwrap_or(60_000),
            "--hold-stdout" => spawn_stdout_holder(&value),
            _ => {}
        }
    }
    server.record("start");
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut early = Vec::new();
    if slow_start {
        // The first request waits for the second, then both are handled in order.
        early.extend(lines.next());
        early.extend(lines.next());
    }
    for line in early.into_iter().chain(lines) {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            continue;
        };
        let method = method.to_owned();
        server.record(&method);
        let Some(id) = msg.get("id").cloned() else {
            continue;
        };
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        server.handle(id, &method, &params);
    }
}

impl Server {
    fn record(&self, line: &str) {
        if let Some(path) = &self.log {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            writeln!(f, "{line}").unwrap();
        }
    }

    fn send(&mut self, value: Value) {
        let mut out = self.out.lock();
        writeln!(out, "{value}").unwrap();
        out.flush().unwrap();
    }

    fn result(&mut self, id: Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&mut self, id: Value, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({"code": code, "message": message});
        if let Some(data) = data {
            error["data"] = data;
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }

    /// Answers a tasks extension's request (`--tasks`): whether it was one.
    fn tasks_answer(&mut self, id: &Value, method: &str, params: &Value, caps: &Value) -> bool {
        let Some(tasks) = self.tasks.as_mut() else {
            return false;
        };
        let declared = caps["extensions"].get(modern_tasks::TASKS).is_some();
        let reply = match method {
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or("");
                if !modern_tasks::TOOLS.contains(&name) {
                    return false;
                }
                tasks.call(name, declared)
            }
            _ => match tasks.handle(method, params) {
                Some(reply) => reply,
                None => return false,
            },
        };
        self.reply(id.clone(), reply);
        true
    }

    fn reply(&mut self, id: Value, reply: modern_tasks::Reply) {
        match reply {
            modern_tasks::Reply::Result(result) => self.result(id, result),
            modern_tasks::Reply::Error(code, message, data) => self.error(id, code, &message, data),
        }
    }

    fn stateless(&self) -> bool {
        self.mode == "modern" || self.mode == "dual"
    }

    fn supported(&self) -> Vec<String> {
        let mut all = self.versions.clone();
        if self.mode == "dual" {
            all.push("2025-11-25".into());
        }
        all
    }

    fn handle(&mut self, id: Value, method: &str, params: &Value) {
        if method == "initialize" {
            if self.mode == "modern" {
                let data =
                    json!({"supported": self.supported(), "requested": params["protocolVersion"]});
                return self.error(id, -32022, "Unsupported protocol version", Some(data));
            }
            self.initialized = true;
            self.handshake_caps = params["capabilities"].clone();
            let mut caps = json!({"tools": {}});
            if self.tasks.is_some() {
                caps["extensions"] = json!({modern_tasks::TASKS: {}});
            }
            return self.result(
                id,
                json!({"protocolVersion": "2025-11-25", "capabilities": caps,
                       "serverInfo": {"name": "modern-test-server", "version": "1"}}),
            );
        }
        if !self.stateless() && !self.initialized {
            match self.mode.as_str() {
                "legacy-exit" => {
                    eprintln!("request before initialize: exiting");
                    std::process::exit(1);
                }
                _ => return,
            }
        }
        if self.initialized {
            return self.legacy(id, method, params);
        }
        let meta = &params["_meta"];
        let Some(version) = meta.get(PV).and_then(Value::as_str) else {
            return self.error(id, -32602, "missing _meta protocolVersion", None);
        };
        if meta.get(CAPS).is_none() {
            return self.error(id, -32602, "missing _meta clientCapabilities", None);
        }
        if !self.versions.iter().any(|v| v == version) {
            let data = json!({"supported": self.supported(), "requested": version});
            return self.error(id, -32022, "Unsupported protocol version", Some(data));
        }
        match method {
            "server/discover" => {
                let mut result = json!({"resultType": "complete", "supportedVersions": self.supported(),
                    "capabilities": {"tools": {"listChanged": true}, "logging": {}}, "instructions": "Stateless.",
                    "ttlMs": 60000, "cacheScope": "public",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-test-server", "version": "2"}}});
                if self.tasks.is_some() {
                    result["capabilities"]["extensions"] = json!({modern_tasks::TASKS: {}});
                }
                self.result(id, result)
            }
            "tools/list" => {
                let tools = [
                    "echo",
                    "meta",
                    "ask",
                    "state",
                    "forever",
                    "bogus",
                    "needs_roots",
                ]
                .iter()
                .chain(
                    self.tasks
                        .as_ref()
                        .map_or(&[][..], |_| &modern_tasks::TOOLS[..]),
                )
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect::<Vec<_>>();
                self.result(
                    id,
                    json!({"resultType": "complete", "tools": tools, "ttlMs": self.ttl, "cacheScope": "public"}),
                )
            }
            "tools/call" | "tasks/get" | "tasks/update" | "tasks/cancel"
                if self.tasks_answer(&id, method, params, &params["_meta"][CAPS]) => {}
            "tools/call" => self.call(id, params),
            "subscriptions/listen" => {
                let granted =
                    json!({"toolsListChanged": params["notifications"]["toolsListChanged"]});
                self.send(
                    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": granted,
                               "_meta": {"io.modelcontextprotocol/subscriptionId": id}}}),
                );
                self.listen = Some(id);
            }
            _ => self.error(id, -32601, &format!("Method not found: {method}"), None),
        }
    }

    fn changed(&mut self) {
        let listen = self.listen.clone().unwrap_or(Value::Null);
        let note = |sub: Value| {
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                   "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": sub}}})
        };
        self.send(note(json!(987_654)));
        self.send(note(listen));
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/done"}));
    }

    fn legacy(&mut self, id: Value, method: &str, params: &Value) {
        let caps = self.handshake_caps.clone();
        if self.tasks_answer(&id, method, params, &caps) {
            return;
        }
        match method {
            "tools/list" => self.result(
                id,
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
            ),
            "tools/call" => {
                let text = params["arguments"]["message"].clone();
                self.result(id, json!({"content": [{"type": "text", "text": text}]}))
            }
            "ping" => self.result(id, json!({})),
            _ => self.error(id, -32601, &format!("Method not found: {method}"), None),
        }
    }

    fn call(&mut self, id: Value, params: &Value) {
        let name = params["name"].as_str().unwrap_or("");
        let args = &params["arguments"];
        let text =
            |t: &str| json!({"resultType": "complete", "content": [{"type": "text", "text": t}]});
        match name {
            "echo" => self.result(id, text(args["message"].as_str().unwrap_or(""))),
            "meta" => {
                let mut r = text("meta");
                r["structuredContent"] = params["_meta"].clone();
                self.result(id, r)
            }
            "ask" => match params.get("inputResponses") {
                None => self.result(
                    id,
                    json!({"resultType": "input_required", "requestState": "s1",
                           "inputRequests": {"who": {"method": "elicitation/create",
                               "params": {"message": "Who?", "requestedSchema": {"type": "object"}}}}}),
                ),
                Some(answers) => {
                    let state = params["requestState"].as_str().unwrap_or("none");
                    let said = answers["who"]["content"]["name"].as_str().unwrap_or("?");
                    let action = answers["who"]["action"].as_str().unwrap_or("?");
                    self.result(id, text(&format!("{action} {said} state={state}")))
                }
            },
            "state" => match params.get("requestState").and_then(Value::as_str) {
                None => self.result(
                    id,
                    json!({"resultType": "input_required", "requestState": "opaque-42"}),
                ),
                Some(s) => self.result(id, text(&format!("state {s}"))),
            },
            "forever" => self.result(
                id,
                json!({"resultType": "input_required", "requestState": "again"}),
            ),
            "change" => {
                self.changed();
                self.result(id, text("changed"))
            }
            "bogus" => self.result(id, json!({"resultType": "mystery", "content": []})),
            "needs_roots" => {
                if params["_meta"][CAPS].get("roots").is_some() {
                    self.result(id, text("roots ok"))
                } else {
                    let data = json!({"requiredCapabilities": {"roots": {}}});
                    self.error(id, -32021, "Missing required client capability", Some(data))
                }
            }
            _ => self.result(
                id,
                json!({"resultType": "complete", "isError": true,
                       "content": [{"type": "text", "text": format!("Unknown tool: {name}")}]}),
            ),
        }
    }
}
