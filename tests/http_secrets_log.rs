//! Resolved secrets (header values, tokens, URL query values, userinfo) never reach a log
//! record, at any level, from any crate: `ureq` logs every request it writes as hex rows at
//! `trace`, so none of ours is written by it (the crate's one exchange writes them), and the
//! rest of what it logs (its connectors) holds no secret. A test binary of its own, since the
//! logger is the whole process's.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use common::tinyproxy::Tinyproxy;
use mcp_runtime::transport::{AuthProvider, HttpTarget};
use mcp_runtime::{Client, ConnectOptions, Endpoint};
use serde_json::json;

const HEADER: &str = "hdr-SECRET-value-1";
const TOKEN: &str = "tok-SECRET-value-2";
const QUERY: &str = "qry-SECRET-value-3";
const PASSWORD: &str = "pwd-SECRET-value-4";
/// The password of the proxy the last two connections go through.
const PROXY_PASSWORD: &str = "prx-SECRET-value-5";

struct Token;

impl AuthProvider for Token {
    fn authorization(&self) -> Option<String> {
        Some(format!("Bearer {TOKEN}"))
    }
}

fn target(base: &str) -> HttpTarget {
    let rest = base.strip_prefix("http://").unwrap();
    HttpTarget {
        url: format!("http://someone:{PASSWORD}@{rest}?apiKey={QUERY}"),
        headers: vec![("X-Api-Key".into(), HEADER.into())],
        auth: Some(Arc::new(Token)),
        proxy: None,
        ca_file: None,
        client_cert: None,
        client_key: None,
    }
}

/// Standard base64, as `Proxy-Authorization: Basic` has it.
fn basic64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in text.as_bytes().chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn hex(text: &str) -> String {
    use std::fmt::Write;
    text.bytes().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The hex and the text columns of `ureq`'s rows (`6865 6c6c ... hell...`), each joined over
/// every record, so a secret split across rows shows too.
fn joined_rows(messages: &[String]) -> (String, String) {
    let (mut hex_digits, mut text) = (String::new(), String::new());
    for m in messages {
        // 16 bytes: 8 groups of 4 hex digits (or `--`), each followed by a space; a space; the
        // 16 characters.
        if m.len() < 57 || !m.is_char_boundary(40) {
            continue;
        }
        let (groups, rest) = m.split_at(40);
        let row: String = groups.chars().filter(|c| !c.is_whitespace()).collect();
        if row.len() != 32 || !row.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            continue;
        }
        hex_digits.push_str(&row.replace('-', ""));
        text.push_str(rest.trim_start_matches(' '));
    }
    (hex_digits, text)
}

#[test]
fn no_secret_reaches_any_log_record_at_trace() {
    common::capture_logs();
    let options = ConnectOptions {
        timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    };
    let server = TestHttp::start(Behaviour {
        get_stream: true,
        sse_replies: true,
        ..Behaviour::default()
    });
    let client = Client::connect(
        "logged",
        &Endpoint::Http(target(&server.url())),
        options.clone(),
    )
    .unwrap();
    let out = client.call_tool("echo", json!({"message": "hi"})).unwrap();
    assert_eq!(out.text(), "hi");
    client.close();
    let legacy = TestHttp::start(Behaviour::default());
    let client = Client::connect(
        "legacy",
        &Endpoint::Sse(target(&legacy.sse_url())),
        options.clone(),
    )
    .unwrap();
    assert_eq!(client.list_tools().unwrap()[0].name, "echo");
    client.close();

    // Through a proxy that asks for credentials, both transports.
    let proxy = Tinyproxy::start("secrets", Some(("mcp", PROXY_PASSWORD)));
    if let Some(proxy) = &proxy {
        let via = |mut t: HttpTarget| {
            t.proxy = Some(proxy.url(Some(("mcp", PROXY_PASSWORD))));
            t
        };
        let client = Client::connect(
            "proxied",
            &Endpoint::Http(via(target(&server.url()))),
            options.clone(),
        )
        .unwrap();
        client.call_tool("echo", json!({"message": "hi"})).unwrap();
        client.close();
        // A legacy server of its own: the first one still holds the direct client's stream.
        let legacy = TestHttp::start(Behaviour::default());
        let client = Client::connect(
            "proxied-legacy",
            &Endpoint::Sse(via(target(&legacy.sse_url()))),
            options,
        )
        .unwrap();
        client.list_tools().unwrap();
        client.close();
    }

    // The secrets did go where they belong.
    let seen = server.seen();
    assert!(seen.iter().all(|r| r.header("x-api-key") == Some(HEADER)));
    let bearer = format!("Bearer {TOKEN}");
    assert!(seen
        .iter()
        .all(|r| r.header("authorization") == Some(bearer.as_str())));
    assert!(seen
        .iter()
        .all(|r| r.path.ends_with(&format!("?apiKey={QUERY}"))));
    assert!(legacy
        .seen()
        .iter()
        .all(|r| r.header("x-api-key") == Some(HEADER)));

    let records = common::logs("");
    let messages: Vec<String> = records.iter().map(|r| r.message.clone()).collect();
    // ureq did log at trace (so the test looks at what it would have leaked).
    assert!(
        records
            .iter()
            .any(|r| r.target.starts_with("ureq") && r.level == log::Level::Trace),
        "no trace records from ureq"
    );
    let (hex_rows, text_rows) = joined_rows(&messages);
    let all = messages.join("\n");
    // `Proxy-Authorization: Basic <base64(mcp:password)>`, as it goes on the wire.
    let basic = basic64(&format!("mcp:{PROXY_PASSWORD}"));
    for secret in [
        HEADER,
        TOKEN,
        QUERY,
        PASSWORD,
        PROXY_PASSWORD,
        basic.as_str(),
    ] {
        assert!(!all.contains(secret), "{secret} is in a log record");
        assert!(
            !all.contains(&hex(secret)),
            "{secret} is in a log record as hex"
        );
        assert!(
            !hex_rows.contains(&hex(secret)),
            "{secret} is in the hex rows"
        );
        assert!(!text_rows.contains(secret), "{secret} is in the rows' text");
    }
    // No request of ours was written by `ureq`, not even redacted.
    assert!(
        !hex_rows.contains(&hex("/mcp?apiKey=")) && !all.contains("/mcp?apiKey="),
        "a request line is in the logs"
    );
}

#[test]
fn the_rows_of_ureqs_trace_records_are_read() {
    // A row as `ureq` logs one: 8 groups of 4 hex digits, then the bytes as text.
    let h = hex("POST /mcp?apiKey");
    let mut row = String::new();
    for i in 0..8 {
        row.push_str(&h[i * 4..i * 4 + 4]);
        row.push(' ');
    }
    row.push_str(" POST /mcp?apiKey");
    let (hex_rows, text) = joined_rows(&[row, "not a row".into()]);
    assert_eq!(hex_rows, hex("POST /mcp?apiKey"));
    assert_eq!(text, "POST /mcp?apiKey");
}
