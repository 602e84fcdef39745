//! A stdio MCP server with switchable misbehaviour, for the integration tests.
//!
//! Flags (all optional):
//!   --tools N            N generated tools `tool_0..` besides the built-in ones
//!   --page-size P        page `tools/list` by P tools
//!   --repeat-cursor      every page answers the same `nextCursor` (a broken server)
//!   --banner             print non-JSON-RPC lines (banners, blank, BOM, CR, arrays) around replies
//!   --stderr-flood BYTES write BYTES of stderr before answering `initialize`
//!   --string-ids         answer with the request id as a string
//!   --silent-initialize  never answer `initialize`
//!   --exit-on-initialize CODE   write to stderr and exit with CODE on `initialize`
//!   --protocol VERSION   answer `initialize` with VERSION
//!   --no-tools-capability       declare no `tools` capability
//!   --grandchild         start a grandchild process (same process group) at startup
//!   --ignore-stdin-eof   keep running after stdin closes
//!   --ignore-sigterm     ignore SIGTERM
//!   --tag T              ignored; lets a test find its processes by command line
//!   --hold-port P        before answering --hold-method (default initialize), connect to
//!                        127.0.0.1:P and wait for one byte: the test decides when it answers
//!                        (a held method other than initialize waits on its own thread)
//!   --typed-tool         also list `typed`, a tool with an outputSchema
//!   --features           resources (2 pages), a template, prompts, completions (see features.rs);
//!                        the tool `features_changed` adds a prompt and says so
//!   --sleep              (internal) the grandchild: sleep forever
//!   --filesystem LOG     play a filesystem server: list only `echo` and `write_file`
//!                        (destructiveHint: true), which asks `roots/list`, writes the file
//!                        `path` in the first root, and appends the full path to LOG
//!
//! Tools: echo, add, slow, hang, wrong_id, crash, huge, progress, log, list_changed, ask, client_info,
//! cancelled, rich, pid, grandchild_pid, stderr; with --typed-tool, typed (an outputSchema, and
//! its `structured` argument as structuredContent); with --features, features_changed; and,
//! unlisted, stop_reading, close_stdin (closes its stdin, then answers, and lives on),
//! close_stdin_later (answers, stops reading, closes its stdin `ms` later and lives on),
//! close_stdout (closes its stdout, never answers, lives on), bad_utf8 (answers with invalid
//! UTF-8 in a string), deep (answers with a result nested `depth` deep), unsolicited_errors
//! (sends `count` error responses with id `id`, default null, then answers).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

mod features;

#[derive(Default)]
struct Flags {
    tools: usize,
    page_size: Option<usize>,
    repeat_cursor: bool,
    banner: bool,
    stderr_flood: usize,
    string_ids: bool,
    silent_initialize: bool,
    exit_on_initialize: Option<i32>,
    protocol: Option<String>,
    no_tools_capability: bool,
    grandchild: bool,
    ignore_stdin_eof: bool,
    ignore_sigterm: bool,
    tag: Option<String>,
    hold_port: Option<u16>,
    hold_method: Option<String>,
    typed_tool: bool,
    features: bool,
    filesystem: Option<String>,
}

struct Server {
    flags: Flags,
    out: Mutex<std::io::Stdout>,
    initialize_params: Mutex<Value>,
    cancelled: Mutex<Vec<Value>>,
    asks: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    extra_tool: std::sync::atomic::AtomicBool,
    extra_prompt: std::sync::atomic::AtomicBool,
    stop_reading: std::sync::atomic::AtomicBool,
    close_stdin: Mutex<Option<Value>>,
    close_stdin_later: Mutex<Option<u64>>,
    next_ask: AtomicU64,
    grandchild_pid: Mutex<Option<u32>>,
}

