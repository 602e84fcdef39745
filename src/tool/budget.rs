//! The output budget applied to a tool's result: what the model is shown
//! ([`ToolOutput::model_text`](super::ToolOutput::model_text)) within the manager's
//! [`OutputBudget`].
//!
//! The result is rendered (see [`render`](super::render)); a rendering over the cap is cut at
//! the last line break in the cap's second half, else the last space there, else at the cap
//! (on a character boundary), and a notice follows. With `spill` on, a rendering that was cut
//! is written whole to a file, and binary blocks (images, audio, blob resources) to files of
//! their own, all mode 0600, named in the text.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;

use super::render::render_saved;
use super::tokens::{estimated_tokens, BYTES_PER_TOKEN};
use super::ToolOutput;
use crate::manager::{McpManager, OutputBudget};
use crate::protocol::ContentBlock;

/// Sets `output.shown` where the model is to see something else than the whole rendering.
pub(crate) fn apply(output: &mut ToolOutput, manager: &McpManager) {
    let budget = &manager.options().output_budget;
    let cap = budget.cap(&output.server);
    if cap.is_none() && !budget.spill {
        return;
    }
    let dir = || match manager.spill_dir() {
        Ok(dir) => Some(dir),
        Err(e) => {
            log::warn!("[{}] {}: {e}", output.server, output.tool);
            None
        }
    };
    let stem = file_stem(&output.server, &output.tool);
    let saved = if budget.spill && has_binary(&output.result.content) {
        dir().map_or_else(Vec::new, |dir| {
            save_binary(&output.result.content, &dir, &stem)
        })
    } else {
        Vec::new()
    };
    let text = render_saved(&output.result, &saved);
    let cut = cap.and_then(|cap| {
        shown(&text, cap, budget, &mut || {
            write_new(&dir()?, &stem, "txt", text.as_bytes())
        })
    });
    output.shown = match cut {
        Some(cut) => Some(cut),
        None if saved.iter().any(Option::is_some) => Some(text),
        None => None,
    };
}

/// The text within `cap` tokens with its notice, or `None` when it fits. `whole` writes the
/// whole text out (with `spill`) and says where.
fn shown(
    text: &str,
    cap: usize,
    budget: &OutputBudget,
    whole: &mut dyn FnMut() -> Option<PathBuf>,
) -> Option<String> {
    let limit = cap.saturating_mul(BYTES_PER_TOKEN);
    if text.len() <= limit {
        return None;
    }
    let path = if budget.spill { whole() } else { None };
    let how = match &path {
        Some(path) => format!("the whole output is in {}", path.display()),
        None => budget.hint.clone(),
    };
    let notice = |left: usize| {
        format!(
            "\n\n[Output cut to about {} tokens: {} of {} bytes (~{} tokens) left out; {how}.]",
            thousands(cap),
            thousands(left),
            thousands(text.len()),
            thousands(estimated_tokens(left)),
        )
    };
    // The notice is longest when everything is left out: the text gets the rest of the cap.
    let end = cut_point(text, limit.saturating_sub(notice(text.len()).len()));
    Some(format!("{}{}", &text[..end], notice(text.len() - end)))
}

/// Where to cut `text` to at most `max` bytes: at the last line break in the second half of
/// that, else the last whitespace there, else at `max` itself moved back to a character
/// boundary.
pub(crate) fn cut_point(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let window = &text[..end];
    let floor = end / 2;
    if let Some(at) = window.rfind('\n').filter(|at| *at >= floor) {
        return at;
    }
    if let Some(at) = window.rfind(char::is_whitespace).filter(|at| *at >= floor) {
        return at;
    }
    end
}

/// `n` with thousands separators.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn has_binary(content: &[ContentBlock]) -> bool {
    content.iter().any(|b| binary_of(b).is_some())
}

/// A block's base64 data and MIME type, for the blocks that carry binary data.
fn binary_of(block: &ContentBlock) -> Option<(&str, &str)> {
    match block {
        ContentBlock::Image {
            data, mime_type, ..
        }
        | ContentBlock::Audio {
            data, mime_type, ..
        } => Some((data, mime_type)),
        ContentBlock::Resource { resource, .. } => resource
            .blob
            .as_deref()
            .map(|b| (b, resource.mime_type.as_deref().unwrap_or(""))),
        _ => None,
    }
}

