//! The fuzz targets: one function per parser that meets input nobody checked, each running the
//! parser and the properties it must keep (no panic, no hang, two readings agreeing, no secret
//! in what it shows). `fuzz/` drives them with libFuzzer (`cargo fuzz run NAME`); this crate's
//! tests replay every committed input of `fuzz/corpus/NAME` through them.
//!
//! Built for tests and under `--cfg fuzzing` (which `cargo fuzz` sets) only; hidden, not part
//! of the API. The CLI's `KEY=VALUE` typing is the command's, not the library's: its target is
//! `src/bin/mcp/arguments.rs`'s own `fuzz`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "fuzz targets: a property that fails must crash, for the fuzzer to see it"
)]

use std::io::BufReader;

use serde_json::Value;

use crate::auth::challenge::Challenge;
use crate::auth::metadata::{AuthorizationServerMetadata, ResourceMetadata};
use crate::auth::token::{oauth_error_of, TokenResponse};
use crate::jsonrpc::Message;
use crate::net::http1::{parse_head, Framing, Malformed, Parsed};
use crate::protocol::top_level::{member, Scan};
use crate::transport::lines::{read_line_capped, trim_line, LineRead, LineSplitter, Piece};
use crate::transport::sse_parser::{SseDecoder, SseEvent};

mod config;
pub use config::{config_sources, config_sources_in, config_text};

/// A fuzz target: it panics on a breach of what it checks.
pub type Target = fn(&[u8]);

/// Every library target by name, as `fuzz/fuzz_targets/NAME.rs` calls it.
pub const TARGETS: &[(&str, Target)] = &[
    ("stdio_lines", stdio_lines),
    ("jsonrpc_envelope", jsonrpc_envelope),
    ("event_stream", event_stream),
    ("http_response", http_response),
    ("request_head", request_head),
    ("top_level_member", top_level_member),
    ("www_authenticate", www_authenticate),
    ("oauth_metadata", oauth_metadata),
    ("url_redaction", url_redaction),
    ("config_text", config_text),
    ("config_sources", config_sources),
];

/// A value a stdio server was given in its environment: never in a quoted line.
const SECRET: &str = "hunter2-Secret";

/// The stdio reading path: the blocking line reader and the chunked splitter agree on every
/// line (byte 0: the cap and whether a long line's rest is skipped; byte 1: the read size), and
/// each line goes where a server's stdout line goes (an envelope, else the salvage of a broken
/// response's id, else a quote for the log that never holds the server's secret).
pub fn stdio_lines(data: &[u8]) {
    let [a, b, input @ ..] = data else { return };
    let cap = 1 + usize::from(*a & 0x7f);
    let discard = a & 0x80 != 0;
    let chunk = 1 + usize::from(b % 16);

    let mut reader = BufReader::with_capacity(chunk, input);
    let mut read = Vec::new();
    let mut buf = Vec::new();
    let rest = loop {
        match read_line_capped(&mut reader, &mut buf, cap, discard).expect("reading a slice") {
            LineRead::Line => read.push((false, buf.clone())),
            LineRead::TooLong => {
                read.push((true, buf.clone()));
                if !discard {
                    break None;
                }
            }
            LineRead::Eof => break Some(buf.clone()),
        }
    };

    let mut splitter = LineSplitter::new(cap, discard);
    let mut split = Vec::new();
    let mut stopped = false;
    for piece in input.chunks(chunk) {
        splitter.push(piece, &mut |p| {
            let long = matches!(p, Piece::TooLong(_));
            let (Piece::Line(l) | Piece::TooLong(l)) = p;
            split.push((long, l.to_vec()));
            stopped = long && !discard;
            !stopped
        });
        if stopped {
            break;
        }
    }
    assert_eq!(read, split, "the reader and the splitter split alike");
    if !stopped {
        assert_eq!(
            rest,
            Some(splitter.take_rest()),
            "the same unterminated rest"
        );
    }

    let secrets = [SECRET.to_owned()];
    // The quote reads a line's start whatever its length (past the cap too).
    for line in input.split(|b| *b == b'\n') {
        let quoted = crate::transport::stdio::noise::quote(line, &secrets);
        assert!(!quoted.contains(SECRET), "{quoted:?}");
    }
    for (_, line) in &read {
        let line = trim_line(line);
        if Message::parse(line).is_err() {
            let _ = crate::transport::stdio::salvage::response_id(line);
            let quoted = crate::transport::stdio::noise::quote(line, &secrets);
            assert!(!quoted.contains(SECRET), "{quoted:?}");
            assert!(!quoted.chars().any(char::is_control), "{quoted:?}");
        }
    }
}

