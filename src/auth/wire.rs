//! A small HTTP/1.1 client for the exchanges with authorization servers: the transports'
//! connection stack (name resolution, TCP, TLS: `transport::web::connections`, so a network
//! setting applies to both) without `ureq`'s request machinery, which at trace level logs every
//! byte sent and received (form bodies, token responses, the URL and `Location` of a redirect)
//! and would put tokens, codes and secrets in the host's logs. One request per connection
//! (`Connection: close`), one deadline over all of it, bodies capped, no redirect followed.
//! The response is read by `wire_read` on the transports' HTTP/1.1 parser.

use std::sync::Arc;
use std::time::Instant;

use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, Resolver};
use ureq::unversioned::transport::time::Instant as UInstant;
use ureq::unversioned::transport::{ConnectionDetails, Connector, NextTimeout, Transport};

use crate::transport::proxy;
use crate::transport::target::TlsSettings;
use crate::transport::tls;
use crate::transport::web::connections;
use crate::transport::{HttpOptions, HttpTarget};

/// A response.
pub(crate) struct Response {
    pub status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A header's value (the first, by case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header that may repeat (`Set-Cookie`).
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The deadline passed.
    Timeout,
    /// The body was larger than the cap.
    TooLarge(usize),
    /// Anything else (connection refused, TLS, a broken response), in words.
    Other(String),
}

/// The client.
pub(crate) struct Wire {
    /// `ureq`'s: the lookup runs within the exchange's deadline (the agents' resolver leaves it
    /// to the connector, which looks up without a bound).
    resolver: DefaultResolver,
    max_body: usize,
    /// The server's own proxy setting and the host's (see [`OAuthOptions`](super::OAuthOptions)).
    proxy: Option<String>,
    default_proxy: Option<String>,
    /// What the server's connections trust and present (its CA, its client certificate).
    tls: TlsSettings,
}

fn other(e: impl std::fmt::Display) -> Failure {
    Failure::Other(e.to_string())
}

fn from_ureq(e: ureq::Error) -> Failure {
    match e {
        ureq::Error::Timeout(_) => Failure::Timeout,
        e => other(e),
    }
}

impl Wire {
    pub(crate) fn new(
        max_body: usize,
        proxy: Option<String>,
        default_proxy: Option<String>,
        tls: TlsSettings,
    ) -> Wire {
        Wire {
            resolver: DefaultResolver::default(),
            max_body,
            proxy,
            default_proxy,
            tls,
        }
    }

    /// The proxy of a request to `url`, chosen as an MCP connection's is (the server's own
    /// setting for any host, else the host's or the environment's, with their `no_proxy` and
    /// loopback rules).
    fn proxy_for(&self, url: &str) -> Result<Option<proxy::Proxy>, Failure> {
        let target = HttpTarget {
            proxy: self.proxy.clone(),
            ..HttpTarget::new(url)
        };
        let options = HttpOptions {
            proxy: self.default_proxy.clone(),
            ..HttpOptions::default()
        };
        proxy::choose(&target, &options, &proxy::ProxyEnv::from_process()).map_err(other)
    }

