//! One top-level member of a JSON object found in its text, without reading the other members'
//! values (a listing page of thousands of tools is jumped over, not parsed; where the name is
//! written only once, it is often not even walked).
//!
//! The text must already be valid JSON (a `RawValue`, which serde_json checked when it was
//! captured): the scan only tells strings, nesting and separators apart. Anything it does not
//! expect, a name written with escapes or a repeated member, makes it answer
//! [`Scan::Unsure`], and the caller reads the text the ordinary way.

/// What the scan found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Scan<'a> {
    /// The member's value, as text.
    Found(&'a str),
    /// The text is an object without that member.
    Absent,
    /// Not an object, or something the scan leaves to a full reading.
    Unsure,
}

/// The value of the top-level member `name` of the JSON object `text`. A name of anything but
/// ASCII letters, digits and `_` (which no escape but `\u` can make) is found by the walk only.
pub(crate) fn member<'a>(text: &'a str, name: &str) -> Scan<'a> {
    let b = text.as_bytes();
    let mut at = skip_ws(b, 0);
    if b.get(at) != Some(&b'{') {
        return Scan::Unsure;
    }
    // Whether the name is written in one place only (no member after it can repeat it).
    let sole = match spelling(b, name) {
        Spelling::Nowhere => return Scan::Absent,
        Spelling::Once(p) => match last_member(text, p, name) {
            Some(value) => return Scan::Found(value),
            None => true,
        },
        Spelling::Unknown => false,
    };
    at = skip_ws(b, at + 1);
    if b.get(at) == Some(&b'}') {
        return Scan::Absent;
    }
    let mut found = None;
    loop {
        // A name.
        if b.get(at) != Some(&b'"') {
            return Scan::Unsure;
        }
        let Some(end) = string_end(b, at) else {
            return Scan::Unsure;
        };
        let key = &b[at + 1..end - 1];
        if key.contains(&b'\\') {
            // Escapes may spell any name: a full reading decides.
            return Scan::Unsure;
        }
        at = skip_ws(b, end);
        if b.get(at) != Some(&b':') {
            return Scan::Unsure;
        }
        let start = skip_ws(b, at + 1);
        let Some(end) = value_end(b, start) else {
            return Scan::Unsure;
        };
        if key == name.as_bytes() {
            if sole {
                return Scan::Found(&text[start..end]);
            }
            if found.is_some() {
                return Scan::Unsure;
            }
            found = Some(&text[start..end]);
        }
        at = skip_ws(b, end);
        match b.get(at) {
            Some(b',') => at = skip_ws(b, at + 1),
            Some(b'}') => break,
            _ => return Scan::Unsure,
        }
    }
    if skip_ws(b, at + 1) != b.len() {
        return Scan::Unsure;
    }
    found.map_or(Scan::Absent, Scan::Found)
}

/// Where the text can name a member `name`.
#[derive(Debug, PartialEq, Eq)]
enum Spelling {
    /// Nowhere: the quoted name does not occur, and no `\u` escape could spell it.
    Nowhere,
    /// Only as the string starting at this index (the quoted name occurs once, not after a
    /// backslash, and no `\u` escape could spell it elsewhere; the other escapes make no letter,
    /// digit or `_`).
    Once(usize),
    /// Anything else: the members are to be read in order.
    Unknown,
}

fn spelling(b: &[u8], name: &str) -> Spelling {
    let plain = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    if !name.bytes().all(plain) || memchr::memmem::find(b, b"\\u").is_some() {
        return Spelling::Unknown;
    }
    let quoted = [b"\"", name.as_bytes(), b"\""].concat();
    let mut hits = memchr::memmem::find_iter(b, &quoted);
    match (hits.next(), hits.next()) {
        (None, _) => Spelling::Nowhere,
        // After a backslash the quote is escaped (were the backslash itself escaped, the quote
        // would close a string and the name's letters would stand outside one: not JSON).
        (Some(p), None) if p > 0 && b[p - 1] != b'\\' => Spelling::Once(p),
        _ => Spelling::Unknown,
    }
}

