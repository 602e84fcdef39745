//! The Streamable HTTP POST's own HTTP/1.1: every framing a server may answer in (chunks with
//! extensions and trailers, an interim 103 before the response, a length, an HTTP/1.0 body
//! ended by the connection), and when the connection is kept for the next call and when not.
//! A scripted server on 127.0.0.1 counts the connections POSTs came on.

mod common;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::http_request::{accept_each, read_request};
use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{Client, Endpoint, EraChoice};
use serde_json::{json, Value};

#[derive(Default)]
struct Server {
    connections: AtomicUsize,
    stopped: AtomicBool,
    /// The request-target of every POST.
    targets: Mutex<Vec<String>>,
    /// The header lines of every POST.
    heads: Mutex<Vec<Vec<String>>>,
}

/// The JSON-RPC answer to `request`, and how the echo tool's answer is framed (its message).
fn answer(request: &Value) -> Option<(Value, String)> {
    let id = request.get("id")?.clone();
    let method = request["method"].as_str().unwrap_or("");
    let (result, framing) = match method {
        "initialize" => (
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "framing", "version": "1"}}),
            "length".to_owned(),
        ),
        "tools/list" => (json!({"tools": []}), "length".to_owned()),
        "tools/call" => {
            let message = request["params"]["arguments"]["message"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            (
                json!({"content": [{"type": "text", "text": message}]}),
                message,
            )
        }
        _ => {
            return Some((
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
                "length".into(),
            ))
        }
    };
    Some((
        json!({"jsonrpc": "2.0", "id": id, "result": result}),
        framing,
    ))
}

