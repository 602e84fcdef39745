//! HTTP/1.1 for one POST on a kept-alive connection, without I/O: the request head written in
//! one piece, the response head parsed (`httparse`), and the response body's framing (a length,
//! chunks, or the connection's end) taken off the bytes as they come.
//!
//! `exchange` drives it; `ureq` stays the HTTP library for everything else. What the POST needs
//! is small, and writing it here costs a fraction of a general request's analysis: the head
//! is one buffer of the request's own headers (no header map rebuilt, no formatting machinery),
//! and the response's headers go once into the map `http::Response` holds.
//!
//! Framing follows RFC 9112 §6: `Transfer-Encoding` wins over `Content-Length` (chunked as
//! the final coding means chunks, any other coding the connection's end); differing lengths are
//! an error; 1xx, 204 and 304 have no body. Interim (1xx) responses are skipped.

use ureq::http::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use ureq::http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode, Version};

/// The most response headers read.
const MAX_RESPONSE_HEADERS: usize = 128;

/// The most bytes of a chunk's size line (its extensions included) or of all its trailers.
const MAX_CHUNK_LINE: usize = 4096;

/// A response that breaks HTTP/1.1 framing; the text says what, never a header's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(pub(crate) &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a malformed HTTP response: {}", self.0)
    }
}

/// Appends `request`'s head to `out`: the request line, `Host` (unless the request has one),
/// its headers in order, then the body's length and the user agent.
pub(crate) fn write_head(
    request: &Request<()>,
    body_len: usize,
    user_agent: &str,
    out: &mut Vec<u8>,
) {
    let uri = request.uri();
    out.extend_from_slice(request.method().as_str().as_bytes());
    out.push(b' ');
    let target = uri.path_and_query().map_or("", |p| p.as_str());
    if !target.starts_with('/') {
        // Origin form starts with a slash, also when the URL had only a query (as
        // `url::origin_form`, which the secrets' swap of the real target matches).
        out.push(b'/');
    }
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let headers = request.headers();
    if !headers.contains_key(HOST) {
        if let Some(host) = uri.host() {
            // The port only when it is not the scheme's default, as `ureq` writes it.
            let default = if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            };
            out.extend_from_slice(b"host: ");
            out.extend_from_slice(host.as_bytes());
            if let Some(port) = uri.port_u16().filter(|p| *p != default) {
                let mut digits = [0u8; 20];
                out.push(b':');
                out.extend_from_slice(decimal(u64::from(port), &mut digits));
            }
            out.extend_from_slice(b"\r\n");
        }
    }
    for (name, value) in headers {
        line(out, name.as_str().as_bytes(), value.as_bytes());
    }
    // A request that has no body and no use for one (GET, DELETE) says nothing of it.
    if body_len > 0 || request.method() == ureq::http::Method::POST {
        let mut digits = [0u8; 20];
        line(
            out,
            b"content-length",
            decimal(body_len as u64, &mut digits),
        );
    }
    line(out, b"user-agent", user_agent.as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// `n` in decimal, in the end of `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// A response head read off the start of the input.
#[derive(Debug)]
pub(crate) struct Head {
    /// The status, version and headers.
    pub(crate) response: Response<()>,
    /// How its body is framed.
    pub(crate) body: Framing,
    /// Whether the connection cannot carry another request after this response.
    pub(crate) must_close: bool,
}

/// What the start of the input holds.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Not a whole head yet.
    Partial,
    /// An interim (1xx) response of this many bytes, to skip.
    Interim(usize),
    /// The final response's head, of this many bytes.
    Final(usize, Head),
}

/// Parses the response head at the start of `input`.
pub(crate) fn parse_head(input: &[u8]) -> Result<Parsed, Malformed> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_RESPONSE_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    let used = match parsed.parse(input) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(Malformed("too many headers")),
        Err(_) => return Err(Malformed("the status line or a header cannot be read")),
    };
    let status = parsed
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or(Malformed("an invalid status code"))?;
    if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
        return Ok(Parsed::Interim(used));
    }
    let http10 = parsed.version == Some(0);
    let mut map = HeaderMap::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| Malformed("an invalid header name"))?;
        let value =
            HeaderValue::from_bytes(h.value).map_err(|_| Malformed("an invalid header value"))?;
        map.append(name, value);
    }
    let body = framing(http10, status, &map)?;
    // Both a Transfer-Encoding and a Content-Length: the coding frames the body, but such a
    // response may be an attempt at smuggling, after which the connection cannot be trusted
    // (RFC 9112 §6.3): it is closed.
    let both = map.contains_key(TRANSFER_ENCODING) && map.contains_key(CONTENT_LENGTH);
    let close = both || has_token(&map, "close");
    let keep_alive = has_token(&map, "keep-alive");
    let must_close = close
        || (http10 && !keep_alive)
        || matches!(body, Framing::Close)
        || status == StatusCode::SWITCHING_PROTOCOLS;
    let mut response = Response::new(());
    *response.status_mut() = status;
    *response.version_mut() = if http10 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    *response.headers_mut() = map;
    Ok(Parsed::Final(
        used,
        Head {
            response,
            body,
            must_close,
        },
    ))
}

