//! The crate's URL handling, for the transports and for auth: parsing http(s) URLs (`ureq`'s
//! `http::Uri` underneath; [`Url`] for the parts OAuth compares), resolving a reference the
//! way a browser would for the shapes servers send ([`join`]), origins, form encoding
//! (`form`), and keeping a URL's secrets out of sight.
//!
//! A URL may carry secrets: `https://host/mcp?apiKey=…`, `https://user:pass@host/…`. Every
//! rendering of a URL in the transport layer (error texts, logs, `Debug`) goes through
//! [`redact`], which keeps scheme, host, port and path, replaces every query value with
//! `REDACTED`, and drops userinfo and fragment. The rest of the crate only ever has the
//! [`Split::public`] form of the configured URL (redacted the same way); the real query goes
//! onto the wire where a request's head is written (see `secrets`), and nowhere else.
//!
//! A server on a Unix socket is named as VS Code names one, `unix:///path/to/server.sock`
//! with the HTTP path after `#` (see [`local`]).

use ureq::http::Uri;

use crate::error::Error;

#[cfg_attr(not(feature = "oauth"), allow(dead_code))] // Mostly OAuth's.
pub(crate) mod form;

/// What replaces each query value in a rendered URL.
pub(crate) const REDACTED: &str = "REDACTED";

/// `url` with its secrets removed, for error texts, logs and `Debug`: userinfo and fragment
/// dropped, each query value (or bare query item) replaced by `REDACTED`, control characters
/// dropped, at most [`SHOWN_CHARS`] characters. Works on any text, parsable or not. The one
/// redaction of the crate: the transports, auth and the config layer all use it.
pub(crate) fn redact(url: &str) -> String {
    crate::text::clip(&redact_whole(url), SHOWN_CHARS)
}

/// The longest URL [`redact`] shows whole.
pub(crate) const SHOWN_CHARS: usize = 300;

fn redact_whole(url: &str) -> String {
    let url = url.trim();
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    // Only a real scheme: in `host/p?k=SECRET&next=https://x` the first `://` is a query
    // value's (found by the fuzz target `url_redaction`).
    let is_scheme = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    };
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) if is_scheme(scheme) => (Some(scheme), rest),
        _ => (None, url),
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    // Userinfo goes with or without a scheme: a proxy may be written `user:pass@host:port`.
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let mut out = String::with_capacity(url.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    out.push_str(authority);
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    out.push_str(path);
    if let Some(query) = query {
        out.push('?');
        out.push_str(&redact_query(query));
    }
    out
}

/// A query with every value replaced by `REDACTED` (a bare item, which may be a token, too).
fn redact_query(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    for (i, item) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match item.split_once('=') {
            Some((key, _)) => {
                out.push_str(key);
                out.push('=');
                out.push_str(REDACTED);
            }
            None if item.is_empty() => {}
            None => out.push_str(REDACTED),
        }
    }
    out
}

/// A configured URL split in what `ureq` may see and what only goes on the wire.
#[derive(Clone)]
pub(crate) struct Split {
    /// The URL with userinfo dropped and query values replaced by `REDACTED`: what `ureq` is
    /// given (and so what it may log or put in its errors).
    pub(crate) public: Uri,
    /// The same, as text, for our own messages.
    pub(crate) shown: String,
    /// The real request-target (`/path?query`) when it differs from the public one.
    pub(crate) real_target: Option<Box<[u8]>>,
}

impl Split {
    /// The request-target written for [`Split::public`].
    pub(crate) fn public_target(&self) -> String {
        origin_form(&self.public)
    }
}

/// A URL's request-target in origin form (RFC 9112 §3.2.1): its path and query, starting with
/// `/` also when the URL has only a query (`http://h?k=v` asks for `/?k=v`), as every HTTP/1.1
/// head is written.
pub(crate) fn origin_form(uri: &Uri) -> String {
    let target = uri.path_and_query().map_or("", |p| p.as_str());
    if target.starts_with('/') {
        target.to_owned()
    } else {
        format!("/{target}")
    }
}

