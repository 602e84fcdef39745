//! HTTP plumbing shared by the Streamable HTTP and legacy SSE transports: the connection's
//! wire form (its secrets, proxy and TLS), its kept-alive connections, status and error
//! mapping, and reading an event stream. The settings a host gives are in `target`.
//!
//! - Redirects are never followed, on any origin: an MCP endpoint has no business redirecting
//!   its client, and following one would hand the configured headers, the session id and the
//!   token to wherever it points. A 3xx is [`Error::Redirect`], naming the (redacted) target.
//! - Secrets are added to a request's head as it is written, and only there (see `secrets` and
//!   `exchange`): every other part of the crate has the redacted URL and none of the configured
//!   headers, so no log level of any crate shows them. Every URL we render goes through
//!   `url::redact`, and error texts are scrubbed of URLs too.

use std::io::Read;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::http::Response;
use ureq::Body;

use super::sse_parser::{SseDecoder, SseEvent};
use crate::error::Error;
use crate::jsonrpc::Message;
use crate::net::target::{HttpOptions, HttpTarget};

/// Whether a message is a cancellation, which HTTP transports send in the background: a
/// caller that gave up must not wait on a round trip to say so.
pub(crate) fn is_cancellation(message: &Message) -> bool {
    matches!(message, Message::Notification(n) if n.method == crate::protocol::methods::CANCELLED)
}

/// How much of an error body goes into [`Error::Http`].
const ERROR_BODY_CAP: usize = 2048;
/// Read size for event streams.
const CHUNK: usize = 16 * 1024;

/// The kept-alive connections of one HTTP connection config, and one `shutdown` that
/// interrupts every blocked read of them.
///
/// A pool behind one lock, which every request takes twice, makes many threads calling at once
/// queue on it. So the connections are kept in a few shards, and each calling thread always
/// uses the same one (and so finds its own kept-alive connection).
pub(crate) struct Remote {
    /// Built on first use.
    kept: std::sync::OnceLock<Arc<crate::net::exchange::Kept>>,
    options: HttpOptions,
    wire: Wire,
    /// Set by `shutdown`: connections built after it are shut down at once.
    down: std::sync::atomic::AtomicBool,
}

/// A connection's wire form: what only goes on the wire, its proxy and TLS.
#[derive(Clone)]
pub(crate) struct Wire {
    /// The URL as the crate sees it and as we show it.
    pub(crate) split: crate::net::url::Split,
    pub(crate) secrets: Arc<crate::net::secrets::Secrets>,
    /// The proxy the connection goes through, if any.
    pub(crate) proxy: Option<crate::net::proxy::Proxy>,
    /// What the connection trusts and presents.
    pub(crate) tls: Arc<crate::net::tls::Tls>,
    /// The proxy's address, where the requests are sent as they are when they do not go
    /// through a tunnel (see `proxy::Proxy::forwards`; no credentials in it).
    via: Option<ureq::http::Uri>,
    /// The Unix socket or named pipe the server listens on, for a `unix://` or `pipe://` URL
    /// (see `url::local`).
    local: Option<Arc<crate::net::socket::Local>>,
}

