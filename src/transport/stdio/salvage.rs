//! The request id of a stdout line that failed to parse.
//!
//! A reply whose body the parser refuses (invalid UTF-8 inside a string, nesting deeper than
//! serde_json's recursion limit) is still, byte for byte, a JSON-RPC response whose `id` can be
//! read. Finding that id lets the transport fail the one request at once instead of leaving
//! its caller to the timeout. The scan walks the bytes once, without recursion or allocation,
//! tracking strings and depth only.

/// The id of the response `line` was meant to be: its top-level `"id"` member, when that is an
/// integer (or a string spelling one), the line is an object with a top-level `"result"` or
/// `"error"`, and has no top-level `"method"` (a request from the server has no caller of
/// ours to fail).
pub(crate) fn response_id(line: &[u8]) -> Option<i64> {
    let mut i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut depth = 1usize;
    let mut id = None;
    let mut is_response = false;
    let mut expect_key = true;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let end = string_end(line, i + 1)?;
                let text = &line[i + 1..end];
                i = end + 1;
                if depth == 1 && expect_key {
                    let after = skip_ws(line, i);
                    if line.get(after) != Some(&b':') {
                        return None;
                    }
                    i = skip_ws(line, after + 1);
                    expect_key = false;
                    match text {
                        b"id" => id = read_id(line, i),
                        b"result" | b"error" => is_response = true,
                        b"method" => return None,
                        _ => {}
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            b',' => {
                if depth == 1 {
                    expect_key = true;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    if is_response {
        id
    } else {
        None
    }
}

fn skip_ws(line: &[u8], mut i: usize) -> usize {
    while line.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index of the quote closing the string whose content starts at `i`.
fn string_end(line: &[u8], mut i: usize) -> Option<usize> {
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// An integer id at `i`: digits (optionally negative), or a string of them.
fn read_id(line: &[u8], i: usize) -> Option<i64> {
    let (start, quoted) = match line.get(i) {
        Some(b'"') => (i + 1, true),
        _ => (i, false),
    };
    let mut end = start;
    if line.get(end) == Some(&b'-') {
        end += 1;
    }
    while line.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    if quoted && line.get(end) != Some(&b'"') {
        return None;
    }
    std::str::from_utf8(&line[start..end]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::response_id;

    #[test]
    fn finds_the_id_of_a_response_the_parser_refuses() {
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":{}1{},\"id\":7}}",
            "[".repeat(500),
            "]".repeat(500)
        );
        assert_eq!(response_id(deep.as_bytes()), Some(7));
        let bad_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":\"12\",\"result\":{\"text\":\"\xff\xfe\"}}";
        assert_eq!(response_id(bad_utf8), Some(12));
        let error = br#" {"id": -3, "error": {"code": 1, "message": "x \" } id"}}"#;
        assert_eq!(response_id(error), Some(-3));
    }

    #[test]
    fn ignores_what_is_not_a_response_of_ours() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"\xff"}}"#[..],
            br#"{"jsonrpc":"2.0","result":{"id":5}}"#,
            br#"{"jsonrpc":"2.0","id":"abc","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":null,"error":{}}"#,
            br#"[{"id":1,"result":{}}]"#,
            b"Server starting... id: 5",
            br#"{"nested":{"id":6,"result":1}}"#,
        ] {
            assert_eq!(response_id(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}
