//! Options of a connection and of a single call.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::handler::{ClientHandler, NoHandler};
use crate::cancel::CancelToken;
use crate::protocol::{Implementation, Progress, ProtocolVersion};
use crate::transport::{HttpOptions, HttpTarget, StdioCommand, StdioOptions};

/// Where a server lives and how to reach it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Endpoint {
    /// A local process speaking JSON-RPC over stdin/stdout.
    Stdio(StdioCommand),
    /// A Streamable HTTP server.
    Http(HttpTarget),
    /// A legacy HTTP+SSE server.
    Sse(HttpTarget),
    /// A URL whose transport was not named: Streamable HTTP first, then legacy SSE only when
    /// the `initialize` POST is answered 400, 404 or 405 (never on 401/403, network errors or
    /// 5xx).
    Url(HttpTarget),
}

impl Endpoint {
    /// A stdio server started from `program` and `args`.
    pub fn stdio<I, S>(program: impl Into<String>, args: I) -> Endpoint
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Endpoint::Stdio(StdioCommand::new(program, args))
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Endpoint {
        Endpoint::Http(HttpTarget::new(url))
    }

    /// A legacy HTTP+SSE server whose stream is at `url`.
    pub fn sse(url: impl Into<String>) -> Endpoint {
        Endpoint::Sse(HttpTarget::new(url))
    }

    /// A URL, with the transport detected (see [`Endpoint::Url`]).
    pub fn url(url: impl Into<String>) -> Endpoint {
        Endpoint::Url(HttpTarget::new(url))
    }

    /// The transport kind this endpoint starts with: `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            Endpoint::Stdio(_) => "stdio",
            Endpoint::Http(_) | Endpoint::Url(_) => "http",
            Endpoint::Sse(_) => "sse",
        }
    }
}

/// Which era of the protocol a connection speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraChoice {
    /// Find out: a stdio server is probed with `server/discover` first (bounded by
    /// [`ConnectOptions::probe_timeout`]), and speaks 2026-07-28 if it answers as a stateless
    /// server, else the `initialize` handshake (on a fresh process if the probe ended the first
    /// one); a server slow to answer that refuses `initialize` naming a stateless version is
    /// discovered again at it. A transport of the caller's ([`Client::with_transport`](crate::client::Client::with_transport))
    /// is not probed: it gets the handshake.
    #[default]
    Detect,
    /// The `initialize` handshake (2024-11-05 … 2025-11-25), with no probe.
    Handshake,
    /// 2026-07-28 only: probe, and fail unless the server speaks it.
    Stateless,
    /// What this server spoke last time (the manager reads it from its tool cache): a
    /// handshake version skips the probe, and if that handshake fails the server is probed
    /// afresh; a stateless version probes as [`EraChoice::Detect`] does (its `server/discover`
    /// is the first request anyway).
    Remembered(crate::protocol::ProtocolVersion),
}

/// How to connect, and the defaults of the connection's requests.
#[derive(Clone)]
pub struct ConnectOptions {
    /// Bound on the whole handshake (spawn, `initialize`, `notifications/initialized`).
    /// Default 30 s.
    pub timeout: Duration,
    /// Default bound on each later request. Default 60 s.
    pub request_timeout: Duration,
    /// Hard bound on a request whose timeout is extended by progress. Default 10 min.
    pub max_request_timeout: Duration,
    /// The host's answers to server requests, and its notification sink.
    pub handler: Arc<dyn ClientHandler>,
    /// Who we say we are.
    pub client_info: Implementation,
    /// Fires to abandon the handshake.
    pub cancel: Option<CancelToken>,
    /// stdio limits and close timings.
    pub stdio: StdioOptions,
    /// HTTP limits and timings.
    pub http: HttpOptions,
    /// Which protocol era to speak (default: detect it).
    pub era: EraChoice,
    /// Bound on the era probe's `server/discover` (within `timeout`): silence past it means a
    /// handshake-era server. Default 5 s.
    pub probe_timeout: Duration,
    /// Told the era the probe found as soon as it finds it, before the opening that follows:
    /// a handshake-era server as [`ProtocolVersion::latest`] (its own version comes with
    /// `initialize`'s answer), a stateless one as the version chosen. The manager shares it
    /// with other connections to the same server config, which then need no probe. Not called
    /// when nothing was probed; called on the connecting thread. Default: none.
    pub on_era_found: Option<Arc<dyn Fn(ProtocolVersion) + Send + Sync>>,
    /// The extensions the host enables, by name, with their settings (SEP-2133): declared in
    /// the client's capabilities as `extensions` (in `initialize`, or in every request's
    /// `_meta` in the stateless era), beside any the handler declares. What a server declared
    /// is [`Client::server_extension`](super::Client::server_extension). Default: the tasks
    /// extension ([`TASKS_EXTENSION`](crate::protocol::TASKS_EXTENSION)), which a call follows
    /// to its end without the host doing anything; remove it to have servers run every call the
    /// ordinary way.
    pub extensions: serde_json::Map<String, serde_json::Value>,
    /// How the connection traces (the `otel` feature; see docs/telemetry.md): a span per
    /// request by default, no baggage sent, no content recorded.
    #[cfg(feature = "otel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
    pub telemetry: crate::telemetry::Telemetry,
}

