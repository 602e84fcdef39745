//! What only goes on the wire: a connection's configured headers, its auth provider's
//! `Authorization` (and DPoP proof), the real request-target behind the redacted one every
//! other part of the crate sees, and, for requests forwarded to a proxy, their absolute target
//! and the proxy's credentials.
//!
//! They are added to a request's head in the one place a request is written (`exchange`), on
//! requests to the secrets' own origin only. Nothing else holds them: `ureq`'s request
//! machinery, which at `RUST_LOG=trace` logs every request it writes and its full URL, never
//! writes a request of ours (a library cannot configure its host's logger).

use std::sync::Arc;

use ureq::http::{HeaderName, HeaderValue};

use super::target::AuthProvider;
use crate::error::Error;

/// A `(public, real)` pair of request-targets.
type Swap = (Box<[u8]>, Box<[u8]>);

/// What only goes on the wire: the configured headers, the auth provider's `Authorization`,
/// and the real request-target behind the redacted one the rest of the crate sees.
pub(crate) struct Secrets {
    /// `(scheme, host, port)` of the server: other origins never get any of this.
    origin: Option<(String, String, u16)>,
    /// `Name: value\r\n` for each configured header.
    headers: Vec<u8>,
    /// A configured `Host`, which replaces the one the head has (never both on the wire).
    replaces_host: bool,
    auth: Option<Arc<dyn AuthProvider>>,
    /// The request-target the head has, and the real one it stands for.
    target: Option<Swap>,
    /// Requests forwarded to a proxy as they are (see `proxy::Proxy::forwards`).
    forward: Option<Forward>,
}

/// What a request forwarded to a proxy gets: its target in absolute form (`http://host:port`
/// before the path) and the proxy's credentials, if any.
struct Forward {
    origin: Box<[u8]>,
    authorization: Option<Vec<u8>>,
}

impl Secrets {
    /// The secrets of `target`, whose URL was split into `split`. Fails on a header that is not
    /// a valid HTTP header (naming it, never its value).
    pub(crate) fn new(
        split: &super::url::Split,
        target: &super::target::HttpTarget,
        forward: Option<&super::proxy::Proxy>,
    ) -> Result<Secrets, Error> {
        let mut headers = Vec::new();
        let hosts = (target.headers.iter())
            .filter(|(name, _)| name.eq_ignore_ascii_case("host"))
            .count();
        if hosts > 1 {
            return Err(Error::Config {
                message: "the header \"Host\" is configured more than once".to_owned(),
            });
        }
        for (name, value) in &target.headers {
            let valid_name = HeaderName::from_bytes(name.as_bytes()).is_ok();
            if !valid_name || HeaderValue::from_str(value).is_err() {
                return Err(Error::Config {
                    message: format!(
                        "the header {:?} is not a valid HTTP header (name or value)",
                        if valid_name {
                            name.as_str()
                        } else {
                            "<invalid name>"
                        }
                    ),
                });
            }
            push_header(&mut headers, name, value);
        }
        Ok(Secrets {
            origin: super::url::origin(&split.public),
            headers,
            replaces_host: hosts == 1,
            auth: target.auth.clone(),
            target: split.real_target.clone().map(|real| {
                (
                    split.public_target().as_bytes().to_vec().into_boxed_slice(),
                    real,
                )
            }),
            forward: forward.map(|proxy| Forward {
                origin: format!(
                    "{}://{}",
                    split.public.scheme_str().unwrap_or("http"),
                    split.public.authority().map_or("", |a| a.as_str())
                )
                .into_bytes()
                .into_boxed_slice(),
                authorization: proxy.authorization_line(),
            }),
        })
    }

    /// Nothing to put on the wire: a request's head is then written as it is.
    pub(crate) fn is_empty(&self) -> bool {
        self.headers.is_empty()
            && self.auth.is_none()
            && self.target.is_none()
            && self.forward.is_none()
    }

    /// Whether a request for `uri` gets them: only one to the server's own origin.
    pub(crate) fn are_for(&self, uri: &ureq::http::Uri) -> bool {
        self.origin.is_some() && super::url::origin(uri) == self.origin
    }

    /// Rewrites the request head at the start of `held`: the real request-target, then the
    /// secret headers after the request line.
    pub(crate) fn apply(&self, held: &mut Vec<u8>) {
        let Some(line_end) = held.iter().position(|&b| b == b'\n') else {
            return;
        };
        let line = &held[..line_end];
        let (Some(first), Some(last)) = (
            line.iter().position(|&b| b == b' '),
            line.iter().rposition(|&b| b == b' '),
        ) else {
            return;
        };
        if first >= last {
            return;
        }
        let mut scratch = Vec::with_capacity(line_end + 1 + self.headers.len());
        scratch.extend_from_slice(&held[..=first]);
        if let Some(forward) = &self.forward {
            scratch.extend_from_slice(&forward.origin);
        }
        let target_start = scratch.len();
        match &self.target {
            Some((public, real)) if held[first + 1..last] == public[..] => {
                scratch.extend_from_slice(real)
            }
            _ => scratch.extend_from_slice(&held[first + 1..last]),
        }
        let target = scratch[target_start..].to_vec();
        scratch.extend_from_slice(&held[last..=line_end]);
        if let Some(line) = self.forward.as_ref().and_then(|f| f.authorization.as_ref()) {
            scratch.extend_from_slice(line);
        }
        scratch.extend_from_slice(&self.headers);
        if let Some(auth) = &self.auth {
            let method = String::from_utf8_lossy(&held[..first]).into_owned();
            let url = self.url_of(&target);
            for (name, value) in auth.authorize_request(&method, &url) {
                let valid = HeaderName::from_bytes(name.as_bytes()).is_ok()
                    && HeaderValue::from_str(&value).is_ok();
                if valid {
                    push_header(&mut scratch, &name, &value);
                } else {
                    log::warn!("the auth provider gave an invalid {name:?} header; not sent");
                }
            }
        }
        if self.replaces_host {
            drop_host_line(held, line_end + 1);
        }
        held.splice(..=line_end, scratch.drain(..));
    }
}

