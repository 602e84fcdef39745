//! One HTTP/1.1 request read off a connection, for the tests' scripted servers: the request
//! line, the headers (names lowercased) and a `Content-Length` body.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

/// A request as a test server sees it.
pub struct HttpRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target: the path and its query.
    pub target: String,
    /// Header names lowercased; the last of repeated headers wins.
    pub headers: HashMap<String, String>,
    /// The header lines as they came, in order (repeated ones too).
    pub lines: Vec<String>,
    /// The body (`Content-Length` bytes; none without one).
    pub body: Vec<u8>,
}

/// The next request on `reader`, or `None` when the connection ends (or breaks) first.
pub fn read_request(reader: &mut impl BufRead) -> Option<HttpRequest> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut headers = HashMap::new();
    let mut lines = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        lines.push(h.to_owned());
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(HttpRequest {
        method,
        target,
        headers,
        lines,
        body,
    })
}

/// Accepts connections on `listener` on a thread of its own, each served by `serve` on a
/// thread of its own, until `stopped` says so (checked at each connection: a stopping server
/// makes one to wake the loop).
pub fn accept_each<S: Send + Sync + 'static>(
    listener: TcpListener,
    state: Arc<S>,
    stopped: impl Fn(&S) -> bool + Send + 'static,
    serve: impl Fn(&S, TcpStream) + Copy + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if stopped(&state) {
                return;
            }
            let Ok(conn) = conn else { continue };
            let state = Arc::clone(&state);
            std::thread::spawn(move || serve(&state, conn));
        }
    })
}

/// Writes a whole response with a `Content-Length` body; true to keep the connection.
pub fn respond(out: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &str) -> bool {
    let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes()).is_ok() && out.write_all(body.as_bytes()).is_ok()
}
