//! One HTTP/1.1 request read off a connection, for the tests' scripted servers: the request
//! line, the headers (names lowercased) and a `Content-Length` body.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::BufRead;

/// A request as a test server sees it.
pub struct HttpRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target: the path and its query.
    pub target: String,
    /// Header names lowercased; the last of repeated headers wins.
    pub headers: HashMap<String, String>,
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
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
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
        body,
    })
}
