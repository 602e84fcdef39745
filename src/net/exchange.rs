//! The one HTTP/1.1 exchange every request of the crate goes through: the Streamable HTTP
//! POSTs, the GET event stream and its resumptions, the session's DELETE, the legacy SSE
//! stream and its POSTs, requests forwarded to a proxy, and the OAuth client's requests.
//!
//! The head is written and the response read by `http1` (sans I/O), over a connection of the
//! crate's one stack (a `CONNECT` tunnel, our TCP, TLS: see `stack::connections`), kept alive
//! between requests in [`Kept`]. The connection's secrets (see `secrets`) are added to the head
//! here, as it is written, and nowhere else; the head and the start of the body go out in one
//! write (one TCP segment, one TLS record).
//!
//! Redirects are not followed (a 3xx is returned as it is); every phase has its own bound or
//! the request's deadline as one overall bound (see [`Budget`]); an event stream's body has no
//! bound but the deadline (see [`Budget::stream`]); a connection goes back for reuse only when
//! its response was read to its end and the server did not ask to close it (never one to a
//! proxy the request was forwarded to: proxies differ in keeping those alive); and
//! [`Kept::shutdown`] interrupts every blocked read.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ureq::http::{Request, Response};
use ureq::unversioned::resolver::Resolver;
use ureq::unversioned::transport::time::{Duration as UDuration, Instant as UInstant};
use ureq::unversioned::transport::{
    ConnectionDetails, Connector, NextTimeout, ShutdownHandle, Transport,
};
use ureq::{Body, Timeout};

use super::http1;

/// The connection stack a connection's exchanges run on (see `stack::connections`).
pub(crate) type Stack = super::stack::Connections;

type RunConnector =
    dyn Fn(&ConnectionDetails) -> Result<Box<dyn Transport>, ureq::Error> + Send + Sync;
type RegisterShutdown = dyn Fn(Weak<dyn ShutdownHandle>) -> Result<(), ureq::Error> + Send + Sync;

/// How many shards a connection's kept connections are spread over: up to eight threads calling
/// at once each get their own (with four, pairs of threads still queued on a shard's lock).
pub(crate) const SHARDS: usize = 8;

/// A connection's input buffer: it also bounds a response's head.
pub(crate) const INPUT_BUFFER: usize = 16 * 1024;

/// The `User-Agent` of every request.
pub(crate) const USER_AGENT: &str = concat!("mcp-runtime/", env!("CARGO_PKG_VERSION"));

/// How many idle connections a shard keeps (a shard serves one or a few calling threads, and
/// the workers of their calls): the list grows only with real concurrency.
const IDLE_PER_SHARD: usize = 64;

/// An idle connection older than this is closed rather than reused: a
/// connection a middlebox or a sleeping laptop dropped without a word passes the liveness
/// probe, and a POST written into it could only fail.
const MAX_IDLE_AGE: Duration = Duration::from_secs(15);

/// An idle connection, and until when it may be reused.
type Idle = (Instant, Box<dyn Transport>);

/// How long a connection may stay idle after `response`: `MAX_IDLE_AGE`, or less when the
/// server says it keeps idle connections for less (`Keep-Alive: timeout=N`, as Node's HTTP
/// server sends `timeout=5`), a second before the server's end so that a request is not
/// written into a connection the server is closing. Zero: not kept.
fn keep_for(response: &Response<()>) -> Duration {
    let said = response
        .headers()
        .get_all("keep-alive")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("timeout")
                .then(|| v.trim().parse::<u64>().ok())?
        })
        .min();
    match said {
        Some(seconds) => Duration::from_secs(seconds.saturating_sub(1)).min(MAX_IDLE_AGE),
        None => MAX_IDLE_AGE,
    }
}

/// Whether an exchange on a kept connection failed as the server closing it does, before any
/// byte of a response: a request that is safe to repeat then goes again on a new connection.
fn closed_before_response(e: &ureq::Error, connection: &mut dyn Transport) -> bool {
    let kind = match e {
        ureq::Error::Io(e) => e.kind(),
        _ => return false,
    };
    matches!(
        kind,
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::NotConnected
    ) && connection.buffers().input().is_empty()
}