impl ConnectOptions {
    /// What the connection's telemetry is set with.
    pub(crate) fn telemetry_settings(&self) -> crate::telemetry::Settings {
        #[cfg(feature = "otel")]
        return self.telemetry.clone();
        #[cfg(not(feature = "otel"))]
        crate::telemetry::Settings
    }

    /// These options with every duration at most [`LONGEST_WAIT`](crate::cancel::LONGEST_WAIT)
    /// (what a connection uses).
    pub(crate) fn capped(&self) -> ConnectOptions {
        use crate::cancel::capped;
        let mut o = self.clone();
        for d in [
            &mut o.timeout,
            &mut o.request_timeout,
            &mut o.max_request_timeout,
            &mut o.probe_timeout,
            &mut o.stdio.close_grace,
            &mut o.http.connect_timeout,
            &mut o.http.exchange_timeout,
            &mut o.http.post_timeout,
            &mut o.http.close_timeout,
            &mut o.http.default_retry,
            &mut o.http.max_backoff,
        ] {
            *d = capped(*d);
        }
        o
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            max_request_timeout: Duration::from_secs(600),
            handler: Arc::new(NoHandler),
            client_info: Implementation::default(),
            cancel: None,
            stdio: StdioOptions::default(),
            http: HttpOptions::default(),
            era: EraChoice::Detect,
            probe_timeout: Duration::from_secs(5),
            on_era_found: None,
            extensions: serde_json::Map::from_iter([(
                crate::protocol::TASKS_EXTENSION.to_owned(),
                serde_json::json!({}),
            )]),
            #[cfg(feature = "otel")]
            telemetry: crate::telemetry::Telemetry::default(),
        }
    }
}

impl fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("timeout", &self.timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_request_timeout", &self.max_request_timeout)
            .field("client_info", &self.client_info)
            .field("stdio", &self.stdio)
            .field("http", &self.http)
            .field("era", &self.era)
            .field("extensions", &self.extensions.keys().collect::<Vec<_>>())
            .field("probe_timeout", &self.probe_timeout)
            .field("on_era_found", &self.on_era_found.is_some())
            .finish_non_exhaustive()
    }
}

/// A progress callback: called on the calling thread for each `notifications/progress`.
pub(crate) type ProgressFn<'a> = Box<dyn FnMut(&Progress) + Send + 'a>;

/// Options of one request (`call_tool`, `list_tools`, ...).
#[derive(Default)]
pub struct CallOptions<'a> {
    /// Bound on the request (default: the connection's `request_timeout`). With `on_progress`,
    /// each progress notification restarts it, up to `max_request_timeout` in all.
    pub timeout: Option<Duration>,
    /// Fires to abandon the request; the server is sent `notifications/cancelled`.
    pub cancel: Option<CancelToken>,
    /// Called on the calling thread for each progress notification. Setting it sends a
    /// progress token with the request.
    #[allow(clippy::type_complexity)] // spelled out: one name less for a host to learn
    pub on_progress: Option<Box<dyn FnMut(&Progress) + Send + 'a>>,
}

impl<'a> CallOptions<'a> {
    /// Options with a timeout.
    pub fn timeout(timeout: Duration) -> Self {
        CallOptions {
            timeout: Some(timeout),
            ..Default::default()
        }
    }

    /// Adds a cancel token.
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Adds a progress callback (and so a progress token on the request).
    pub fn with_progress(mut self, f: impl FnMut(&Progress) + Send + 'a) -> Self {
        self.on_progress = Some(Box::new(f));
        self
    }
}

impl fmt::Debug for CallOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel.is_some())
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}
