//! The filtering proxy of a sandboxed server with network: the only way out of its network
//! namespace. It accepts on a listener that lives inside the namespace (see `linux`), reads
//! each connection's request head with the loopback servers' parser, and lets through:
//! - `CONNECT host:port` (TLS, and anything else tunnelled) when `host` is allowed: `200`,
//!   then bytes both ways;
//! - an absolute-form `http://host[:port]/...` request when `host` is allowed: the head is
//!   sent on in origin form with `Connection: close`, then bytes both ways.
//!
//! It goes out the way this process would: through the environment's proxy (`HTTPS_PROXY`
//! for a tunnel, `HTTP_PROXY` for plain http, `ALL_PROXY`, `NO_PROXY`, read when the server
//! starts; an `http://` one, credentials sent as `Proxy-Authorization`), or directly.
//!
//! Anything else gets `403` (a host not allowed), `400` (not a proxy request) or `502` (the
//! host could not be reached). The allow-list is matched on the name the server asked for.
//! An address it resolves to that is loopback, link-local or unspecified is reached only for
//! a name an exact (not wildcard) pattern allows: a wildcard's DNS cannot turn it into a way
//! to this machine's own services or a cloud metadata endpoint.
//!
//! Threads: `mcp-<server>-proxy` accepts; each connection has a `mcp-<server>-proxied` thread,
//! at most [`MAX_CONNECTIONS`] at once. [`Proxy::stop`] (the server's teardown) wakes the
//! acceptor, shuts every connection's sockets down, and joins them all: none outlives the
//! server. A panic in any of them ends the server's connection with `Error::Internal` (see
//! [`Failed`]). A wait for a request head is bounded by [`HEAD_TIMEOUT`], a connect by
//! [`CONNECT_TIMEOUT`]; a tunnel lasts as long as both ends keep it.

use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::domains;
use crate::net::proxy::{ProxyEnv, ProxyUrl};
use crate::net::request_head::read_proxy_head;
use crate::panic::Boundary;

/// The most connections one server has through the proxy at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take to send its request head.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long reaching a host may take, per address.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stop waits for the proxy's threads to end.
const JOIN_WAIT: Duration = Duration::from_secs(2);

/// A running proxy. Stopping (or dropping) it ends every thread and connection it has.
pub(crate) struct Proxy {
    inner: Arc<Inner>,
    acceptor: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
    server: String,
    allowed: Vec<String>,
    denied: Vec<String>,
    stopped: AtomicBool,
    /// Written to wake the acceptor.
    wake: std::os::unix::net::UnixStream,
    wake_read: std::os::unix::net::UnixStream,
    next: AtomicU64,
    /// Every open socket, by connection, for the stop to shut down.
    sockets: Mutex<Vec<(u64, TcpStream)>>,
    handlers: Mutex<Vec<JoinHandle<()>>>,
    /// What a panic in one of the proxy's threads is reported to (the server's connection,
    /// which it ends: a bug is never silent).
    failed: Failed,
    /// The environment's proxies, which ours goes out through.
    upstream: ProxyEnv,
}

/// Where a panic in the proxy goes.
pub(crate) type Failed = Arc<dyn Fn(crate::error::Error) + Send + Sync>;

impl Proxy {
    /// Starts accepting on `listener` for the server `server`.
    pub(crate) fn start(
        server: &str,
        listener: TcpListener,
        allowed: Vec<String>,
        denied: Vec<String>,
        failed: Failed,
    ) -> std::io::Result<Proxy> {
        let (wake, wake_read) = std::os::unix::net::UnixStream::pair()?;
        listener.set_nonblocking(true)?;
        let inner = Arc::new(Inner {
            server: server.to_owned(),
            allowed,
            denied,
            stopped: AtomicBool::new(false),
            wake,
            wake_read,
            next: AtomicU64::new(0),
            sockets: Mutex::new(Vec::new()),
            handlers: Mutex::new(Vec::new()),
            failed,
            upstream: ProxyEnv::from_process(),
        });
        let me = Arc::clone(&inner);
        let failed = Arc::clone(&inner.failed);
        let acceptor = crate::panic::spawn(
            format!("mcp-{server}-proxy"),
            Boundary::SandboxProxy,
            move || me.accept_loop(&listener),
            move |e| failed(e),
        )?;
        Ok(Proxy {
            inner,
            acceptor: Mutex::new(Some(acceptor)),
        })
    }

