//! The library's own one-shot HTTP/1.1 requests (OAuth's discovery, registration and tokens, the
//! MCP Registry's entries, the command's telemetry export), on the transports' one exchange
//! (`net::exchange`) and connection stack (`net::stack::connections`), so a network setting
//! applies to all and every response is read by the one parser. One request per connection
//! (`Connection: close`), the host looked up and everything else done before one deadline,
//! bodies capped, no redirect followed, and never sent again (an authorization code is
//! single-use and a refresh token may rotate): a failure is the caller's to handle.

use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use ureq::http::{HeaderName, HeaderValue, Method, Uri};

use crate::net::exchange::{self, Budget, Kept};
use crate::net::target::TlsSettings;
use crate::net::target::{HttpOptions, HttpTarget};
use crate::net::{proxy, stack, tls};

/// A response.
pub(crate) struct Response {
    pub status: u16,
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))] // OAuth's, for now.
    pub(crate) headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[cfg_attr(not(feature = "oauth"), allow(dead_code))] // OAuth's, for now.
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
pub(crate) struct Fetch {
    max_body: usize,
    /// The server's own proxy setting and the host's (an OAuth provider's are its `OAuthOptions`).
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

impl Fetch {
    pub(crate) fn new(
        max_body: usize,
        proxy: Option<String>,
        default_proxy: Option<String>,
        tls: TlsSettings,
    ) -> Fetch {
        Fetch {
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
    /// `net::abort::detached`).
    pub(crate) fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        deadline: Instant,
    ) -> Result<Response, Failure> {
        crate::net::abort::detached(|| self.exchange(method, url, headers, body, deadline))
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
        let method = Method::from_bytes(method.as_bytes()).map_err(other)?;
        let proxy = self.proxy_for(url)?;
        let needs_tls =
            uri.scheme_str() == Some("https") || proxy.as_ref().is_some_and(|p| p.url.is_https());
        let tls = tls::settle(&self.tls, needs_tls).map_err(other)?;
        let config = tls::configure(ureq::Agent::config_builder(), &tls)
            .input_buffer_size(exchange::INPUT_BUFFER)
            .proxy(proxy.as_ref().map(|p| p.ureq.clone()))
            .build();
        let through = |f: Failure| match (&proxy, f) {
            (Some(p), Failure::Other(why)) => {
                Failure::Other(format!("{why} (through the proxy {})", p.url.redacted()))
            }
            (_, f) => f,
        };
        let mut request = ureq::http::Request::new(());
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        let fields = request.headers_mut();
        fields.insert("connection", HeaderValue::from_static("close"));
        for (k, v) in headers {
            // A value that came from a server (a registered secret, a token) must not be able
            // to end the line and add one of its own.
            match (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                (Ok(k), Ok(v)) => {
                    fields.append(k, v);
                }
                _ => {
                    return Err(other(format!(
                        "the header {k:?} would not be a valid HTTP header"
                    )))
                }
            }
        }
        // One connection, this request's, dropped with it.
        let kept = Arc::new(Kept::new(
            stack::connections(&tls, None, None),
            config,
            None,
            false,
            true,
        ));
        let body = body.unwrap_or_default();
        let response = kept
            .send(0, request, body, Budget::until(deadline), false)
            .map_err(|e| through(from_ureq(e)))?;
        let status = response.status().as_u16();
        let headers = (response.headers().iter())
            .map(|(k, v)| {
                let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (k.as_str().to_owned(), v)
            })
            .collect();
        let mut body = Vec::new();
        response
            .into_body()
            .into_with_config()
            .limit(self.max_body as u64)
            .reader()
            .read_to_end(&mut body)
            .map_err(|e| match ureq::Error::from(e) {
                ureq::Error::BodyExceedsLimit(_) => Failure::TooLarge(self.max_body),
                e => through(from_ureq(e)),
            })?;
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}
