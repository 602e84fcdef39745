//! A scriptable MCP server over HTTP/1.1, written on `std::net` for the transport tests. It
//! listens on `127.0.0.1:0`, speaks Streamable HTTP at `/mcp` and legacy HTTP+SSE at `/sse`
//! (+ `/messages`), records every request, and misbehaves on demand.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

mod faults;
use super::http_request::respond;
use faults::hold_silent;

/// A canned answer: status, headers, body.
pub type Canned = (u16, Vec<(String, String)>, String);

/// How the server behaves.
#[derive(Clone, Default)]
pub struct Behaviour {
    /// Answer POSTed requests with an event stream instead of JSON.
    pub sse_replies: bool,
    /// Offer a GET stream at `/mcp` (otherwise 405).
    pub get_stream: bool,
    /// Declare `tools: {}` only (nothing the server would send unasked), not `listChanged`.
    pub quiet_capabilities: bool,
    /// Cut the first `tools/call` stream after a priming event; deliver the response on the GET
    /// that resumes it.
    pub cut_first_call: bool,
    /// Forget every session once this many `tools/*` POSTs were answered.
    pub expire_after: Option<usize>,
    /// Answer a request for a session it does not know (or forgot) with 400 and the body of
    /// the TypeScript SDK's example servers, instead of 404.
    pub unknown_session_400: bool,
    /// Answer every POST to `/mcp` with this status, headers and body.
    pub post_status: Option<Canned>,
    /// Never answer `tools/call`.
    pub hang_calls: bool,
    /// Never answer `server/discover` (the era probe).
    pub hang_discover: bool,
    /// Answer `tools/call` with one event of this many bytes.
    pub oversized_event: Option<usize>,
    /// Answer `tools/call` with a JSON body of this many bytes (with its Content-Length).
    pub oversized_json: Option<usize>,
    /// Answer `tools/call` with a Content-Length of a megabyte, a few bytes, and the close.
    pub short_json_body: bool,
    /// Answer `tools/call` with a stream cut in the middle of an event (no id).
    pub cut_mid_event: bool,
    /// Legacy SSE: the endpoint event names another origin.
    pub cross_origin_endpoint: bool,
    /// Legacy SSE: the endpoint event is an absolute path (else a relative one).
    pub absolute_endpoint: bool,
    /// Close the connection after answering each `tools/call`, with no `Connection: close`
    /// (as a server does with an idle kept-alive connection).
    pub close_after_calls: bool,
    /// Answer `tools/call` POSTs with this redirect status and `Location`.
    pub redirect_calls: Option<(u16, String)>,
    /// Answer the GET stream (not a resumption) with this redirect status and `Location`.
    pub redirect_get: Option<(u16, String)>,
    /// Answer `tools/call` with an event stream that sends one event with an id (`e1`, an event
    /// store) and then nothing, held open until the client goes; resuming it is as silent.
    pub silent_calls: bool,
    /// Answer `tools/call` with JSON whose headers come after this delay and whose body then
    /// trickles (a space every 100 ms, the reply after a minute).
    pub slow_head: Option<Duration>,
    /// Cut every `tools/call` stream after a priming event (not only the first); the response
    /// comes on the GET that resumes it.
    pub cut_every_call: bool,
    /// Before answering `tools/call` (on an event stream), ask the client `roots/list` on that
    /// stream and wait for its answer.
    pub ask_roots_in_calls: bool,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
    pub fn rpc_method(&self) -> Option<&str> {
        self.body.get("method").and_then(Value::as_str)
    }
}

struct State {
    behaviour: Behaviour,
    port: u16,
    seen: Mutex<Vec<Seen>>,
    seen_changed: std::sync::Condvar,
    sessions: Mutex<Vec<String>>,
    next_session: AtomicUsize,
    tool_posts: AtomicUsize,
    cut_done: AtomicBool,
    /// Messages queued for the GET stream (Streamable HTTP) or the legacy stream.
    push: (Sender<Value>, Receiver<Value>),
    /// Responses held back for the resumed stream.
    resumed: Mutex<Vec<Value>>,
    /// Answers from the client to our server requests.
    answers: (Sender<Value>, Receiver<Value>),
    stop: AtomicBool,
    /// Ends the legacy stream when set.
    end_legacy: AtomicBool,
    /// Connections closed by `close_after_calls`.
    closed: (Mutex<usize>, std::sync::Condvar),
    /// Every connection accepted (for `kill`).
    conns: Mutex<Vec<TcpStream>>,
    /// `tools/call` streams held open right now (`silent_calls`, `slow_head`).
    open_streams: AtomicUsize,
    /// While set, no connection is accepted (see `stop_accepting`).
    paused: (Mutex<bool>, std::sync::Condvar),
    /// Connections that fill the accept queue while paused.
    fillers: Mutex<Vec<TcpStream>>,
    listen_fd: i32,
    server_requests: AtomicUsize,
}