fn main() {
    let mut flags = Flags::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = || {
            args.next()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
        };
        match a.as_str() {
            "--tools" => flags.tools = num(),
            "--page-size" => flags.page_size = Some(num()),
            "--repeat-cursor" => flags.repeat_cursor = true,
            "--banner" => flags.banner = true,
            "--stderr-flood" => flags.stderr_flood = num(),
            "--string-ids" => flags.string_ids = true,
            "--silent-initialize" => flags.silent_initialize = true,
            "--exit-on-initialize" => flags.exit_on_initialize = Some(num() as i32),
            "--protocol" => flags.protocol = args.next(),
            "--no-tools-capability" => flags.no_tools_capability = true,
            "--grandchild" => flags.grandchild = true,
            "--ignore-stdin-eof" => flags.ignore_stdin_eof = true,
            "--ignore-sigterm" => flags.ignore_sigterm = true,
            "--tag" => flags.tag = args.next(),
            "--hold-port" => flags.hold_port = Some(num() as u16),
            "--hold-method" => flags.hold_method = args.next(),
            "--typed-tool" => flags.typed_tool = true,
            "--features" => flags.features = true,
            "--sleep" => sleep_forever(),
            "--filesystem" => flags.filesystem = args.next(),
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    if flags.ignore_sigterm {
        // SAFETY: setting a signal disposition to SIG_IGN at startup, before any thread exists.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    let server = Arc::new(Server {
        flags,
        out: Mutex::new(std::io::stdout()),
        initialize_params: Mutex::new(Value::Null),
        cancelled: Mutex::new(Vec::new()),
        asks: Mutex::new(HashMap::new()),
        extra_tool: std::sync::atomic::AtomicBool::new(false),
        extra_prompt: std::sync::atomic::AtomicBool::new(false),
        stop_reading: std::sync::atomic::AtomicBool::new(false),
        close_stdin: Mutex::new(None),
        close_stdin_later: Mutex::new(None),
        next_ask: AtomicU64::new(1),
        grandchild_pid: Mutex::new(None),
    });
    if server.flags.grandchild {
        // Deliberately never waited for: it plays a server's helper process that outlives it.
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        if let Some(tag) = &server.flags.tag {
            cmd.args(["--tag", tag]);
        }
        #[allow(clippy::zombie_processes)]
        let child = cmd
            .arg("--sleep")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn grandchild");
        *server.grandchild_pid.lock().unwrap() = Some(child.id());
    }
    eprintln!("test server starting (pid {})", std::process::id());
    if server.flags.banner {
        server.raw("Test server v1.0 starting on stdio...");
    }
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("unparsable input: {line}");
            continue;
        };
        server.handle(msg);
        let later = server.close_stdin_later.lock().unwrap().take();
        if let Some(ms) = later {
            std::thread::sleep(Duration::from_millis(ms));
            eprintln!("closing stdin");
            // SAFETY: closing our own stdin; nothing reads it any more.
            unsafe { libc::close(0) };
            sleep_forever();
        }
        let close_stdin = server.close_stdin.lock().unwrap().take();
        if let Some(id) = close_stdin {
            eprintln!("closing stdin");
            // SAFETY: closing our own stdin; nothing reads it any more.
            unsafe { libc::close(0) };
            // Answered once it is closed: whatever the client sends next meets a closed pipe.
            server.text(&id, "stdin closed");
            sleep_forever();
        }
        if server.stop_reading.load(Ordering::SeqCst) {
            eprintln!("no longer reading stdin");
            sleep_forever();
        }
    }
    // Not eprintln!: with the host gone, stderr may be a broken pipe, and a panic would end a
    // server that is meant to linger.
    let _ = writeln!(std::io::stderr(), "stdin closed");
    if server.flags.ignore_stdin_eof {
        sleep_forever();
    }
}

fn sleep_forever() -> ! {
    loop {
        std::thread::park();
    }
}