/// The kept-alive connections of one HTTP connection config, by shard (see `web::Remote`), and
/// the handles that interrupt the ones in use.
pub(crate) struct Kept {
    /// Runs the connection stack (also for the tunnel's own connection to its proxy).
    run_connector: Arc<RunConnector>,
    /// Keeps a handle to each new connection's socket for [`Kept::shutdown`].
    register_shutdown: Arc<RegisterShutdown>,
    config: ureq::config::Config,
    /// What only goes on the wire (see `secrets`), added to the heads of requests to its origin.
    secrets: Option<Arc<super::secrets::Secrets>>,
    /// The requests go to a proxy as they are: a connection each, never kept.
    forwards: bool,
    /// The host is looked up within the connect phase's bound, before the connection is made
    /// (the OAuth client's requests, one per connection); else when `Tcp` connects.
    bounded_lookup: bool,
    idle: [Mutex<Vec<Idle>>; SHARDS],
    handles: Arc<Mutex<Handles>>,
    /// Set by [`Kept::shutdown`]: no new connection, none kept.
    down: AtomicBool,
}

#[derive(Default)]
struct Handles {
    down: bool,
    live: Vec<Weak<dyn ShutdownHandle>>,
}

/// The bounds of one exchange: each phase's own, and the
/// request's deadline over all of them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    pub(crate) deadline: Option<Instant>,
    pub(crate) connect: Duration,
    pub(crate) send: Duration,
    pub(crate) receive: Duration,
    /// The body is an event stream, which may stay open (and silent) for as long as the
    /// session: its reads have no bound but the deadline.
    pub(crate) stream: bool,
}

impl Budget {
    /// Every phase bounded by `deadline` only.
    pub(crate) fn until(deadline: Instant) -> Budget {
        let left = deadline.saturating_duration_since(Instant::now());
        Budget {
            deadline: Some(deadline),
            connect: left,
            send: left,
            receive: left,
            stream: false,
        }
    }

    /// The same bounds for an event stream's request (see [`Budget::stream`]).
    pub(crate) fn streaming(self) -> Budget {
        Budget {
            stream: true,
            ..self
        }
    }

    /// The timeout of a phase that started at `start` and may last `phase` (`None`: no bound
    /// of its own).
    fn next(&self, start: Instant, phase: Option<Duration>, reason: Timeout) -> NextTimeout {
        let phase_end = phase.map(|p| start + p);
        let (end, reason) = match (self.deadline, phase_end) {
            (Some(d), Some(p)) if d <= p => (Some(d), Timeout::Global),
            (Some(d), None) => (Some(d), Timeout::Global),
            (_, p) => (p, reason),
        };
        NextTimeout {
            after: match end {
                Some(end) => UDuration::Exact(end.saturating_duration_since(Instant::now())),
                None => UDuration::NotHappening,
            },
            reason,
            per_read: None,
            per_write: None,
        }
    }
}

fn expired(timeout: &NextTimeout) -> Result<(), ureq::Error> {
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok(())
}

impl Kept {
    /// The connections of `stack` with `config` (its TLS, tunnel and buffers), whose requests
    /// get `secrets` (see [`Kept`]'s fields for `forwards` and `bounded_lookup`).
    pub(crate) fn new(
        stack: Stack,
        config: ureq::config::Config,
        secrets: Option<Arc<super::secrets::Secrets>>,
        forwards: bool,
        bounded_lookup: bool,
    ) -> Kept {
        let run_connector: Arc<RunConnector> = Arc::new(move |details: &ConnectionDetails| {
            let out = stack
                .connect(details, None)?
                .ok_or(ureq::Error::ConnectionFailed)?;
            Ok(Box::new(out) as Box<dyn Transport>)
        });
        let handles: Arc<Mutex<Handles>> = Arc::default();
        let weak = Arc::downgrade(&handles);
        let register_shutdown: Arc<RegisterShutdown> = Arc::new(move |handle| {
            let Some(handles) = weak.upgrade() else {
                return Ok(());
            };
            let mut h = handles.lock();
            if h.down {
                return Err(io::Error::new(io::ErrorKind::NotConnected, "shut down").into());
            }
            h.live.retain(|w| w.strong_count() > 0);
            h.live.push(handle);
            Ok(())
        });
        Kept {
            run_connector,
            register_shutdown,
            config,
            secrets: secrets.filter(|s| !s.is_empty()),
            forwards,
            bounded_lookup,
            idle: Default::default(),
            handles,
            down: AtomicBool::new(false),
        }
    }

