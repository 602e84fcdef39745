//! What a host says about a remote server and the HTTP transports: the target (URL, headers,
//! auth provider, proxy, CA and client certificate), the limits and timings, and the
//! `Authorization` hook OAuth plugs into. Values that may be secrets are never in `Debug`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Supplies the `Authorization` header value before each request (so a token can refresh).
/// OAuth flows plug in here.
///
/// When the server answers a request `401`, or `403` with an `insufficient_scope` challenge,
/// the transport asks the provider whether to re-send it (after a refresh, a login or a
/// step-up the provider ran); `retries` counts the re-sends this request has had already after
/// answers of the same status (its `401`s for `on_unauthorized`, its `403`s for
/// `on_forbidden`), so a provider keeps its own budget for each. The transport re-sends at
/// most [`MAX_AUTH_RETRIES`] times per status. These run on the calling thread, never under a
/// lock of the manager's. A method that panics is caught and logged: it gives no header and no
/// re-send, and the request fails with its [`Error::Internal`](crate::Error::Internal) when
/// the server then refuses it.
pub trait AuthProvider: Send + Sync {
    /// The header value, e.g. `Bearer abc`; `None` sends no `Authorization` header.
    fn authorization(&self) -> Option<String>;

    /// The headers that authorize one request, `method` to `url` (without its query): by
    /// default `Authorization` from [`authorization`](AuthProvider::authorization). A provider
    /// whose tokens are bound to a key (DPoP) adds the proof it made for this request.
    fn authorize_request(&self, method: &str, url: &str) -> Vec<(String, String)> {
        let _ = (method, url);
        self.authorization()
            .map(|value| vec![("Authorization".to_owned(), value)])
            .unwrap_or_default()
    }

    /// The server sent a `DPoP-Nonce` (with any answer to a request for `url`): the proofs that
    /// follow carry it.
    fn on_nonce(&self, url: &str, nonce: &str) {
        let _ = (url, nonce);
    }

    /// The server answered `401` (with its `WWW-Authenticate`, if any): true to re-send.
    fn on_unauthorized(&self, www_authenticate: Option<&str>, retries: u32) -> bool {
        let _ = (www_authenticate, retries);
        false
    }

    /// The server answered `403` with this `WWW-Authenticate`: true to re-send (after a
    /// step-up to the scopes it asks for).
    fn on_forbidden(&self, www_authenticate: &str, retries: u32) -> bool {
        let _ = (www_authenticate, retries);
        false
    }

    /// Why the provider last declined to re-send (a refresh the authorization server refused,
    /// a login nobody may run here): the request then fails with this error instead of the
    /// server's bare `401`/`403`, so a status says what to do.
    fn refusal(&self) -> Option<crate::error::Error> {
        None
    }
}

/// The most times one request is re-sent after `401` answers, and after `403` answers.
pub const MAX_AUTH_RETRIES: u32 = 3;

/// A remote server: its URL, the headers to send, and an optional auth provider.
#[derive(Clone, Default)]
pub struct HttpTarget {
    /// The server's URL (`http://` or `https://`).
    pub url: String,
    /// Headers sent with every request (values may be secrets: never logged).
    pub headers: Vec<(String, String)>,
    /// Provides `Authorization` per request, when set.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// This server's proxy: a proxy URL (`http://[user:password@]host:port`, or `https://`),
    /// used whatever the host (loopback included); `direct` to reach it without one whatever
    /// the environment says. `None`: [`HttpOptions::proxy`], else the environment's
    /// (`https_proxy`, `no_proxy`, ...: see *Networks* in the `transport` module's docs).
    pub proxy: Option<String>,
    /// A PEM file of CAs this server's certificate may chain to, trusted beside the system's
    /// (see *Networks* in the `transport` module's docs).
    pub ca_file: Option<PathBuf>,
    /// The client certificate (PEM: the certificate, then its chain) this server, and its
    /// OAuth endpoints, are shown; with [`HttpTarget::client_key`].
    pub client_cert: Option<PathBuf>,
    /// The unencrypted PEM private key of [`HttpTarget::client_cert`] (never logged).
    pub client_key: Option<PathBuf>,
}

