//! The minimal MCP server the benchmarks talk to: `initialize`, `tools/list` (`--tools N`
//! definitions with realistic input schemas, default 20) and `tools/call` `echo`. It also
//! answers `tools/call` `blob` with `{"bytes": N}`: one text block of N bytes (`x`s, made once
//! per size and kept, so a large result costs the server a write, not a build). `blob` is not
//! listed, so a listing's size is set by `--tools` alone.
//!
//! With `BENCH_SERVER_SILENT=1` in its environment (stdio) it reads and never answers, and
//! exits when its stdin closes: the server of a cached second start whose live connection must
//! not finish while the cached tools are measured (see `perf_bench --mode cache`).
//!
//! `--list-blob` lists `blob` too (after the `--tools` definitions: a manager's tools are the
//! listed ones, see `perf_bench --mode render`). `--extensions` declares the Apps, Skills and
//! tasks extensions in its capabilities (handshake era), so a client declaring them agrees on
//! them (see `perf_bench --extensions`).
//!
//! `--stateless` speaks 2026-07-28 instead: `server/discover`, `resultType` and `ttlMs` on
//! every result, and `initialize` refused with `-32022`.
//!
//! `bench_server [--tools N]` speaks stdio. `bench_server --http [--tools N]` serves Streamable
//! HTTP with `application/json` replies on 127.0.0.1 (a free port) and prints its URL as the
//! first line of stdout.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

fn main() {
    let mut tools = 20usize;
    let mut http = false;
    let mut stateless = false;
    let mut list_blob = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tools" => tools = args.next().and_then(|v| v.parse().ok()).unwrap_or(tools),
            "--http" => http = true,
            "--stateless" => stateless = true,
            "--list-blob" => list_blob = true,
            "--extensions" => EXTENSIONS.store(true, std::sync::atomic::Ordering::Relaxed),
            other => {
                eprintln!("bench_server: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let mut defs = tool_list(tools);
    if list_blob {
        defs.push(json!({
            "name": "blob",
            "description": "Returns `bytes` bytes of text.",
            "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}
        }));
    }
    let list = if stateless {
        json!({ "tools": defs, "resultType": "complete", "ttlMs": 60000, "cacheScope": "public" })
    } else {
        json!({ "tools": defs })
    };
    let list = Arc::new(list.to_string());
    STATELESS.store(stateless, std::sync::atomic::Ordering::Relaxed);
    if http {
        serve_http(list);
    } else if std::env::var("BENCH_SERVER_SILENT").as_deref() == Ok("1") {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    } else {
        serve_stdio(&list);
    }
}

/// Tool definitions shaped like real ones: descriptions, typed properties, enums, nesting.
fn tool_list(n: usize) -> Vec<Value> {
    let mut tools = vec![json!({
        "name": "echo",
        "description": "Echoes the message back.",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string", "description": "What to echo"}},
                        "required": ["message"]},
        "annotations": {"readOnlyHint": true}
    })];
    for i in 1..n {
        tools.push(json!({
            "name": format!("tool_{i}"),
            "description": format!("Tool number {i}: searches, filters and reports over the workspace, with paging."),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for"},
                    "path": {"type": "string", "description": "Where to look, relative to the root"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
                    "mode": {"type": "string", "enum": ["fast", "thorough", "exact"]},
                    "filters": {"type": "object", "properties": {
                        "include": {"type": "array", "items": {"type": "string"}},
                        "exclude": {"type": "array", "items": {"type": "string"}}
                    }}
                },
                "required": ["query"]
            }
        }));
    }
    tools
}

/// Whether the server speaks 2026-07-28.
static STATELESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Declare the Apps, Skills and tasks extensions (`--extensions`).
static EXTENSIONS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A reply, in parts: a large `blob` text is written from where it is kept, not copied.
struct Reply(Vec<Part>);

enum Part {
    Owned(String),
    Shared(Arc<str>),
}

impl Reply {
    fn len(&self) -> usize {
        self.0
            .iter()
            .map(|p| match p {
                Part::Owned(s) => s.len(),
                Part::Shared(s) => s.len(),
            })
            .sum()
    }

    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        for p in &self.0 {
            out.write_all(match p {
                Part::Owned(s) => s.as_bytes(),
                Part::Shared(s) => s.as_bytes(),
            })?;
        }
        Ok(())
    }
}

impl From<String> for Reply {
    fn from(s: String) -> Reply {
        Reply(vec![Part::Owned(s)])
    }
}

