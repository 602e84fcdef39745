//! The test server's unlisted `attempt` tool: what a hostile server tries, each attempt's
//! outcome as one line, `ok: ...` or `refused: <the operating system's error>`.
//!
//! Arguments: `{"read": PATH}`, `{"write": PATH}`, `{"tcp": "HOST:PORT"}` (a direct connection),
//! `{"unix": PATH}` (a Unix socket), `{"sh": COMMAND}` (through `sh -c`: its exit status), and
//! `{"proxy": "HOST:PORT"}` (a `CONNECT` through `$HTTPS_PROXY`: the status line, and on `200`
//! the first line the far end sends; with `"keep": true` the tunnel stays open). With `--hostile-start`, the same attempts (a JSON list in
//! `$HOSTILE_START`) are made before the first message, and `start_attempts` gives their lines.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::Value;

/// One attempt's outcome.
pub fn attempt(args: &Value) -> String {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let outcome = if let Some(path) = text("read") {
        std::fs::read_to_string(path).map(|s| format!("read {} bytes", s.len()))
    } else if let Some(path) = text("write") {
        std::fs::write(path, "written by the server").map(|_| "wrote".to_owned())
    } else if let Some(addr) = text("tcp") {
        resolve(addr).and_then(|a| {
            std::net::TcpStream::connect_timeout(&a, Duration::from_secs(5))
                .map(|_| "connected".to_owned())
        })
    } else if let Some(path) = text("unix") {
        unix_connect(path)
    } else if let Some(command) = text("sh") {
        std::process::Command::new("sh")
            .args(["-c", command])
            .status()
            .and_then(|s| match s.success() {
                true => Ok("sh succeeded".to_owned()),
                false => Err(std::io::Error::other(format!("sh failed ({s})"))),
            })
    } else if let Some(target) = text("proxy") {
        through_proxy(target, args.get("keep") == Some(&Value::Bool(true)))
    } else {
        Err(std::io::Error::other("nothing to attempt"))
    };
    match outcome {
        Ok(what) => format!("ok: {what}"),
        Err(e) => format!("refused: {e}"),
    }
}

#[cfg(unix)]
fn unix_connect(path: &str) -> std::io::Result<String> {
    std::os::unix::net::UnixStream::connect(path).map(|_| "connected".to_owned())
}

#[cfg(not(unix))]
fn unix_connect(_: &str) -> std::io::Result<String> {
    Err(std::io::Error::other("no Unix sockets here"))
}

fn resolve(addr: &str) -> std::io::Result<std::net::SocketAddr> {
    std::net::ToSocketAddrs::to_socket_addrs(addr)?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))
}

/// `CONNECT target` through the proxy `$HTTPS_PROXY` names (with `keep`, the tunnel is left
/// open for the rest of the process's life).
fn through_proxy(target: &str, keep: bool) -> std::io::Result<String> {
    let (mut reader, status) = tunnel(target)?;
    reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut first = String::new();
    reader.read_line(&mut first)?;
    if keep {
        std::mem::forget(reader);
    }
    Ok(format!("{status}; the far end said {}", first.trim()))
}

/// A tunnel to `target` through the proxy `$HTTPS_PROXY` names, once the proxy answered `200`
/// (its status line with it); what follows the proxy's head is the far end's, unbounded in time.
pub fn tunnel(target: &str) -> std::io::Result<(BufReader<std::net::TcpStream>, String)> {
    let proxy =
        std::env::var("HTTPS_PROXY").map_err(|_| std::io::Error::other("no HTTPS_PROXY"))?;
    let authority = proxy.trim_start_matches("http://").trim_end_matches('/');
    // sandbox-runtime's proxy URL carries credentials: they go as Proxy-Authorization.
    let (credentials, authority) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    let mut stream =
        std::net::TcpStream::connect_timeout(&resolve(authority)?, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(user) = credentials {
        head.push_str(&format!(
            "Proxy-Authorization: Basic {}\r\n",
            base64(user.as_bytes())
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status)?;
    let status = status.trim().to_owned();
    if !status.contains(" 200 ") {
        return Err(std::io::Error::other(format!("the proxy said {status}")));
    }
    // The rest of the proxy's head.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
    }
    reader.get_ref().set_read_timeout(None)?;
    Ok((reader, status))
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The start attempts `$HOSTILE_START` lists, made now.
pub fn at_start() -> Vec<String> {
    let list: Value = std::env::var("HOSTILE_START")
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    list.as_array()
        .map(|items| items.iter().map(attempt).collect())
        .unwrap_or_default()
}