impl HttpTarget {
    /// A target with no extra headers.
    pub fn new(url: impl Into<String>) -> HttpTarget {
        HttpTarget {
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            proxy: None,
            ca_file: None,
            client_cert: None,
            client_key: None,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> HttpTarget {
        self.headers.push((name.into(), value.into()));
        self
    }
}

impl fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials: show the names only; the URL redacted.
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpTarget")
            .field("url", &super::url::redact(&self.url))
            .field("headers", &names)
            .field("auth", &self.auth.is_some())
            .field("proxy", &super::proxy::shown(&self.proxy))
            .field("ca_file", &self.ca_file)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .finish()
    }
}

/// What one connection is told to trust and present (paths as configured: `~/` is the home
/// directory; a relative path was made absolute against the project by the config). The same
/// in both builds; without the `tls` feature a connection that names any of them is refused
/// (see `tls_off`).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    /// The server's `caFile`.
    pub(crate) ca_file: Option<PathBuf>,
    /// The host's, for every server (only ever used by a TLS connection).
    pub(crate) default_ca_file: Option<PathBuf>,
    /// The server's `clientCert` and `clientKey`.
    pub(crate) client_cert: Option<PathBuf>,
    pub(crate) client_key: Option<PathBuf>,
}

impl HttpTarget {
    /// What a connection to this target trusts and presents (`options` gives the host's CA).
    pub(crate) fn tls_settings(&self, options: &HttpOptions) -> TlsSettings {
        TlsSettings {
            ca_file: self.ca_file.clone(),
            default_ca_file: options.ca_file.clone(),
            client_cert: self.client_cert.clone(),
            client_key: self.client_key.clone(),
        }
    }
}

impl PartialEq for HttpTarget {
    fn eq(&self, other: &Self) -> bool {
        let same_auth = match (&self.auth, &other.auth) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        self.url == other.url
            && self.headers == other.headers
            && same_auth
            && self.proxy == other.proxy
            && self.ca_file == other.ca_file
            && self.client_cert == other.client_cert
            && self.client_key == other.client_key
    }
}

/// Limits and timings of the HTTP transports, and the proxy of those that name none.
/// `Debug` shows the proxy without its credentials.
#[derive(Clone)]
pub struct HttpOptions {
    /// The largest JSON body or SSE event accepted.
    pub max_message_bytes: usize,
    /// Bound on opening a TCP (and TLS) connection (a request's own deadline bounds it too).
    pub connect_timeout: Duration,
    /// Bound on one whole HTTP exchange (a POST and the stream answering it) that has no
    /// deadline of its own (a call with a progress callback, whose deadline moves). Every other
    /// request is bounded by its caller's deadline, and a call that ends (timeout, cancel)
    /// ends its exchange at once.
    pub exchange_timeout: Duration,
    /// Bound on a notification or response POST.
    pub post_timeout: Duration,
    /// Bound on the DELETE that ends a session at close (1 s by default): `close` never takes
    /// longer than this.
    pub close_timeout: Duration,
    /// How many times a cut response stream is resumed with `Last-Event-ID`.
    pub resume_attempts: u32,
    /// The reconnection delay when the server gave none (`retry`).
    pub default_retry: Duration,
    /// The longest delay between reconnections of the GET stream.
    pub max_backoff: Duration,
    /// The proxy of every server that sets none of its own ([`HttpTarget::proxy`]): a proxy
    /// URL, or `direct`. It follows the environment's rules: `no_proxy` hosts, and loopback
    /// ones, are reached directly. `None`: the environment's (`https_proxy`, ...).
    pub proxy: Option<String>,
    /// A PEM file of CAs every server's certificate may chain to, beside the system's trust
    /// store and each server's own [`HttpTarget::ca_file`].
    pub ca_file: Option<PathBuf>,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("max_message_bytes", &self.max_message_bytes)
            .field("connect_timeout", &self.connect_timeout)
            .field("exchange_timeout", &self.exchange_timeout)
            .field("post_timeout", &self.post_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("resume_attempts", &self.resume_attempts)
            .field("default_retry", &self.default_retry)
            .field("max_backoff", &self.max_backoff)
            .field("proxy", &super::proxy::shown(&self.proxy))
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            max_message_bytes: 64 * 1024 * 1024,
            connect_timeout: Duration::from_secs(10),
            exchange_timeout: Duration::from_secs(15 * 60),
            post_timeout: Duration::from_secs(30),
            close_timeout: Duration::from_secs(1),
            resume_attempts: 3,
            default_retry: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            proxy: None,
            ca_file: None,
        }
    }
}
