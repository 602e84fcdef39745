//! A Streamable HTTP server of the 2026-07-28 (stateless) revision, on `std::net`, for the era
//! tests: it listens on `127.0.0.1:0`, POST only at `/mcp` (GET and DELETE get 405), checks
//! every header against the body as the spec asks (a mismatch is `400` with `-32020`), and
//! records what it received.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};

use super::http_request;

/// Which era the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Stateless only: `initialize` gets `400` with `-32022` (the TS SDK's `legacy: 'reject'`).
    Modern,
    /// Stateless, and the handshake (with a session) too.
    Dual,
    /// Handshake only: a stateless request gets `400` with an empty body.
    Legacy,
    /// Handshake only: `server/discover` gets `404` with `-32601`.
    Legacy404,
    /// Handshake only, as `Legacy`, but `initialize` names a version no client speaks (with a
    /// session id): the handshake fails after the server assigned a session.
    LegacyUnknownVersion,
    /// Every POST gets this status (401 with `WWW-Authenticate`, 500, ...).
    Status(u16),
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub fn rpc_method(&self) -> Option<&str> {
        self.body.get("method").and_then(Value::as_str)
    }
}

struct State {
    mode: Mode,
    seen: Mutex<Vec<Seen>>,
    /// Answer the first this many `tools/call`s with `-32020` whatever their headers.
    mismatches: AtomicUsize,
    /// Announce `tools.listChanged`; answer `subscriptions/listen` with an event stream that
    /// acknowledges it and then drops (as a proxy cutting an idle stream does).
    listening: AtomicBool,
    stop: AtomicBool,
}

/// The running server; dropping it stops it.
pub struct ModernHttp {
    state: Arc<State>,
    port: u16,
}

impl ModernHttp {
    pub fn start(mode: Mode) -> ModernHttp {
        ModernHttp::start_with(mode, 0)
    }

    /// A server whose first `mismatches` tool calls are refused with `-32020`.
    pub fn start_with(mode: Mode, mismatches: usize) -> ModernHttp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            mode,
            seen: Mutex::new(Vec::new()),
            mismatches: AtomicUsize::new(mismatches),
            listening: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        http_request::accept_each(
            listener,
            Arc::clone(&state),
            |s| s.stop.load(Ordering::SeqCst),
            serve,
        );
        ModernHttp { state, port }
    }

    /// A stateless server whose listen streams drop after their acknowledgement.
    pub fn start_listening() -> ModernHttp {
        let server = ModernHttp::start(Mode::Modern);
        server.state.listening.store(true, Ordering::SeqCst);
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// The first request with this HTTP method (`DELETE`, ...), waited for.
    pub fn wait_for_method(&self, method: &str) -> Seen {
        let find = || self.seen().into_iter().find(|s| s.method == method);
        super::eventually(
            &format!("a {method} request"),
            std::time::Duration::from_secs(10),
            || find().is_some(),
        );
        find().expect("seen")
    }

    /// The JSON-RPC methods received, in order.
    pub fn methods(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|s| s.rpc_method().unwrap_or(&s.method).to_owned())
            .collect()
    }
}

impl Drop for ModernHttp {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(s: &State, conn: TcpStream) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let Some(request) = http_request::read_request(&mut reader) else {
            return;
        };
        let (method, headers, body) = (request.method, request.headers, request.body);
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let seen = Seen {
            method,
            headers,
            body,
        };
        s.seen.lock().unwrap().push(seen.clone());
        if seen.rpc_method() == Some("subscriptions/listen") && s.listening.load(Ordering::SeqCst) {
            let id = seen.body["id"].clone();
            let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"toolsListChanged": true},
                           "_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(format!("event: message\ndata: {ack}\n\n").as_bytes());
            let _ = out.flush();
            let _ = out.shutdown(std::net::Shutdown::Both);
            return;
        }
        let (status, extra, body) = handle(s, &seen);
        let mut head = format!(
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nContent-Type: application/json\r\n",
            body.len()
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if out.write_all(head.as_bytes()).is_err() || out.write_all(body.as_bytes()).is_err() {
            return;
        }
    }
}