/// The body's framing (`Close` also for a framing the connection cannot be trusted after).
fn framing(http10: bool, status: StatusCode, headers: &HeaderMap) -> Result<Framing, Malformed> {
    let length = content_length(headers)?;
    // The codings in order; `identity` (obsolete, and no coding at all) is left out, so that
    // a length beside it still frames the body.
    let codings = headers
        .get_all(TRANSFER_ENCODING)
        .iter()
        .flat_map(|v| v.as_bytes().split(|b| *b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case(b"identity"));
    let mut coded = false;
    let mut chunked = false;
    for coding in codings {
        coded = true;
        chunked = coding.eq_ignore_ascii_case(b"chunked");
    }
    if status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || status.is_informational()
    {
        return Ok(Framing::Empty);
    }
    if coded {
        // An HTTP/1.0 message with a coding is faulty (RFC 9112 §6.1): its end is the
        // connection's, as is the end of a body whose final coding is not chunked.
        if chunked && !http10 {
            return Ok(Framing::Chunked(Chunked::default()));
        }
        return Ok(Framing::Close);
    }
    match length {
        Some(0) => Ok(Framing::Empty),
        Some(n) => Ok(Framing::Length(n)),
        None => Ok(Framing::Close),
    }
}

/// The `Content-Length`, when given; differing values are an error.
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, Malformed> {
    let mut found = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for element in value.as_bytes().split(|b| *b == b',') {
            let digits = element.trim_ascii();
            if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
                return Err(Malformed("an invalid Content-Length"));
            }
            let n = digits
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            if found.is_some_and(|prev| prev != n) {
                return Err(Malformed("differing Content-Lengths"));
            }
            found = Some(n);
        }
    }
    Ok(found)
}

