use super::*;

fn head(text: &str) -> Head {
    match parse_head(text.as_bytes()).unwrap() {
        Parsed::Final(used, head) => {
            assert_eq!(used, text.len(), "{text:?}");
            head
        }
        other => panic!("{other:?}"),
    }
}

/// Reads all of `wire` through `framing`, `step` input bytes and `room` output bytes at a time.
fn decode(
    framing: &mut Framing,
    wire: &[u8],
    step: usize,
    room: usize,
) -> Result<(Vec<u8>, usize), Malformed> {
    let mut body = Vec::new();
    let mut at = 0;
    let mut held = Vec::new();
    loop {
        if held.is_empty() && at < wire.len() {
            let end = (at + step).min(wire.len());
            held.extend_from_slice(&wire[at..end]);
            at = end;
        }
        let mut out = vec![0u8; room];
        let (used, produced) = framing.read(&held, &mut out)?;
        body.extend_from_slice(&out[..produced]);
        held.drain(..used);
        if framing.is_done() || (used == 0 && produced == 0 && at == wire.len()) {
            return Ok((body, held.len() + wire.len() - at));
        }
        if used == 0 && produced == 0 {
            let end = (at + step).min(wire.len());
            held.extend_from_slice(&wire[at..end]);
            at = end;
        }
    }
}

#[test]
fn the_head_is_the_request_line_host_the_headers_then_length_and_agent() {
    let request = Request::post("http://127.0.0.1:8080/mcp?x=REDACTED")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", "abc")
        .body(())
        .unwrap();
    let mut out = Vec::new();
    write_head(&request, 1234, "mcp-runtime/0", &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "POST /mcp?x=REDACTED HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: abc\r\n\
         content-length: 1234\r\nuser-agent: mcp-runtime/0\r\n\r\n"
    );
}

#[test]
fn a_url_without_a_path_asks_for_the_root_and_a_host_header_of_the_request_wins() {
    let request = Request::post("http://example.test")
        .header("host", "other.test")
        .body(())
        .unwrap();
    let mut out = Vec::new();
    write_head(&request, 0, "ua", &mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("POST / HTTP/1.1\r\nhost: other.test\r\n"),
        "{text}"
    );
    assert_eq!(text.matches("host:").count(), 1, "{text}");
    assert!(text.contains("content-length: 0\r\n"), "{text}");
}

#[test]
fn the_host_has_its_port_only_when_it_is_not_the_schemes_default() {
    for (url, host) in [
        ("http://example.test:80/mcp", "host: example.test\r\n"),
        ("https://example.test:443/mcp", "host: example.test\r\n"),
        ("https://example.test:80/mcp", "host: example.test:80\r\n"),
        ("http://[::1]:8080/mcp", "host: [::1]:8080\r\n"),
    ] {
        let request = Request::post(url).body(()).unwrap();
        let mut out = Vec::new();
        write_head(&request, 0, "ua", &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(host), "{url}: {text}");
    }
}

#[test]
fn decimal_writes_every_magnitude() {
    let mut buf = [0u8; 20];
    for n in [0u64, 7, 10, 99, 100, 65_536, u64::MAX] {
        assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
    }
}

#[test]
fn a_head_is_partial_until_its_blank_line() {
    let text = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n";
    assert!(matches!(parse_head(text.as_bytes()), Ok(Parsed::Partial)));
    assert!(matches!(parse_head(b""), Ok(Parsed::Partial)));
}

