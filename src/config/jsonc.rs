//! Reading JSON config files the way editors write them: `//` and `/* */` comments and trailing
//! commas are allowed (VS Code's `mcp.json` and many settings files have them).

use std::path::Path;

use serde_json::Value;

pub(crate) use super::file::ReadError;
use super::file::{read_text, CONFIG_FILE_CAP};
pub(crate) use crate::protocol::member::strings;

/// Reads and parses a JSON (with comments) config file: a regular file of at most 4 MiB (see
/// [`read_text`]).
pub(crate) fn read(path: &Path) -> Result<Value, ReadError> {
    read_capped(path, CONFIG_FILE_CAP)
}

/// [`read`] with another size cap.
pub(crate) fn read_capped(path: &Path, cap: u64) -> Result<Value, ReadError> {
    let text = read_text(path, cap)?;
    parse(&text).map_err(ReadError::Bad)
}

/// Parses JSON with comments and trailing commas.
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(&strip(text)).map_err(|e| format!("malformed JSON: {e}"))
}

/// Removes comments and trailing commas outside strings, keeping line numbers.
fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            if b == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 2;
                continue;
            }
            in_string = b != b'"';
            i += 1;
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                out.push(b);
                i += 1;
            }
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    if bytes[i] == b'\n' {
                        out.push(b'\n');
                    }
                    i += 1;
                }
                i += 2;
            }
            (b',', _) => {
                // A comma followed (past white space and comments) by } or ] is dropped.
                let mut j = i + 1;
                loop {
                    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if bytes.get(j) == Some(&b'/') && bytes.get(j + 1) == Some(&b'/') {
                        while j < bytes.len() && bytes[j] != b'\n' {
                            j += 1;
                        }
                    } else if bytes.get(j) == Some(&b'/') && bytes.get(j + 1) == Some(&b'*') {
                        j += 2;
                        while j < bytes.len()
                            && !(bytes[j] == b'*' && bytes.get(j + 1) == Some(&b'/'))
                        {
                            j += 1;
                        }
                        j += 2;
                    } else {
                        break;
                    }
                }
                if !matches!(bytes.get(j), Some(b'}') | Some(b']')) {
                    out.push(b',');
                }
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_and_trailing_commas() {
        let text = r#"{
            // a comment
            "servers": { /* inline */ "a": {"command": "x // not a comment", "args": ["/*no*/",],},
            },
            "s": "quote \" inside, }",
        }"#;
        assert_eq!(
            parse(text).unwrap(),
            json!({"servers": {"a": {"command": "x // not a comment", "args": ["/*no*/"]}}, "s": "quote \" inside, }"})
        );
    }

    #[test]
    fn malformed_is_an_error_and_missing_is_missing() {
        assert!(parse("{\"a\": }").is_err());
        assert_eq!(
            read(Path::new("/nonexistent/x.json")),
            Err(ReadError::Missing)
        );
    }
}
