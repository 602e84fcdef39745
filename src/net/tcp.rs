//! The connection under the one HTTP exchange: TCP (or a local socket), with fewer system calls
//! per request than `ureq`'s own TCP transport. Two differences, both about the calls made on
//! every request of a kept-alive connection:
//! - the check that a pooled connection is still open is one `recv(MSG_PEEK | MSG_DONTWAIT)`
//!   instead of switching the socket to non-blocking and back around a read;
//! - socket timeouts are set only when they change noticeably: a remaining time over two
//!   seconds is rounded down to the whole second, which keeps the same value, and so no system
//!   call, request after request. When such a rounded wait runs out, the rest of the real
//!   remaining time is waited too: a request never gives up early (nor late).
//!
//! Each blocking step is registered with the thread's current exchange (see `abort`), so a
//! call that ended can stop its exchange's I/O from another thread.
//!
//! And the host is resolved when a connection is opened, not for every request: the connection
//! details' resolver ([`ResolveOnConnect`]) resolves nothing and [`Tcp`] does it (OAuth's
//! requests resolve within their deadline first, see `exchange`).
//!
//! A server that listens on a Unix socket or a named pipe (`unix:///path`, `pipe:///pipe/name`,
//! see `url::local`) is connected to there instead, and its connection is read and written the
//! same way (see `socket`).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Weak};
use std::time::Duration;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, ShutdownHandle,
    Transport,
};

/// The agent's resolver: no lookup per request (see the module docs); [`Tcp`] resolves when it
/// connects.
#[derive(Debug, Default)]
pub(crate) struct ResolveOnConnect;

impl Resolver for ResolveOnConnect {
    fn resolve(
        &self,
        _uri: &Uri,
        _config: &Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        Ok(self.empty())
    }
}

/// The addresses to connect to: those a resolver already found (OAuth's exchanges resolve
/// within their deadline first), else the host's, of the configured IP family, at most 16 (the
/// connection details' resolver, [`ResolveOnConnect`], hands none over).
fn resolve(details: &ConnectionDetails, via: Option<&Uri>) -> Result<Vec<SocketAddr>, ureq::Error> {
    if !details.addrs.is_empty() && via.is_none() {
        return Ok(details.addrs.iter().copied().collect());
    }
    let uri = via.unwrap_or(details.uri);
    let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
        return Err(ureq::Error::HostNotFound);
    };
    let host_port =
        DefaultResolver::host_and_port(scheme, authority).ok_or(ureq::Error::HostNotFound)?;
    let found: Vec<SocketAddr> = details
        .config
        .ip_family()
        .keep_wanted(host_port.to_socket_addrs()?)
        .take(16)
        .collect();
    if found.is_empty() {
        return Err(ureq::Error::HostNotFound);
    }
    Ok(found)
}

/// Opens TCP connections (first in the connector chain): to the request's host, or to `via`,
/// a proxy the requests are forwarded to as they are (see `proxy::Proxy::forwards`), or to the
/// Unix socket or named pipe at `local`, where the server listens instead.
#[derive(Debug, Default)]
pub(crate) struct Tcp {
    pub(crate) via: Option<Uri>,
    pub(crate) local: Option<Arc<super::socket::Local>>,
}

impl<In: Transport> Connector<In> for Tcp {
    type Out = Either<In, TcpConnection>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(previous) = chained {
            return Ok(Some(Either::A(previous)));
        }
        let stream = match &self.local {
            Some(local) => {
                let deadline = details
                    .timeout
                    .not_zero()
                    .map(|t| std::time::Instant::now() + *t);
                super::socket::Socket::local(local, deadline)?
            }
            None => {
                let stream = connect_tcp(details, self.via.as_ref())?;
                if details.config.no_delay() {
                    stream.set_nodelay(true)?;
                }
                super::socket::Socket::Tcp(stream)
            }
        };
        let stream = Arc::new(stream);
        let handle: Weak<dyn ShutdownHandle> = Arc::downgrade(&stream) as Weak<dyn ShutdownHandle>;
        (details.register_shutdown)(handle)?;
        let config = details.config;
        Ok(Some(Either::B(TcpConnection {
            stream,
            buffers: LazyBuffers::new(config.input_buffer_size(), config.output_buffer_size()),
            read_timeout: None,
            write_timeout: None,
            just_read: false,
        })))
    }
}