/// Writes each binary block to a file; the path of each block's file (`None` for a block that
/// is not binary, or that could not be decoded or written).
fn save_binary(content: &[ContentBlock], dir: &Path, stem: &str) -> Vec<Option<PathBuf>> {
    content
        .iter()
        .enumerate()
        .map(|(i, block)| {
            let (data, mime) = binary_of(block)?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .ok()?;
            write_new(dir, &format!("{stem}-{i}"), extension(mime), &bytes)
        })
        .collect()
}

fn extension(mime: &str) -> &'static str {
    match mime.split(';').next().unwrap_or("").trim() {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        _ => "bin",
    }
}

/// A file name for one result: its server and tool (letters, digits, `-` and `_` only), this
/// process's id and a number no other result of this process has.
fn file_stem(server: &str, tool: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect()
    };
    format!(
        "{}-{}-{}-{}",
        clean(server),
        clean(tool),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// How many names [`write_new`] tries.
const TRIES: usize = 100;

/// Writes `bytes` to a new file `<stem>.<extension>` in `dir` (`<stem>-2.<extension>`, ... when
/// that name is taken: a directory of the host's keeps earlier runs' files); its path, or
/// `None` with a warning.
fn write_new(dir: &Path, stem: &str, extension: &str, bytes: &[u8]) -> Option<PathBuf> {
    for n in 1..=TRIES {
        let name = match n {
            1 => format!("{stem}.{extension}"),
            n => format!("{stem}-{n}.{extension}"),
        };
        let path = dir.join(name);
        match write_file(&path, bytes) {
            Ok(()) => return Some(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                log::warn!("could not write {}: {e}", path.display());
                return None;
            }
        }
    }
    log::warn!(
        "could not write {stem}.{extension} in {}: every name was taken",
        dir.display()
    );
    None
}

/// Writes a new file of mode 0600 (never over another, never through a link).
fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).and_then(|mut f| f.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_a_line_then_a_word_then_a_character() {
        let text = "one two\nthree four five six";
        assert_eq!(&text[..cut_point(text, 20)], "one two\nthree four");
        assert_eq!(&text[..cut_point(text, 9)], "one two");
        assert_eq!(cut_point(text, 100), text.len());
        let solid = "abcdefghij";
        assert_eq!(cut_point(solid, 4), 4);
        // Never inside a character: é is two bytes, 😀 four.
        let wide = "éééé😀😀";
        for max in 0..wide.len() {
            let at = cut_point(wide, max);
            assert!(wide.is_char_boundary(at) && at <= max, "{max} → {at}");
        }
    }

    #[test]
    fn notices_say_how_much_and_how() {
        let budget = OutputBudget::default();
        let text = "line\n".repeat(30_000);
        let cut = shown(&text, 1_000, &budget, &mut || None).unwrap();
        assert!(cut.len() <= 4_000, "{}", cut.len());
        assert!(cut.contains("[Output cut to about 1,000 tokens: "), "{cut}");
        assert!(cut.contains(" of 150,000 bytes (~"), "{cut}");
        assert!(cut.contains(" tokens) left out; call the tool again asking for less"));
        assert!(shown("short", 1_000, &budget, &mut || None).is_none());
        let spilled = OutputBudget {
            spill: true,
            ..OutputBudget::default()
        };
        let cut = shown(&text, 1_000, &spilled, &mut || Some("/d/x.txt".into())).unwrap();
        assert!(
            cut.ends_with("left out; the whole output is in /d/x.txt.]"),
            "{cut}"
        );
    }

    #[test]
    fn the_notice_fits_a_small_cap_and_a_long_hint() {
        let budget = OutputBudget {
            hint: "h".repeat(150),
            ..OutputBudget::default()
        };
        let text = "word ".repeat(1_000);
        for cap in [60, 100, 1_000] {
            let cut = shown(&text, cap, &budget, &mut || None).unwrap();
            assert!(cut.len() <= cap * 4, "{cap}: {} bytes", cut.len());
        }
    }

    #[test]
    fn a_taken_name_is_not_written_over() {
        let dir = std::env::temp_dir().join(format!("mcp-budget-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("r.txt"), "earlier").unwrap();
        let path = write_new(&dir, "r", "txt", b"now").unwrap();
        assert_eq!(path, dir.join("r-2.txt"));
        assert_eq!(
            std::fs::read_to_string(dir.join("r.txt")).unwrap(),
            "earlier"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(16_777_216), "16,777,216");
    }
}