    /// Interrupts every blocked read, drops the idle connections and refuses new ones.
    pub(crate) fn shutdown(&self) {
        self.down.store(true, Ordering::SeqCst);
        let live = {
            let mut h = self.handles.lock();
            h.down = true;
            std::mem::take(&mut h.live)
        };
        for shard in &self.idle {
            let idle = std::mem::take(&mut *shard.lock());
            drop(idle);
        }
        for handle in live.iter().filter_map(Weak::upgrade) {
            handle.shutdown();
        }
    }

    /// Sends `request` with `body` on a kept-alive connection of `shard` (or a new one) and
    /// reads the response head. The body is read from the response; the connection goes back
    /// once it was read to its end. A request that is `safe` to repeat goes again, once, on a
    /// new connection when a kept one fails before any byte of a response (the server closed
    /// it as the request was written); any other request fails.
    pub(crate) fn send(
        self: &Arc<Self>,
        shard: usize,
        request: Request<()>,
        body: &[u8],
        budget: Budget,
        safe: bool,
    ) -> Result<Response<Body>, ureq::Error> {
        let mut head = Vec::with_capacity(256);
        http1::write_head(&request, body.len(), USER_AGENT, &mut head);
        if let Some(secrets) = self.secrets.as_ref().filter(|s| s.are_for(request.uri())) {
            secrets.apply(&mut head);
        }
        let exchange = |connection: &mut dyn Transport| {
            send_request(&head, body, connection, &budget)?;
            receive_response(connection, &budget)
        };
        let kept = self.idle_connection(shard);
        let reused = kept.is_some();
        let mut connection = match kept {
            Some(c) => c,
            None => self.new_connection(request.uri(), &budget)?,
        };
        let head = match exchange(&mut *connection) {
            Ok(head) => head,
            Err(e) if reused && safe && closed_before_response(&e, &mut *connection) => {
                log::debug!(
                    "a kept connection ended before its response ({e}); the request goes \
                     again on a new one"
                );
                connection = self.new_connection(request.uri(), &budget)?;
                exchange(&mut *connection)?
            }
            Err(e) => return Err(e),
        };
        let keep = if head.must_close || self.forwards {
            Duration::ZERO
        } else {
            keep_for(&head.response)
        };
        let reader = if head.body.is_done() {
            self.put_back(shard, connection, keep);
            BodyReader::empty(self, shard, budget)
        } else {
            BodyReader {
                framing: head.body,
                keep,
                connection: Some(connection),
                kept: Arc::downgrade(self),
                shard,
                budget,
                started: Instant::now(),
                remote_closed: false,
            }
        };
        let (parts, ()) = head.response.into_parts();
        Ok(Response::from_parts(parts, Body::builder().reader(reader)))
    }

    /// An idle connection of `shard` that may still be reused and is open.
    fn idle_connection(&self, shard: usize) -> Option<Box<dyn Transport>> {
        if self.down.load(Ordering::SeqCst) {
            return None;
        }
        let idle = &self.idle[shard % self.idle.len()];
        loop {
            let (until, mut c) = idle.lock().pop()?;
            if Instant::now() < until && c.is_open() {
                return Some(c);
            }
        }
    }