/// The running server. Dropping it stops it.
pub struct TestHttp {
    state: Arc<State>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl TestHttp {
    pub fn start(behaviour: Behaviour) -> TestHttp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let listen_fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
        let state = Arc::new(State {
            behaviour,
            port,
            seen: Mutex::new(Vec::new()),
            seen_changed: std::sync::Condvar::new(),
            sessions: Mutex::new(Vec::new()),
            next_session: AtomicUsize::new(1),
            tool_posts: AtomicUsize::new(0),
            cut_done: AtomicBool::new(false),
            push: crossbeam_channel::unbounded(),
            resumed: Mutex::new(Vec::new()),
            answers: crossbeam_channel::unbounded(),
            stop: AtomicBool::new(false),
            end_legacy: AtomicBool::new(false),
            closed: (Mutex::new(0), std::sync::Condvar::new()),
            conns: Mutex::new(Vec::new()),
            open_streams: AtomicUsize::new(0),
            paused: (Mutex::new(false), std::sync::Condvar::new()),
            fillers: Mutex::new(Vec::new()),
            listen_fd,
            server_requests: AtomicUsize::new(0),
        });
        let s = Arc::clone(&state);
        let acceptor = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                if *s.paused.0.lock().unwrap() {
                    // The wake-up connection of `stop_accepting`: accept nothing more.
                    drop(conn);
                    let mut paused = s.paused.0.lock().unwrap();
                    while *paused && !s.stop.load(Ordering::SeqCst) {
                        paused = s.paused.1.wait(paused).unwrap();
                    }
                    if s.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    continue;
                }
                if let Ok(clone) = conn.try_clone() {
                    s.conns.lock().unwrap().push(clone);
                }
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(&s, conn));
            }
        });
        TestHttp {
            state,
            acceptor: Some(acceptor),
        }
    }

    /// The Streamable HTTP URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.state.port)
    }

    /// The legacy SSE URL.
    pub fn sse_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.state.port)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// Waits (bounded) until a request with JSON-RPC method `rpc` arrived.
    pub fn wait_for(&self, rpc: &str) -> Seen {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut seen = self.state.seen.lock().unwrap();
        loop {
            if let Some(r) = seen.iter().find(|r| r.rpc_method() == Some(rpc)) {
                return r.clone();
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "{rpc} never arrived");
            seen = self.state.seen_changed.wait_timeout(seen, left).unwrap().0;
        }
    }

    /// Waits (bounded) until `close_after_calls` has closed `n` connections.
    pub fn wait_closed(&self, n: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let (count, changed) = &self.state.closed;
        let mut closed = count.lock().unwrap();
        while *closed < n {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "only {} connections closed", *closed);
            closed = changed.wait_timeout(closed, left).unwrap().0;
        }
    }

    /// Queues a message for the GET (or legacy) stream.
    pub fn push(&self, message: Value) {
        self.state.push.0.send(message).unwrap();
    }

    /// Waits for the client's answer to one of our server requests.
    pub fn answer(&self) -> Value {
        self.state
            .answers
            .1
            .recv_timeout(Duration::from_secs(10))
            .expect("an answer from the client")
    }

    /// Ends the legacy SSE stream.
    pub fn end_legacy_stream(&self) {
        self.state.end_legacy.store(true, Ordering::SeqCst);
        self.state.push.0.send(Value::Null).unwrap();
    }
}

impl Drop for TestHttp {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        self.state.end_legacy.store(true, Ordering::SeqCst);
        self.state.paused.1.notify_all();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.state.port));
        let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
    }
}

fn serve(s: &Arc<State>, conn: TcpStream) {
    // `kill` holds a clone of every connection: the end of serving must close it for real.
    struct Close(TcpStream);
    impl Drop for Close {
        fn drop(&mut self) {
            let _ = self.0.shutdown(std::net::Shutdown::Both);
        }
    }
    let _close = Close(conn.try_clone().unwrap());
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let Some(request) = super::http_request::read_request(&mut reader) else {
            return;
        };
        let (method, path, headers, body) = (
            request.method,
            request.target,
            request.headers,
            request.body,
        );
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let seen = Seen {
            method,
            path,
            headers,
            body,
        };
        s.seen.lock().unwrap().push(seen.clone());
        s.seen_changed.notify_all();
        if !handle(s, &seen, &mut out) {
            return;
        }
        // As HTTP/1.1 says: the client (or a proxy on its way: tinyproxy asks it of every
        // request it forwards) wants the connection closed after the response.
        if seen
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
        {
            return;
        }
        if s.behaviour.close_after_calls && seen.rpc_method() == Some("tools/call") {
            let _ = out.shutdown(std::net::Shutdown::Both);
            let (count, changed) = &s.closed;
            *count.lock().unwrap() += 1;
            changed.notify_all();
            return;
        }
    }
}

