//! Text for messages, shared by every layer.

/// `text` for a one-line message: control characters dropped, at most `max_chars` characters,
/// `…` after a text that was cut. One pass, however long the text.
pub(crate) fn clip(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    for (kept, c) in text.chars().filter(|c| !c.is_control()).enumerate() {
        if kept == max_chars {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}