impl Wire {
    /// The wire form of `target`, the proxy it is reached through (see `proxy::choose`) and
    /// its TLS (see `tls`).
    pub(crate) fn new(target: &HttpTarget, options: &HttpOptions) -> Result<Wire, Error> {
        let local = crate::net::url::local(&target.url).transpose()?;
        let mut split = crate::net::url::split(local.as_ref().map_or(&target.url, |l| &l.http))?;
        let proxy = match &local {
            // A local socket is reached directly, whatever the proxy settings say.
            Some(local) => {
                split.shown = local.shown.clone();
                None
            }
            None => crate::net::proxy::choose(
                target,
                options,
                &crate::net::proxy::ProxyEnv::from_process(),
            )?,
        };
        let scheme = split.public.scheme_str().unwrap_or("").to_owned();
        let forward = proxy.as_ref().filter(|p| p.forwards(&scheme));
        let secrets = Arc::new(crate::net::secrets::Secrets::new(&split, target, forward)?);
        // Forwarded requests must reach the proxy: an address that cannot be made is an error,
        // never a connection to the server itself (which would get the proxy's credentials).
        let via = match forward {
            Some(p) => Some(
                crate::net::proxy::address(&p.ureq).ok_or_else(|| Error::Config {
                    message: format!("the proxy {} has no usable address", p.url.redacted()),
                })?,
            ),
            None => None,
        };
        let needs_tls = scheme == "https" || proxy.as_ref().is_some_and(|p| p.url.is_https());
        let tls = crate::net::tls::settle(&target.tls_settings(options), needs_tls)?;
        if let Some(p) = &proxy {
            // Every message about the connection says which proxy it went through.
            split.shown = format!("{} (through the proxy {})", split.shown, p.url.redacted());
        }
        Ok(Wire {
            split,
            secrets,
            proxy,
            tls,
            via,
            local: local.map(|l| Arc::new(l.socket)),
        })
    }
}

impl Wire {
    /// Whether the requests go to the proxy as they are, not through a tunnel.
    pub(crate) fn forwards(&self) -> bool {
        self.via.is_some()
    }
}

static NEXT_SLOT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    /// Each thread's own agent slot, given out in turn.
    static SLOT: usize = NEXT_SLOT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    /// A slot lent for one exchange (see [`Remote::on_behalf_of`]).
    static BORROWED: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