/// Whether a `Connection` header lists `token`.
fn has_token(headers: &HeaderMap, token: &str) -> bool {
    headers.get_all(CONNECTION).iter().any(|v| {
        v.as_bytes()
            .split(|b| *b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    })
}

/// How a response's body ends.
#[derive(Debug)]
pub(crate) enum Framing {
    /// It has none.
    Empty,
    /// After this many more bytes.
    Length(u64),
    /// At its last chunk.
    Chunked(Chunked),
    /// At the connection's end.
    Close,
}

impl Framing {
    /// Takes body bytes from `input` into `out`: how many bytes of `input` were used, and how
    /// many were written to `out`.
    pub(crate) fn read(
        &mut self,
        input: &[u8],
        out: &mut [u8],
    ) -> Result<(usize, usize), Malformed> {
        match self {
            Framing::Empty => Ok((0, 0)),
            Framing::Length(left) => {
                let n = input
                    .len()
                    .min(out.len())
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                out[..n].copy_from_slice(&input[..n]);
                *left -= n as u64;
                Ok((n, n))
            }
            Framing::Chunked(chunked) => chunked.read(input, out),
            Framing::Close => {
                let n = input.len().min(out.len());
                out[..n].copy_from_slice(&input[..n]);
                Ok((n, n))
            }
        }
    }

    /// Whether the body was read to its end (a body that ends with the connection never is).
    pub(crate) fn is_done(&self) -> bool {
        match self {
            Framing::Empty | Framing::Length(0) => true,
            Framing::Chunked(c) => c.state == ChunkState::Done,
            Framing::Length(_) | Framing::Close => false,
        }
    }

    /// Whether the last chunk came (its trailers may still be missing): the body is whole even
    /// if the connection ends now.
    pub(crate) fn had_last_chunk(&self) -> bool {
        matches!(self, Framing::Chunked(c) if matches!(c.state, ChunkState::Trailers { .. } | ChunkState::TrailersEnd | ChunkState::Done))
    }
}

/// The chunked coding's decoder.
#[derive(Debug, Default)]
pub(crate) struct Chunked {
    state: ChunkState,
    /// The bytes of the current size line, or of the trailers so far.
    line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// The chunk size's hex digits: the value so far, how many digits.
    Size { value: u64, digits: u8 },
    /// Whitespace after the size: more of it, `;` or the line's end next.
    SizeSpace { value: u64 },
    /// A chunk extension, up to the line's end.
    Extension { value: u64 },
    /// `\r` came after the size line: `\n` next.
    SizeEnd { value: u64 },
    /// This many bytes of chunk data are left.
    Data(u64),
    /// The data's `\r\n` next.
    DataEnd,
    /// The data's `\n` next.
    DataEndLf,
    /// Trailer lines after the last chunk; `at_start` at the start of one.
    Trailers { at_start: bool },
    /// `\r` came on an empty trailer line: `\n` next.
    TrailersEnd,
    /// The body ended.
    Done,
}

impl Default for ChunkState {
    fn default() -> ChunkState {
        ChunkState::Size {
            value: 0,
            digits: 0,
        }
    }
}

impl Chunked {
    fn read(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize), Malformed> {
        let mut used = 0;
        let mut produced = 0;
        while used < input.len() {
            if let ChunkState::Data(left) = self.state {
                let room = out.len() - produced;
                if room == 0 {
                    break;
                }
                let n = (input.len() - used)
                    .min(room)
                    .min(usize::try_from(left).unwrap_or(usize::MAX));
                out[produced..produced + n].copy_from_slice(&input[used..used + n]);
                used += n;
                produced += n;
                self.state = if left == n as u64 {
                    ChunkState::DataEnd
                } else {
                    ChunkState::Data(left - n as u64)
                };
                continue;
            }
            if self.state == ChunkState::Done {
                break;
            }
            self.state = self.step(input[used])?;
            used += 1;
        }
        Ok((used, produced))
    }

    /// The state after one byte outside chunk data.
    fn step(&mut self, byte: u8) -> Result<ChunkState, Malformed> {
        use ChunkState::*;
        if !matches!(self.state, Data(_) | DataEnd | DataEndLf) {
            self.line += 1;
            if self.line > MAX_CHUNK_LINE {
                return Err(Malformed("a chunk size line or trailers too long"));
            }
        }
        Ok(match (self.state, byte) {
            (Size { value, digits }, b) if b.is_ascii_hexdigit() => {
                if digits >= 15 {
                    return Err(Malformed("a chunk size too large"));
                }
                let d = (b as char).to_digit(16).unwrap_or(0);
                Size {
                    value: (value << 4) | u64::from(d),
                    digits: digits + 1,
                }
            }
            (Size { digits: 0, .. }, _) => return Err(Malformed("a chunk without its size")),
            (Size { value, .. } | SizeSpace { value }, b' ' | b'\t') => SizeSpace { value },
            (Size { value, .. } | SizeSpace { value }, b';') => Extension { value },
            (Size { value, .. } | SizeSpace { value } | Extension { value }, b'\r') => {
                SizeEnd { value }
            }
            (
                Size { value, .. } | SizeSpace { value } | Extension { value } | SizeEnd { value },
                b'\n',
            ) => {
                self.line = 0;
                if value == 0 {
                    Trailers { at_start: true }
                } else {
                    Data(value)
                }
            }
            (Size { .. } | SizeSpace { .. } | SizeEnd { .. }, _) => {
                return Err(Malformed("an invalid chunk size line"))
            }
            (Extension { value }, _) => Extension { value },
            (DataEnd, b'\r') => DataEndLf,
            (DataEnd | DataEndLf, b'\n') => {
                self.line = 0;
                ChunkState::default()
            }
            (DataEnd | DataEndLf, _) => return Err(Malformed("chunk data longer than its size")),
            (Trailers { at_start: true }, b'\r') => TrailersEnd,
            (Trailers { at_start: true } | TrailersEnd, b'\n') => Done,
            (TrailersEnd, _) => return Err(Malformed("an invalid end of the trailers")),
            (Trailers { .. }, b'\n') => Trailers { at_start: true },
            (Trailers { .. }, _) => Trailers { at_start: false },
            (Data(_) | Done, _) => self.state,
        })
    }
}

#[cfg(test)]
mod tests;
