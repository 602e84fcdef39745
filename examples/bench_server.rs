//! The minimal MCP server the benchmarks talk to: `initialize`, `tools/list` (`--tools N`
//! definitions with realistic input schemas) and `tools/call` `echo`.
//!
//! `--stateless` speaks 2026-07-28 instead: `server/discover`, `resultType` and `ttlMs` on
//! every result, and `initialize` refused with `-32022`.
//!
//! `bench_server [--tools N]` speaks stdio. `bench_server --http [--tools N]` serves Streamable
//! HTTP with `application/json` replies on 127.0.0.1 (a free port) and prints its URL as the
//! first line of stdout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use serde_json::{json, Value};

fn main() {
    let mut tools = 20usize;
    let mut http = false;
    let mut stateless = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tools" => tools = args.next().and_then(|v| v.parse().ok()).unwrap_or(tools),
            "--http" => http = true,
            "--stateless" => stateless = true,
            other => {
                eprintln!("bench_server: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let list = if stateless {
        json!({ "tools": tool_list(tools), "resultType": "complete", "ttlMs": 60000, "cacheScope": "public" })
    } else {
        json!({ "tools": tool_list(tools) })
    };
    let list = Arc::new(list.to_string());
    STATELESS.store(stateless, std::sync::atomic::Ordering::Relaxed);
    if http {
        serve_http(list);
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

/// The reply to one message, or None for a notification.
fn answer(line: &[u8], list: &str) -> Option<String> {
    let msg: Value = serde_json::from_slice(line).ok()?;
    let id = msg.get("id")?.to_string();
    if STATELESS.load(std::sync::atomic::Ordering::Relaxed) {
        return Some(stateless_answer(&msg, &id, list));
    }
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25"),
            "capabilities": {"tools": {}},
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
            ))
        }
    };
    Some(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}"
    ))
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
            let _ = out.write_all(reply.as_bytes());
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
        let response = match (method.as_str(), answer(&body, list)) {
            ("POST", Some(reply)) => format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}",
                reply.len()
            ),
            ("POST", None) => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
            _ => "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n".to_owned(),
        };
        if out.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}