    /// A new connection to `uri`.
    fn new_connection(
        &self,
        uri: &ureq::http::Uri,
        budget: &Budget,
    ) -> Result<Box<dyn Transport>, ureq::Error> {
        if self.down.load(Ordering::SeqCst) {
            return Err(
                io::Error::new(io::ErrorKind::NotConnected, "the connection is closed").into(),
            );
        }
        let start = Instant::now();
        let timeout = budget.next(start, Some(budget.connect), Timeout::Connect);
        expired(&timeout)?;
        let resolver = super::tcp::ResolveOnConnect;
        // A proxy looks the server up (the network it is in may be the only one that can), and
        // the tunnel connector looks the proxy up.
        let addrs = if self.bounded_lookup && self.config.proxy().is_none() && !self.forwards {
            ureq::unversioned::resolver::DefaultResolver::default().resolve(
                uri,
                &self.config,
                timeout,
            )?
        } else {
            resolver.empty()
        };
        let timeout = budget.next(start, Some(budget.connect), Timeout::Connect);
        expired(&timeout)?;
        let details = ConnectionDetails {
            uri,
            addrs,
            config: &self.config,
            // As a request with settings of its own (see `tls`: a connection with a client
            // certificate then never resumes a TLS session, which some servers refuse).
            request_level: true,
            resolver: &resolver,
            now: UInstant::now(),
            timeout,
            current_time: Arc::new(UInstant::now),
            run_connector: Arc::clone(&self.run_connector),
            register_shutdown: Arc::clone(&self.register_shutdown),
        };
        let transport = (self.run_connector)(&details)?;
        if details.needs_tls() && !transport.is_tls() {
            return Err(ureq::Error::TlsRequired);
        }
        Ok(transport)
    }

    /// Keeps a connection whose exchange ended cleanly for the next request of its shard, for
    /// `keep` at most (zero: closed), and closes the shard's connections that are past theirs
    /// (outside the lock).
    fn put_back(&self, shard: usize, mut connection: Box<dyn Transport>, keep: Duration) {
        // Unread input means the server sent more than its response; `is_open` here also
        // readies the transport's next probe (see `tcp`).
        if keep.is_zero() || !connection.buffers().input().is_empty() || !connection.is_open() {
            return;
        }
        if self.down.load(Ordering::SeqCst) {
            return;
        }
        let now = Instant::now();
        let (stale, kept) = {
            let mut idle = self.idle[shard % self.idle.len()].lock();
            // Nothing to sort out (and nothing allocated) unless a connection is past its time.
            let stale: Vec<Idle> = if idle.iter().any(|(until, _)| *until <= now) {
                let (stale, fresh) = std::mem::take(&mut *idle)
                    .into_iter()
                    .partition(|(until, _)| *until <= now);
                *idle = fresh;
                stale
            } else {
                Vec::new()
            };
            let kept = if idle.len() < IDLE_PER_SHARD {
                idle.push((now + keep, connection));
                None
            } else {
                Some(connection)
            };
            (stale, kept)
        };
        drop((stale, kept));
        // A shutdown that ran meanwhile may have missed the one just kept.
        if self.down.load(Ordering::SeqCst) {
            let idle = std::mem::take(&mut *self.idle[shard % self.idle.len()].lock());
            drop(idle);
        }
    }
}

/// Writes the head and the body, a buffer at a time: a request that fits in the output buffer
/// is one write.
fn send_request(
    head: &[u8],
    body: &[u8],
    connection: &mut dyn Transport,
    budget: &Budget,
) -> Result<(), ureq::Error> {
    let start = Instant::now();
    let mut parts = [head, body];
    while parts.iter().any(|p| !p.is_empty()) {
        let output = connection.buffers().output();
        if output.is_empty() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "no room to write").into());
        }
        let mut n = 0;
        for part in &mut parts {
            let take = part.len().min(output.len() - n);
            output[n..n + take].copy_from_slice(&part[..take]);
            *part = &part[take..];
            n += take;
        }
        let timeout = budget.next(start, Some(budget.send), Timeout::SendRequest);
        expired(&timeout)?;
        connection.transmit_output(n, timeout)?;
    }
    Ok(())
}