/// The JSON-RPC envelope: what it reads it writes back readable and stable, and an object is
/// read the same straight into its members as through a parsed `Value`.
pub fn jsonrpc_envelope(data: &[u8]) {
    let direct = Message::parse(data);
    if let Ok(messages) = &direct {
        for m in messages {
            let line = m.to_line();
            let again = Message::parse(&line).expect("what we write, we read");
            assert_eq!(again.len(), 1);
            // A result is kept as its text, which a `Value` may not read (a lone surrogate
            // escape): such a line is written back byte for byte.
            let second_line = again[0].to_line();
            let read = |l: &[u8]| serde_json::from_slice::<Value>(l).ok();
            match (read(&line), read(&second_line)) {
                (Some(a), Some(b)) => assert!(same(&a, &b), "writing is stable: {a} / {b}"),
                (None, None) => assert_eq!(line, second_line, "writing is stable"),
                (a, b) => panic!("one writing reads, the other not: {a:?} / {b:?}"),
            }
        }
    }
    let object = data
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{');
    if object {
        if let Ok(v) = serde_json::from_slice::<Value>(data) {
            let via_value = Message::from_value(v);
            match (&direct, &via_value) {
                (Ok(d), Ok(v)) => {
                    let read = |m: &Message| serde_json::from_slice::<Value>(&m.to_line()).ok();
                    let (a, b) = (read(&d[0]), read(v));
                    assert!(
                        matches!((&a, &b), (Some(a), Some(b)) if same(a, b)),
                        "the same message either way: {a:?} / {b:?}"
                    );
                }
                (Err(_), Err(_)) => {}
                _ => panic!("the two readings differ: {direct:?} / {via_value:?}"),
            }
        }
    }
}

/// Equal JSON, a float equal to the last bit but one: serde_json's float parsing may differ in
/// the last bit between a number's text and the text written from it, and the `Value` reading
/// has been through that once more than the direct one.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= x.abs().max(y.abs()) * 4.0 * f64::EPSILON
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

type Decoded = (Vec<SseEvent>, bool, Option<String>, Option<u64>);

fn decode(input: &[u8], limit: usize, chunk: usize) -> Decoded {
    let mut decoder = SseDecoder::new(limit);
    let mut events = Vec::new();
    for piece in input.chunks(chunk) {
        if decoder.feed(piece, &mut |e| events.push(e)).is_err() {
            return (events, true, None, None);
        }
    }
    decoder.finish();
    let last = decoder.last_event_id().map(str::to_owned);
    (events, false, last, decoder.retry_ms())
}

/// The event-stream parser: the same events, ids and overflow however the stream is cut
/// (byte 0: the line limit; byte 1: the chunk size), and every event within the limit.
pub fn event_stream(data: &[u8]) {
    let [a, b, input @ ..] = data else { return };
    let limit = 8 + usize::from(*a) * 4;
    let whole = decode(input, limit, input.len().max(1));
    let cut = decode(input, limit, 1 + usize::from(b % 32));
    assert_eq!(whole, cut, "the cut stream decodes as the whole one");
    for e in &whole.0 {
        assert!(!e.data.is_empty() && !e.event.is_empty(), "{e:?}");
        assert!(
            e.data.len() <= limit,
            "an event's data is within the limit: {e:?} {limit}"
        );
        assert!(e.id.as_ref().is_none_or(|id| !id.contains('\0')), "{e:?}");
    }
}

/// A response as the one exchange reads every response of the crate (the MCP transports' and
/// the OAuth client's): heads (interim ones skipped) then the body,
/// taken off the input whole and in cuts (byte 0: the cut, byte 1: the room read into): both
/// readings agree, no body byte is made up, and a length is never overrun. (An error's text is
/// a fixed one by its type: it cannot show a header.)
pub fn http_response(data: &[u8]) {
    let [a, b, input @ ..] = data else { return };
    let whole = read_response(input, input.len().max(1), 4096);
    let cut = read_response(input, 1 + usize::from(a % 32), 1 + usize::from(b % 32));
    match (&whole, &cut) {
        (Ok(w), Ok(c)) => assert_eq!(w, c, "the cut response reads as the whole one"),
        (Err(_), Err(_)) => {}
        _ => panic!("one reading failed, the other not: {whole:?} {cut:?}"),
    }
    if let Ok(Some((body, _))) = &whole {
        assert!(body.len() <= input.len(), "no body byte made up");
    }
}

/// The request head the loopback servers read (byte 0's top bit: as the sandbox's proxy reads
/// it): the same head (or the same refusal) whole, in cuts through a buffered reader (byte 0:
/// the reader's buffer size), and one byte short of its end still incomplete; what it takes is
/// within the input and the limit, and what follows it is left for the body.
pub fn request_head(data: &[u8]) {
    use crate::net::request_head::{
        parse, parse_proxy, read_head, read_proxy_head, RequestHead, MAX_HEAD,
    };
    let [a, input @ ..] = data else { return };
    let proxy = a & 0x80 != 0;
    type Parse = fn(&[u8]) -> Result<Option<(RequestHead, usize)>, &'static str>;
    type Read = fn(&mut std::io::BufReader<&[u8]>) -> Result<RequestHead, &'static str>;
    let (parse, read): (Parse, Read) = if proxy {
        (parse_proxy, |r| read_proxy_head(r))
    } else {
        (parse, |r| read_head(r))
    };
    let whole = parse(input);
    let mut reader = std::io::BufReader::with_capacity(1 + usize::from(a % 64), input);
    let read = read(&mut reader);
    match (&whole, &read) {
        (Ok(Some((head, used))), Ok(h)) => {
            assert_eq!(head, h, "read in cuts as whole");
            assert!(*used <= input.len() && *used <= MAX_HEAD);
            let mut rest = Vec::new();
            let _ = std::io::Read::read_to_end(&mut reader, &mut rest);
            assert_eq!(&input[*used..], &rest[..], "what follows the head is left");
            assert_eq!(parse(&input[..used - 1]), Ok(None), "one byte short");
            assert!(!head.method.is_empty());
            if proxy {
                assert!(head.path.contains(':') && head.query.is_empty());
            } else {
                assert!(head.path.starts_with('/'));
            }
        }
        (Ok(None), Err(e)) => assert_eq!(*e, "incomplete request"),
        (Err(w), Err(r)) => assert_eq!(w, r, "the same refusal"),
        _ => panic!("whole and read disagree: {whole:?} {read:?}"),
    }
}

/// The body of the first final response in `input` (fed `step` bytes at a time, read into
/// `room` bytes at a time), and whether it reached its end; `None` while the head is
/// incomplete.
type ReadResponse = Result<Option<(Vec<u8>, bool)>, Malformed>;

fn read_response(input: &[u8], step: usize, room: usize) -> ReadResponse {
    let mut fed = 0;
    let mut at = 0;
    let mut framing: Option<Framing> = None;
    let mut limit = None;
    let mut body = Vec::new();
    let mut out = vec![0u8; room];
    loop {
        let progressed = match &mut framing {
            None => match parse_head(&input[at..fed])? {
                Parsed::Partial => false,
                Parsed::Interim(n) => {
                    at += n;
                    true
                }
                Parsed::Final(n, head) => {
                    at += n;
                    if let Framing::Length(len) = head.body {
                        limit = Some(len);
                    }
                    framing = Some(head.body);
                    true
                }
            },
            Some(f) if f.is_done() => return Ok(Some((body, true))),
            Some(f) => {
                let (used, produced) = f.read(&input[at..fed], &mut out)?;
                assert!(produced <= used, "no more body bytes than input taken");
                at += used;
                body.extend_from_slice(&out[..produced]);
                if let Some(len) = limit {
                    assert!(body.len() as u64 <= len, "a length is never overrun");
                }
                used > 0 || produced > 0
            }
        };
        if !progressed {
            if fed == input.len() {
                return Ok(framing.map(|f| (body, f.is_done())));
            }
            fed = (fed + step).min(input.len());
        }
    }
}

/// The top-level member scanner, on valid JSON (its precondition): whatever it answers agrees
/// with a full reading.
pub fn top_level_member(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if serde_json::from_str::<Value>(text).is_err() {
        return;
    }
    let full: Option<serde_json::Map<String, Value>> = serde_json::from_str(text).ok();
    for name in ["id", "result", "resultType", "error", "a", "_meta", "tools"] {
        match member(text, name) {
            Scan::Found(v) => {
                let parsed: Value = serde_json::from_str(v).expect("the found text is JSON");
                let full = full.as_ref().expect("found in an object");
                assert_eq!(full.get(name), Some(&parsed), "{name} in {text}");
            }
            Scan::Absent => {
                let full = full.as_ref().expect("absent from an object");
                assert!(!full.contains_key(name), "{name} in {text}");
            }
            Scan::Unsure => {}
        }
    }
}

/// `WWW-Authenticate`: never a panic, and a challenge's scopes are words.
pub fn www_authenticate(data: &[u8]) {
    let header = String::from_utf8_lossy(data);
    if let Some(c) = Challenge::parse(&header) {
        for scope in c.scope.iter().flatten() {
            assert!(!scope.is_empty() && !scope.contains(char::is_whitespace));
        }
        let _ = c.is_insufficient_scope();
    }
}

/// Replaces every string of `v` that is one of `these` by `with`.
fn replace_strings(v: &mut Value, these: &[String], with: &str) {
    match v {
        Value::String(s) if these.contains(s) => *s = with.to_owned(),
        Value::Object(m) => m.values_mut().for_each(|v| replace_strings(v, these, with)),
        Value::Array(a) => a.iter_mut().for_each(|v| replace_strings(v, these, with)),
        _ => {}
    }
}

/// The strings of `v` under the members `names`, at any depth.
fn strings_under(v: &Value, names: &[&str], out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::String(s) if names.contains(&k.as_str()) => out.push(s.clone()),
                    _ => strings_under(v, names, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| strings_under(v, names, out)),
        _ => {}
    }
}