#[test]
fn a_length_frames_the_body_and_the_connection_stays() {
    let h = head("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(h.response.status(), 200);
    assert_eq!(h.response.headers()["content-type"], "application/json");
    assert!(!h.must_close);
    let mut body = h.body;
    let (read, left) = decode(&mut body, b"hello, more", 3, 2).unwrap();
    assert_eq!(read, b"hello");
    assert_eq!(left, 6, "what follows the body is not taken");
}

#[test]
fn chunks_frame_the_body_whatever_the_cuts() {
    let wire =
        b"5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nx-trailer: t\r\n\r\nNEXT";
    for step in [1, 2, 3, 7, wire.len()] {
        for room in [1, 4, 64] {
            let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            let mut body = h.body;
            let (read, left) = decode(&mut body, wire, step, room).unwrap();
            assert_eq!(read, b"hello 0123456789", "step {step} room {room}");
            assert!(body.is_done());
            assert_eq!(left, 4, "step {step} room {room}");
        }
    }
}

#[test]
fn chunked_wins_over_a_length_and_a_bare_lf_is_tolerated() {
    let h =
        head("HTTP/1.1 200 OK\r\ncontent-length: 99\r\ntransfer-encoding: gzip, chunked\r\n\r\n");
    let mut body = h.body;
    let (read, _) = decode(&mut body, b"3\nabc\n0\n\n", 4, 16).unwrap();
    assert_eq!(read, b"abc");
    // A length beside the coding: the connection is not trusted after it (RFC 9112 §6.3).
    assert!(h.must_close);
}

#[test]
fn an_identity_coding_leaves_the_length_to_frame_the_body() {
    let h = head("HTTP/1.1 200 OK\r\ntransfer-encoding: identity\r\ncontent-length: 2\r\n\r\n");
    assert!(matches!(h.body, Framing::Length(2)), "{:?}", h.body);
    // Both headers: the connection is not trusted after it (RFC 9112 §6.3).
    assert!(h.must_close);
}

#[test]
fn whitespace_after_a_chunk_size_comes_only_before_an_extension_or_the_end() {
    let mut body = Framing::Chunked(Chunked::default());
    let (read, _) = decode(&mut body, b"2 \t;x=1\r\nok\r\n1 \r\n!\r\n0\r\n\r\n", 3, 8).unwrap();
    assert_eq!(read, b"ok!");
    let mut body = Framing::Chunked(Chunked::default());
    assert!(decode(&mut body, b"1 0\r\nx\r\n", 64, 64).is_err());
}

#[test]
fn the_last_chunk_without_trailers_is_a_whole_body() {
    let h = head("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
    let mut body = h.body;
    let mut out = [0u8; 8];
    body.read(b"2\r\nok\r\n0\r\n", &mut out).unwrap();
    assert!(!body.is_done());
    assert!(body.had_last_chunk());
}

#[test]
fn broken_chunks_are_errors() {
    for wire in [
        &b"\r\n"[..],
        b"zz\r\n",
        b"5\rx",
        b"2\r\nabc\r\n",
        b"1000000000000000\r\n",
        b"0\r\n\rX",
    ] {
        let mut body = Framing::Chunked(Chunked::default());
        assert!(decode(&mut body, wire, 64, 64).is_err(), "{wire:?}");
    }
    let mut long = b"1;".to_vec();
    long.resize(MAX_CHUNK_LINE + 10, b'x');
    let mut body = Framing::Chunked(Chunked::default());
    assert!(decode(&mut body, &long, 64, 64).is_err());
}

#[test]
fn no_length_means_the_connection_ends_the_body() {
    let h = head("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
    assert!(h.must_close);
    let mut body = h.body;
    let (read, _) = decode(&mut body, b"data: 1\n\n", 4, 4).unwrap();
    assert_eq!(read, b"data: 1\n\n");
    assert!(!body.is_done());
}

#[test]
fn a_coding_other_than_chunked_last_or_in_http_1_0_ends_with_the_connection() {
    for text in [
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\n",
        "HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n",
    ] {
        let h = head(text);
        assert!(matches!(h.body, Framing::Close), "{text}");
        assert!(h.must_close, "{text}");
    }
}

#[test]
fn a_length_alone_or_a_coding_alone_keeps_the_connection() {
    for text in [
        "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
    ] {
        assert!(!head(text).must_close, "{text}");
    }
}

#[test]
fn no_body_statuses_and_a_zero_length_are_done_at_once() {
    for text in [
        "HTTP/1.1 204 No Content\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\ncontent-length: 10\r\n\r\n",
        "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
    ] {
        let h = head(text);
        assert!(h.body.is_done(), "{text}");
        assert!(!h.must_close, "{text}");
    }
}

#[test]
fn the_server_closing_or_http_1_0_without_keep_alive_closes() {
    let cases = [
        (
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nConnection: Close\r\n\r\n",
            true,
        ),
        (
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: upgrade, close\r\n\r\n",
            true,
        ),
        ("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n", true),
        (
            "HTTP/1.0 200 OK\r\ncontent-length: 0\r\nconnection: keep-alive\r\n\r\n",
            false,
        ),
        ("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", false),
    ];
    for (text, close) in cases {
        assert_eq!(head(text).must_close, close, "{text}");
        let version = head(text).response.version();
        assert_eq!(version == Version::HTTP_10, text.starts_with("HTTP/1.0"));
    }
}

#[test]
fn interim_responses_are_skipped_by_their_length() {
    let text = "HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\nHTTP/1.1 200 OK\r\n";
    let Ok(Parsed::Interim(used)) = parse_head(text.as_bytes()) else {
        panic!()
    };
    assert_eq!(&text[used..], "HTTP/1.1 200 OK\r\n");
}

#[test]
fn bad_heads_are_errors_that_show_no_value() {
    for text in [
        "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-length: SECRET\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "NOT HTTP\r\n\r\n",
        "HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
    ] {
        let e = parse_head(text.as_bytes()).unwrap_err();
        assert!(!e.to_string().contains("SECRET"), "{e}");
    }
    let mut many = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..=MAX_RESPONSE_HEADERS {
        many.push_str(&format!("x-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(
        parse_head(many.as_bytes()).unwrap_err(),
        Malformed("too many headers")
    );
}