/// Reads the final response's head (skipping interim ones).
fn receive_response(
    connection: &mut dyn Transport,
    budget: &Budget,
) -> Result<http1::Head, ureq::Error> {
    let start = Instant::now();
    loop {
        let timeout = budget.next(start, Some(budget.receive), Timeout::RecvResponse);
        expired(&timeout)?;
        let progress = connection.maybe_await_input(timeout)?;
        let input = connection.buffers().input();
        match http1::parse_head(input).map_err(malformed)? {
            http1::Parsed::Final(used, head) => {
                connection.buffers().input_consume(used);
                return Ok(head);
            }
            http1::Parsed::Interim(used) => {
                connection.buffers().input_consume(used);
                continue;
            }
            http1::Parsed::Partial => connection.buffers().input_consume(0),
        }
        if !progress {
            // A full buffer without a whole head: the head is too large to read.
            let held = connection.buffers().input().len();
            if held >= INPUT_BUFFER {
                return Err(ureq::Error::Io(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the response's head is larger than the {} bytes read for it",
                        INPUT_BUFFER
                    ),
                )));
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection before its response",
            )
            .into());
        }
    }
}

fn malformed(e: http1::Malformed) -> ureq::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string()).into()
}

/// A response's body, read from its connection; the connection goes back for reuse once the
/// body was read to its end (dropped before that, it is closed).
struct BodyReader {
    framing: http1::Framing,
    /// How long the connection may be kept once the body is read (zero: closed).
    keep: Duration,
    connection: Option<Box<dyn Transport>>,
    kept: Weak<Kept>,
    shard: usize,
    budget: Budget,
    started: Instant,
    remote_closed: bool,
}

impl BodyReader {
    fn empty(kept: &Arc<Kept>, shard: usize, budget: Budget) -> BodyReader {
        BodyReader {
            framing: http1::Framing::Empty,
            keep: Duration::ZERO,
            connection: None,
            kept: Arc::downgrade(kept),
            shard,
            budget,
            started: Instant::now(),
            remote_closed: false,
        }
    }

    fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, ureq::Error> {
        let Some(connection) = &mut self.connection else {
            return Ok(0);
        };
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.framing.is_done() {
                self.ended()?;
                return Ok(0);
            }
            if connection.buffers().can_use_input() {
                let (used, produced) = self
                    .framing
                    .read(connection.buffers().input(), buf)
                    .map_err(malformed)?;
                connection.buffers().input_consume(used);
                if produced > 0 {
                    return Ok(produced);
                }
                if used > 0 {
                    continue;
                }
            }
            if self.remote_closed {
                self.ended()?;
                return Ok(0);
            }
            let phase = (!self.budget.stream).then_some(self.budget.receive);
            let timeout = self.budget.next(self.started, phase, Timeout::RecvBody);
            expired(&timeout)?;
            let progress = match connection.maybe_await_input(timeout) {
                Ok(p) => p,
                Err(ureq::Error::Io(e))
                    if matches!(
                        e.kind(),
                        io::ErrorKind::UnexpectedEof
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    self.remote_closed = true;
                    true
                }
                Err(e) => return Err(e),
            };
            let input = connection.buffers().input();
            let input_ended = input.is_empty();
            let (used, produced) = self.framing.read(input, buf).map_err(malformed)?;
            connection.buffers().input_consume(used);
            if produced > 0 {
                return Ok(produced);
            }
            if input_ended || !progress {
                // The connection ended (a read of nothing).
                self.remote_closed = true;
                self.ended()?;
                return Ok(0);
            }
        }
    }

    /// The body was read (or its connection ended): the connection goes back, or is closed.
    fn ended(&mut self) -> Result<(), ureq::Error> {
        let Some(connection) = self.connection.take() else {
            return Ok(());
        };
        if !self.framing.is_done() {
            // Ended by the connection: whole if the body ends with it, or if the last chunk
            // came (its trailers cut off).
            if matches!(self.framing, http1::Framing::Close) || self.framing.had_last_chunk() {
                return Ok(());
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection before the end of its response",
            )
            .into());
        }
        if let Some(kept) = self.kept.upgrade() {
            let keep = if self.remote_closed {
                Duration::ZERO
            } else {
                self.keep
            };
            kept.put_back(self.shard, connection, keep);
        }
        Ok(())
    }
}

impl io::Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_body(buf).map_err(ureq::Error::into_io)
    }
}
