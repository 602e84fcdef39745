//! How much a result may unfold into once parsed.
//!
//! A result's text is capped by the transport (`max_message_bytes`, 64 MiB by default), but
//! what it becomes in memory depends on its shape: 60 MB of `1,1,1,...` is 30 million JSON
//! values, which as `Value`s take a gigabyte. So before a large result is parsed, its values
//! are counted in the text (one pass over the bytes, nothing allocated), and a result with more
//! than [`MAX_RESULT_VALUES`] is refused with a protocol error naming the method; the
//! connection goes on. Small results are not counted.

use crate::error::Error;

/// The most JSON values (scalars, arrays, objects and object members) one result may hold:
/// about 4 million, a few hundred megabytes at most once parsed. A tool result meant for a
/// model is orders of magnitude smaller; a listing of 5,000 tools holds a few hundred thousand.
pub const MAX_RESULT_VALUES: usize = 1 << 22;

/// Results shorter than this cannot hold [`MAX_RESULT_VALUES`] values and are not counted.
const COUNT_FROM: usize = 2 * MAX_RESULT_VALUES;

/// Fails when `text` (the JSON of a `method` result) holds more than `limit` values.
pub(crate) fn check(method: &str, text: &str) -> Result<(), Error> {
    check_with(method, text, MAX_RESULT_VALUES, COUNT_FROM)
}

fn check_with(method: &str, text: &str, limit: usize, from: usize) -> Result<(), Error> {
    if text.len() < from || !exceeds(text.as_bytes(), limit) {
        return Ok(());
    }
    Err(Error::protocol(format!(
        "the {method} result ({} bytes) holds more than {limit} JSON values; refused",
        text.len()
    )))
}

/// Whether valid JSON `text` holds more than `limit` values. Every value but the first is
/// preceded by a `,`, `[`, `{` or `:` outside a string, so counting those (plus one) counts at
/// least the values; an empty array or object is counted as one more, which errs on no side
/// that matters.
fn exceeds(text: &[u8], limit: usize) -> bool {
    // Counting the separators everywhere, strings included, is a bound from above that the
    // compiler vectorises; only a text over it is read again, minding strings (a result of
    // large text blocks never is).
    let upper = 1 + text
        .iter()
        .filter(|b| matches!(b, b',' | b'[' | b'{' | b':'))
        .count();
    if upper <= limit {
        return false;
    }
    let mut count = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b'[' | b'{' | b':' => {
                count += 1;
                if count > limit {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_inside_strings_never_count_even_past_the_quick_bound() {
        let text = format!(r#"["{}",1,2]"#, ",".repeat(100));
        assert!(!exceeds(text.as_bytes(), 4));
        assert!(exceeds(text.as_bytes(), 2));
    }

    #[test]
    fn counts_values_outside_strings_only() {
        assert!(!exceeds(br#"[1,2,3]"#, 4));
        assert!(exceeds(br#"[1,2,3,4,5]"#, 4));
        assert!(!exceeds(br#"{"a,b,c,d,e":"[{,:\"]"}"#, 4));
        assert!(exceeds(br#"{"a":1,"b":2,"c":3}"#, 4));
    }

    #[test]
    fn only_large_results_are_counted_and_refusal_names_the_method() {
        let many = format!("[{}1]", "1,".repeat(100));
        assert!(check_with("tools/call", &many, 10, many.len() + 1).is_ok());
        let e = check_with("tools/call", &many, 10, 0).unwrap_err();
        assert!(
            matches!(e, Error::Protocol { .. }) && e.to_string().contains("tools/call result"),
            "{e}"
        );
        assert!(check_with("tools/call", &many, 1000, 0).is_ok());
    }
}