impl Server {
    fn raw(&self, line: &str) {
        let mut out = self.out.lock().unwrap();
        let _ = out.write_all(line.as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }

    fn send(&self, msg: Value) {
        let text = msg.to_string();
        if self.flags.banner {
            let mut out = self.out.lock().unwrap();
            let noise = "\n   \n\u{feff}[server] processing\r\n[1,2,3]\n{\"hello\":\"world\"}\n";
            let _ = out.write_all(noise.as_bytes());
            // The message itself with a BOM and a CR, as sloppy servers send it.
            let _ = out.write_all(format!("\u{feff}{text}\r\n").as_bytes());
            let _ = out.flush();
        } else {
            self.raw(&text);
        }
    }

    fn reply_id(&self, id: &Value) -> Value {
        if self.flags.string_ids {
            Value::String(match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        } else {
            id.clone()
        }
    }

    fn result(&self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": self.reply_id(id), "result": result}));
    }

    fn error(&self, id: &Value, code: i64, message: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": self.reply_id(id), "error": {"code": code, "message": message}}));
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn handle(self: &Arc<Self>, msg: Value) {
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").cloned();
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        match (method, id) {
            // A held method other than `initialize` waits on a thread of its own, so the
            // requests after it are answered meanwhile.
            (Some(method), Some(id))
                if method != "initialize" && self.flags.hold_method.as_deref() == Some(&method) =>
            {
                let server = Arc::clone(self);
                std::thread::spawn(move || server.request(&method, id, params));
            }
            (Some(method), Some(id)) => self.request(&method, id, params),
            (Some(method), None) => {
                if method == "notifications/cancelled" {
                    self.cancelled
                        .lock()
                        .unwrap()
                        .push(params["requestId"].clone());
                }
            }
            (None, Some(id)) => {
                // A response to one of our `ask` requests.
                let key = match &id {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if let Some(tx) = self.asks.lock().unwrap().remove(&key) {
                    let _ = tx.send(msg);
                }
            }
            (None, None) => eprintln!("ignoring a message without method or id"),
        }
    }

    /// Blocks until the test releases the held method (one byte on a loopback connection).
    fn hold(&self, method: &str) {
        let held = self.flags.hold_method.as_deref().unwrap_or("initialize");
        let Some(port) = self.flags.hold_port.filter(|_| held == method) else {
            return;
        };
        use std::io::Read;
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut stream) => {
                let mut byte = [0u8; 1];
                let _ = stream.read_exact(&mut byte);
            }
            Err(e) => eprintln!("hold: cannot reach the test: {e}"),
        }
    }

    fn request(self: &Arc<Self>, method: &str, id: Value, params: Value) {
        self.hold(method);
        match method {
            "initialize" => {
                if self.flags.stderr_flood > 0 {
                    let mut err = std::io::stderr().lock();
                    let line = "x".repeat(99);
                    let mut written = 0;
                    while written < self.flags.stderr_flood {
                        let _ = writeln!(err, "{line}");
                        written += 100;
                    }
                    let _ = writeln!(err, "flood done");
                }
                if let Some(code) = self.flags.exit_on_initialize {
                    eprintln!("fatal: cannot initialize (exiting with {code})");
                    std::process::exit(code);
                }
                if self.flags.silent_initialize {
                    eprintln!("ignoring initialize");
                    return;
                }
                *self.initialize_params.lock().unwrap() = params.clone();
                let version = self.flags.protocol.clone().unwrap_or_else(|| {
                    params["protocolVersion"]
                        .as_str()
                        .unwrap_or("2025-11-25")
                        .to_owned()
                });
                let mut caps = json!({"logging": {}});
                if self.flags.features {
                    features::capabilities(&mut caps);
                }
                if !self.flags.no_tools_capability {
                    caps["tools"] = json!({"listChanged": true});
                }
                self.result(
                    &id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": caps,
                        "serverInfo": {"name": "mcp-test-server", "version": "1.0.0"},
                        "instructions": "Use echo to test."
                    }),
                );
            }
            "ping" => self.result(&id, json!({})),
            "tools/list" => self.list_tools(&id, &params),
            "tools/call" => {
                // Decided here, on the reading thread, so nothing after it is read.
                if params["name"] == "stop_reading" {
                    self.stop_reading.store(true, Ordering::SeqCst);
                }
                if params["name"] == "close_stdin_later" {
                    let ms = params["arguments"]["ms"].as_u64().unwrap_or(500);
                    self.text(&id, "closing stdin later");
                    *self.close_stdin_later.lock().unwrap() = Some(ms);
                    return;
                }
                if params["name"] == "close_stdin" {
                    // The reading loop closes stdin, then answers.
                    *self.close_stdin.lock().unwrap() = Some(id);
                    return;
                }
                let server = Arc::clone(self);
                std::thread::spawn(move || server.call_tool(&id, &params));
            }
            _ if self.flags.features && features::answer(self, method, &id, &params) => {}
            _ => self.error(&id, -32601, &format!("Method not found: {method}")),
        }
    }