impl std::fmt::Debug for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Splits a configured `http`/`https` URL (see [`Split`]).
pub(crate) fn split(url: &str) -> Result<Split, Error> {
    let real = parse(url)?;
    let shown = redact(url);
    let public = parse(&shown)?;
    let real_target = origin_form(&real);
    let real_target =
        (real_target != origin_form(&public)).then(|| real_target.into_bytes().into_boxed_slice());
    Ok(Split {
        public,
        shown,
        real_target,
    })
}

/// A server that listens on a local socket, named as VS Code's configs name one: a Unix
/// socket's path (`unix:///path/to/server.sock`) or a Windows named pipe (`pipe:///pipe/name`
/// for `\\.\pipe\name`; the pipe's full name, `pipe:///%5C%5C.%5Cpipe%5Cname`, also goes),
/// with the HTTP request's path after `#` (`unix:///tmp/s.sock#/mcp`; `/` without one).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Local {
    /// Where the server listens.
    pub(crate) socket: super::socket::Local,
    /// The URL the requests are written for (`http://localhost` and the HTTP path).
    pub(crate) http: String,
    /// The URL as shown: the socket and the HTTP path, redacted.
    pub(crate) shown: String,
}

/// The local socket `url` names, if it is a `unix:` or `pipe:` URL.
pub(crate) fn local(url: &str) -> Option<Result<Local, Error>> {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://")?;
    let refuse = |why: &str| {
        Some(Err(Error::Config {
            message: format!("invalid URL {:?}: {why}", redact(url)),
        }))
    };
    let unix = scheme.eq_ignore_ascii_case("unix");
    if !unix && !scheme.eq_ignore_ascii_case("pipe") {
        return None;
    }
    let (path, http) = rest.split_once('#').unwrap_or((rest, "/"));
    // No authority, then the path, percent-encoded as any URL path.
    let path = form::decode(&path.replace('+', "%2B"));
    if path.contains('\0') {
        return refuse("the socket's path has a NUL");
    }
    let socket = if unix {
        if !path.starts_with('/') {
            return refuse(
                "a unix:// URL names a socket by its absolute path (unix:///path/to/server.sock)",
            );
        }
        super::socket::Local::Unix(path.into())
    } else {
        // `/pipe/name`, or the full `\\.\pipe\name` (with either slash).
        let path = path.replace('/', "\\");
        let path = path.trim_start_matches('\\');
        let name = path
            .strip_prefix(".\\pipe\\")
            .or_else(|| path.strip_prefix("pipe\\"))
            .filter(|n| !n.is_empty());
        let Some(name) = name else {
            return refuse("a pipe:// URL names a named pipe: pipe:///pipe/name");
        };
        super::socket::Local::Pipe(format!("\\\\.\\pipe\\{name}"))
    };
    if http.chars().any(|c| c.is_control() || c == ' ') {
        return refuse("the HTTP path after # has a space or a control character");
    }
    match socket {
        super::socket::Local::Unix(_) if !cfg!(unix) => {
            return refuse("Unix sockets (unix://) are not supported on this system")
        }
        super::socket::Local::Pipe(_) if !cfg!(windows) => {
            return refuse("named pipes (pipe://) are Windows'")
        }
        _ => {}
    }
    let http = if http.starts_with('/') {
        http.to_owned()
    } else {
        format!("/{http}")
    };
    Some(Ok(Local {
        shown: format!(
            "{}://{}#{}",
            scheme.to_ascii_lowercase(),
            socket.shown(),
            redact(&http)
        ),
        socket,
        http: format!("http://localhost{http}"),
    }))
}

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
        message: format!("invalid URL {:?}: {e}", redact(url)),
    })?;
    match uri.scheme_str() {
        Some("http") | Some("https") if uri.host().is_some() => Ok(uri),
        _ => Err(Error::Config {
            message: format!(
                "invalid URL {:?}: expected http:// or https://",
                redact(url)
            ),
        }),
    }
}