    /// Ends the proxy: no new connection, every open one shut down, every thread joined (at
    /// most [`JOIN_WAIT`] in all; a thread still resolving a name then ends on its own when
    /// the resolver answers).
    pub(crate) fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        let _ = (&self.inner.wake).write(b"x");
        for (_, socket) in self.inner.sockets.lock().iter() {
            let _ = socket.shutdown(Shutdown::Both);
        }
        let deadline = Instant::now() + JOIN_WAIT;
        let mut threads: Vec<JoinHandle<()>> = self.acceptor.lock().take().into_iter().collect();
        threads.append(&mut self.inner.handlers.lock());
        // A stop from one of the proxy's own threads (its panic ended the server) does not
        // wait for itself.
        let me = std::thread::current().id();
        threads.retain(|t| t.thread().id() != me);
        for thread in threads {
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    fn accept_loop(self: &Arc<Self>, listener: &TcpListener) {
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.wake_read.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfds on descriptors we hold. Waits until a connection or
            // the stop's wake.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if self.stopped.load(Ordering::SeqCst) {
                return;
            }
            if r < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            let Ok((client, _)) = listener.accept() else {
                continue;
            };
            self.handlers.lock().retain(|h| !h.is_finished());
            if self.handlers.lock().len() >= MAX_CONNECTIONS {
                log::warn!(
                    "the sandbox proxy of {}: more than {MAX_CONNECTIONS} connections at once, one refused",
                    self.server
                );
                continue;
            }
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            if !self.register(id, &client) {
                return;
            }
            let me = Arc::clone(self);
            let done = Arc::clone(self);
            let spawned = crate::panic::spawn(
                format!("mcp-{}-proxied", self.server),
                Boundary::SandboxProxy,
                move || {
                    me.serve(id, client);
                    me.forget(id);
                },
                move |e| {
                    done.forget(id);
                    (done.failed)(e);
                },
            );
            match spawned {
                Ok(handle) => self.handlers.lock().push(handle),
                Err(_) => self.forget(id),
            }
        }
    }

    /// Keeps a clone of `socket` for the stop; `false` once stopped.
    fn register(&self, id: u64, socket: &TcpStream) -> bool {
        let mut sockets = self.sockets.lock();
        if self.stopped.load(Ordering::SeqCst) {
            return false;
        }
        if let Ok(clone) = socket.try_clone() {
            sockets.push((id, clone));
        }
        true
    }

    fn forget(&self, id: u64) {
        self.sockets.lock().retain(|(i, _)| *i != id);
    }

    /// One connection: its head, the verdict, the tunnel.
    fn serve(&self, id: u64, client: TcpStream) {
        let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
        let mut reader = BufReader::new(&client);
        let head = match read_proxy_head(&mut reader) {
            Ok(head) => head,
            Err(why) => {
                log::debug!("the sandbox proxy of {}: {why}", self.server);
                let _ = reply(&client, "400 Bad Request");
                return;
            }
        };
        let connect = head.method == "CONNECT";
        let (host, port, rest) = match split_target(&head.path, connect) {
            Some(parts) => parts,
            None => {
                let _ = reply(&client, "400 Bad Request");
                return;
            }
        };
        if !domains::allowed(&self.allowed, &self.denied, &host) {
            log::info!(
                "the sandbox of {} refused a connection to {host}:{port} (not an allowed domain)",
                self.server
            );
            let _ = reply(&client, "403 Forbidden");
            return;
        }
        let via = self
            .upstream
            .choose(if connect { "https" } else { "http" }, &host);
        let reached = match via {
            Some(proxy) => self.through(proxy, &host, port, connect),
            None => {
                let exact = self.exactly_allowed(&host);
                self.reach(&host, port, exact).map(|s| (s, false))
            }
        };
        let Some((upstream, forwarded)) = reached else {
            let _ = reply(&client, "502 Bad Gateway");
            return;
        };
        if !self.register(id, &upstream) {
            return;
        }
        log::debug!("the sandbox proxy of {}: to {host}:{port}", self.server);
        let buffered = reader.buffer().to_vec();
        let _ = client.set_read_timeout(None);
        let started = if connect {
            reply(&client, "200 Connection Established").is_ok()
                && (&upstream).write_all(&buffered).is_ok()
        } else {
            // Forwarded to a proxy: the absolute target stays, with its credentials; to the
            // host itself: origin form.
            let target = if forwarded {
                head.path.as_str()
            } else {
                rest.as_str()
            };
            let mut out = format!("{} {target} HTTP/1.1\r\n", head.method);
            for (name, value) in &head.headers {
                if !matches!(
                    name.as_str(),
                    "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive"
                ) {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
            }
            if let (true, Some(proxy)) = (forwarded, via) {
                out.push_str(&proxy.authorization_line().unwrap_or_default());
            }
            out.push_str("connection: close\r\n\r\n");
            (&upstream).write_all(out.as_bytes()).is_ok()
                && (&upstream).write_all(&buffered).is_ok()
        };
        if started {
            relay(&client, &upstream);
        }
    }

    /// A connection to `host:port` through the environment's `proxy`: a tunnel (`CONNECT`),
    /// or for plain http the proxy itself, to forward the request to (`true`).
    fn through(
        &self,
        proxy: &ProxyUrl,
        host: &str,
        port: u16,
        connect: bool,
    ) -> Option<(TcpStream, bool)> {
        if proxy.is_https() {
            log::warn!(
                "the sandbox proxy of {} cannot go through {} (an https:// proxy)",
                self.server,
                proxy.redacted()
            );
            return None;
        }
        let authority = proxy.redacted().trim_start_matches("http://");
        let (proxy_host, proxy_port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (h, p.parse().ok()?),
            _ => (authority, 1080),
        };
        let stream = self.reach(proxy_host, proxy_port, true)?;
        if !connect {
            return Some((stream, true));
        }
        let mut request = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n");
        request.push_str(&proxy.authorization_line().unwrap_or_default());
        request.push_str("\r\n");
        (&stream).write_all(request.as_bytes()).ok()?;
        // Its answer's head, byte by byte (what follows is the tunnel's), within the bounds.
        let _ = stream.set_read_timeout(Some(CONNECT_TIMEOUT));
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            if answer.len() > crate::net::request_head::MAX_HEAD
                || (&stream).read_exact(&mut byte).is_err()
            {
                return None;
            }
            answer.push(byte[0]);
        }
        let _ = stream.set_read_timeout(None);
        let ok = answer.starts_with(b"HTTP/1.1 200") || answer.starts_with(b"HTTP/1.0 200");
        if !ok {
            log::info!(
                "the sandbox proxy of {}: {} refused the tunnel to {host}:{port}",
                self.server,
                proxy.redacted()
            );
        }
        ok.then_some((stream, false))
    }

    /// Whether a pattern without a wildcard allows `host`.
    fn exactly_allowed(&self, host: &str) -> bool {
        let exact: Vec<String> = (self.allowed.iter())
            .filter(|p| !p.trim_start().starts_with("*."))
            .cloned()
            .collect();
        domains::allowed(&exact, &self.denied, host)
    }

    /// A connection to `host:port`, trying each address within [`CONNECT_TIMEOUT`].
    fn reach(&self, host: &str, port: u16, exact: bool) -> Option<TcpStream> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addresses: Vec<SocketAddr> = (bare, port).to_socket_addrs().ok()?.collect();
        for address in addresses {
            if self.stopped.load(Ordering::SeqCst) {
                return None;
            }
            if !exact && inward(address.ip()) {
                log::info!(
                    "the sandbox of {} refused {host}: a wildcard-allowed name resolved to this machine or a link-local address",
                    self.server
                );
                continue;
            }
            if let Ok(stream) = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
                return Some(stream);
            }
        }
        None
    }
}