/// Removes the `Host` header line from the head's header lines, which start at `from`.
fn drop_host_line(held: &mut Vec<u8>, from: usize) {
    let mut at = from;
    while let Some(len) = held[at..].iter().position(|&b| b == b'\n') {
        let line = &held[at..at + len];
        if line.is_empty() || line == b"\r" {
            return;
        }
        let is_host = line.len() > 5 && line[..5].eq_ignore_ascii_case(b"host:");
        if is_host {
            held.drain(at..=at + len);
            return;
        }
        at += len + 1;
    }
}

impl Secrets {
    /// The URL an origin-form request-target stands for, without its query: what a DPoP proof
    /// names (`htu`).
    fn url_of(&self, target: &[u8]) -> String {
        let target = String::from_utf8_lossy(target);
        let path = target.split(['?', '#']).next().unwrap_or("");
        match &self.origin {
            Some((scheme, host, port)) => {
                let default =
                    (scheme == "https" && *port == 443) || (scheme == "http" && *port == 80);
                if default {
                    format!("{scheme}://{host}{path}")
                } else {
                    format!("{scheme}://{host}:{port}{path}")
                }
            }
            None => path.to_owned(),
        }
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::target::HttpTarget;

    struct Token;
    impl AuthProvider for Token {
        fn authorization(&self) -> Option<String> {
            Some("Bearer t0k".into())
        }
    }

    #[test]
    fn the_head_gets_the_real_target_and_the_secret_headers() {
        let target = HttpTarget {
            url: "http://u:p@127.0.0.1:9/mcp?apiKey=SECRET".into(),
            headers: vec![("X-Api-Key".into(), "k3y".into())],
            auth: Some(Arc::new(Token)),
            proxy: None,
            ca_file: None,
            client_cert: None,
            client_key: None,
        };
        let split = super::super::url::split(&target.url).unwrap();
        let secrets = Secrets::new(&split, &target, None).unwrap();
        let mut held =
            b"POST /mcp?apiKey=REDACTED HTTP/1.1\r\nhost: 127.0.0.1:9\r\n\r\n{}".to_vec();
        secrets.apply(&mut held);
        assert_eq!(
            String::from_utf8(held).unwrap(),
            "POST /mcp?apiKey=SECRET HTTP/1.1\r\nX-Api-Key: k3y\r\nAuthorization: Bearer t0k\r\n\
             host: 127.0.0.1:9\r\n\r\n{}"
        );
        // Another target (the legacy endpoint) keeps its own, with the headers.
        let mut held = b"POST /messages?s=1 HTTP/1.1\r\n\r\n".to_vec();
        secrets.apply(&mut held);
        assert!(held.starts_with(b"POST /messages?s=1 HTTP/1.1\r\nX-Api-Key: k3y\r\n"));
    }

    #[test]
    fn a_forwarded_request_gets_its_absolute_target_and_the_proxys_credentials() {
        let target = HttpTarget::new("http://127.0.0.1:9/mcp?k=SECRET");
        let split = super::super::url::split(&target.url).unwrap();
        let env = super::super::proxy::ProxyEnv::read(|_| None);
        let options = super::super::target::HttpOptions {
            proxy: Some("http://me:pw@proxy.corp:3128".into()),
            ..Default::default()
        };
        let far = HttpTarget::new("http://10.1.2.3:9/mcp?k=SECRET");
        let proxy = super::super::proxy::choose(&far, &options, &env)
            .unwrap()
            .unwrap();
        assert!(proxy.forwards("http") && !proxy.forwards("https"));
        let secrets = Secrets::new(&split, &target, Some(&proxy)).unwrap();
        let mut held = b"GET /mcp?k=REDACTED HTTP/1.1\r\nhost: 127.0.0.1:9\r\n\r\n".to_vec();
        secrets.apply(&mut held);
        assert_eq!(
            String::from_utf8(held).unwrap(),
            "GET http://127.0.0.1:9/mcp?k=SECRET HTTP/1.1\r\n\
             Proxy-Authorization: Basic bWU6cHc=\r\nhost: 127.0.0.1:9\r\n\r\n"
        );
    }

    #[test]
    fn a_configured_host_replaces_ours_and_is_never_sent_twice() {
        let target = HttpTarget::new("http://127.0.0.1:9/mcp").header("Host", "mcp.internal");
        let split = super::super::url::split(&target.url).unwrap();
        let secrets = Secrets::new(&split, &target, None).unwrap();
        let mut held =
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:9\r\nx-a: 1\r\n\r\nhost: body".to_vec();
        secrets.apply(&mut held);
        assert_eq!(
            String::from_utf8(held).unwrap(),
            "POST /mcp HTTP/1.1\r\nHost: mcp.internal\r\nx-a: 1\r\n\r\nhost: body"
        );
        let twice = target.header("host", "other");
        let e = Secrets::new(&split, &twice, None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("more than once"), "{e}");
    }

    #[test]
    fn a_header_that_could_break_the_head_is_refused_without_its_value() {
        let target = HttpTarget::new("http://h/mcp").header("X-Evil", "a\r\nInjected: SECRET");
        let split = super::super::url::split(&target.url).unwrap();
        let e = Secrets::new(&split, &target, None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("X-Evil") && !e.contains("SECRET"), "{e}");
    }
}
