//! The little URL handling the HTTP transports need: resolving the legacy SSE `endpoint`
//! against the stream's URL, and comparing origins. (`ureq`'s `http::Uri` parses; this
//! resolves references the way a browser would for the shapes servers send.)

use ureq::http::Uri;

use crate::Error;

/// `scheme://authority` of a URL, with the default port made explicit.
pub(crate) fn origin(uri: &Uri) -> Option<(String, String, u16)> {
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some((scheme, host, port))
}

/// Parses an `http`/`https` URL.
pub(crate) fn parse(url: &str) -> Result<Uri, Error> {
    let uri: Uri = url.parse().map_err(|e| Error::Config {
        message: format!("invalid URL {url:?}: {e}"),
    })?;
    match uri.scheme_str() {
        Some("http") | Some("https") if uri.host().is_some() => Ok(uri),
        _ => Err(Error::Config {
            message: format!("invalid URL {url:?}: expected http:// or https://"),
        }),
    }
}

/// Resolves `reference` (absolute, scheme-relative, absolute-path, relative-path or query-only)
/// against `base`.
pub(crate) fn resolve(base: &Uri, reference: &str) -> Result<Uri, Error> {
    let reference = reference.trim();
    if reference.starts_with("http://") || reference.starts_with("https://") {
        return parse(reference);
    }
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
    let joined = if let Some(rest) = reference.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if reference.starts_with('/') {
        format!("{scheme}://{authority}{reference}")
    } else if reference.starts_with('?') {
        format!("{scheme}://{authority}{}{reference}", base.path())
    } else {
        let path = base.path();
        let dir = &path[..path.rfind('/').map(|i| i + 1).unwrap_or(0)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{scheme}://{authority}{dir}{reference}")
    };
    parse(&joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(base: &str, reference: &str) -> String {
        resolve(&parse(base).unwrap(), reference)
            .unwrap()
            .to_string()
    }

    #[test]
    fn resolves_the_shapes_servers_send() {
        assert_eq!(
            r("http://127.0.0.1:3001/sse", "/messages?sessionId=a"),
            "http://127.0.0.1:3001/messages?sessionId=a"
        );
        assert_eq!(
            r("http://127.0.0.1:3001/mcp/sse", "messages?s=1"),
            "http://127.0.0.1:3001/mcp/messages?s=1"
        );
        assert_eq!(
            r("http://127.0.0.1:3001/sse", "?s=2"),
            "http://127.0.0.1:3001/sse?s=2"
        );
        assert_eq!(
            r("http://127.0.0.1:3001/sse", "http://127.0.0.1:3001/m"),
            "http://127.0.0.1:3001/m"
        );
        assert_eq!(
            r("https://h.test/sse", "//other.test/m"),
            "https://other.test/m"
        );
    }

    #[test]
    fn origins_compare_with_default_ports() {
        let a = parse("http://LOCALHOST/sse").unwrap();
        let b = parse("http://localhost:80/m").unwrap();
        let c = parse("http://localhost:81/m").unwrap();
        let d = parse("https://localhost/m").unwrap();
        assert_eq!(origin(&a), origin(&b));
        assert_ne!(origin(&a), origin(&c));
        assert_ne!(origin(&a), origin(&d));
    }

    #[test]
    fn only_http_urls() {
        assert!(parse("ftp://h/x").is_err());
        assert!(parse("not a url").is_err());
        assert!(parse("/relative").is_err());
    }
}
