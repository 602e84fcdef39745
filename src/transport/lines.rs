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

    #[test]
    fn trims_bom_and_cr() {
        assert_eq!(trim_line(b"\xEF\xBB\xBF{}\r"), b"{}");
        assert_eq!(trim_line(b"{}"), b"{}");
    }
}