fn start_stream(out: &mut TcpStream, headers: &[(&str, String)]) -> bool {
    let mut head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n".to_owned();
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes()).is_ok()
}

fn event(out: &mut TcpStream, id: Option<&str>, event: Option<&str>, data: &str) -> bool {
    let mut text = String::new();
    if let Some(id) = id {
        text.push_str(&format!("id: {id}\n"));
    }
    if let Some(e) = event {
        text.push_str(&format!("event: {e}\n"));
    }
    text.push_str(&format!("data: {data}\n\n"));
    out.write_all(text.as_bytes()).is_ok() && out.flush().is_ok()
}

fn handle(s: &Arc<State>, req: &Seen, out: &mut TcpStream) -> bool {
    let b = &s.behaviour;
    match (
        req.method.as_str(),
        req.path.split('?').next().unwrap_or(""),
    ) {
        ("POST", "/mcp") => {
            if let Some((status, headers, body)) = &b.post_status {
                let headers: Vec<(&str, String)> = headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.clone()))
                    .collect();
                return respond(out, *status, &headers, body);
            }
            post_mcp(s, req, out)
        }
        ("GET", "/mcp") => {
            // Ids starting with "e" belong to cut response streams; "g" to the GET stream.
            let resuming = req.header("last-event-id").filter(|id| id.starts_with('e'));
            if !b.get_stream && resuming.is_none() {
                return respond(out, 405, &[], "");
            }
            if let Some(last) = resuming {
                // Resuming a cut response stream: replay what was held back after `last`.
                start_stream(out, &[]);
                if b.silent_calls {
                    hold_silent(s, out);
                    return false;
                }
                let held: Vec<Value> = s.resumed.lock().unwrap().drain(..).collect();
                for (i, m) in held.iter().enumerate() {
                    event(out, Some(&format!("{last}-r{i}")), None, &m.to_string());
                }
                return false;
            }
            if let Some((status, location)) = &b.redirect_get {
                return respond(out, *status, &[("Location", location.clone())], "");
            }
            if !known_session(s, req) {
                return respond(out, 404, &[], "unknown session");
            }
            start_stream(out, &[]);
            event(out, Some("g0"), None, "");
            while !s.stop.load(Ordering::SeqCst) {
                match s.push.1.recv_timeout(Duration::from_millis(100)) {
                    Ok(Value::Null) => return false,
                    Ok(m) => {
                        if !event(out, None, None, &m.to_string()) {
                            return false;
                        }
                    }
                    Err(_) => {
                        if out.write_all(b": keepalive\n\n").is_err() {
                            return false;
                        }
                    }
                }
            }
            false
        }
        ("DELETE", "/mcp") => respond(out, 200, &[], ""),
        ("GET", "/sse") => legacy_stream(s, out),
        ("POST", "/sse") => respond(out, 405, &[], "use GET"),
        ("POST", "/messages") => {
            if req.rpc_method() == Some("hang/forever") {
                return respond(out, 202, &[], "Accepted");
            }
            if let Some(reply) = answer(s, &req.body) {
                s.push.0.send(reply).unwrap();
            }
            respond(out, 202, &[], "Accepted")
        }
        _ => respond(out, 404, &[], "not found"),
    }
}

