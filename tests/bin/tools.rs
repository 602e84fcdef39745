//! The test server's tool catalogue (`tools/list`, paged) and its well-behaved tools, including
//! those that send requests to the client (`ask`, `write_file`).

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::Server;

impl Server {
    fn all_tools(&self) -> Vec<Value> {
        let object = |props: Value| json!({"type": "object", "properties": props});
        if let Some(file) = &self.flags.catalogue {
            let text = std::fs::read_to_string(file).expect("the catalogue file");
            let catalogue: Value = serde_json::from_str(&text).expect("a catalogue");
            return catalogue["tools"].as_array().cloned().unwrap_or_default();
        }
        if self.flags.filesystem.is_some() {
            return vec![
                json!({"name": "echo", "description": "Echoes the message", "inputSchema": object(json!({"message": {"type": "string"}})),
                       "annotations": {"readOnlyHint": true}}),
                json!({"name": "write_file", "description": "Writes a file in the first root", "inputSchema": object(json!({"path": {"type": "string"}})),
                       "annotations": {"readOnlyHint": false, "destructiveHint": true}}),
                json!({"name": "create_directory", "description": "Creates a directory in the first root (logged as write_file is)", "inputSchema": object(json!({"path": {"type": "string"}})),
                       "annotations": {"readOnlyHint": false}}),
                json!({"name": "typed_union", "description": "Refuses arguments not of their declared types", "inputSchema": object(json!({
                    "verbose": {"type": ["boolean", "string"]},
                    "mode": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "nested": {"type": "object", "properties": {"n": {"type": ["null", "number"]}}}}))}),
            ];
        }
        let mut tools = vec![
            json!({"name": "echo", "description": "Echoes the message", "inputSchema": object(json!({"message": {"type": "string"}})),
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "add", "description": "Adds a and b", "inputSchema": object(json!({"a": {"type": "number"}, "b": {"type": "number"}}))}),
            json!({"name": "slow", "description": "Answers after ms milliseconds", "inputSchema": object(json!({"ms": {"type": "integer"}}))}),
            json!({"name": "hang", "description": "Never answers (after one progress notification, given a token)", "inputSchema": object(json!({}))}),
            json!({"name": "wrong_id", "description": "Answers with the wrong id", "inputSchema": object(json!({}))}),
            json!({"name": "crash", "description": "Exits in the middle of the call", "inputSchema": object(json!({}))}),
            json!({"name": "huge", "description": "Answers with a line of `bytes` bytes", "inputSchema": object(json!({"bytes": {"type": "integer"}}))}),
            json!({"name": "progress", "description": "Sends progress", "inputSchema": object(json!({"steps": {"type": "integer"}, "interval_ms": {"type": "integer"}}))}),
            json!({"name": "log", "description": "Sends a log message", "inputSchema": object(json!({"level": {"type": "string"}, "message": {"type": "string"}}))}),
            json!({"name": "list_changed", "description": "Sends tools/list_changed", "inputSchema": object(json!({}))}),
            json!({"name": "ask", "description": "Sends a request to the client", "inputSchema": object(json!({"method": {"type": "string"}, "params": {"type": "object"}}))}),
            json!({"name": "client_info", "description": "What the client sent in initialize", "inputSchema": object(json!({}))}),
            json!({"name": "cancelled", "description": "Request ids the client cancelled", "inputSchema": object(json!({}))}),
            json!({"name": "rich", "description": "Every content type", "inputSchema": object(json!({})),
                   "outputSchema": {"type": "object"}, "_meta": {"x": 1}}),
            json!({"name": "pid", "description": "The server's pid", "inputSchema": object(json!({}))}),
            json!({"name": "grandchild_pid", "description": "The grandchild's pid", "inputSchema": object(json!({}))}),
            json!({"name": "stderr", "description": "Writes lines to stderr", "inputSchema": object(json!({"lines": {"type": "integer"}}))}),
        ];
        if self.flags.hostile_start {
            tools.push(json!({"name": "attempt", "description": "Attempts what a hostile server would (see hostile.rs)", "inputSchema": object(json!({}))}));
            tools.push(json!({"name": "start_attempts", "description": "What the attempts at start gave", "inputSchema": object(json!({}))}));
        }
        if self.flags.app {
            // An MCP App: a tool with a UI, and a tool only its App may call.
            tools.push(json!({"name": "show_clock", "description": "Shows a clock", "inputSchema": object(json!({})),
                              "_meta": {"ui": {"resourceUri": "ui://clock/app.html"}}}));
            tools.push(json!({"name": "clock_tick", "description": "Advances the clock (for its App only)", "inputSchema": object(json!({})),
                              "_meta": {"ui": {"resourceUri": "ui://clock/app.html", "visibility": ["app"]}}}));
        }
        if self.flags.features {
            tools.push(json!({"name": "features_changed", "description": "Adds a prompt and sends prompts/list_changed", "inputSchema": object(json!({}))}));
        }
        if self.flags.text_tool {
            tools.push(json!({"name": "text", "description": "Answers with `bytes` bytes of text: numbered lines of words, some of several bytes", "inputSchema": object(json!({"bytes": {"type": "integer"}}))}));
        }
        if self.flags.typed_tool {
            tools.push(json!({"name": "typed", "description": "Returns its `structured` argument as structuredContent (none if absent)",
                   "inputSchema": object(json!({})),
                   "outputSchema": {"type": "object", "required": ["t"], "properties": {"t": {"type": "number"}}}}));
        }
        if self.extra_tool.load(Ordering::SeqCst) {
            tools.push(json!({"name": "late_tool", "description": "Appears after list_changed", "inputSchema": object(json!({}))}));
        }
        for i in 0..self.flags.tools {
            tools.push(
                json!({"name": format!("tool_{i}"), "description": format!("Generated tool {i}"),
                              "inputSchema": object(json!({"n": {"type": "integer"}}))}),
            );
        }
        tools
    }