impl Remote {
    pub(crate) fn new(options: &HttpOptions, wire: &Wire) -> Remote {
        Remote {
            kept: std::sync::OnceLock::new(),
            options: options.clone(),
            wire: wire.clone(),
            down: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The kept-alive connections every request of the connection goes through (see
    /// `exchange`).
    pub(crate) fn kept(&self) -> &Arc<crate::net::exchange::Kept> {
        let built = self.kept.get().is_none();
        let kept = self.kept.get_or_init(|| {
            Arc::new(crate::net::exchange::Kept::new(
                crate::net::stack::connections(
                    &self.wire.tls,
                    self.wire.via.clone(),
                    self.wire.local.clone(),
                ),
                config(&self.options, &self.wire),
                Some(Arc::clone(&self.wire.secrets)),
                self.wire.forwards(),
                false,
            ))
        });
        // One built while `shutdown` ran may have been missed by it: shut it down here.
        if built && self.down.load(std::sync::atomic::Ordering::SeqCst) {
            kept.shutdown();
        }
        kept
    }

    /// Sends `request` with `body` (see `exchange::Kept::send`) on the calling thread's shard.
    pub(crate) fn send(
        &self,
        request: ureq::http::Request<()>,
        body: &[u8],
        budget: crate::net::exchange::Budget,
        safe: bool,
    ) -> Result<Response<Body>, ureq::Error> {
        self.kept()
            .send(Remote::slot(), request, body, budget, safe)
    }

    /// The bounds of a request with `deadline` (see `exchange::Budget`): the deadline over
    /// every phase, else the connection's phase timeouts.
    pub(crate) fn budget(&self, deadline: Option<Instant>) -> crate::net::exchange::Budget {
        crate::net::exchange::Budget {
            deadline,
            connect: self.options.connect_timeout,
            send: self.options.post_timeout,
            receive: self.options.exchange_timeout,
            stream: false,
        }
    }

    /// The calling thread's slot: its own, or the one [`Remote::on_behalf_of`] lent it.
    pub(crate) fn slot() -> usize {
        BORROWED
            .with(|b| b.get())
            .unwrap_or_else(|| SLOT.with(|s| *s))
    }

    /// Runs `f` with `slot`'s shard as this thread's: a worker running a caller's exchange uses
    /// the caller's, so the connection the caller's other requests use (and keep alive)
    /// carries it too, rather than a new one per worker. The caller waits meanwhile, so no two
    /// threads contend for that shard more than before.
    pub(crate) fn on_behalf_of<T>(slot: usize, f: impl FnOnce() -> T) -> T {
        let before = BORROWED.with(|b| b.replace(Some(slot)));
        let out = f();
        BORROWED.with(|b| b.set(before));
        out
    }

    /// Interrupts every blocked read and refuses new requests.
    pub(crate) fn shutdown(&self) {
        self.down.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(kept) = self.kept.get() {
            kept.shutdown();
        }
    }
}

/// The connections' configuration: their TLS, the tunnel through a proxy, the phase timeouts
/// of a request without a deadline, and the buffers.
fn config(options: &HttpOptions, wire: &Wire) -> ureq::config::Config {
    // A tunnel is `ureq`'s connector's to make; forwarded requests go to the proxy's address,
    // with their absolute target and the proxy's credentials (see `secrets`).
    let tunnel = wire.proxy.as_ref().filter(|_| !wire.forwards());
    crate::net::tls::configure(ureq::Agent::config_builder(), &wire.tls)
        .timeout_connect(Some(options.connect_timeout))
        // Each connection has these buffers; MCP messages stream through them, so 128 KiB
        // each (the default) is memory for nothing: eight callers' connections at 16 + 8 KiB
        // keep about 270 KB less than at 32 + 16. The input one bounds response headers
        // (servers cap theirs at 8 KiB or so).
        .input_buffer_size(crate::net::exchange::INPUT_BUFFER)
        .output_buffer_size(8 * 1024)
        // The proxy was chosen with the connection (see `choose_proxy`); `ureq` is never left
        // to read the environment itself.
        .proxy(tunnel.map(|p| p.ureq.clone()))
        .build()
}

/// A request for `uri` with no headers yet (built in place: a builder moves the whole request
/// through each header it adds).
pub(crate) fn request(
    method: ureq::http::Method,
    uri: &ureq::http::Uri,
) -> ureq::http::Request<()> {
    let mut request = ureq::http::Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri.clone();
    request
}

/// The remaining time until `deadline` (at least a millisecond: zero means "no timeout" to
/// some of `ureq`'s checks).
pub(crate) fn left(deadline: std::time::Instant) -> Duration {
    deadline
        .saturating_duration_since(std::time::Instant::now())
        .max(Duration::from_millis(1))
}

/// Hands a `DPoP-Nonce` the answer to a request for `uri` carries to the auth provider, whatever
/// the status (a server may rotate its nonce with any answer).
pub(crate) fn note_nonce(
    response: &Response<Body>,
    auth: Option<&Arc<dyn crate::net::target::AuthProvider>>,
    uri: &ureq::http::Uri,
) {
    if let (Some(auth), Some(nonce)) = (auth, header(response, "dpop-nonce")) {
        auth.on_nonce(&uri.to_string(), &nonce);
    }
}

/// Whether a response is a redirect (which is never followed).
pub(crate) fn is_redirect(response: &Response<Body>) -> bool {
    let status = response.status();
    status.is_redirection() && status != ureq::http::StatusCode::NOT_MODIFIED
}

/// The [`Error::Redirect`] for a 3xx response to a request for `base`.
pub(crate) fn redirect_error(response: &Response<Body>, base: &ureq::http::Uri) -> Error {
    let location = match header(response, "location") {
        Some(l) => match crate::net::url::resolve(base, &l) {
            Ok(u) => {
                let shown = crate::net::url::redact(&u.to_string());
                if crate::net::url::origin(&u) == crate::net::url::origin(base) {
                    shown
                } else {
                    format!("{shown} (another origin)")
                }
            }
            Err(_) => crate::net::url::redact(&l),
        },
        None => "(no Location)".to_owned(),
    };
    Error::Redirect {
        status: response.status().as_u16(),
        location,
    }
}

/// Whether a failure means the server is not there at all (refused, unreachable): not an HTTP
/// status, not a timeout. The transport ends on it.
pub(crate) fn is_connection_failure(e: &ureq::Error) -> bool {
    use std::io::ErrorKind;
    match e {
        ureq::Error::Io(io) => matches!(
            io.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkUnreachable
                | ErrorKind::AddrNotAvailable
        ),
        ureq::Error::ConnectionFailed => true,
        _ => false,
    }
}

/// `text` with every URL in it redacted (for texts from `ureq`, which may embed one).
pub(crate) fn scrub(text: &str) -> String {
    if !text.contains("://") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if word.contains("://") {
            out.push_str(&crate::net::url::redact(word));
        } else {
            out.push_str(word);
        }
    }
    out
}

/// A response header as text.
pub(crate) fn header(response: &Response<Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Whether the response is an event stream.
pub(crate) fn is_event_stream(response: &Response<Body>) -> bool {
    const EVENT_STREAM: &[u8] = b"text/event-stream";
    response
        .headers()
        .get(ureq::http::header::CONTENT_TYPE)
        .and_then(|c| c.as_bytes().get(..EVENT_STREAM.len()))
        .is_some_and(|c| c.eq_ignore_ascii_case(EVENT_STREAM))
}

/// What a proxy's refusal of credentials asks for.
const PROXY_CREDENTIALS: &str = "it needs credentials, or others (give them in the proxy URL: \
                                 http://user:password@host:port)";

/// The [`Error::Http`] for a non-success response to a request for `shown` (reads at most a
/// little of the body). A refusal by the proxy a request was forwarded to (`407`, or a `401`
/// with `Proxy-Authenticate`, as tinyproxy answers wrong credentials) is not the server's: it
/// says so, and never reaches an auth provider.
///
/// `forwarded`: the request went to a proxy as it was (see [`Wire`]); a `401` without a
/// `Bearer` challenge (the only one MCP servers send) may then be the proxy's (tinyproxy
/// refuses wrong credentials with `401` and `WWW-Authenticate: Basic`), and the error says so.
pub(crate) fn status_error(response: Response<Body>, shown: &str, forwarded: bool) -> Error {
    let status = response.status().as_u16();
    if status == 407 || (status == 401 && header(&response, "proxy-authenticate").is_some()) {
        return Error::closed(format!(
            "the request to {shown} failed: the proxy refused it (HTTP {status}): \
             {PROXY_CREDENTIALS}"
        ));
    }
    // The schemes MCP servers challenge with: `Bearer`, and `DPoP` for bound tokens.
    let bearer = header(&response, "www-authenticate").is_some_and(|c| {
        let c = c.trim_start().to_ascii_lowercase();
        c.starts_with("bearer") || c.starts_with("dpop")
    });
    if forwarded && status == 401 && !bearer {
        return Error::closed(format!(
            "the request to {shown} failed: HTTP 401 without the Bearer (or DPoP) challenge \
             an MCP server sends: if it is the proxy's, {PROXY_CREDENTIALS}"
        ));
    }
    let www_authenticate = header(&response, "www-authenticate");
    let mut body = Vec::new();
    let _ = response
        .into_body()
        .into_with_config()
        .limit(u64::MAX)
        .reader()
        .take(ERROR_BODY_CAP as u64)
        .read_to_end(&mut body);
    Error::Http {
        status,
        body: String::from_utf8_lossy(&body).trim().to_owned(),
        www_authenticate,
    }
}

/// Maps a `ureq` failure (no HTTP status) to our error; `url` is shown as is (pass it redacted).
pub(crate) fn transport_error(e: ureq::Error, url: &str, what: &str) -> Error {
    match e {
        ureq::Error::BodyExceedsLimit(limit) => Error::MessageTooLarge {
            limit: limit as usize,
        },
        ureq::Error::Timeout(which) => Error::TransportClosed {
            reason: format!("{what} to {url} timed out ({which})"),
            stderr_tail: Vec::new(),
        },
        ureq::Error::ConnectProxyFailed(why) => {
            // 407 is the status for it; some proxies (tinyproxy) answer 401.
            let hint = if why.contains("407") || why.contains("401") {
                format!(": {PROXY_CREDENTIALS}")
            } else {
                String::new()
            };
            Error::closed(format!(
                "{what} to {url} failed: the proxy refused the tunnel ({}){hint}",
                scrub(&why)
            ))
        }
        other => {
            // TLS failures come as `io: ...` or `rustls: ...`; say what to set where we can.
            let why = scrub(&other.to_string());
            let hint = crate::net::tls::hint(&why);
            Error::closed(format!("{what} to {url} failed: {why}{hint}"))
        }
    }
}

/// The most a body's buffer is given before its bytes arrive.
const PREALLOCATE_CAP: usize = 1024 * 1024;

/// Reads the full (capped) body of a response.
pub(crate) fn read_body(
    response: Response<Body>,
    limit: usize,
    url: &str,
) -> Result<Vec<u8>, Error> {
    // Sized from Content-Length when the server sent one (one allocation, not a series of
    // doublings); up front never beyond the limit, nor beyond a mebibyte (a length is only a
    // claim until the bytes come).
    // The header, not the body's own length: a body read by `exchange` does not know it. A
    // chunked body's length is not its `Content-Length`.
    let headers = response.headers();
    let chunked = headers.contains_key(ureq::http::header::TRANSFER_ENCODING);
    let expected = headers
        .get(ureq::http::header::CONTENT_LENGTH)
        .filter(|_| !chunked)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
        .map_or(0, |n| n.min(limit.min(PREALLOCATE_CAP) as u64) as usize);
    let mut bytes = Vec::with_capacity(expected);
    response
        .into_body()
        .into_with_config()
        .limit(limit as u64)
        .reader()
        .read_to_end(&mut bytes)
        .map_err(|e| transport_error(ureq::Error::from(e), url, "reading the response"))?;
    Ok(bytes)
}

/// The body of an event-stream response as a reader, with no size limit: each event is
/// capped by the decoder instead, since a stream may run for as long as the session.
pub(crate) fn stream_body(response: Response<Body>) -> ureq::BodyReader<'static> {
    response
        .into_body()
        .into_with_config()
        .limit(u64::MAX)
        .reader()
}

/// How an event stream stopped.
#[derive(Debug)]
pub(crate) enum StreamEnd {
    /// The server closed it.
    Ended,
    /// The callback asked to stop.
    Stopped,
    /// Reading failed, or an event was too large.
    Failed(Error),
}

/// Reads an event stream, feeding `decoder` and handing each event to `on_event`.
pub(crate) fn read_events(
    mut body: impl Read,
    decoder: &mut SseDecoder,
    on_event: &mut dyn FnMut(SseEvent) -> ControlFlow<()>,
) -> StreamEnd {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => {
                decoder.finish();
                return StreamEnd::Ended;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return StreamEnd::Failed(Error::closed(format!(
                    "the event stream broke: {}",
                    scrub(&e.to_string())
                )))
            }
        };
        let mut stop = false;
        let fed = decoder.feed(&buf[..n], &mut |event| {
            if !stop && on_event(event).is_break() {
                stop = true;
            }
        });
        if let Err(too_large) = fed {
            return StreamEnd::Failed(Error::MessageTooLarge {
                limit: too_large.limit,
            });
        }
        if stop {
            return StreamEnd::Stopped;
        }
    }
}

/// The JSON-RPC messages in a body or an event's data; what is not JSON-RPC is logged and
/// skipped.
pub(crate) fn messages(server: &str, payload: &[u8]) -> Vec<Message> {
    let trimmed = super::lines::trim_line(payload);
    if trimmed.iter().all(u8::is_ascii_whitespace) {
        return Vec::new();
    }
    match Message::parse(trimmed) {
        Ok(m) => m,
        Err(e) => {
            log::debug!("[{server}] skipping a payload that is {e}");
            Vec::new()
        }
    }
}
