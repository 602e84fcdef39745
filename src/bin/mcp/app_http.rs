//! The little HTTP server `mcp app` serves its pages with: HTTP/1.1 on 127.0.0.1, one request a
//! connection, a thread a connection (at most [`MAX_CONNECTIONS`] at once), a whole request
//! read within one deadline, a body read only once its head was admitted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections served at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 32;
/// The longest request body taken (a View's message is small; an image in a message or a tool's
/// arguments may not be). The head's limit is the loopback reader's.
const MAX_BODY: usize = 8 << 20;
/// How long a client has to send its whole request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the end of a server waits for its requests in flight (each bounded itself).
const DRAIN: Duration = Duration::from_secs(2);

/// What answers a server's requests.
pub trait Handler: Send + Sync {
    /// A refusal for a request seen by its head alone (its body is then never read), or
    /// `None` to read it and [`Handler::handle`] it.
    fn admit(&self, head: &Request) -> Option<Response>;
    /// The answer to a whole request.
    fn handle(&self, request: Request) -> Response;
}

/// A running server; dropping it stops it: no connection is taken after, and the requests in
/// flight are waited for (bounded).
pub struct Server {
    stop: Arc<AtomicBool>,
    open: Arc<AtomicUsize>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let deadline = Instant::now() + DRAIN;
        while self.open.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

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

/// Serves `listener`, each request on a thread of its own, until the [`Server`] is dropped.
/// The accept loop wakes every 50 ms to see whether it should stop.
pub fn serve(listener: TcpListener, handler: Arc<dyn Handler>) -> std::io::Result<Server> {
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let open = Arc::new(AtomicUsize::new(0));
    let accept = {
        let (stop, open) = (Arc::clone(&stop), Arc::clone(&open));
        std::thread::Builder::new()
            .name("cli-app-http".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                                open.fetch_sub(1, Ordering::SeqCst);
                                continue;
                            }
                            let (open, handler) = (Arc::clone(&open), Arc::clone(&handler));
                            let spawned = std::thread::Builder::new()
                                .name("cli-app-request".into())
                                .spawn(move || {
                                    // Counted out however the request ends (a panic too).
                                    let _open = Open(open);
                                    let _ = answer(stream, &*handler);
                                });
                            if spawned.is_err() {
                                log::warn!("mcp app: no thread for a request");
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        Err(e) => {
                            log::warn!("mcp app: accept: {e}");
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            })?
    };
    Ok(Server {
        stop,
        open,
        accept: Some(accept),
    })
}

/// Reads from a stream within one deadline for the whole request (a client sending a byte at
/// a time gets no longer).
struct Deadline<'a> {
    stream: &'a TcpStream,
    until: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        stream.read(buf)
    }
}

fn answer(stream: TcpStream, handler: &dyn Handler) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new(Deadline {
        stream: &stream,
        until: Instant::now() + READ_TIMEOUT,
    });
    let response = match read_head(&mut reader) {
        Err(problem) => Response::text(400, problem),
        Ok((mut request, length)) => match handler.admit(&request) {
            Some(refusal) => refusal,
            None => match read_body(&mut reader, length) {
                Ok(body) => {
                    request.body = body;
                    handler.handle(request)
                }
                Err(problem) => Response::text(400, problem),
            },
        },
    };
    drop(reader);
    write_response(&stream, &response)
}

/// The request's head (read by the library's loopback reader, the OAuth callback's too), and
/// the length of the body that follows.
fn read_head(reader: &mut impl BufRead) -> Result<(Request, usize), &'static str> {
    let head = mcp_runtime::loopback::read_head(reader)?;
    if head.content_length > MAX_BODY {
        return Err("request body too large");
    }
    let request = Request {
        method: head.method,
        path: head.path,
        query: head.query,
        headers: head.headers,
        body: Vec::new(),
    };
    Ok((request, head.content_length))
}

fn read_body(reader: &mut impl Read, length: usize) -> Result<Vec<u8>, &'static str> {
    let mut body = Vec::new();
    reader
        .take(length as u64)
        .read_to_end(&mut body)
        .map_err(|_| "incomplete request body")?;
    if body.len() < length {
        return Err("incomplete request body");
    }
    Ok(body)
}

fn write_response(mut stream: &TcpStream, response: &Response) -> std::io::Result<()> {
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

/// Takes one off the count of open requests when dropped.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
