//! `application/x-www-form-urlencoded`: one value, pairs, a query added to a URL, and back.

/// `application/x-www-form-urlencoded` of one value.
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Form-encodes pairs.
pub(crate) fn encode_form<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k.as_ref()), encode(v.as_ref())))
        .collect::<Vec<_>>()
        .join("&")
}

/// Decodes one form-encoded value (`+` is a space).
pub(crate) fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (_, Some(v)) => {
                out.push(v);
                i += 3;
                continue;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The decoded pairs of a query or form body.
pub(crate) fn parse_form(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// `url` with `pairs` added to its query.
pub(crate) fn with_query<K: AsRef<str>, V: AsRef<str>>(url: &str, pairs: &[(K, V)]) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", encode_form(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_round_trip() {
        let pairs = [("a b", "c&d=e+f/é"), ("empty", "")];
        let text = encode_form(&pairs);
        assert_eq!(
            parse_form(&text),
            vec![
                ("a b".to_owned(), "c&d=e+f/é".to_owned()),
                ("empty".to_owned(), String::new())
            ]
        );
        assert_eq!(decode("a+b%2"), "a b%2");
        assert_eq!(with_query("https://h/p", &[("a", "1")]), "https://h/p?a=1");
        assert_eq!(
            with_query("https://h/p?x", &[("a", "b c")]),
            "https://h/p?x&a=b%20c"
        );
    }
}