    /// One request, all of it (resolution, connection, TLS, sending, the answer) before
    /// `deadline`, never cut by the abort of an MCP exchange it runs for (see
    /// `transport::abort::detached`).
    pub(crate) fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        deadline: Instant,
    ) -> Result<Response, Failure> {
        crate::transport::abort::detached(|| self.exchange(method, url, headers, body, deadline))
    }

    fn exchange(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        deadline: Instant,
    ) -> Result<Response, Failure> {
        let uri: Uri = url.parse().map_err(other)?;
        let left = || -> Result<NextTimeout, Failure> {
            let after = deadline.saturating_duration_since(Instant::now());
            if after.is_zero() {
                return Err(Failure::Timeout);
            }
            Ok(NextTimeout {
                after: after.into(),
                reason: ureq::Timeout::Global,
                per_read: None,
                per_write: None,
            })
        };
        let proxy = self.proxy_for(url)?;
        let needs_tls =
            uri.scheme_str() == Some("https") || proxy.as_ref().is_some_and(|p| p.url.is_https());
        let tls = tls::settle(&self.tls, needs_tls).map_err(other)?;
        let config = tls::configure(ureq::Agent::config_builder(), &tls)
            .proxy(proxy.as_ref().map(|p| p.ureq.clone()))
            .build();
        let addrs = match &proxy {
            // The proxy looks the server up (the network it is in may be the only one that
            // can), and the tunnel connector looks the proxy up.
            Some(_) => self.resolver.empty(),
            None => (self.resolver)
                .resolve(&uri, &config, left()?)
                .map_err(from_ureq)?,
        };
        let config = &config;
        let through = |f: Failure| match (&proxy, f) {
            (Some(p), Failure::Other(why)) => {
                Failure::Other(format!("{why} (through the proxy {})", p.url.redacted()))
            }
            (_, f) => f,
        };
        let proxy_tls = Arc::clone(&tls);
        let details = ConnectionDetails {
            uri: &uri,
            addrs,
            config,
            request_level: false,
            resolver: &self.resolver,
            now: UInstant::now(),
            timeout: left()?,
            current_time: Arc::new(UInstant::now),
            // The tunnel's own connection to the proxy: the same stack, without a proxy.
            run_connector: Arc::new(move |d: &ConnectionDetails| {
                let transport = connections(&proxy_tls, None)
                    .connect(d, None)?
                    .ok_or(ureq::Error::ConnectionFailed)?;
                Ok(transport.boxed())
            }),
            register_shutdown: Arc::new(|_| Ok(())),
        };
        let mut transport = connections(&tls, None)
            .connect(&details, None)
            .map_err(|e| through(from_ureq(e)))?
            .ok_or_else(|| other("no connector for this URL"))?;
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let host = uri.authority().map(|a| a.as_str()).unwrap_or("");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: mcp-runtime/{}\r\nConnection: close\r\n",
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in headers {
            // A value that came from a server (a registered secret, a token) must not be able
            // to end the line and add one of its own.
            let valid = ureq::http::HeaderName::from_bytes(k.as_bytes()).is_ok()
                && ureq::http::HeaderValue::from_str(v).is_ok();
            if !valid {
                return Err(other(format!(
                    "the header {k:?} would not be a valid HTTP header"
                )));
            }
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            head.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(body.unwrap_or_default());
        send(&mut transport, &out, &left)?;
        self.receive(&mut transport, &left, method == "HEAD")
    }

    fn receive(
        &self,
        t: &mut dyn Transport,
        left: &dyn Fn() -> Result<NextTimeout, Failure>,
        head_only: bool,
    ) -> Result<Response, Failure> {
        let mut reader = super::wire_read::Reader::new(self.max_body, head_only);
        loop {
            let progressed = match t.await_input(left()?) {
                Ok(p) => p,
                Err(ureq::Error::Timeout(_)) => return Err(Failure::Timeout),
                // A TLS peer that closes without close_notify: the end of a close-delimited body.
                Err(_) if reader.has_head() => false,
                Err(e) => return Err(other(e)),
            };
            let input = t.buffers().input();
            let n = input.len();
            let done = reader.feed(input);
            t.buffers().input_consume(n);
            if let Some(response) = done? {
                return Ok(response);
            }
            if !progressed && n == 0 {
                // The end of the stream: a body that runs to the close.
                return reader.end();
            }
        }
    }
}

fn send(
    t: &mut dyn Transport,
    bytes: &[u8],
    left: &dyn Fn() -> Result<NextTimeout, Failure>,
) -> Result<(), Failure> {
    let mut sent = 0;
    while sent < bytes.len() {
        let out = t.buffers().output();
        let n = out.len().min(bytes.len() - sent);
        if n == 0 {
            return Err(other("no output buffer"));
        }
        out[..n].copy_from_slice(&bytes[sent..sent + n]);
        t.transmit_output(n, left()?).map_err(from_ureq)?;
        sent += n;
    }
    Ok(())
}
