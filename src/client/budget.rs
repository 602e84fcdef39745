//! How much a result may unfold into once parsed.
//!
//! A result's text is capped by the transport (`max_message_bytes`, 64 MiB by default), but
//! what it becomes in memory depends on its shape: 60 MB of `1,1,1,...` is 30 million JSON
//! values, which as `Value`s take a gigabyte. So before a large result is parsed, its values
//! are counted in the text (one pass over the bytes, nothing allocated), and a result with more
//! than [`MAX_RESULT_VALUES`] is refused with a protocol error naming the method; the
//! connection goes on. Small results are not counted.

use crate::error::Error;
use crate::transport::lines::find_byte;

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
/// that matters. Strings are passed over with `memchr` (a result of large text blocks is
/// almost all string), minding escaped quotes.
fn exceeds(text: &[u8], limit: usize) -> bool {
    let mut count = 1usize;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => match string_end(text, i + 1) {
                Some(end) => i = end,
                // Unterminated: not JSON, and the parser will say so.
                None => return false,
            },
            b',' | b'[' | b'{' | b':' => {
                count += 1;
                if count > limit {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// The index of the quote that closes the string whose contents start at `from`.
fn string_end(text: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let quote = from + find_byte(&text[from..], b'"')?;
        let backslashes = text[..quote]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some(quote);
        }
        from = quote + 1;
    }
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
    fn escaped_quotes_do_not_end_a_string() {
        assert!(!exceeds(br#"["a\",b,c,d,e,f"]"#, 2));
        assert!(exceeds(br#"["a\\",1,2,3]"#, 2));
        assert!(!exceeds(br#"["\\\"x,y,z,w"]"#, 2));
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
