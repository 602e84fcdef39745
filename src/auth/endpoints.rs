//! Which URLs the flow may fetch or open (http(s) only, plain http to loopback only), and the
//! canonical resource URI of an MCP server (RFC 8707). URLs themselves are
//! `net::url`'s.

use super::{error, OAuthErrorKind};
use crate::error::Error;
pub(crate) use crate::net::url::form::{encode, encode_form, parse_form, with_query};
use crate::net::url::Url;

/// `text` parsed as an http(s) URL; a URL that is not one is refused.
pub(crate) fn parse_url(text: &str) -> Result<Url, Error> {
    Url::parse(text).map_err(|message| error(OAuthErrorKind::Refused, message))
}

/// Resolves a `Location` against the URL it came from.
pub(crate) fn resolve(base: &Url, location: &str) -> String {
    crate::net::url::join(&base.origin(), &base.path, location)
}

/// A URL fit to fetch or open: http(s), and plain http only to a loopback host.
pub(crate) fn checked(text: &str, what: &str) -> Result<Url, Error> {
    let url = Url::parse(text)
        .map_err(|message| error(OAuthErrorKind::Refused, format!("{what}: {message}")))?;
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
    let url = parse_url(server_url)?;
    let path = url.path.trim_end_matches('/');
    let mut out = format!("{}{path}", url.origin());
    if let Some(q) = &url.query {
        out.push('?');
        out.push_str(q);
    }
    Ok(out)
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
}