/// A TCP connection to the request's host (or `via`), every address tried within one budget.
fn connect_tcp(details: &ConnectionDetails, via: Option<&Uri>) -> Result<TcpStream, ureq::Error> {
    // One budget for every address tried, not one each.
    let deadline = details
        .timeout
        .not_zero()
        .map(|t| std::time::Instant::now() + *t);
    let mut last = None;
    let mut stream = None;
    for addr in &resolve(details, via)? {
        let attempt = match deadline {
            Some(d) => match d.checked_duration_since(std::time::Instant::now()) {
                Some(left) if !left.is_zero() => TcpStream::connect_timeout(addr, left),
                _ => Err(ErrorKind::TimedOut.into()),
            },
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    match (stream, last) {
        (Some(s), _) => Ok(s),
        (None, Some(e)) if e.kind() == ErrorKind::TimedOut => {
            Err(ureq::Error::Timeout(ureq::Timeout::Connect))
        }
        (None, Some(e)) => Err(ureq::Error::Io(e)),
        (None, None) => Err(ureq::Error::HostNotFound),
    }
}

/// One connection (TCP, or a Unix socket's).
pub(crate) struct TcpConnection {
    stream: Arc<super::socket::Socket>,
    buffers: LazyBuffers,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// Data arrived since the last `is_open`: the next one needs no probe (see there).
    just_read: bool,
}

impl std::fmt::Debug for TcpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpConnection")
            .field("peer", &self.stream.peer())
            .finish()
    }
}

/// The socket timeout for what is left: coarse above two seconds (rounded down), exact below.
fn coarse(left: Duration) -> Duration {
    if left > Duration::from_secs(2) {
        Duration::from_secs(left.as_secs())
    } else {
        left.max(Duration::from_millis(1))
    }
}

/// The bound for this I/O step, or the timeout error when there is no time left.
fn bound(timeout: NextTimeout) -> Result<Option<Duration>, ureq::Error> {
    if timeout.after.is_not_happening() {
        return Ok(None);
    }
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok(Some(coarse(*timeout.after)))
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// What is left to wait after a rounded-down socket timeout `limit` ran out, when the real
/// remaining time was `exact`.
fn rest(exact: Option<Duration>, limit: Option<Duration>) -> Option<Duration> {
    match (exact, limit) {
        (Some(exact), Some(limit)) if exact > limit => {
            Some((exact - limit).max(Duration::from_millis(1)))
        }
        _ => None,
    }
}

/// The exact remaining time of this I/O step (None: no bound), or the timeout error.
fn exact(timeout: NextTimeout) -> Result<Option<Duration>, ureq::Error> {
    if timeout.after.is_not_happening() {
        return Ok(None);
    }
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok(Some(*timeout.after))
}

impl Transport for TcpConnection {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        let exact = exact(timeout)?;
        let mut limit = bound(timeout)?;
        let _watched = super::abort::watch(&self.stream)?;
        if limit != self.write_timeout {
            self.stream.set_write_timeout(limit)?;
            self.write_timeout = limit;
        }
        let mut output = &self.buffers.output()[..amount];
        let mut rounded = true;
        while !output.is_empty() {
            match (&*self.stream).write(output) {
                Ok(0) => return Err(ureq::Error::Io(ErrorKind::WriteZero.into())),
                Ok(n) => output = &output[n..],
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => match rest(exact, limit).filter(|_| rounded) {
                    Some(rest) => {
                        rounded = false;
                        limit = Some(rest);
                        self.stream.set_write_timeout(limit)?;
                        self.write_timeout = limit;
                    }
                    None => return Err(ureq::Error::Timeout(timeout.reason)),
                },
                Err(e) => return Err(ureq::Error::Io(e)),
            }
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = timeout.for_read();
        let exact = exact(timeout)?;
        let mut limit = bound(timeout)?;
        let _watched = super::abort::watch(&self.stream)?;
        if limit != self.read_timeout {
            self.stream.set_read_timeout(limit)?;
            self.read_timeout = limit;
        }
        let input = self.buffers.input_append_buf();
        let mut rounded = true;
        let amount = loop {
            match (&*self.stream).read(input) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if timed_out(&e) => match rest(exact, limit).filter(|_| rounded) {
                    // The rounded-down wait ran out: wait out the rest of the real time.
                    Some(rest) => {
                        rounded = false;
                        limit = Some(rest);
                        self.stream.set_read_timeout(limit)?;
                        self.read_timeout = limit;
                    }
                    None => return Err(ureq::Error::Timeout(timeout.reason)),
                },
                Err(e) => return Err(ureq::Error::Io(e)),
            }
        };
        self.buffers.input_appended(amount);
        self.just_read = amount > 0;
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // The exchange asks twice per request: when a connection goes back to the idle list
        // right after its response was read, and when it is taken out again. The second probe
        // sees everything the first would have (a closed socket, bytes after the body), so the
        // one right after a read is skipped: one probe per request, not two.
        if std::mem::take(&mut self.just_read) {
            return true;
        }
        // Nothing may be waiting on an idle kept-alive connection: data means the server sent
        // something unasked, EOF or an error means it is gone; "would block" means all is well.
        self.stream.is_idle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_timeouts_round_down_and_never_exceed() {
        assert_eq!(
            coarse(Duration::from_millis(59_999)),
            Duration::from_secs(59)
        );
        assert_eq!(
            coarse(Duration::from_millis(1_500)),
            Duration::from_millis(1_500)
        );
        assert_eq!(coarse(Duration::ZERO), Duration::from_millis(1));
        for ms in [0u64, 1, 999, 2_000, 2_001, 10_500, 600_000] {
            let left = Duration::from_millis(ms);
            assert!(coarse(left) <= left.max(Duration::from_millis(1)), "{ms}");
        }
    }
}