/// OAuth documents (byte 0 picks one): protected resource metadata and its resource check,
/// authorization server metadata for an issuer, a token response, an error body. A token
/// response never shows its tokens, in its `Debug` or its errors.
pub fn oauth_metadata(data: &[u8]) {
    let [which, body @ ..] = data else { return };
    const URL: &str = "https://as.example.test/.well-known/oauth-authorization-server";
    match which % 4 {
        0 => {
            if let Ok(m) = ResourceMetadata::parse(body, "https://mcp.example.test/.well-known") {
                let _ = m.check_resource("https://mcp.example.test/mcp");
            }
        }
        1 => {
            if let Ok(Some(m)) =
                AuthorizationServerMetadata::parse(body, URL, "https://as.example.test")
            {
                let _ = m.require_s256();
                let _ = m.lists_scope("read");
            }
        }
        2 => {
            // The status and the content type vary with byte 0's upper bits.
            let status = [200, 400, 401, 500][usize::from(which / 4 % 4)];
            let kind = ["application/json", "application/x-www-form-urlencoded"]
                [usize::from(which / 16 % 2)];
            let shown =
                |body: &[u8]| match TokenResponse::parse(status, Some(kind), body, URL, true) {
                    Ok(t) => format!("{t:?}"),
                    Err(e) => format!("{e} {e:?}"),
                };
            let with_tokens = shown(body);
            let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
                return;
            };
            let mut tokens = Vec::new();
            let names = ["access_token", "refresh_token", "id_token"];
            strings_under(&v, &names, &mut tokens);
            // What the parse shows anyway (field names, the URL, other members): the same body
            // with every token replaced.
            replace_strings(&mut v, &tokens, "zz-placeholder-zz");
            let without = shown(&serde_json::to_vec(&v).expect("JSON"));
            for t in tokens.iter().filter(|t| t.len() >= 12) {
                if !without.contains(t.as_str()) {
                    assert!(
                        !with_tokens.contains(t.as_str()),
                        "a token shown: {with_tokens}"
                    );
                }
            }
        }
        _ => {
            let _ = oauth_error_of(body);
        }
    }
}