    fn all_tools(&self) -> Vec<Value> {
        let object = |props: Value| json!({"type": "object", "properties": props});
        if self.flags.filesystem.is_some() {
            return vec![
                json!({"name": "echo", "description": "Echoes the message", "inputSchema": object(json!({"message": {"type": "string"}})),
                       "annotations": {"readOnlyHint": true}}),
                json!({"name": "write_file", "description": "Writes a file in the first root", "inputSchema": object(json!({"path": {"type": "string"}})),
                       "annotations": {"readOnlyHint": false, "destructiveHint": true}}),
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

    fn list_tools(&self, id: &Value, params: &Value) {
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

    fn text(&self, id: &Value, text: impl Into<String>) {
        self.result(
            id,
            json!({"content": [{"type": "text", "text": text.into()}]}),
        );
    }

    fn call_tool(&self, id: &Value, params: &Value) {
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let name = params["name"].as_str().unwrap_or("");
        match name {
            "echo" => self.text(id, args["message"].as_str().unwrap_or("")),
            "later" => {
                // Answers now, then acts on its own: what a server sends between calls.
                self.text(id, "ok");
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(50)));
                if args["what"] == "crash" {
                    std::process::exit(3);
                }
                self.extra_tool.store(true, Ordering::SeqCst);
                self.notify("notifications/tools/list_changed", json!({}));
            }
            "add" => {
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                self.text(id, sum.to_string());
            }
            "slow" => {
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(1000)));
                self.text(id, "done");
            }
            "stop_reading" => {
                self.stop_reading.store(true, Ordering::SeqCst);
                self.text(id, "not reading any more");
            }
            "hang" => {
                // With a progress token, say "started" first, so a test knows the call arrived.
                if let Some(t) = params.pointer("/_meta/progressToken") {
                    self.notify("notifications/progress", json!({"progressToken": t, "progress": 0}));
                }
            }
            "wrong_id" => self.text(&json!(999_999), "for nobody"),
            "close_stdout" => {
                let _out = self.out.lock().unwrap();
                eprintln!("closing stdout");
                // SAFETY: closing our own stdout, under its lock: nothing writes it any more.
                unsafe { libc::close(1) };
                std::mem::forget(_out);
            }
            "bad_utf8" => {
                let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"").into_bytes();
                line.extend_from_slice(b"\xff\xfe\"}]}}\n");
                let mut out = self.out.lock().unwrap();
                let _ = out.write_all(&line);
                let _ = out.flush();
            }
            "deep" => {
                let depth = args["depth"].as_u64().unwrap_or(200) as usize;
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[],\"x\":{}1{}}}}}",
                    "[".repeat(depth),
                    "]".repeat(depth)
                );
                self.raw(&line);
            }
            "unsolicited_errors" => {
                let count = args["count"].as_u64().unwrap_or(1);
                let bad = args.get("id").cloned().unwrap_or(Value::Null);
                for i in 0..count {
                    self.send(json!({"jsonrpc": "2.0", "id": bad, "error": {"code": -32600, "message": format!("invalid request {i}")}}));
                }
                self.text(id, "sent");
            }
            "crash" => {
                eprintln!("about to crash");
                std::process::exit(3);
            }
            "huge" => {
                let bytes = args["bytes"].as_u64().unwrap_or(1 << 20) as usize;
                let mut out = self.out.lock().unwrap();
                let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"");
                let _ = out.write_all(head.as_bytes());
                let chunk = vec![b'a'; 1 << 20];
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if out.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    left -= n;
                }
                let _ = out.write_all(b"\"}]}}\n");
                let _ = out.flush();
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
            "write_file" => self.write_file(id, &args),
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
