//! What a stdio server printed on stdout before its first JSON-RPC message that is not JSON-RPC
//! (a banner, a `console.log`, a shell's greeting): counted, the first line kept (trimmed, the
//! values the server was given in its environment and anything that looks like a credential
//! masked) for the connect error, and a bound past which the server is given up on at once
//! instead of at the end of the connect timeout.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::text::clip;
use crate::transport::lines::trim_line;

/// Lines of stdout that are not JSON-RPC a server may print before its first message. Real
/// banners are a few dozen lines; a server past this is not going to speak MCP.
pub(super) const NOISE_LINE_BOUND: usize = 1000;
/// Bytes of such output a server may print before its first message (1 MiB).
pub(super) const NOISE_BYTE_BOUND: usize = 1 << 20;

/// The first skipped line is quoted up to this many characters.
const QUOTE_CHARS: usize = 160;
/// What stands in a quote for a masked value.
const MASK: &str = "REDACTED";

/// The skipped output of one server before its first message.
pub(super) struct Noise {
    /// A message came: nothing is counted any more.
    spoken: AtomicBool,
    seen: Mutex<Seen>,
    /// The values of the variables the server was given (masked in the quote).
    secrets: Vec<String>,
}

#[derive(Default)]
struct Seen {
    lines: usize,
    bytes: usize,
    first: Option<String>,
}

impl Noise {
    /// For a server given `env`.
    pub(super) fn new(env: &[(String, String)]) -> Noise {
        let mut secrets: Vec<String> = env
            .iter()
            .map(|(_, v)| v.trim().to_owned())
            .filter(|v| v.len() >= 6)
            .collect();
        // The longest first: a value that contains another is masked whole.
        secrets.sort_by_key(|v| std::cmp::Reverse(v.len()));
        Noise {
            spoken: AtomicBool::new(false),
            seen: Mutex::new(Seen::default()),
            secrets,
        }
    }

    /// A JSON-RPC message came.
    pub(super) fn message(&self) {
        if !self.spoken.load(Ordering::Relaxed) {
            self.spoken.store(true, Ordering::Relaxed);
        }
    }

    /// A line that is not JSON-RPC was skipped. True when, before any message, the skipped
    /// output has passed [`NOISE_LINE_BOUND`] lines or [`NOISE_BYTE_BOUND`] bytes.
    pub(super) fn skipped(&self, line: &[u8]) -> bool {
        if self.spoken.load(Ordering::Relaxed) {
            return false;
        }
        let mut seen = self.seen.lock();
        seen.lines += 1;
        seen.bytes += line.len();
        if seen.first.is_none() {
            seen.first = Some(self.quote(line));
        }
        seen.lines > NOISE_LINE_BOUND || seen.bytes > NOISE_BYTE_BOUND
    }

    /// A line of this server's output as logs and errors may show it (see [`quote`]).
    pub(super) fn quote(&self, line: &[u8]) -> String {
        quote(line, &self.secrets)
    }

    /// How many lines were skipped before the first message, and the first of them (quoted);
    /// `None` when there were none.
    pub(super) fn report(&self) -> Option<(usize, String)> {
        let seen = self.seen.lock();
        Some((seen.lines, seen.first.clone()?))
    }
}

/// `line` trimmed, without control characters, its secrets masked, at most [`QUOTE_CHARS`]
/// characters. Only the line's start is read (a line may be megabytes long): enough for the
/// characters shown and for any secret that begins among them.
pub(crate) fn quote(line: &[u8], secrets: &[String]) -> String {
    let longest = secrets.first().map_or(0, String::len);
    let line = trim_line(line);
    let line = &line[..line.len().min(QUOTE_CHARS * 4 + longest)];
    let mut text: String = String::from_utf8_lossy(line)
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), MASK);
        }
    }
    clip(&mask_credentials(&text), QUOTE_CHARS)
}

/// Words that name a credential: the value after such a key (`key=v`, `key: v`, `"key": "v"`)
/// is masked, and so is the word after `Bearer` / `Basic` and every URL's userinfo and query.
const CREDENTIAL_WORDS: [&str; 7] = [
    "token", "secret", "password", "passwd", "apikey", "api_key", "api-key",
];

fn mask_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut mask_next = false;
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if mask_next && !word.is_empty() {
            out.push_str(MASK);
            mask_next = false;
            continue;
        }
        let lower = word.to_ascii_lowercase();
        if lower == "bearer" || lower == "basic" {
            mask_next = true;
            out.push_str(word);
            continue;
        }
        if word.contains("://") {
            out.push_str(&crate::net::url::redact(word));
            continue;
        }
        let names_credential = CREDENTIAL_WORDS.iter().any(|w| lower.contains(w));
        match word.find(['=', ':']) {
            Some(at) if names_credential => {
                let (key, value) = word.split_at(at + 1);
                out.push_str(key);
                if value.trim_matches(['"', '\'', ',']).is_empty() {
                    mask_next = true;
                } else {
                    out.push_str(MASK);
                }
            }
            _ => out.push_str(word),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quote_masks_what_the_server_was_given_and_what_looks_like_a_credential() {
        let secrets = vec!["sk-live-123456".to_owned()];
        let q = quote(b"  Using key sk-live-123456 now\r\n", &secrets);
        assert_eq!(q, "Using key REDACTED now");
        assert_eq!(
            quote(b"token=abc api_key: xyz Authorization: Bearer q1w2e3", &[]),
            "token=REDACTED api_key: REDACTED Authorization: Bearer REDACTED"
        );
        assert_eq!(
            quote(b"listening on http://u:p@127.0.0.1:8080/mcp?key=v", &[]),
            "listening on http://127.0.0.1:8080/mcp?key=REDACTED"
        );
        assert_eq!(
            quote(b"{\"password\": \"hunter2\"}", &[]),
            "{\"password\": REDACTED"
        );
        let long = "x".repeat(500);
        assert_eq!(quote(long.as_bytes(), &[]).chars().count(), QUOTE_CHARS + 1);
    }

    #[test]
    fn only_output_before_the_first_message_counts_and_past_the_bound_it_is_given_up_on() {
        let noise = Noise::new(&[]);
        assert!(noise.report().is_none());
        for _ in 0..NOISE_LINE_BOUND {
            assert!(!noise.skipped(b"hello"));
        }
        assert!(noise.skipped(b"one too many"));
        assert_eq!(
            noise.report(),
            Some((NOISE_LINE_BOUND + 1, "hello".to_owned()))
        );

        let talker = Noise::new(&[]);
        assert!(!talker.skipped(b"banner"));
        talker.message();
        for _ in 0..NOISE_LINE_BOUND * 2 {
            assert!(!talker.skipped(b"chatter"));
        }
        assert_eq!(talker.report(), Some((1, "banner".to_owned())));

        let big = Noise::new(&[]);
        assert!(!big.skipped(&vec![b'x'; NOISE_BYTE_BOUND]));
        assert!(big.skipped(b"x"));
    }
}