/// Writes `body` as `framing` says; false when the connection is to end.
fn respond(out: &mut TcpStream, framing: &str, body: &str) -> bool {
    let json = "Content-Type: application/json\r\n";
    let wrote = match framing {
        "chunked" => {
            let (a, b) = body.split_at(body.len() / 2);
            write!(
                out,
                "HTTP/1.1 200 OK\r\n{json}Transfer-Encoding: chunked\r\n\r\n\
                 {:x};ext=1\r\n{a}\r\n{:X}\r\n{b}\r\n0\r\nX-Trailer: t\r\n\r\n",
                a.len(),
                b.len()
            )
        }
        // A coding and a length both: framed by the coding, and the connection not kept.
        "te+cl" => {
            let (a, b) = body.split_at(body.len() / 2);
            write!(
                out,
                "HTTP/1.1 200 OK\r\n{json}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n\
                 {:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                a.len(),
                b.len()
            )
        }
        // A request answered without its response.
        "accepted202" => write!(out, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"),
        "nocontent204" => write!(out, "HTTP/1.1 204 No Content\r\n\r\n"),
        "empty200" => write!(out, "HTTP/1.1 200 OK\r\n{json}Content-Length: 0\r\n\r\n"),
        "other-id" => {
            let mut other: Value = serde_json::from_str(body).unwrap();
            other["id"] = json!(987_654);
            let other = other.to_string();
            write!(
                out,
                "HTTP/1.1 200 OK\r\n{json}Content-Length: {}\r\n\r\n{other}",
                other.len()
            )
        }
        // A server that keeps idle connections for one second (as Node's says five).
        "keepalive1" => write!(
            out,
            "HTTP/1.1 200 OK\r\n{json}Keep-Alive: timeout=1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
        // A head larger than the client reads for one.
        "huge-head" => write!(
            out,
            "HTTP/1.1 200 OK\r\n{json}X-Padding: {}\r\nContent-Length: {}\r\n\r\n{body}",
            "p".repeat(40_000),
            body.len()
        ),
        "interim" => write!(
            out,
            "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n\
             HTTP/1.1 200 OK\r\n{json}Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
        "close10" => {
            let _ = write!(out, "HTTP/1.0 200 OK\r\n{json}\r\n{body}");
            return false;
        }
        _ => write!(
            out,
            "HTTP/1.1 200 OK\r\n{json}Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    };
    wrote.is_ok()
}

fn serve(server: &Server, conn: TcpStream) {
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    let mut counted = false;
    while let Some(request) = read_request(&mut reader) {
        if request.method != "POST" {
            // No server stream here.
            let _ = write!(out, "HTTP/1.1 405 No\r\nContent-Length: 0\r\n\r\n");
            continue;
        }
        server.targets.lock().unwrap().push(request.target.clone());
        server.heads.lock().unwrap().push(request.lines.clone());
        if !std::mem::replace(&mut counted, true) {
            server.connections.fetch_add(1, Ordering::SeqCst);
        }
        let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
            return;
        };
        let Some((reply, framing)) = answer(&message) else {
            // A notification.
            if write!(out, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n").is_err() {
                return;
            }
            continue;
        };
        if !respond(&mut out, &framing, &reply.to_string()) {
            return;
        }
    }
}

/// A client of `url` that speaks the handshake era (no era probe).
fn connect(name: &str, url: &str) -> Client {
    let options = mcp_runtime::ConnectOptions {
        era: EraChoice::Handshake,
        ..common::options()
    };
    Client::connect(name, &Endpoint::Http(HttpTarget::new(url)), options).expect("connect")
}

fn start() -> (Arc<Server>, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    serve_on(listener, url)
}

fn serve_on(listener: TcpListener, url: String) -> (Arc<Server>, String) {
    let server = Arc::new(Server::default());
    accept_each(
        listener,
        Arc::clone(&server),
        |s| s.stopped.load(Ordering::SeqCst),
        serve,
    );
    (server, url)
}

#[test]
fn every_framing_reads_whole_and_the_connection_is_kept_only_when_it_can_be() {
    let (server, url) = start();
    let client = connect("framing", &url);
    let echo = |message: &str| {
        client
            .call_tool("echo", json!({ "message": message }))
            .map(|r| r.text())
    };
    let connections = || server.connections.load(Ordering::SeqCst);
    // The handshake's exchanges left one connection kept alive.
    let before = connections();
    for framing in ["chunked", "interim", "length", "chunked"] {
        assert_eq!(echo(framing).unwrap(), framing);
        assert_eq!(connections(), before, "{framing}: the connection was kept");
    }
    // A body the connection's end frames: whole, and the connection is not reused.
    assert_eq!(echo("close10").unwrap(), "close10");
    assert_eq!(echo("length").unwrap(), "length");
    assert_eq!(connections(), before + 1, "a new connection after close10");
    // Both a coding and a length (RFC 9112 §6.3: a smuggling shape): read by the coding, and
    // the connection is not reused.
    assert_eq!(echo("te+cl").unwrap(), "te+cl");
    assert_eq!(echo("length").unwrap(), "length");
    assert_eq!(connections(), before + 2, "a new connection after te+cl");
    // `Keep-Alive: timeout=1`: the connection would be closed by the server before it could be
    // reused safely, so it is not kept.
    assert_eq!(echo("keepalive1").unwrap(), "keepalive1");
    assert_eq!(echo("length").unwrap(), "length");
    assert_eq!(
        connections(),
        before + 3,
        "a new connection after Keep-Alive: timeout=1"
    );
    // A head too large to read: an error that says the limit once.
    let err = echo("huge-head").unwrap_err().to_string();
    assert!(
        err.contains("the response's head is larger than the 16384 bytes read for it"),
        "{err}"
    );
    assert!(!err.contains("16384 > 16384"), "{err}");
    client.close();
    server.stopped.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(url.trim_start_matches("http://").trim_end_matches("/mcp"));
}

/// A URL's query goes on the wire as configured (the client's own layers only ever see it
/// redacted), also when the URL has no path.
#[test]
fn the_real_query_reaches_the_server_with_and_without_a_path() {
    for (tail, target) in [
        ("?apiKey=Q-SECRET", "/?apiKey=Q-SECRET"),
        ("/mcp?k=v&x=Q-SECRET", "/mcp?k=v&x=Q-SECRET"),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}{tail}", listener.local_addr().unwrap());
        let (server, _) = serve_on(listener, url.clone());
        let client = connect("query", &url);
        let out = client
            .call_tool("echo", json!({ "message": "length" }))
            .unwrap();
        assert_eq!(out.text(), "length");
        client.close();
        let targets = server.targets.lock().unwrap().clone();
        assert!(!targets.is_empty());
        assert!(targets.iter().all(|t| t == target), "{tail}: {targets:?}");
        server.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(
            url.trim_start_matches("http://")
                .split(['/', '?'])
                .next()
                .unwrap(),
        );
    }
}

/// A configured `Host` replaces the one the client writes: every request carries exactly one,
/// the configured one (two would be a request-smuggling shape toward a front proxy).
#[test]
fn a_configured_host_is_the_only_one_sent() {
    let (server, url) = start();
    let options = mcp_runtime::ConnectOptions {
        era: EraChoice::Handshake,
        ..common::options()
    };
    let target = HttpTarget::new(&url).header("Host", "mcp.internal:8443");
    let client = Client::connect("host", &Endpoint::Http(target), options).expect("connect");
    let out = client
        .call_tool("echo", json!({ "message": "length" }))
        .unwrap();
    assert_eq!(out.text(), "length");
    client.close();
    let heads = server.heads.lock().unwrap().clone();
    assert!(heads.len() >= 3, "{heads:?}");
    for head in heads {
        let hosts: Vec<&String> = head
            .iter()
            .filter(|l| l.to_ascii_lowercase().starts_with("host:"))
            .collect();
        assert_eq!(hosts, ["Host: mcp.internal:8443"], "{head:?}");
    }
    server.stopped.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(url.trim_start_matches("http://").trim_end_matches("/mcp"));
}

/// A request the server answers without its response (202, 204, an empty 200, a 200 with
/// another id) fails at once as a protocol error saying what came, where it used to wait its
/// whole timeout; the connection serves the next call.
#[test]
fn a_request_answered_without_its_response_fails_at_once() {
    let (server, url) = start();
    let client = connect("unanswered", &url);
    for (framing, what) in [
        (
            "accepted202",
            "with 202 Accepted, without its JSON-RPC response",
        ),
        (
            "nocontent204",
            "with an empty body, without its JSON-RPC response",
        ),
        (
            "empty200",
            "with an empty body, without its JSON-RPC response",
        ),
        ("other-id", "with a body that holds no response to it"),
    ] {
        let err = client
            .call_tool("echo", json!({ "message": framing }))
            .unwrap_err();
        assert!(
            matches!(err, mcp_runtime::Error::Protocol { .. }),
            "{framing}: {err:?}"
        );
        assert!(err.to_string().contains(what), "{framing}: {err}");
    }
    let out = client
        .call_tool("echo", json!({ "message": "length" }))
        .unwrap();
    assert_eq!(out.text(), "length");
    client.close();
    server.stopped.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(url.trim_start_matches("http://").trim_end_matches("/mcp"));
}

/// Serves like `serve`, but a `tools/list` or `tools/call` that is not the first request on its
/// connection finds the connection closed without an answer: what a server that closes idle
/// connections does to a request written as it closes.
fn serve_closing(server: &Server, conn: TcpStream) {
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    let mut served = 0;
    while let Some(request) = read_request(&mut reader) {
        if request.method != "POST" {
            let _ = write!(out, "HTTP/1.1 405 No\r\nContent-Length: 0\r\n\r\n");
            continue;
        }
        if served == 0 {
            server.connections.fetch_add(1, Ordering::SeqCst);
        }
        served += 1;
        let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
            return;
        };
        let method = message["method"].as_str().unwrap_or("").to_owned();
        server.targets.lock().unwrap().push(method.clone());
        if served > 1 && matches!(method.as_str(), "tools/list" | "tools/call") {
            return;
        }
        let Some((reply, _)) = answer(&message) else {
            if write!(out, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n").is_err() {
                return;
            }
            continue;
        };
        if !respond(&mut out, "length", &reply.to_string()) {
            return;
        }
    }
}

/// A kept connection the server closes as a request is written: a request that only lists
/// (`tools/list`) goes again on a new connection and succeeds; a tool call is never sent
/// twice, and fails.
#[test]
fn a_safe_request_goes_again_on_a_new_connection_and_a_tool_call_does_not() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = Arc::new(Server::default());
    accept_each(
        listener,
        Arc::clone(&server),
        |s| s.stopped.load(Ordering::SeqCst),
        serve_closing,
    );
    let client = connect("closing", &url);
    let sent = |method: &str| {
        server
            .targets
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == method)
            .count()
    };
    // On the handshake's kept connection: closed under it, then sent again on a new one.
    let tools = client.list_tools().expect("tools/list, sent again");
    assert!(tools.is_empty());
    assert_eq!(sent("tools/list"), 2);
    // On the new one, kept: closed under it, and not sent again.
    let err = client
        .call_tool("echo", json!({ "message": "x" }))
        .unwrap_err();
    assert_eq!(sent("tools/call"), 1, "a tool call went twice: {err}");
    client.close();
    server.stopped.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(url.trim_start_matches("http://").trim_end_matches("/mcp"));
}