type Reply = (u16, Vec<(&'static str, String)>, String);

fn ok(id: &Value, result: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    (200, Vec::new(), body)
}

fn rpc_error(status: u16, id: &Value, code: i64, message: &str, data: Option<Value>) -> Reply {
    let mut error = json!({"code": code, "message": message});
    if let Some(d) = data {
        error["data"] = d;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string();
    (status, Vec::new(), body)
}

/// A header value as the spec encodes it, decoded.
fn decoded(value: &str) -> String {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(b64) => {
            String::from_utf8(STANDARD.decode(b64).unwrap_or_default()).unwrap_or_default()
        }
        None => value.to_owned(),
    }
}

fn tools() -> Value {
    json!([
        {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
        {"name": "regional", "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object", "$defs": {"r": {"type": "string"}},
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "note": {"type": "string"}},
            "additionalProperties": false}},
        {"name": "bad_header", "inputSchema": {"type": "object", "properties": {
            "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}}
    ])
}

fn handle(s: &State, req: &Seen) -> Reply {
    if req.method != "POST" {
        return (405, Vec::new(), String::new());
    }
    if let Mode::Status(status) = s.mode {
        let extra = if status == 401 {
            vec![("WWW-Authenticate", "Bearer realm=\"t\"".to_owned())]
        } else {
            Vec::new()
        };
        return (status, extra, String::new());
    }
    let body = &req.body;
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let method = req.rpc_method().unwrap_or("");
    if body.get("id").is_none() {
        return (202, Vec::new(), String::new());
    }
    let meta_version = body
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    let stateless = matches!(s.mode, Mode::Modern | Mode::Dual);
    if method == "initialize" || meta_version.is_none() {
        if s.mode == Mode::Modern {
            let data = json!({"supported": ["2026-07-28"], "requested": body.pointer("/params/protocolVersion")});
            return rpc_error(400, &id, -32022, "Unsupported protocol version", Some(data));
        }
        return legacy(&id, method, body, s.mode);
    }
    if !stateless {
        return match s.mode {
            Mode::Legacy404 => rpc_error(404, &id, -32601, "Method not found", None),
            _ => (400, Vec::new(), String::new()),
        };
    }
    let version = meta_version.unwrap_or("");
    if version != "2026-07-28" {
        let data = json!({"supported": ["2026-07-28"], "requested": version});
        return rpc_error(400, &id, -32022, "Unsupported protocol version", Some(data));
    }
    if req.header("mcp-protocol-version") != Some(version) {
        return rpc_error(
            400,
            &id,
            -32020,
            "MCP-Protocol-Version does not match",
            None,
        );
    }
    if req.header("mcp-method") != Some(method) {
        return rpc_error(400, &id, -32020, "Mcp-Method does not match", None);
    }
    let params = &body["params"];
    match method {
        "server/discover" => ok(
            &id,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {"listChanged": s.listening.load(Ordering::SeqCst)}},
                   "ttlMs": 60000, "cacheScope": "public",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-http", "version": "1"}}}),
        ),
        "tools/list" => ok(
            &id,
            json!({"resultType": "complete", "tools": tools(), "ttlMs": 60000, "cacheScope": "public"}),
        ),
        "tools/call" => {
            let name = params["name"].as_str().unwrap_or("");
            if req.header("mcp-name").map(decoded).as_deref() != Some(name) {
                return rpc_error(400, &id, -32020, "Mcp-Name does not match", None);
            }
            if s.mismatches
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return rpc_error(400, &id, -32020, "Mcp-Param-Region does not match", None);
            }
            let args = &params["arguments"];
            if name == "regional" {
                for (arg, header) in [("region", "mcp-param-region"), ("count", "mcp-param-count")]
                {
                    let expected = match &args[arg] {
                        Value::Null => None,
                        Value::String(s) => Some(s.clone()),
                        other => Some(other.to_string()),
                    };
                    if req.header(header).map(decoded) != expected {
                        return rpc_error(
                            400,
                            &id,
                            -32020,
                            &format!("{header} does not match"),
                            None,
                        );
                    }
                }
            }
            let text = args["message"]
                .as_str()
                .or(args["region"].as_str())
                .unwrap_or("")
                .to_owned();
            ok(
                &id,
                json!({"resultType": "complete", "content": [{"type": "text", "text": text}]}),
            )
        }
        _ => rpc_error(404, &id, -32601, "Method not found", None),
    }
}

fn legacy(id: &Value, method: &str, body: &Value, mode: Mode) -> Reply {
    let session = vec![("Mcp-Session-Id", "legacy-1".to_owned())];
    let version = match mode {
        Mode::LegacyUnknownVersion => "1999-01-01",
        _ => "2025-11-25",
    };
    match method {
        "initialize" => {
            let (_, _, b) = ok(
                id,
                json!({"protocolVersion": version, "capabilities": {"tools": {}},
                       "serverInfo": {"name": "legacy-http", "version": "1"}}),
            );
            (200, session, b)
        }
        "tools/list" => ok(
            id,
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        ),
        "tools/call" => {
            let text = body
                .pointer("/params/arguments/message")
                .cloned()
                .unwrap_or(json!(""));
            ok(id, json!({"content": [{"type": "text", "text": text}]}))
        }
        _ => rpc_error(200, id, -32601, "Method not found", None),
    }
}
