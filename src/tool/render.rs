//! Rendering a tool result as text, for hosts (and people) that want text.
//!
//! Text blocks are joined by blank lines; an image or audio block becomes `[Image: <mime>]` /
//! `[Audio: <mime>]`; a resource becomes `[Resource: <uri>]` followed by its text, if any; a
//! result with no text but `structuredContent` shows that JSON, with any long base64 string in it
//! (an image or a sound a server repeats there) shortened to `[base64: <n> chars]`; `Error: `
//! leads when `isError`. Binary data is never printed.

use std::path::PathBuf;

use serde_json::Value;

use crate::protocol::{CallToolResult, ContentBlock};

/// Strings at least this long made only of base64 characters are shown by their length.
const BASE64_SHOWN_UP_TO: usize = 128;

/// The text rendering of a tool result.
pub fn render_text(result: &CallToolResult) -> String {
    render_saved(result, &[])
}

/// The rendering, where the binary blocks written to files (`saved`, by block) say where:
/// `[Image: image/png, 1234 bytes, saved to /dir/file.png]`.
pub(crate) fn render_saved(result: &CallToolResult, saved: &[Option<PathBuf>]) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len());
    for (i, block) in result.content.iter().enumerate() {
        if let Some(path) = saved.get(i).and_then(Option::as_ref) {
            let (kind, mime) = match block {
                ContentBlock::Image { mime_type, .. } => ("Image", mime_type.as_str()),
                ContentBlock::Audio { mime_type, .. } => ("Audio", mime_type.as_str()),
                ContentBlock::Resource { resource, .. } => (
                    "Resource",
                    resource.mime_type.as_deref().unwrap_or("binary"),
                ),
                _ => ("Content", "binary"),
            };
            let size = std::fs::metadata(path).map_or(0, |m| m.len());
            parts.push(format!(
                "[{kind}: {mime}, {size} bytes, saved to {}]",
                path.display()
            ));
            continue;
        }
        match block {
            ContentBlock::Text { text, .. } => parts.push(text.clone()),
            ContentBlock::Image { mime_type, .. } => parts.push(format!("[Image: {mime_type}]")),
            ContentBlock::Audio { mime_type, .. } => parts.push(format!("[Audio: {mime_type}]")),
            ContentBlock::ResourceLink { uri, .. } => parts.push(format!("[Resource: {uri}]")),
            ContentBlock::Resource { resource, .. } => match &resource.text {
                Some(text) => parts.push(format!("[Resource: {}]\n{text}", resource.uri)),
                None => parts.push(format!("[Resource: {}]", resource.uri)),
            },
            ContentBlock::Unknown(v) => {
                let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or("unknown");
                parts.push(format!("[{kind} content]"));
            }
        }
    }
    let has_text = result.content.iter().any(|b| b.as_text().is_some());
    if let (false, Some(structured)) = (has_text, &result.structured_content) {
        parts.push(without_base64(structured).to_string());
    }
    let body = parts.join("\n\n");
    if result.is_error() {
        format!("Error: {body}")
    } else {
        body
    }
}

/// The value with every long base64 string replaced by a note of its length.
fn without_base64(value: &Value) -> Value {
    match value {
        Value::String(s) if looks_like_base64(s) => {
            Value::String(format!("[base64: {} chars]", s.len()))
        }
        Value::Array(items) => Value::Array(items.iter().map(without_base64).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_base64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn looks_like_base64(s: &str) -> bool {
    s.len() >= BASE64_SHOWN_UP_TO
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn renders_every_block() {
        let r = result(json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "bee"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "AA=="}},
            {"type": "text", "text": "two"}
        ]}));
        assert_eq!(
            render_text(&r),
            "one\n\n[Image: image/png]\n\n[Audio: audio/wav]\n\n[Resource: file:///a]\n\n[Resource: file:///b]\nbee\n\n[Resource: file:///c]\n\ntwo"
        );
    }

    #[test]
    fn errors_and_structured_content() {
        let r =
            result(json!({"content": [{"type": "text", "text": "bad input"}], "isError": true}));
        assert_eq!(render_text(&r), "Error: bad input");
        let r = result(json!({"content": [], "structuredContent": {"t": 21}}));
        assert_eq!(render_text(&r), "{\"t\":21}");
        let r = result(
            json!({"content": [{"type": "text", "text": "21 degrees"}], "structuredContent": {"t": 21}}),
        );
        assert_eq!(render_text(&r), "21 degrees");
    }

    #[test]
    fn binary_data_in_structured_content_is_never_printed() {
        let wav = "UklGR".repeat(100);
        let r = result(json!({
            "content": [{"type": "audio", "data": wav, "mimeType": "audio/wav"}],
            "structuredContent": {"content": [{"type": "audio", "data": wav, "mimeType": "audio/wav"}],
                                  "note": "short text stays"}
        }));
        let text = render_text(&r);
        assert!(!text.contains("UklGR"), "{text}");
        assert_eq!(
            text,
            "[Audio: audio/wav]\n\n{\"content\":[{\"data\":\"[base64: 500 chars]\",\"mimeType\":\"audio/wav\",\"type\":\"audio\"}],\"note\":\"short text stays\"}"
        );
    }
}