/// URL redaction, parsing and the proxy settings: a redacted URL has no control character, is
/// clipped, and (when shown whole) has no query value left; a proxy URL's shown form never has
/// its password.
pub fn url_redaction(data: &[u8]) {
    use crate::net::url::{redact, Url, REDACTED, SHOWN_CHARS};
    let text = String::from_utf8_lossy(data);
    let shown = redact(&text);
    assert!(!shown.chars().any(char::is_control), "{shown:?}");
    let count = shown.chars().count();
    assert!(count <= SHOWN_CHARS + 1, "clipped: {count}");
    if count < SHOWN_CHARS {
        if let Some((_, query)) = shown.split_once('?') {
            for item in query.split('&').filter(|i| !i.is_empty()) {
                assert!(
                    item == REDACTED || item.ends_with(&format!("={REDACTED}")),
                    "{item:?} in {shown:?}"
                );
            }
        }
    }
    let _ = Url::parse(&text);
    let _ = crate::net::url::split(&text);
    if let Ok(proxy) = crate::net::proxy::ProxyUrl::parse(&text) {
        let authority = text
            .trim()
            .split_once("://")
            .map_or(text.trim(), |(_, r)| r);
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            // Neither the proxy's own form nor a config's `Debug` (which redacts) shows it.
            let with = format!("{userinfo}@");
            let (own, redacted) = (proxy.redacted(), redact(&text));
            assert!(!own.contains(&with), "{own:?}");
            assert!(!redacted.contains(&with), "{redacted:?}");
        }
    }
    let no_proxy = crate::net::proxy::NoProxy::parse(&text);
    let _ = no_proxy.matches("mcp.example.test");
    let _ = no_proxy.matches("127.0.0.1");
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every committed input of every library target replays (the fuzzers' finds included: a
    /// crash they found stays a test).
    #[test]
    fn the_fuzz_corpora_replay() {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        let root = std::env::temp_dir().join(format!("mcp-fuzz-replay-{}", std::process::id()));
        for (name, target) in TARGETS {
            let dir = fuzz.join(name);
            let mut n = 0;
            for entry in
                std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let run = || {
                    if *name == "config_sources" {
                        config_sources_in(&root, &data)
                    } else {
                        target(&data)
                    }
                };
                if std::panic::catch_unwind(run).is_err() {
                    panic!("{name}: {} fails", path.display());
                }
                n += 1;
            }
            assert!(n > 0, "{} is empty", dir.display());
        }
        let _ = std::fs::remove_dir_all(&root);
    }
}
