//! A pure `text/event-stream` decoder (the WHATWG "server-sent events" format).
//!
//! Bytes go in with [`SseDecoder::feed`], in chunks of any size; whole events come out.
//! Handled: the `event`, `data` (several lines join with `\n`), `id` and `retry` fields;
//! comment lines (`:`); CRLF, CR and LF line ends, even split across chunks; a leading BOM;
//! a line or an event larger than the cap (an error, never buffered whole). As the format
//! says, an event with empty data is not dispatched, but its `id` still becomes the last event
//! id (servers send such "priming" events so a client can resume after them).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type (`message` when the stream gave none).
    pub event: String,
    /// The data lines joined by `\n`.
    pub data: String,
    /// The last event id in force when the event was dispatched.
    pub id: Option<String>,
}

/// A line or an event went over the decoder's cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseTooLarge {
    /// The cap, in bytes.
    pub limit: usize,
}

/// The incremental decoder.
#[derive(Debug)]
pub struct SseDecoder {
    limit: usize,
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    bom_seen: usize,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<u64>,
}

impl SseDecoder {
    /// A decoder whose lines and events may hold at most `limit` bytes.
    pub fn new(limit: usize) -> SseDecoder {
        SseDecoder {
            limit,
            line: Vec::new(),
            after_cr: false,
            started: false,
            bom_seen: 0,
            event: String::new(),
            data: String::new(),
            has_data: false,
            last_id: None,
            retry: None,
        }
    }

