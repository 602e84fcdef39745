//! The request head the crate's loopback servers read: the OAuth callback listener and the
//! pages `mcp app` serves (and any other server of ours to come). Sans I/O ([`parse`]) over
//! `httparse`, with one reader ([`read_head`]) on a buffered stream; both servers have the same
//! limits and refuse the same inputs, and the `request_head` fuzz target drives it.
//!
//! Strict where a server of ours has no need to be lenient: a head of at most [`MAX_HEAD`]
//! bytes and [`MAX_HEADERS`] headers, UTF-8 header values, a body only by `Content-Length`
//! (one value; `Transfer-Encoding` is refused), and a request-target in origin form, except for
//! the sandbox's proxy ([`parse_proxy`]), which takes `CONNECT host:port` and an absolute
//! `http://` target instead.

use std::io::BufRead;

/// The largest request head read.
pub const MAX_HEAD: usize = 16 * 1024;

/// The most headers a request may have.
pub const MAX_HEADERS: usize = 64;

/// A request's head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path of the request-target, without its query (still percent-encoded).
    pub path: String,
    /// The query after `?`, empty when there is none.
    pub query: String,
    /// The headers, names in lower case, values trimmed, in their order.
    pub headers: Vec<(String, String)>,
    /// The body's length (`Content-Length`; 0 without one).
    pub content_length: usize,
}

impl RequestHead {
    /// A header's value (the first of that name, case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The head at the start of `input` and the bytes it took, or `None` while it is incomplete
/// (and within [`MAX_HEAD`]). The error is a fixed text, never a piece of the input.
pub fn parse(input: &[u8]) -> Result<Option<(RequestHead, usize)>, &'static str> {
    parse_as(input, false)
}

/// [`parse`] for a forward proxy: the request-target is `host:port` for `CONNECT` (authority
/// form) and an absolute `http://` URL otherwise, kept whole in [`RequestHead::path`] (with
/// an empty query).
pub fn parse_proxy(input: &[u8]) -> Result<Option<(RequestHead, usize)>, &'static str> {
    parse_as(input, true)
}

fn parse_as(input: &[u8], proxy: bool) -> Result<Option<(RequestHead, usize)>, &'static str> {
    // What lies past the limit is never looked at: a head that long is refused whatever follows.
    let input = &input[..input.len().min(MAX_HEAD + 1)];
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    let used = match request.parse(input) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) if input.len() > MAX_HEAD => {
            return Err("request head too large")
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err("too many request headers"),
        Err(_) => return Err("malformed request head"),
    };
    if used > MAX_HEAD {
        return Err("request head too large");
    }
    let (Some(method), Some(target)) = (request.method, request.path) else {
        return Err("malformed request head");
    };
    let (path, query) = if proxy {
        let fits = if method == "CONNECT" {
            target.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && !host.contains(['/', '@']) && port.parse::<u16>().is_ok()
            })
        } else {
            target
                .get(..7)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
        };
        if !fits {
            return Err("the request-target is not a proxy's (host:port, or an http:// URL)");
        }
        (target, "")
    } else if target.starts_with('/') {
        target.split_once('?').unwrap_or((target, ""))
    } else {
        return Err("the request-target is not a path");
    };
    let mut headers = Vec::with_capacity(request.headers.len());
    let mut content_length: Option<usize> = None;
    for field in request.headers.iter() {
        let value = std::str::from_utf8(field.value)
            .map_err(|_| "a request header is not UTF-8")?
            .trim();
        let name = field.name.to_ascii_lowercase();
        match name.as_str() {
            "transfer-encoding" => return Err("a request body must have a Content-Length"),
            "content-length" => {
                let n = (value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty())
                    .then(|| value.parse::<usize>().ok())
                    .flatten()
                    .ok_or("bad Content-Length")?;
                if content_length.is_some_and(|m| m != n) {
                    return Err("bad Content-Length");
                }
                content_length = Some(n);
            }
            _ => {}
        }
        headers.push((name, value.to_owned()));
    }
    let head = RequestHead {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
        content_length: content_length.unwrap_or(0),
    };
    Ok(Some((head, used)))
}

/// Reads a request's head from `reader`, leaving what follows it (the body) unread there. The
/// reader bounds the time (its stream's deadline).
pub fn read_head(reader: &mut impl BufRead) -> Result<RequestHead, &'static str> {
    read_with(reader, parse)
}

