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
//!   --text-tool          also list `text`: `bytes` bytes of numbered lines, some characters
//!                        of several bytes
//!   --app                also list `show_clock` (a UI, `ui://clock/app.html`) and
//!                        `clock_tick` (visible to its App only)
//!   --attempt JSON       (no server) make one attempt of hostile.rs's and exit: 0 when it
//!                        succeeded, 1 when it was refused
//!   --hostile-start      make the attempts `$HOSTILE_START` lists before anything else (see
//!                        hostile.rs)
//!   --catalogue FILE     list only the tools of FILE (`{"tools": [...]}`, a captured
//!                        catalogue); a call to one answers `called NAME with ARGUMENTS`
//!
//! Tools: echo, add, slow, hang, wrong_id, crash, huge, progress, log, list_changed, ask, client_info,
//! cancelled, rich, pid, grandchild_pid, stderr; with --typed-tool, typed (an outputSchema, and
//! its `structured` argument as structuredContent); with --features, features_changed; and,
//! unlisted, stop_reading, close_stdin (closes its stdin, then answers, and lives on),
//! close_stdin_later (answers, stops reading, closes its stdin `ms` later and lives on),
//! close_stdout (closes its stdout, never answers, lives on), bad_utf8 (answers with invalid
//! UTF-8 in a string), deep (answers with a result nested `depth` deep), unsolicited_errors
//! (sends `count` error responses with id `id`, default null, then answers), attempt and
//! start_attempts (what a hostile server tries: hostile.rs).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use flags::Flags;

mod features;
mod flags;
mod hostile;
mod misbehaviour;
mod tools;

struct Server {
    flags: Flags,
    out: Mutex<std::io::Stdout>,
    initialize_params: Mutex<Value>,
    cancelled: Mutex<Vec<Value>>,
    asks: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    extra_tool: std::sync::atomic::AtomicBool,
    /// How many times an App's page was read.
    app_reads: AtomicU64,
    extra_prompt: std::sync::atomic::AtomicBool,
    stop_reading: std::sync::atomic::AtomicBool,
    close_stdin: Mutex<Option<Value>>,
    close_stdin_later: Mutex<Option<u64>>,
    next_ask: AtomicU64,
    grandchild_pid: Mutex<Option<u32>>,
    start_attempts: Vec<String>,
}

fn main() {
    let flags = Flags::parse();
    if flags.ignore_sigterm {
        // SAFETY: setting a signal disposition to SIG_IGN at startup, before any thread exists.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    let server = Arc::new(Server {
        out: Mutex::new(std::io::stdout()),
        initialize_params: Mutex::new(Value::Null),
        cancelled: Mutex::new(Vec::new()),
        asks: Mutex::new(HashMap::new()),
        extra_tool: std::sync::atomic::AtomicBool::new(false),
        app_reads: AtomicU64::new(0),
        extra_prompt: std::sync::atomic::AtomicBool::new(false),
        stop_reading: std::sync::atomic::AtomicBool::new(false),
        close_stdin: Mutex::new(None),
        close_stdin_later: Mutex::new(None),
        next_ask: AtomicU64::new(1),
        grandchild_pid: Mutex::new(None),
        start_attempts: match flags.hostile_start {
            true => hostile::at_start(),
            false => Vec::new(),
        },
        flags,
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
        // In the sandbox (a test run with MCP_TEST_SANDBOX=1), the test is reached through the
        // sandbox's proxy, which allows 127.0.0.1 there.
        let stream: std::io::Result<Box<dyn Read>> = match std::env::var("HTTPS_PROXY") {
            Ok(_) => hostile::tunnel(&format!("127.0.0.1:{port}"))
                .map(|(reader, _)| Box::new(reader) as Box<dyn Read>),
            Err(_) => std::net::TcpStream::connect(("127.0.0.1", port))
                .map(|s| Box::new(s) as Box<dyn Read>),
        };
        match stream {
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
                if self.flags.app {
                    caps["resources"] = json!({});
                    caps["extensions"] = json!({"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}});
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
            "resources/read" if self.flags.app => {
                // The App's page, and pages that fail an App's checks.
                let uri = params["uri"].as_str().unwrap_or("");
                let (mime, text) = match uri {
                    "ui://clock/app.html" => (
                        "text/html;profile=mcp-app",
                        "<!doctype html><p>clock</p>".to_owned(),
                    ),
                    "ui://clock/plain.html" => ("text/html", "<p>not an App</p>".to_owned()),
                    "ui://clock/huge.html" => {
                        ("text/html;profile=mcp-app", "x".repeat((8 << 20) + 1))
                    }
                    _ => return self.error(&id, -32002, &format!("Resource not found: {uri}")),
                };
                let reads = self.app_reads.fetch_add(1, Ordering::SeqCst) + 1;
                self.result(&id, json!({"contents": [{"uri": uri, "mimeType": mime, "text": text,
                    "_meta": {"ui": {"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": true, "reads": reads}}}]}));
            }
            _ if self.flags.features && features::answer(self, method, &id, &params) => {}
            _ => self.error(&id, -32601, &format!("Method not found: {method}")),
        }
    }

    fn text(&self, id: &Value, text: impl Into<String>) {
        self.result(
            id,
            json!({"content": [{"type": "text", "text": text.into()}]}),
        );
    }
}