    /// The last event id seen (set by any `id` field, dispatched or not).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection delay the server asked for, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// Feeds bytes; `on_event` gets each event completed by them.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut dyn FnMut(SseEvent),
    ) -> Result<(), SseTooLarge> {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        if !self.started {
            // A BOM may only open the stream, and may arrive split over chunks.
            while self.bom_seen < BOM.len() && !bytes.is_empty() {
                if bytes[0] != BOM[self.bom_seen] {
                    // Not a BOM after all: what looked like one is content.
                    self.started = true;
                    self.push(&BOM[..self.bom_seen], on_event)?;
                    break;
                }
                self.bom_seen += 1;
                bytes = &bytes[1..];
            }
            if self.bom_seen == BOM.len() {
                self.started = true;
            }
            if !self.started {
                return Ok(());
            }
        }
        self.push(bytes, on_event)
    }

    fn push(
        &mut self,
        bytes: &[u8],
        on_event: &mut dyn FnMut(SseEvent),
    ) -> Result<(), SseTooLarge> {
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(on_event)?,
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(on_event)?;
                }
                _ => {
                    if self.line.len() >= self.limit {
                        return Err(SseTooLarge { limit: self.limit });
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(())
    }

    /// Ends the stream: a trailing event without its blank line is not dispatched (per the
    /// format), so this only resets the partial state.
    pub fn finish(&mut self) {
        self.line.clear();
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }

    fn end_line(&mut self, on_event: &mut dyn FnMut(SseEvent)) -> Result<(), SseTooLarge> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.find(':') {
            Some(0) => return Ok(()), // a comment
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(SseTooLarge { limit: self.limit });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        self.line = line;
        self.line.clear();
        Ok(())
    }

    fn dispatch(&mut self, on_event: &mut dyn FnMut(SseEvent)) {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        let had_data = std::mem::replace(&mut self.has_data, false);
        if !had_data || data.is_empty() {
            return;
        }
        on_event(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(
        chunks: &[&[u8]],
        limit: usize,
    ) -> (Result<Vec<SseEvent>, SseTooLarge>, SseDecoder) {
        let mut d = SseDecoder::new(limit);
        let mut out = Vec::new();
        for c in chunks {
            if let Err(e) = d.feed(c, &mut |ev| out.push(ev)) {
                return (Err(e), d);
            }
        }
        (Ok(out), d)
    }

    fn decode(input: &[u8]) -> Vec<SseEvent> {
        decode_chunks(&[input], 1 << 20).0.unwrap()
    }

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.map(Into::into),
        }
    }

    #[test]
    fn fields_multiline_data_ids_and_comments() {
        let got = decode(
            b": hello\nevent: endpoint\ndata: /messages?s=1\n\nid: 7\ndata: a\ndata:b\ndata\n\n",
        );
        assert_eq!(
            got,
            vec![
                ev("endpoint", "/messages?s=1", None),
                ev("message", "a\nb\n", Some("7"))
            ]
        );
    }

    #[test]
    fn every_line_ending_even_split_across_chunks() {
        let crlf = decode(b"data: 1\r\n\r\ndata: 2\r\n\r\n");
        let cr = decode(b"data: 1\r\rdata: 2\r\r");
        let lf = decode(b"data: 1\n\ndata: 2\n\n");
        assert_eq!(crlf, lf);
        assert_eq!(cr, lf);
        // Split "\r" | "\n" must still be one line end, not two (which would dispatch early).
        let (split, _) = decode_chunks(&[b"data: 1\r", b"\ndata: 2\r", b"\n\r", b"\n"], 1024);
        assert_eq!(split.unwrap(), vec![ev("message", "1\n2", None)]);
        // One byte at a time.
        let input = b"event: e\r\nid: 9\r\ndata: x\r\n\r\n";
        let chunks: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(
            decode_chunks(&chunks, 1024).0.unwrap(),
            vec![ev("e", "x", Some("9"))]
        );
    }

    #[test]
    fn a_leading_bom_is_skipped_even_split() {
        assert_eq!(
            decode(b"\xEF\xBB\xBFdata: x\n\n"),
            vec![ev("message", "x", None)]
        );
        let (got, _) = decode_chunks(&[b"\xEF", b"\xBB", b"\xBFdata: y\n\n"], 1024);
        assert_eq!(got.unwrap(), vec![ev("message", "y", None)]);
        // Not a BOM: the bytes are kept.
        assert_eq!(decode(b"\xEFdata\n\n"), vec![]);
    }

    #[test]
    fn empty_data_is_not_dispatched_but_its_id_counts() {
        let (got, d) = decode_chunks(
            &[b"id: prime-1\nretry: 250\ndata:\n\n", b"event: ping\n\n"],
            1024,
        );
        assert_eq!(got.unwrap(), vec![]);
        assert_eq!(d.last_event_id(), Some("prime-1"));
        assert_eq!(d.retry_ms(), Some(250));
    }

    #[test]
    fn retry_must_be_digits_and_id_must_not_hold_nul() {
        let (_, d) = decode_chunks(&[b"retry: soon\nid: a\0b\n\n"], 1024);
        assert_eq!(d.retry_ms(), None);
        assert_eq!(d.last_event_id(), None);
    }

    #[test]
    fn an_unterminated_event_at_the_end_is_dropped() {
        let (got, mut d) = decode_chunks(&[b"data: complete\n\ndata: cut in the mid"], 1024);
        assert_eq!(got.unwrap(), vec![ev("message", "complete", None)]);
        d.finish();
        let mut out = Vec::new();
        d.feed(b"\n\n", &mut |e| out.push(e)).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn lines_and_events_are_capped() {
        let (got, _) = decode_chunks(&[&[b'x'; 100]], 64);
        assert_eq!(got.unwrap_err(), SseTooLarge { limit: 64 });
        // Many short data lines that add up past the cap.
        let many = b"data: 0123456789\n".repeat(10);
        let (got, _) = decode_chunks(&[&many], 64);
        assert_eq!(got.unwrap_err(), SseTooLarge { limit: 64 });
    }

    #[test]
    fn a_field_without_colon_and_unknown_fields() {
        assert_eq!(decode(b"data\nfoo: bar\n\n"), vec![]);
        assert_eq!(decode(b"data\ndata\n\n"), vec![ev("message", "\n", None)]);
    }
}
