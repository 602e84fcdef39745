//! The URL handling of the flow: what may be fetched or opened (http(s) only, plain http to
//! loopback only), canonical resource URIs (RFC 8707), origins, and form encoding.

use ureq::http::Uri;

use super::{error, OAuthErrorKind};
use crate::error::Error;
use crate::transport::url::redact;

/// A parsed absolute http(s) URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    pub scheme: String,
    pub host: String,
    pub port: Option<u16>,
    /// The path, `/` at least.
    pub path: String,
    pub query: Option<String>,
}

impl Url {
    /// Parses an absolute `http://` or `https://` URL (a fragment is dropped).
    pub fn parse(text: &str) -> Result<Url, Error> {
        let no_fragment = text.split('#').next().unwrap_or("");
        let uri: Uri = no_fragment.parse().map_err(|_| {
            error(
                OAuthErrorKind::Refused,
                format!("{} is not a valid URL", redact(text)),
            )
        })?;
        let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(error(
                OAuthErrorKind::Refused,
                format!("{} is not an http(s) URL", redact(text)),
            ));
        }
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| {
                error(
                    OAuthErrorKind::Refused,
                    format!("{} has no host", redact(text)),
                )
            })?
            .to_ascii_lowercase();
        let default = if scheme == "https" { 443 } else { 80 };
        let port = uri.port_u16().filter(|p| *p != default);
        let path = match uri.path() {
            "" => "/".to_owned(),
            p => p.to_owned(),
        };
        Ok(Url {
            scheme,
            host,
            port,
            path,
            query: uri.query().map(str::to_owned),
        })
    }

    /// `scheme://host[:port]`.
    pub fn origin(&self) -> String {
        match self.port {
            Some(p) => format!("{}://{}:{p}", self.scheme, self.host),
            None => format!("{}://{}", self.scheme, self.host),
        }
    }

    /// Whether the host is a loopback name or address.
    pub fn is_loopback(&self) -> bool {
        let h = self.host.trim_start_matches('[').trim_end_matches(']');
        h == "localhost"
            || h.ends_with(".localhost")
            || h.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// The URL without its query.
    pub fn without_query(&self) -> String {
        format!("{}{}", self.origin(), self.path)
    }
}

/// A URL fit to fetch or open: http(s), and plain http only to a loopback host.
pub(crate) fn checked(text: &str, what: &str) -> Result<Url, Error> {
    let url = Url::parse(text).map_err(|e| match e {
        Error::OAuth { message, .. } => {
            error(OAuthErrorKind::Refused, format!("{what}: {message}"))
        }
        other => other,
    })?;
    if url.scheme == "http" && !url.is_loopback() {
        return Err(error(
            OAuthErrorKind::Refused,
            format!(
                "{what} {} uses plain http to a host that is not loopback; https is required",
                url.without_query()
            ),
        ));
    }
    Ok(url)
}

/// The canonical URI of an MCP server (RFC 8707 / the MCP spec): lowercase scheme and host, no
/// default port, no fragment, no trailing slash; the path is kept.
pub fn canonical_resource(server_url: &str) -> Result<String, Error> {
    let url = Url::parse(server_url)?;
    let path = url.path.trim_end_matches('/');
    let mut out = format!("{}{path}", url.origin());
    if let Some(q) = &url.query {
        out.push('?');
        out.push_str(q);
    }
    Ok(out)
}

/// `application/x-www-form-urlencoded` of one value.
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Form-encodes pairs.
pub(crate) fn encode_form<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k.as_ref()), encode(v.as_ref())))
        .collect::<Vec<_>>()
        .join("&")
}

/// Decodes one form-encoded value (`+` is a space).
pub(crate) fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (_, Some(v)) => {
                out.push(v);
                i += 3;
                continue;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The decoded pairs of a query or form body.
pub(crate) fn parse_form(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// `url` with `pairs` added to its query.
pub(crate) fn with_query<K: AsRef<str>, V: AsRef<str>>(url: &str, pairs: &[(K, V)]) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", encode_form(pairs))
}

/// Resolves a `Location` against the URL it came from.
pub(crate) fn resolve(base: &Url, location: &str) -> String {
    let location = location.trim();
    let lower = location.to_ascii_lowercase();
    if lower.contains("://") && !lower.starts_with('/') {
        location.to_owned()
    } else if let Some(rest) = location.strip_prefix("//") {
        format!("{}://{rest}", base.scheme)
    } else if location.starts_with('/') {
        format!("{}{location}", base.origin())
    } else if location.starts_with('?') {
        format!("{}{location}", base.without_query())
    } else {
        let dir = &base.path[..base.path.rfind('/').map(|i| i + 1).unwrap_or(0)];
        format!(
            "{}{}{location}",
            base.origin(),
            if dir.is_empty() { "/" } else { dir }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_resources() {
        assert_eq!(
            canonical_resource("HTTPS://MCP.Example.com:443/mcp/").unwrap(),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource("http://127.0.0.1:8080/#x").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert!(canonical_resource("ftp://h/x").is_err());
    }

    #[test]
    fn only_https_or_loopback_http() {
        assert!(checked("https://as.example.com/a", "x").is_ok());
        assert!(checked("http://127.0.0.1:9/a", "x").is_ok());
        assert!(checked("http://localhost/a", "x").is_ok());
        assert!(checked("http://[::1]:9/a", "x").is_ok());
        assert!(checked("http://as.example.com/a", "x").is_err());
        assert!(checked("javascript:alert(1)", "x").is_err());
        assert!(checked("file:///etc/passwd", "x").is_err());
    }

    #[test]
    fn forms_round_trip() {
        let pairs = [("a b", "c&d=e+f/é"), ("empty", "")];
        let text = encode_form(&pairs);
        assert_eq!(
            parse_form(&text),
            vec![
                ("a b".to_owned(), "c&d=e+f/é".to_owned()),
                ("empty".to_owned(), String::new())
            ]
        );
        assert_eq!(decode("a+b%2"), "a b%2");
        assert_eq!(
            redact("https://u:p@h/p?code=secret"),
            "https://h/p?code=REDACTED"
        );
    }
}
