//! Rendering a tool result as text, for hosts (and people) that want text.
//!
//! Text blocks are joined by blank lines; an image or audio block becomes `[Image: <mime>]` /
//! `[Audio: <mime>]`; a resource becomes `[Resource: <uri>]` followed by its text, if any; a
//! result with no text but `structuredContent` shows that JSON; `Error: ` leads when `isError`.

use crate::protocol::{CallToolResult, ContentBlock};

/// The text rendering of a tool result.
pub fn render_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len());
    for block in &result.content {
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
        parts.push(structured.to_string());
    }
    let body = parts.join("\n\n");
    if result.is_error() {
        format!("Error: {body}")
    } else {
        body
    }
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
}