/// The `blob` texts made so far, by length.
static BLOBS: Mutex<Option<HashMap<usize, Arc<str>>>> = Mutex::new(None);

/// The reply to `tools/call` `blob`: `bytes` bytes of text.
fn blob_reply(id: &str, bytes: usize, stateless: bool) -> Reply {
    let text = Arc::clone(
        BLOBS
            .lock()
            .unwrap()
            .get_or_insert_with(HashMap::new)
            .entry(bytes)
            .or_insert_with(|| "x".repeat(bytes).into()),
    );
    let kind = if stateless {
        r#""resultType":"complete","#
    } else {
        ""
    };
    Reply(vec![
        Part::Owned(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{{kind}"content":[{{"type":"text","text":""#
        )),
        Part::Shared(text),
        Part::Owned(r#""}]}}"#.to_owned()),
    ])
}

/// The reply to one message, or None for a notification.
fn answer(line: &[u8], list: &str) -> Option<Reply> {
    let msg: Value = serde_json::from_slice(line).ok()?;
    let id = msg.get("id")?.to_string();
    let stateless = STATELESS.load(std::sync::atomic::Ordering::Relaxed);
    if msg["method"] == "tools/call" && msg["params"]["name"] == "blob" {
        let bytes = msg["params"]["arguments"]["bytes"].as_u64().unwrap_or(0);
        return Some(blob_reply(&id, bytes as usize, stateless));
    }
    if stateless {
        return Some(stateless_answer(&msg, &id, list).into());
    }
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25"),
            "capabilities": capabilities(),
            "serverInfo": {"name": "bench-server", "version": "1"}
        })
        .to_string(),
        "tools/list" => list.to_owned(),
        "tools/call" => {
            let text = msg["params"]["arguments"]["message"].clone();
            json!({"content": [{"type": "text", "text": text}]}).to_string()
        }
        "ping" => "{}".to_owned(),
        other => {
            return Some(format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32601,\"message\":\"Method not found: {other}\"}}}}"
            ).into())
        }
    };
    Some(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}").into())
}

/// The handshake's capabilities: tools, and the extensions with `--extensions`.
fn capabilities() -> Value {
    if !EXTENSIONS.load(std::sync::atomic::Ordering::Relaxed) {
        return json!({"tools": {}});
    }
    json!({"tools": {}, "extensions": {
        "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
        "io.modelcontextprotocol/skills": {},
        "io.modelcontextprotocol/tasks": {}
    }})
}

/// The 2026-07-28 reply to a request.
fn stateless_answer(msg: &Value, id: &str, list: &str) -> String {
    let result = match msg["method"].as_str().unwrap_or("") {
        "server/discover" => json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 60000, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench-server", "version": "1"}}
        })
        .to_string(),
        "tools/list" => list.to_owned(),
        "tools/call" => {
            let text = msg["params"]["arguments"]["message"].clone();
            json!({"resultType": "complete", "content": [{"type": "text", "text": text}]}).to_string()
        }
        other => {
            let code = if other == "initialize" { -32022 } else { -32601 };
            return format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{code},\"message\":\"not served: {other}\",\"data\":{{\"supported\":[\"2026-07-28\"]}}}}}}"
            );
        }
    };
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}")
}

fn serve_stdio(list: &str) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Some(reply) = answer(&line, list) {
            let _ = reply.write_to(&mut out);
            let _ = out.write_all(b"\n");
            let _ = out.flush();
        }
    }
}

fn serve_http(list: Arc<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("http://{}/mcp", listener.local_addr().expect("address"));
    let _ = std::io::stdout().flush();
    for conn in listener.incoming().flatten() {
        let list = Arc::clone(&list);
        std::thread::spawn(move || serve_connection(conn, &list));
    }
}

fn serve_connection(conn: TcpStream, list: &str) {
    let _ = conn.set_nodelay(true);
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut out = conn;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let method = line.split_whitespace().next().unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let h = line.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let written = match (method.as_str(), answer(&body, list)) {
            ("POST", Some(reply)) if reply.len() < 64 * 1024 => {
                // Head and body in one write, as before: no partial segment on the wire.
                let mut response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    reply.len()
                )
                .into_bytes();
                let _ = reply.write_to(&mut response);
                out.write_all(&response)
            }
            ("POST", Some(reply)) => out
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        reply.len()
                    )
                    .as_bytes(),
                )
                .and_then(|()| reply.write_to(&mut out)),
            ("POST", None) => out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"),
            _ => out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"),
        };
        if written.is_err() {
            return;
        }
    }
}
