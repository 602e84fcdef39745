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

/// `text` with every control character (an escape sequence's ESC, a newline, ...) written out
/// as an escape (`\u{1b}`, `\n`): text from elsewhere shown to a person on a terminal can
/// neither redraw what was shown before it nor add a line of its own.
pub(crate) fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_debug().to_string(),
            false => c.to_string(),
        })
        .collect()
}