/// Whether an address leads to this machine or its link: loopback, link-local, unspecified.
fn inward(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.is_unspecified() || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

/// The host, port and (for an absolute URL) the origin-form rest of a proxy request's target.
fn split_target(target: &str, connect: bool) -> Option<(String, u16, String)> {
    let (authority, rest) = if connect {
        (target, String::new())
    } else {
        let after = target.get(7..)?;
        match after.find(['/', '?']) {
            Some(at) if after.as_bytes()[at] == b'/' => (&after[..at], after[at..].to_owned()),
            Some(at) => (&after[..at], format!("/{}", &after[at..])),
            None => (after, "/".to_owned()),
        }
    };
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') || host.starts_with('[') => {
            (host, port.parse().ok()?)
        }
        _ if connect => return None,
        _ => (authority, 80),
    };
    (!host.is_empty()).then(|| (host.to_owned(), port, rest))
}

/// A response without a body.
fn reply(mut to: &TcpStream, status: &str) -> std::io::Result<()> {
    to.write_all(format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n").as_bytes())
}

/// Bytes both ways until both ends are done (or a socket is shut down by a stop).
fn relay(a: &TcpStream, b: &TcpStream) {
    let mut open = [true, true];
    let mut buf = vec![0u8; 16 * 1024];
    while open[0] || open[1] {
        let mut fds = [
            libc::pollfd {
                fd: a.as_raw_fd(),
                events: if open[0] { libc::POLLIN } else { 0 },
                revents: 0,
            },
            libc::pollfd {
                fd: b.as_raw_fd(),
                events: if open[1] { libc::POLLIN } else { 0 },
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds on sockets we hold. A stop shuts them down, which wakes it.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        for (i, (from, to)) in [(a, b), (b, a)].into_iter().enumerate() {
            if !open[i] || fds[i].revents == 0 {
                continue;
            }
            match (&mut &*from).read(&mut buf) {
                Ok(0) => {
                    open[i] = false;
                    let _ = to.shutdown(Shutdown::Write);
                }
                Ok(n) => {
                    if (&mut &*to).write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_into_host_port_and_path() {
        let t = |s: &str, c: bool| split_target(s, c);
        assert_eq!(
            t("a.org:443", true),
            Some(("a.org".into(), 443, String::new()))
        );
        assert_eq!(
            t("[::1]:8080", true),
            Some(("[::1]".into(), 8080, String::new()))
        );
        assert_eq!(t("a.org", true), None);
        assert_eq!(
            t("http://a.org/x?y", false),
            Some(("a.org".into(), 80, "/x?y".into()))
        );
        assert_eq!(
            t("http://a.org:81", false),
            Some(("a.org".into(), 81, "/".into()))
        );
        assert_eq!(
            t("http://a.org?q", false),
            Some(("a.org".into(), 80, "/?q".into()))
        );
        assert_eq!(t("http://u@a.org/", false), None);
    }

    #[test]
    fn loopback_and_link_local_addresses_are_inward() {
        for (ip, inner) in [
            ("127.0.0.1", true),
            ("::1", true),
            ("169.254.169.254", true),
            ("fe80::1", true),
            ("::ffff:127.0.0.1", true),
            ("0.0.0.0", true),
            ("10.1.2.3", false),
            ("93.184.216.34", false),
        ] {
            assert_eq!(inward(ip.parse().unwrap()), inner, "{ip}");
        }
    }
}