/// Holds a request unanswered until the server stops (at most a minute).
fn hold_until_stopped(s: &State) {
    for _ in 0..600 {
        if s.stop.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn known_session(s: &State, req: &Seen) -> bool {
    match req.header("mcp-session-id") {
        Some(id) => s.sessions.lock().unwrap().iter().any(|k| k == id),
        None => false,
    }
}

fn post_mcp(s: &Arc<State>, req: &Seen, out: &mut TcpStream) -> bool {
    let b = &s.behaviour;
    let rpc = req.rpc_method().unwrap_or("");
    let mut headers: Vec<(&str, String)> = Vec::new();
    if rpc == "server/discover" && b.hang_discover {
        hold_until_stopped(s);
        return false;
    }
    if rpc == "initialize" {
        let id = format!("session-{}", s.next_session.fetch_add(1, Ordering::SeqCst));
        s.sessions.lock().unwrap().push(id.clone());
        headers.push(("Mcp-Session-Id", id));
    } else if !known_session(s, req) {
        return forgotten(out, b);
    }
    if rpc.starts_with("tools/") {
        let n = s.tool_posts.fetch_add(1, Ordering::SeqCst) + 1;
        if b.expire_after.is_some_and(|limit| n > limit) {
            s.sessions.lock().unwrap().clear();
            s.tool_posts.store(0, Ordering::SeqCst);
            return forgotten(out, b);
        }
    }
    let Some(reply) = answer(s, &req.body) else {
        // A notification or a response (to our server request): accepted.
        return respond(out, 202, &headers, "");
    };
    if rpc == "tools/call" {
        if let Some(kept) = faults::call(s, out, &headers, &reply) {
            return kept;
        }
        if b.hang_calls {
            hold_until_stopped(s);
            return false;
        }
        if let Some(size) = b.oversized_event {
            start_stream(out, &headers);
            event(
                out,
                None,
                None,
                &format!("{{\"pad\":\"{}\"}}", "x".repeat(size)),
            );
            return false;
        }
        if let Some(size) = b.oversized_json {
            headers.push(("Content-Type", "application/json".into()));
            return respond(
                out,
                200,
                &headers,
                &format!("{{\"pad\":\"{}\"}}", "x".repeat(size)),
            );
        }
        if b.short_json_body {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(b"{\"jsonrpc\":\"2.0\",");
            return false;
        }
        if b.cut_mid_event {
            start_stream(out, &headers);
            let _ = out.write_all(b"data: {\"jsonrpc\":\"2.0\",\"id\":");
            return false;
        }
        if b.cut_first_call && !s.cut_done.swap(true, Ordering::SeqCst) {
            s.resumed.lock().unwrap().push(reply);
            start_stream(out, &headers);
            let _ = out.write_all(b"id: e1\nretry: 20\ndata:\n\n");
            return false;
        }
    }
    if b.sse_replies && rpc != "initialize" {
        start_stream(out, &headers);
        if let Some(token) = req.body.pointer("/params/_meta/progressToken") {
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                  "params": {"progressToken": token, "progress": 1, "total": 1}});
            event(out, Some("p1"), None, &progress.to_string());
        }
        event(out, Some("p2"), None, &reply.to_string());
        return false;
    }
    headers.push(("Content-Type", "application/json".into()));
    respond(out, 200, &headers, &reply.to_string())
}

/// The JSON-RPC reply to a client message (None for notifications and responses).
fn answer(s: &State, msg: &Value) -> Option<Value> {
    let id = msg.get("id")?.clone();
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        s.answers.0.send(msg.clone()).unwrap();
        return None;
    };
    let result = match method {
        "initialize" => json!({
            "protocolVersion": msg.pointer("/params/protocolVersion").cloned().unwrap_or(json!("2025-11-25")),
            "capabilities": if s.behaviour.quiet_capabilities {
                json!({"tools": {}})
            } else {
                json!({"tools": {"listChanged": true}})
            },
            "serverInfo": {"name": "test-http", "version": "1"}
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object",
            "properties": {"message": {"type": "string", "default": "hi"}}}}]}),
        "tools/call" => {
            let text = msg
                .pointer("/params/arguments/message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            json!({"content": [{"type": "text", "text": text}]})
        }
        other => {
            return Some(json!({"jsonrpc": "2.0", "id": id,
                               "error": {"code": -32601, "message": format!("Method not found: {other}")}}))
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn legacy_stream(s: &Arc<State>, out: &mut TcpStream) -> bool {
    start_stream(out, &[]);
    let b = &s.behaviour;
    let endpoint = if b.cross_origin_endpoint {
        format!(
            "http://127.0.0.1:{}/messages?sessionId=x",
            s.port.wrapping_add(1)
        )
    } else if b.absolute_endpoint {
        "/messages?sessionId=abc".to_owned()
    } else {
        "messages?sessionId=abc".to_owned()
    };
    event(out, None, Some("endpoint"), &endpoint);
    while !s.end_legacy.load(Ordering::SeqCst) {
        match s.push.1.recv_timeout(Duration::from_millis(100)) {
            Ok(Value::Null) => break,
            Ok(m) => {
                if !event(out, None, Some("message"), &m.to_string()) {
                    return false;
                }
            }
            Err(_) => {}
        }
    }
    false
}

/// The answer to a request for a session the server does not know: 404 as the specification
/// says, or the 400 of the TypeScript SDK's example servers.
fn forgotten(out: &mut TcpStream, b: &Behaviour) -> bool {
    if b.unknown_session_400 {
        let body = r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
        return respond(out, 400, &[], body);
    }
    respond(
        out,
        404,
        &[],
        r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"}}"#,
    )
}
