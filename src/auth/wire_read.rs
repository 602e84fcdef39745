//! An OAuth response read off its connection, sans I/O, on the transports' one HTTP/1.1
//! response parser (`transport::http1`: the head by `httparse`, interim responses skipped, the
//! body framed by its length, its chunks or the connection's end, RFC 9112's rules for
//! conflicting framing). The bytes come in with [`Reader::feed`]; the connection's end is
//! [`Reader::end`].

use crate::transport::http1::{self, Framing, Parsed};

use super::wire::{Failure, Response};

/// The longest response head read (what the Streamable HTTP exchange allows too).
const MAX_HEAD: usize = 64 * 1024;

/// A final response's status, headers, and how its body is framed.
type Head = (u16, Vec<(String, String)>, Framing);

/// A response being read.
pub(crate) struct Reader {
    /// The body's cap.
    max_body: usize,
    /// A `HEAD` request's response has no body, whatever its headers say.
    head_only: bool,
    /// Bytes not yet parsed.
    buf: Vec<u8>,
    /// The final head once read: its status, headers and framing.
    head: Option<Head>,
    body: Vec<u8>,
}

fn malformed(e: http1::Malformed) -> Failure {
    Failure::Other(e.to_string())
}

impl Reader {
    pub(crate) fn new(max_body: usize, head_only: bool) -> Reader {
        Reader {
            max_body,
            head_only,
            buf: Vec::new(),
            head: None,
            body: Vec::new(),
        }
    }

    /// Takes `input`: the response once it is whole.
    pub(crate) fn feed(&mut self, input: &[u8]) -> Result<Option<Response>, Failure> {
        self.buf.extend_from_slice(input);
        while self.head.is_none() {
            match http1::parse_head(&self.buf).map_err(malformed)? {
                Parsed::Partial if self.buf.len() > MAX_HEAD => {
                    return Err(Failure::Other(format!(
                        "a response head over {} KiB",
                        MAX_HEAD / 1024
                    )))
                }
                Parsed::Partial => return Ok(None),
                Parsed::Interim(used) => {
                    self.buf.drain(..used);
                }
                Parsed::Final(used, head) => {
                    self.buf.drain(..used);
                    let status = head.response.status().as_u16();
                    let headers = (head.response.headers().iter())
                        .map(|(k, v)| {
                            let value = String::from_utf8_lossy(v.as_bytes()).trim().to_owned();
                            (k.as_str().to_owned(), value)
                        })
                        .collect();
                    let framing = if self.head_only {
                        Framing::Empty
                    } else {
                        head.body
                    };
                    if let Framing::Length(n) = framing {
                        if n > self.max_body as u64 {
                            return Err(Failure::TooLarge(self.max_body));
                        }
                    }
                    self.head = Some((status, headers, framing));
                }
            }
        }
        let Some((_, _, framing)) = &mut self.head else {
            return Ok(None);
        };
        let mut out = [0u8; 8 * 1024];
        loop {
            let (used, wrote) = framing.read(&self.buf, &mut out).map_err(malformed)?;
            self.buf.drain(..used);
            self.body.extend_from_slice(&out[..wrote]);
            if self.body.len() > self.max_body {
                return Err(Failure::TooLarge(self.max_body));
            }
            if used == 0 {
                break;
            }
        }
        if framing.is_done() || framing.had_last_chunk() {
            return Ok(self.finish());
        }
        Ok(None)
    }

    /// The connection ended: the response, when it was framed by that end.
    pub(crate) fn end(mut self) -> Result<Response, Failure> {
        match &self.head {
            Some((_, _, Framing::Close)) => self
                .finish()
                .ok_or_else(|| Failure::Other("no response".into())),
            Some(_) => Err(Failure::Other(
                "the connection closed in the middle of the response".into(),
            )),
            None => Err(Failure::Other(
                "the connection closed before a response".into(),
            )),
        }
    }

    /// Whether a head has been read (a TLS peer that then closes without close_notify ends
    /// a body framed by the connection's end).
    pub(crate) fn has_head(&self) -> bool {
        self.head.is_some()
    }

    fn finish(&mut self) -> Option<Response> {
        let (status, headers, _) = self.head.take()?;
        Some(Response {
            status,
            headers,
            body: std::mem::take(&mut self.body),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8], step: usize) -> Result<Option<Response>, Failure> {
        let mut r = Reader::new(1 << 20, false);
        for piece in bytes.chunks(step.max(1)) {
            if let Some(done) = r.feed(piece)? {
                return Ok(Some(done));
            }
        }
        Ok(r.end().ok())
    }

    #[test]
    fn a_response_by_length_by_chunks_and_by_the_end_in_any_pieces() {
        for step in [1, 3, 1000] {
            let r = read_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nA: b\r\n\r\nabc",
                step,
            )
            .unwrap()
            .unwrap();
            assert_eq!((r.status, r.body.as_slice()), (200, &b"abc"[..]));
            assert_eq!(r.header("a"), Some("b"));
            let r = read_all(
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
                step,
            )
            .unwrap()
            .unwrap();
            assert_eq!((r.status, r.body.as_slice()), (201, &b"abcde"[..]));
            let r = read_all(b"HTTP/1.0 200 OK\r\n\r\nto the end", step)
                .unwrap()
                .unwrap();
            assert_eq!(r.body, b"to the end");
        }
    }

    #[test]
    fn broken_and_oversized_responses_are_failures() {
        assert!(read_all(b"SSH-2.0-OpenSSH\r\n\r\n", 100).is_err());
        assert!(read_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            100
        )
        .is_err());
        assert!(read_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nx",
            100
        )
        .is_err());
        let mut r = Reader::new(10, false);
        assert!(matches!(
            r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"),
            Err(Failure::TooLarge(10))
        ));
        // Cut short: an error, never a short body.
        let mut r = Reader::new(100, false);
        assert!(r
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab")
            .unwrap()
            .is_none());
        assert!(r.end().is_err());
        // A HEAD's response has no body.
        let mut r = Reader::new(100, true);
        let done = r
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(done.body.is_empty());
    }
}