/// The value of the member whose name is the string at `p`, when that member is the object's
/// last (its value is followed by the text's final `}`, which closes the top-level object): a
/// large listing's `resultType` written after its tools is found without skipping them.
fn last_member<'a>(text: &'a str, p: usize, name: &str) -> Option<&'a str> {
    let b = text.as_bytes();
    let colon = skip_ws(b, p + name.len() + 2);
    if b.get(colon) != Some(&b':') {
        return None;
    }
    let start = skip_ws(b, colon + 1);
    let end = value_end(b, start)?;
    let close = skip_ws(b, end);
    (b.get(close) == Some(&b'}') && skip_ws(b, close + 1) == b.len()).then(|| &text[start..end])
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while matches!(b.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The index just past the string that starts (with its quote) at `at`: `memchr` jumps from
/// one quote or backslash to the next (most of a listing's bytes are descriptions).
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        let j = i + memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[j] == b'"' {
            return Some(j + 1);
        }
        i = j + 2;
    }
}

/// The index just past the value that starts at `at`.
fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at)? {
        b'"' => string_end(b, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&c) = b.get(i) {
                match c {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            // A number, `true`, `false` or `null`: up to what ends it.
            let len = b[at..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(b.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};

    /// What a full reading says: the member's value or its absence (None: not an object).
    fn full(text: &str, name: &str) -> Option<Option<Value>> {
        let map: Map<String, Value> = serde_json::from_str(text).ok()?;
        Some(map.get(name).cloned())
    }

    /// Checks the scan against a full reading; true when it answered (not `Unsure`).
    fn agrees(text: &str, name: &str) -> bool {
        match member(text, name) {
            Scan::Found(v) => {
                let parsed: Value = serde_json::from_str(v).expect("the found text is JSON");
                assert_eq!(full(text, name), Some(Some(parsed)), "{text}");
                true
            }
            Scan::Absent => {
                assert_eq!(full(text, name), Some(None), "{text}");
                true
            }
            Scan::Unsure => false,
        }
    }

    #[test]
    fn finds_the_member_among_others() {
        let text = r#" { "a" : [1, {"resultType": "x"}, "]}"] , "resultType":"input_required", "b": {"c": "\"}"}, "n": -1.5e3 , "t": true } "#;
        assert_eq!(
            member(text, "resultType"),
            Scan::Found(r#""input_required""#)
        );
        assert_eq!(member(text, "n"), Scan::Found("-1.5e3"));
        assert_eq!(member(text, "t"), Scan::Found("true"));
        assert_eq!(member(text, "b"), Scan::Found(r#"{"c": "\"}"}"#));
        assert_eq!(member(text, "c"), Scan::Absent);
        assert_eq!(member("{}", "a"), Scan::Absent);
        assert_eq!(member(" { } ", "a"), Scan::Absent);
    }

    #[test]
    fn the_sole_spelling_of_the_name_is_found_without_the_rest() {
        let big = r#"{"tools":[{"name":"x","description":"a \"resultType\" here"}],"resultType":"complete"}"#;
        let at = big.rfind(r#""resultType""#).unwrap();
        assert_eq!(spelling(big.as_bytes(), "resultType"), Spelling::Once(at));
        assert_eq!(last_member(big, at, "resultType"), Some(r#""complete""#));
        assert_eq!(member(big, "resultType"), Scan::Found(r#""complete""#));
        // Nested, or a value: not the member; the reading in order says so.
        let nested = r#"{"a":{"resultType":"x"},"b":1}"#;
        assert!(matches!(
            spelling(nested.as_bytes(), "resultType"),
            Spelling::Once(_)
        ));
        assert_eq!(member(nested, "resultType"), Scan::Absent);
        let last_nested = r#"{"a":{"resultType":"x"}}"#;
        assert_eq!(member(last_nested, "resultType"), Scan::Absent);
        assert_eq!(
            member(r#"{"a":["resultType"]}"#, "resultType"),
            Scan::Absent
        );
        assert_eq!(member(r#"{"a":1}"#, "resultType"), Scan::Absent);
        // A key that ends in the quoted name is not it.
        let ends = r#"{"x\"resultType":1}"#;
        assert_eq!(spelling(ends.as_bytes(), "resultType"), Spelling::Unknown);
        assert_eq!(member(ends, "resultType"), Scan::Unsure);
        // A name with a character an escape can make (`\/` is `/`) goes to the walk.
        assert_eq!(spelling(br#"{"a/b":1}"#, "a/b"), Spelling::Unknown);
        assert_eq!(member(r#"{"a\/b":1}"#, "a/b"), Scan::Unsure);
        assert_eq!(member(r#"{"a/b":1,"a\/b":2}"#, "a/b"), Scan::Unsure);
        // A `\u` escape could spell it anywhere.
        let escaped = r#"{"\u0072esultType":"x"}"#;
        assert_eq!(
            spelling(escaped.as_bytes(), "resultType"),
            Spelling::Unknown
        );
        assert_eq!(member(escaped, "resultType"), Scan::Unsure);
    }

    #[test]
    fn leaves_what_it_cannot_be_sure_of() {
        assert_eq!(member("[1]", "a"), Scan::Unsure);
        assert_eq!(member("null", "a"), Scan::Unsure);
        assert_eq!(member(r#"{"a":1,"a":2}"#, "a"), Scan::Unsure);
        assert_eq!(member(r#"{"\u0061":1}"#, "a"), Scan::Unsure);
        // Not JSON (which the text is promised to be): any answer, but no panic.
        for text in [
            r#"{"a":1"#,
            r#"{"a":1} x"#,
            r#"{"a":}"#,
            r#"{"a""#,
            "{",
            r#"{"a":"\"#,
        ] {
            let _ = member(text, "a");
        }
    }

    #[test]
    fn agrees_with_a_full_reading() {
        // Mutations of a few objects (a repeatable LCG); every text that is JSON must scan as
        // a full reading reads it, or be left to one.
        let alphabet = br#"{}[]":, 0123456789.-e truefalsnul\"abu"#;
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize
        };
        let seeds = [
            r#"{"a":1,"b":[{"a":2}],"c":"a"}"#,
            r#"{"b":{"a":[]},"a":"x\"y"}"#,
            r#"{"a":null}"#,
            r#"{"b":"\\","a":[[],{}],"c":-0.5}"#,
            r#"{"b":[{"a":1}],"a":"last"}"#,
            r#"{"b":{"c":"\"a\""},"d":"a","a":{"a":"a"}}"#,
            r#"{"\u0061":1,"b":"\u0061"}"#,
            r#"{"x\"a":1,"b":["a"]}"#,
            // The name written once: last, nested, first, in the middle.
            r#"{"b":[{"c":1}],"a":"last"}"#,
            r#"{"b":{"a":1},"c":2}"#,
            r#"{"a":[1,2],"b":{"c":"\"x\""}}"#,
            r#"{"b":[],"a":{"d":"e"},"c":[{}]}"#,
            // A key that ends in the name, a nested last member, a repeated member.
            r#"{"b":1,"x\"a":2}"#,
            r#"{"b":{"c":{"a":1}}}"#,
            r#"{"a":1,"b":[],"a":2}"#,
            "{\t\"a\"\n:\r[\"a/\\/\"]}",
        ];
        let (mut checked, mut answered, mut sole) = (0, 0, 0);
        for round in 0..20_000 {
            let mut input = seeds[round % seeds.len()].as_bytes().to_vec();
            for _ in 0..(next() % 4) {
                let at = next() % (input.len() + 1);
                match next() % 3 {
                    0 if !input.is_empty() => {
                        input.remove(at.min(input.len() - 1));
                    }
                    _ => input.insert(at, alphabet[next() % alphabet.len()]),
                }
            }
            let Ok(text) = std::str::from_utf8(&input) else {
                continue;
            };
            if serde_json::from_str::<Value>(text).is_ok() {
                checked += 1;
                if agrees(text, "a") {
                    answered += 1;
                    sole += usize::from(matches!(spelling(&input, "a"), Spelling::Once(_)));
                }
            }
        }
        // Leaving everything to the full reading would pass the comparison: the scan must
        // answer most texts, many of them through the name's sole spelling.
        assert!(checked > 1000, "only {checked} inputs were JSON");
        assert!(answered * 2 > checked, "answered {answered} of {checked}");
        assert!(
            sole * 5 > checked,
            "by the sole spelling {sole} of {checked}"
        );
    }
}