    pub(crate) fn list_tools(&self, id: &Value, params: &Value) {
        let tools = self.all_tools();
        let Some(size) = self.flags.page_size.filter(|s| *s > 0) else {
            return self.result(id, json!({"tools": tools}));
        };
        let start: usize = match params.get("cursor").and_then(Value::as_str) {
            None => 0,
            Some(c) => match c.strip_prefix("page-").and_then(|n| n.parse().ok()) {
                Some(n) => n,
                None => return self.error(id, -32602, "invalid cursor"),
            },
        };
        let end = (start + size).min(tools.len());
        let mut result = json!({"tools": tools[start.min(end)..end]});
        if self.flags.repeat_cursor {
            result["nextCursor"] = json!(format!("page-{size}"));
        } else if end < tools.len() {
            result["nextCursor"] = json!(format!("page-{end}"));
        }
        self.result(id, result);
    }

    pub(crate) fn call_tool(&self, id: &Value, params: &Value) {
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let name = params["name"].as_str().unwrap_or("");
        if self.flags.catalogue.is_some() {
            return self.text(id, format!("called {name} with {args}"));
        }
        if self.misbehave(id, name, &args, params) {
            return;
        }
        match name {
            "echo" => self.text(id, args["message"].as_str().unwrap_or("")),
            "add" => {
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                self.text(id, sum.to_string());
            }
            "slow" => {
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(1000)));
                self.text(id, "done");
            }
            "progress" => {
                let steps = args["steps"].as_u64().unwrap_or(3);
                let token = params.pointer("/_meta/progressToken").cloned();
                let interval = Duration::from_millis(args["interval_ms"].as_u64().unwrap_or(0));
                for i in 1..=steps {
                    std::thread::sleep(interval);
                    if let Some(t) = &token {
                        self.notify("notifications/progress", json!({"progressToken": t, "progress": i, "total": steps, "message": format!("step {i}")}));
                    }
                }
                self.text(id, format!("{} steps", steps));
            }
            "log" => {
                self.notify("notifications/message", json!({"level": args["level"].as_str().unwrap_or("info"), "logger": "test", "data": args["message"]}));
                self.text(id, "logged");
            }
            "features_changed" => {
                self.extra_prompt.store(true, Ordering::SeqCst);
                self.notify("notifications/prompts/list_changed", json!({}));
                self.text(id, "sent");
            }
            "list_changed" => {
                self.extra_tool.store(true, Ordering::SeqCst);
                // `count`: a flood of them, followed by `notifications/test/marker`.
                let count = args["count"].as_u64();
                for _ in 0..count.unwrap_or(1) {
                    self.notify("notifications/tools/list_changed", json!({}));
                }
                if count.is_some() {
                    self.notify("notifications/test/marker", json!({}));
                }
                self.text(id, "sent");
            }
            "ask" => self.ask(id, &args),
            "write_file" | "create_directory" => self.write_file(id, &args),
            "typed_union" => {
                let fits = args["verbose"].is_boolean()
                    && args["mode"].is_i64()
                    && args["nested"]["n"].is_number();
                if fits {
                    self.text(id, "ok");
                } else {
                    self.error(id, -32602, &format!("arguments of the wrong types: {args}"));
                }
            }
            "typed" => {
                let mut result = json!({"content": [{"type": "text", "text": "typed"}]});
                if let Some(structured) = args.get("structured") {
                    result["structuredContent"] = structured.clone();
                }
                self.result(id, result);
            }
            "client_info" => {
                let init = self.initialize_params.lock().unwrap().clone();
                self.result(id, json!({"content": [{"type": "text", "text": init.to_string()}], "structuredContent": init}));
            }
            "cancelled" => {
                let ids = self.cancelled.lock().unwrap().clone();
                self.result(id, json!({"content": [{"type": "text", "text": Value::from(ids.clone()).to_string()}], "structuredContent": {"ids": ids}}));
            }
            "rich" => self.result(
                id,
                json!({
                    "content": [
                        {"type": "text", "text": "hello", "annotations": {"audience": ["user"]}},
                        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                        {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain"},
                        {"type": "resource", "resource": {"uri": "file:///tmp/b.txt", "mimeType": "text/plain", "text": "bee"}}
                    ],
                    "structuredContent": {"ok": true, "n": 5},
                    "isError": false,
                    "_meta": {"trace": "abc"}
                }),
            ),
            "pid" => self.text(id, std::process::id().to_string()),
            "attempt" => self.text(id, super::hostile::attempt(&args)),
            "start_attempts" => self.text(id, self.start_attempts.join("\n")),
            // Not listed: the arguments it was started with, as a JSON array (the Windows test
            // of a `.cmd` shim's quoting).
            "argv" => {
                let argv: Vec<String> = std::env::args().skip(1).collect();
                self.text(id, json!(argv).to_string());
            }
            "grandchild_pid" => {
                let pid = *self.grandchild_pid.lock().unwrap();
                self.text(id, pid.map(|p| p.to_string()).unwrap_or_default());
            }
            "stderr" => {
                let lines = args["lines"].as_u64().unwrap_or(1);
                for i in 0..lines {
                    eprintln!("stderr line {i}");
                }
                self.text(id, "written");
            }
            "show_clock" | "clock_tick" => self.text(id, format!("{name} called")),
            "text" => self.text(id, text_of(args["bytes"].as_u64().unwrap_or(1024) as usize)),
            other if other.starts_with("tool_") => self.text(id, format!("{other} called")),
            other => self.result(id, json!({"content": [{"type": "text", "text": format!("Unknown tool: {other}")}], "isError": true})),
        }
    }

    /// What server-filesystem does with a relative path: resolve it in the first root.
    fn write_file(&self, id: &Value, args: &Value) {
        let n = self.next_ask.fetch_add(1, Ordering::SeqCst);
        let ask_id = format!("srv-{n}");
        let (tx, rx) = mpsc::channel();
        self.asks.lock().unwrap().insert(ask_id.clone(), tx);
        self.send(json!({"jsonrpc": "2.0", "id": ask_id, "method": "roots/list"}));
        let root = rx.recv_timeout(Duration::from_secs(20)).ok().and_then(|r| {
            r.pointer("/result/roots/0/uri")?
                .as_str()
                .map(str::to_owned)
        });
        let Some(dir) = root.as_deref().and_then(|u| u.strip_prefix("file://")) else {
            return self.result(
                id,
                json!({"content": [{"type": "text", "text": "no root"}], "isError": true}),
            );
        };
        let path = std::path::Path::new(dir).join(args["path"].as_str().unwrap_or("file"));
        let written = std::fs::write(&path, "written by mcp-test-server");
        if let Some(log) = &self.flags.filesystem {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = writeln!(f, "{}", path.display());
            }
        }
        match written {
            Ok(()) => self.text(id, path.display().to_string()),
            Err(e) => self.result(
                id,
                json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true}),
            ),
        }
    }

    fn ask(&self, id: &Value, args: &Value) {
        let n = self.next_ask.fetch_add(1, Ordering::SeqCst);
        let ask_id = format!("srv-{n}");
        let (tx, rx) = mpsc::channel();
        self.asks.lock().unwrap().insert(ask_id.clone(), tx);
        let method = args["method"].as_str().unwrap_or("ping");
        let mut request = json!({"jsonrpc": "2.0", "id": ask_id, "method": method});
        if let Some(p) = args.get("params") {
            request["params"] = p.clone();
        }
        self.send(request);
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(resp) => {
                let is_error = resp.get("error").is_some();
                let body = resp.get("result").or_else(|| resp.get("error")).cloned().unwrap_or(Value::Null);
                self.result(id, json!({"content": [{"type": "text", "text": body.to_string()}], "structuredContent": {"response": body}, "isError": is_error}));
            }
            Err(_) => self.result(id, json!({"content": [{"type": "text", "text": "no answer from the client"}], "isError": true})),
        }
    }
}

/// `bytes` bytes of text: numbered lines of words, with two- and four-byte characters in them.
fn text_of(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let mut n = 0;
    while out.len() < bytes {
        n += 1;
        out.push_str(&format!(
            "line {n}: ünïcödé words and 😀 more words to read\n"
        ));
    }
    let mut end = bytes;
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    while out.len() < bytes {
        out.push('.');
    }
    out
}
