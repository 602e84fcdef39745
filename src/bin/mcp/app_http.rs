//! The little HTTP server `mcp app` serves its pages with: HTTP/1.1 on 127.0.0.1, one request a
//! connection, a thread a connection (at most [`MAX_CONNECTIONS`] at once), bounded reads.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 32;
/// The longest request head and body taken (a View's message is small; a page's 8 MB at most).
const MAX_HEAD: usize = 16 << 10;
const MAX_BODY: usize = 16 << 20;
/// How long a client has to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A request, as far as the pages need one.
pub struct Request {
    pub method: String,
    /// The path, without its query.
    pub path: String,
    pub query: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A query parameter's value, as sent (the pages' parameters need no decoding).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

/// A response.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body: body.into(),
        }
    }

    pub fn text(status: u16, text: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", text)
    }

    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

/// Serves `listener` until `stop` is set, each request answered by `handle` on a thread of its
/// own. The accept loop wakes every 100 ms to look at `stop`.
pub fn serve(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    handle: Arc<dyn Fn(Request) -> Response + Send + Sync>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("mcp-app-http".into())
        .spawn(move || {
            let open = Arc::new(AtomicUsize::new(0));
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                            open.fetch_sub(1, Ordering::SeqCst);
                            continue;
                        }
                        let (open, handle) = (Arc::clone(&open), Arc::clone(&handle));
                        let spawned = std::thread::Builder::new()
                            .name("mcp-app-request".into())
                            .spawn(move || {
                                let _ = answer(stream, &*handle);
                                open.fetch_sub(1, Ordering::SeqCst);
                            });
                        if spawned.is_err() {
                            log::warn!("mcp app: no thread for a request");
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    Err(e) => {
                        log::warn!("mcp app: accept: {e}");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        })
}

fn answer(stream: TcpStream, handle: &dyn Fn(Request) -> Response) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let response = match read_request(&mut reader) {
        Ok(request) => handle(request),
        Err(problem) => Response::text(400, problem),
    };
    write_response(stream, &response)
}

fn read_request(reader: &mut impl BufRead) -> Result<Request, &'static str> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take((MAX_HEAD - head.len().min(MAX_HEAD)) as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|_| "unreadable request")?;
        if n == 0 {
            return Err("incomplete request");
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err("request head too large");
        }
    }
    let head = String::from_utf8(head).map_err(|_| "request head not UTF-8")?;
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let target = first.next().unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse::<usize>().map_err(|_| "bad Content-Length"))
        .transpose()?
        .unwrap_or(0);
    if length > MAX_BODY {
        return Err("request body too large");
    }
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .map_err(|_| "incomplete request body")?;
    Ok(Request {
        method,
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
        body,
    })
}

fn write_response(mut stream: TcpStream, response: &Response) -> std::io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        410 => "Gone",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n",
        response.status,
        response.body.len()
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&response.body)?;
    stream.flush()
}
