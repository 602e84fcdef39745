//! Reading newline-framed input without ever buffering more than a cap.

use std::io::{self, BufRead};

/// What one call of [`read_line_capped`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// A whole line is in the buffer (without its `\n`).
    Line,
    /// The input ended. The buffer holds any unterminated last line.
    Eof,
    /// The line is longer than the cap. With `discard_rest`, the rest of it was skipped and the
    /// buffer holds its first `cap` bytes; without, reading stopped at the cap.
    TooLong,
}

/// Reads one line into `buf` (cleared first), holding at most `cap` bytes of it.
pub(crate) fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
    discard_rest: bool,
) -> io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Eof
            });
        }
        let (chunk, found) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long {
            let room = cap - buf.len();
            if chunk.len() > room {
                buf.extend_from_slice(&chunk[..room]);
                too_long = true;
                if !discard_rest {
                    let used = room;
                    reader.consume(used);
                    return Ok(LineRead::TooLong);
                }
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = found.unwrap_or(available.len());
        reader.consume(used);
        if found.is_some() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// What a line buffer keeps between lines (1 MiB): after a longer line its memory is returned, so one
/// huge message does not stay allocated for the life of the connection (and is freed before
/// its result is parsed).
const KEPT_CAPACITY: usize = 1024 * 1024;

/// Empties a line buffer for the next line, returning its memory when a long line grew it.
pub(crate) fn reuse(buf: &mut Vec<u8>) {
    if buf.capacity() > KEPT_CAPACITY {
        *buf = Vec::new();
    } else {
        buf.clear();
    }
}

/// The first `\n` in `data`.
#[cfg_attr(not(unix), allow(dead_code))] // the multiplexed loop (`poll`) is Unix-only
fn find_newline(data: &[u8]) -> Option<usize> {
    find_byte(data, b'\n')
}

/// The first `byte` in `data`. `<[u8]>::contains` is the standard library's `memchr`, so
/// blocks without it are passed over at its speed; a byte-by-byte search cost a sixth of the
/// reading of a large message.
pub(crate) fn find_byte(data: &[u8], byte: u8) -> Option<usize> {
    const BLOCK: usize = 4096;
    let mut offset = 0;
    for block in data.chunks(BLOCK) {
        if block.contains(&byte) {
            return block.iter().position(|b| *b == byte).map(|i| offset + i);
        }
        offset += block.len();
    }
    None
}

/// A push-based line splitter for input read in chunks (the multiplexed stdio loop).
#[cfg_attr(not(unix), allow(dead_code))] // the multiplexed loop (`poll`) is Unix-only
pub(crate) struct LineSplitter {
    buf: Vec<u8>,
    cap: usize,
    discard_rest: bool,
    discarding: bool,
}

/// What [`LineSplitter::push`] found.
#[cfg_attr(not(unix), allow(dead_code))] // the multiplexed loop (`poll`) is Unix-only
pub(crate) enum Piece<'a> {
    /// A whole line (without its `\n`).
    Line(&'a [u8]),
    /// The first `cap` bytes of a line longer than the cap.
    TooLong(&'a [u8]),
}

#[cfg_attr(not(unix), allow(dead_code))] // the multiplexed loop (`poll`) is Unix-only
impl LineSplitter {
    /// Lines of at most `cap` bytes. A longer one is reported as [`Piece::TooLong`]; with
    /// `discard_rest` its rest is skipped and splitting goes on, without it the caller stops.
    pub(crate) fn new(cap: usize, discard_rest: bool) -> LineSplitter {
        LineSplitter {
            buf: Vec::new(),
            cap,
            discard_rest,
            discarding: false,
        }
    }

    /// Splits `data`; `on_piece` returns false to stop (the rest of `data` is dropped).
    pub(crate) fn push(&mut self, mut data: &[u8], on_piece: &mut dyn FnMut(Piece<'_>) -> bool) {
        while !data.is_empty() {
            let newline = find_newline(data);
            let (chunk, rest) = match newline {
                Some(i) => (&data[..i], &data[i + 1..]),
                None => (data, &data[data.len()..]),
            };
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.buf.len() + chunk.len() > self.cap {
                let room = self.cap - self.buf.len();
                self.buf.extend_from_slice(&chunk[..room]);
                let go_on = on_piece(Piece::TooLong(&self.buf));
                reuse(&mut self.buf);
                if !go_on || !self.discard_rest {
                    return;
                }
                self.discarding = newline.is_none();
            } else {
                self.buf.extend_from_slice(chunk);
                if newline.is_some() {
                    let go_on = on_piece(Piece::Line(&self.buf));
                    reuse(&mut self.buf);
                    if !go_on {
                        return;
                    }
                }
            }
            data = rest;
        }
    }

    /// The unterminated rest (at the end of the input).
    pub(crate) fn take_rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

/// Strips what lenient reading tolerates around a line: a UTF-8 BOM and a trailing `\r`.
pub(crate) fn trim_line(mut line: &[u8]) -> &[u8] {
    if let Some(rest) = line.strip_prefix(b"\xEF\xBB\xBF") {
        line = rest;
    }
    if let Some(rest) = line.strip_suffix(b"\r") {
        line = rest;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn all(input: &[u8], cap: usize, discard: bool) -> Vec<(LineRead, Vec<u8>)> {
        // A tiny buffer makes lines span many fill_buf calls.
        let mut r = BufReader::with_capacity(3, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            let res = read_line_capped(&mut r, &mut buf, cap, discard).unwrap();
            let stop = res == LineRead::Eof || (res == LineRead::TooLong && !discard);
            out.push((res, buf.clone()));
            if stop {
                return out;
            }
        }
    }

    #[test]
    fn splits_lines_across_buffer_boundaries() {
        let got = all(b"abcdef\n\nxy", 100, false);
        assert_eq!(
            got,
            vec![
                (LineRead::Line, b"abcdef".to_vec()),
                (LineRead::Line, b"".to_vec()),
                (LineRead::Eof, b"xy".to_vec()),
            ]
        );
    }

    #[test]
    fn stops_at_the_cap_without_buffering_more() {
        let got = all(b"0123456789\nok\n", 4, false);
        assert_eq!(got, vec![(LineRead::TooLong, b"0123".to_vec())]);
    }

    #[test]
    fn discards_the_rest_of_a_long_line_when_asked() {
        let got = all(b"0123456789\nok\n", 4, true);
        assert_eq!(
            got,
            vec![
                (LineRead::TooLong, b"0123".to_vec()),
                (LineRead::Line, b"ok".to_vec()),
                (LineRead::Eof, b"".to_vec()),
            ]
        );
    }

    fn split(input: &[u8], chunk: usize, cap: usize, discard: bool) -> (Vec<String>, Vec<u8>) {
        let mut s = LineSplitter::new(cap, discard);
        let mut out = Vec::new();
        for c in input.chunks(chunk) {
            s.push(c, &mut |p| {
                match p {
                    Piece::Line(l) => out.push(String::from_utf8_lossy(l).into_owned()),
                    Piece::TooLong(l) => out.push(format!("LONG:{}", String::from_utf8_lossy(l))),
                }
                true
            });
        }
        (out, s.take_rest())
    }

    #[test]
    fn the_splitter_agrees_with_the_reader() {
        for chunk in [1, 2, 3, 100] {
            let (lines, rest) = split(b"ab\n\ncdef\ngh", chunk, 10, false);
            assert_eq!(lines, ["ab", "", "cdef"], "chunk {chunk}");
            assert_eq!(rest, b"gh");
            let (lines, _) = split(b"0123456789abc\nok\n", chunk, 4, true);
            assert_eq!(lines, ["LONG:0123", "ok"], "chunk {chunk}");
        }
        let mut s = LineSplitter::new(4, false);
        let mut pieces = 0;
        s.push(b"0123456789\nmore\n", &mut |p| {
            pieces += 1;
            matches!(p, Piece::TooLong(b"0123"))
        });
        assert_eq!(pieces, 1, "stops at the first over-long line");
    }

    #[test]
    fn finds_the_first_newline_across_blocks() {
        assert_eq!(find_newline(b""), None);
        assert_eq!(find_newline(b"abc"), None);
        assert_eq!(find_newline(b"\nx\n"), Some(0));
        let mut long = vec![b'a'; 10_000];
        long.push(b'\n');
        long.push(b'\n');
        assert_eq!(find_newline(&long), Some(10_000));
        long[4096] = b'\n';
        assert_eq!(find_newline(&long), Some(4096));
    }

    #[test]
    fn trims_bom_and_cr() {
        assert_eq!(trim_line(b"\xEF\xBB\xBF{}\r"), b"{}");
        assert_eq!(trim_line(b"{}"), b"{}");
    }
}