/// Resolves `reference` (absolute, scheme-relative, absolute-path, relative-path or query-only)
/// against `base`.
pub(crate) fn resolve(base: &Uri, reference: &str) -> Result<Uri, Error> {
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
    parse(&join(
        &format!("{scheme}://{authority}"),
        base.path(),
        reference,
    ))
}

/// Whether `reference` starts with a scheme (RFC 3986: a letter, then letters, digits, `+`,
/// `-` or `.`, then `:`), so it is absolute: a `://` later in a query does not make it one.
fn has_scheme(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// The one way a reference is resolved (a `Location`, a legacy SSE `endpoint`), the way a
/// browser would for the shapes servers send: `reference` against a base URL given as its
/// `origin` (`scheme://authority`) and `path`. A reference with a scheme of its own is
/// returned as it is.
pub(crate) fn join(origin: &str, path: &str, reference: &str) -> String {
    let reference = reference.trim();
    let scheme = origin.split("://").next().unwrap_or("http");
    if has_scheme(reference) {
        reference.to_owned()
    } else if let Some(rest) = reference.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if reference.starts_with('/') {
        format!("{origin}{reference}")
    } else if reference.starts_with('?') {
        format!("{origin}{path}{reference}")
    } else {
        let dir = &path[..path.rfind('/').map(|i| i + 1).unwrap_or(0)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{origin}{dir}{reference}")
    }
}

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
    /// Parses an absolute `http://` or `https://` URL (a fragment is dropped); the error says
    /// why not, the URL redacted.
    pub fn parse(text: &str) -> Result<Url, String> {
        let no_fragment = text.split('#').next().unwrap_or("");
        let uri: Uri = no_fragment
            .parse()
            .map_err(|_| format!("{} is not a valid URL", redact(text)))?;
        let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("{} is not an http(s) URL", redact(text)));
        }
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{} has no host", redact(text)))?
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
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))] // OAuth's only.
    pub fn origin(&self) -> String {
        match self.port {
            Some(p) => format!("{}://{}:{p}", self.scheme, self.host),
            None => format!("{}://{}", self.scheme, self.host),
        }
    }

    /// Whether the host is a loopback name or address.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))] // OAuth's only.
    pub fn is_loopback(&self) -> bool {
        let h = self.host.trim_start_matches('[').trim_end_matches(']');
        h == "localhost"
            || h.ends_with(".localhost")
            || h.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// The URL without its query.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))] // OAuth's only.
    pub fn without_query(&self) -> String {
        format!("{}{}", self.origin(), self.path)
    }
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
    fn one_join_for_every_base() {
        assert_eq!(
            join("https://as.example", "/a/b", "c?x=1"),
            "https://as.example/a/c?x=1"
        );
        assert_eq!(
            join("https://as.example", "/a", "?x=1"),
            "https://as.example/a?x=1"
        );
        assert_eq!(
            join("https://as.example", "/a", "//other/p"),
            "https://other/p"
        );
        assert_eq!(
            join("https://as.example", "/a", " myapp://cb?c=1 "),
            "myapp://cb?c=1"
        );
        assert_eq!(join("http://h:1", "", "x"), "http://h:1/x");
        // A URL in a query does not make a reference absolute.
        assert_eq!(
            join("http://h:1", "/sse", "messages?cb=https://x/y"),
            "http://h:1/messages?cb=https://x/y"
        );
        assert_eq!(
            join("http://h:1", "/sse", "?next=http://other/"),
            "http://h:1/sse?next=http://other/"
        );
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
    fn redaction_keeps_the_place_and_drops_the_secrets() {
        assert_eq!(
            redact("https://user:pa%40ss@h.test:8443/mcp?apiKey=SECRET&x=1#frag"),
            "https://h.test:8443/mcp?apiKey=REDACTED&x=REDACTED"
        );
        assert_eq!(redact("http://h/mcp?TOKEN"), "http://h/mcp?REDACTED");
        assert_eq!(redact("http://h/mcp"), "http://h/mcp");
        assert_eq!(redact("http://a@b@h?k=v"), "http://h?k=REDACTED");
        assert_eq!(
            redact("/messages?sessionId=abc"),
            "/messages?sessionId=REDACTED"
        );
        assert!(!redact("not a url ?k=SECRET").contains("SECRET"));
        // A URL without a scheme whose query holds one.
        let shown = redact("mcp.example.com/p?api_key=SECRET&next=https://x");
        assert_eq!(shown, "mcp.example.com/p?api_key=REDACTED&next=REDACTED");
        assert!(!redact("http:/h?token=SECRET://a").contains("SECRET"));
        // A proxy written without its scheme (found by reading the fuzz target).
        assert_eq!(redact("alice:hunter22@proxy:3128"), "proxy:3128");
        let e = parse("ftp://u:SECRET@h/x?k=SECRET")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("SECRET"), "{e}");
        // Fit for a one-line message: no control characters, a bounded length.
        assert_eq!(redact("http://h/a\r\nb?k=v"), "http://h/ab?k=REDACTED");
        let long = format!("http://h/{}", "p".repeat(1000));
        let shown = redact(&long);
        assert_eq!(shown.chars().count(), SHOWN_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn the_public_form_hides_the_query_and_the_real_target_keeps_it() {
        let s = split("http://u:SECRET@127.0.0.1:9/mcp?apiKey=SECRET").unwrap();
        assert_eq!(
            s.public.to_string(),
            "http://127.0.0.1:9/mcp?apiKey=REDACTED"
        );
        assert_eq!(s.public_target(), "/mcp?apiKey=REDACTED");
        assert_eq!(s.real_target.as_deref(), Some(&b"/mcp?apiKey=SECRET"[..]));
        assert!(!format!("{s:?}").contains("SECRET"));
        assert!(split("http://127.0.0.1:9/mcp")
            .unwrap()
            .real_target
            .is_none());
    }

    #[test]
    fn a_url_with_a_query_and_no_path_asks_for_the_root_with_its_real_query() {
        let s = split("http://127.0.0.1:9?apiKey=SECRET").unwrap();
        assert_eq!(s.public_target(), "/?apiKey=REDACTED");
        assert_eq!(s.real_target.as_deref(), Some(&b"/?apiKey=SECRET"[..]));
        assert_eq!(split("http://127.0.0.1:9").unwrap().public_target(), "/");
    }

    #[test]
    fn local_sockets_as_vs_code_names_them() {
        let unix = local("unix:///tmp/a%20b.sock#/mcp?key=SECRET").unwrap();
        if cfg!(unix) {
            let unix = unix.unwrap();
            assert_eq!(
                unix.socket,
                super::super::socket::Local::Unix("/tmp/a b.sock".into())
            );
            assert_eq!(unix.http, "http://localhost/mcp?key=SECRET");
            assert_eq!(unix.shown, "unix:///tmp/a b.sock#/mcp?key=REDACTED");
            let bare = local("unix:///tmp/s.sock").unwrap().unwrap();
            assert_eq!(bare.http, "http://localhost/");
            assert!(local("unix://relative.sock").unwrap().is_err());
        } else {
            assert!(unix.is_err());
        }
        for url in [
            "pipe:///pipe/mcp-server#/mcp",
            "pipe:///%5C%5C.%5Cpipe%5Cmcp-server#/mcp",
            "pipe:////./pipe/mcp-server#/mcp",
        ] {
            match local(url).unwrap() {
                Ok(pipe) => {
                    assert_eq!(
                        pipe.socket,
                        super::super::socket::Local::Pipe(r"\\.\pipe\mcp-server".into()),
                        "{url}"
                    );
                    assert_eq!(pipe.http, "http://localhost/mcp");
                }
                Err(e) => assert!(!cfg!(windows) && e.to_string().contains("Windows"), "{e}"),
            }
        }
        assert!(local("pipe:///elsewhere/x").unwrap().is_err());
        assert!(local("https://h/mcp").is_none());
    }

    #[test]
    fn only_http_urls() {
        assert!(parse("ftp://h/x").is_err());
        assert!(parse("not a url").is_err());
        assert!(parse("/relative").is_err());
    }
}