/// [`read_head`] for a forward proxy (see [`parse_proxy`]).
pub fn read_proxy_head(reader: &mut impl BufRead) -> Result<RequestHead, &'static str> {
    read_with(reader, parse_proxy)
}

type Parser = fn(&[u8]) -> Result<Option<(RequestHead, usize)>, &'static str>;

fn read_with(reader: &mut impl BufRead, parse: Parser) -> Result<RequestHead, &'static str> {
    let mut head = Vec::new();
    loop {
        let available = reader.fill_buf().map_err(|_| "unreadable request")?;
        if available.is_empty() {
            return Err("incomplete request");
        }
        let before = head.len();
        let take = available.len().min(MAX_HEAD + 1 - before);
        head.extend_from_slice(&available[..take]);
        match parse(&head)? {
            Some((parsed, used)) => {
                // The head ends in what was just added (the parse before it found none).
                reader.consume(used - before);
                return Ok(parsed);
            }
            None => reader.consume(take),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_read_and_what_follows_stays() {
        let input = b"POST /call?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}";
        let (head, used) = parse(input).unwrap().unwrap();
        assert_eq!(
            (head.method.as_str(), head.path.as_str()),
            ("POST", "/call")
        );
        assert_eq!((head.query.as_str(), head.content_length), ("x=1", 2));
        assert_eq!(head.header("HOST"), Some("127.0.0.1"));
        assert_eq!(&input[used..], b"{}");
        let mut reader = std::io::BufReader::with_capacity(3, &input[..]);
        assert_eq!(read_head(&mut reader).unwrap(), head);
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut rest).unwrap();
        assert_eq!(rest, b"{}");
        assert_eq!(parse(&input[..20]), Ok(None));
    }

    #[test]
    fn what_a_server_of_ours_refuses() {
        for (input, why) in [
            (
                &b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
                "Content-Length",
            ),
            (
                b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "Content-Length",
            ),
            (
                b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                "Content-Length",
            ),
            (
                b"GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
                "Content-Length",
            ),
            (b"GET http://x/ HTTP/1.1\r\n\r\n", "not a path"),
            (b"GET / HTTP/1.1\r\nX: \xff\r\n\r\n", "not UTF-8"),
            (b"G\x01T / HTTP/1.1\r\n\r\n", "malformed"),
        ] {
            let e = parse(input).unwrap_err();
            assert!(
                e.contains(why),
                "{e} for {:?}",
                String::from_utf8_lossy(input)
            );
        }
        let mut input = String::from("GET / HTTP/1.1\r\n");
        for i in 0..=MAX_HEADERS {
            input.push_str("X-");
            input.push_str(&i.to_string());
            input.push_str(": v\r\n");
        }
        input.push_str("\r\n");
        assert_eq!(parse(input.as_bytes()), Err("too many request headers"));
        let long = format!("GET / HTTP/1.1\r\nX: {}", "v".repeat(MAX_HEAD));
        assert_eq!(parse(long.as_bytes()), Err("request head too large"));
        let mut endless = std::io::Cursor::new(long.into_bytes());
        assert_eq!(read_head(&mut endless), Err("request head too large"));
        assert_eq!(read_head(&mut &b"GET / HT"[..]), Err("incomplete request"));
    }

    #[test]
    fn a_proxy_takes_authority_and_absolute_targets_only() {
        let (head, _) = parse_proxy(b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (head.method.as_str(), head.path.as_str()),
            ("CONNECT", "api.example.com:443")
        );
        let (head, _) = parse_proxy(b"GET http://x.org/a?b=1 HTTP/1.1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (head.path.as_str(), head.query.as_str()),
            ("http://x.org/a?b=1", "")
        );
        for input in [
            &b"CONNECT x.org HTTP/1.1\r\n\r\n"[..],
            b"CONNECT x.org:99999 HTTP/1.1\r\n\r\n",
            b"CONNECT a@x.org:1 HTTP/1.1\r\n\r\n",
            b"GET /local HTTP/1.1\r\n\r\n",
            b"GET https://x.org/ HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                parse_proxy(input).is_err(),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        assert!(parse(b"CONNECT x.org:1 HTTP/1.1\r\n\r\n").is_err());
    }
}
