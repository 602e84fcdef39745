//! The 2026-07-28 rules of Streamable HTTP's headers: the request headers that mirror the body
//! (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-<Name>`), their value encoding, and the validation of
//! the tools' `x-mcp-header` annotations (a tool with invalid ones is dropped from the list).
//! Sans-IO: the session's [`Envelopes`](super::Envelopes) put what this builds around each
//! message, and the HTTP transport sends it as it is.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use crate::jsonrpc::Message;
use crate::protocol::{methods, Tool};

/// `Mcp-Method`, on every request.
const METHOD_HEADER: &str = "mcp-method";
/// `Mcp-Name`, on `tools/call`, `prompts/get`, `resources/read`, and the tasks extension's
/// `tasks/get`, `tasks/update`, `tasks/cancel` (the `taskId`).
const NAME_HEADER: &str = "mcp-name";

/// The largest integer an `x-mcp-header` integer may carry (±(2^53−1)).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// For each tool, its `x-mcp-header` properties: (argument name, header name).
pub(crate) type ToolHeaders = HashMap<String, Vec<(String, String)>>;

/// The headers that mirror `message`'s body.
pub(crate) fn headers(message: &Message, tools: &ToolHeaders) -> Vec<(String, String)> {
    let Message::Request(request) = message else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(2);
    out.push((METHOD_HEADER.to_owned(), request.method.clone()));
    let params = request.params.as_ref();
    let named = match request.method.as_str() {
        methods::TOOLS_CALL | methods::PROMPTS_GET => params.and_then(|p| p.get("name")),
        methods::RESOURCES_READ => params.and_then(|p| p.get("uri")),
        // The tasks extension: a task's requests name it.
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => {
            params.and_then(|p| p.get("taskId"))
        }
        _ => None,
    };
    if let Some(value) = named.and_then(Value::as_str).map(encoded) {
        out.push((NAME_HEADER.to_owned(), value));
    }
    if request.method == methods::TOOLS_CALL {
        let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
        let args = params.and_then(|p| p.get("arguments"));
        if let (Some(spec), Some(args)) = (name.and_then(|n| tools.get(n)), args) {
            for (arg, header) in spec {
                let Some(value) = args.get(arg).and_then(param_value) else {
                    continue;
                };
                out.push((format!("mcp-param-{header}"), encoded(&value)));
            }
        }
    }
    out
}

/// An argument's header text: strings as they are, integers in decimal, booleans as
/// `true`/`false`; null (or anything else) sends no header.
fn param_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.as_i64().is_some_and(|i| i.abs() <= MAX_SAFE_INTEGER) => {
            Some(n.to_string())
        }
        _ => None,
    }
}

/// A header value by the spec's rule: plain visible ASCII as it is; anything with other
/// characters, leading or trailing whitespace, or the look of the sentinel, as
/// `=?base64?<base64 of its UTF-8>?=`.
fn encoded(text: &str) -> String {
    let needs_base64 = text.bytes().any(|b| !(0x20..0x7f).contains(&b))
        || text.starts_with(' ')
        || text.ends_with(' ')
        || (text.starts_with("=?") && text.ends_with("?="));
    if !needs_base64 {
        return text.to_owned();
    }
    format!("=?base64?{}?=", STANDARD.encode(text))
}

/// The `x-mcp-header` properties of a tool, or why its annotations are invalid.
fn tool_headers(tool: &Tool) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(props) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (arg, schema) in props {
            let Some(header) = schema.get("x-mcp-header") else {
                continue;
            };
            let Some(header) = header.as_str() else {
                return Err(format!("the x-mcp-header of {arg:?} is not a string"));
            };
            if header.is_empty() || !header.bytes().all(is_token_byte) {
                return Err(format!(
                    "the x-mcp-header {header:?} of {arg:?} is not a valid header name"
                ));
            }
            match schema.get("type").and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                other => {
                    return Err(format!(
                        "the x-mcp-header of {arg:?} is on a property of type {}",
                        other.unwrap_or("(none)")
                    ))
                }
            }
            if out.iter().any(|(_, h)| h.eq_ignore_ascii_case(header)) {
                return Err(format!("the x-mcp-header {header:?} appears twice"));
            }
            out.push((arg.clone(), header.to_owned()));
        }
    }
    if nested_annotation(&tool.input_schema, 0, true) {
        return Err("an x-mcp-header is not reachable through properties alone".to_owned());
    }
    Ok(out)
}

/// Whether an `x-mcp-header` sits anywhere but directly in a top-level property.
fn nested_annotation(schema: &Value, depth: usize, top: bool) -> bool {
    if depth > 64 {
        return false;
    }
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| {
            if top && k == "properties" {
                // The properties themselves may carry it; what is below them may not.
                v.as_object().is_some_and(|props| {
                    props.values().any(|p| match p {
                        Value::Object(p) => p.iter().any(|(k, v)| {
                            k != "x-mcp-header" && nested_annotation(v, depth + 1, false)
                        }),
                        _ => false,
                    })
                })
            } else {
                k == "x-mcp-header" && !top || nested_annotation(v, depth + 1, false)
            }
        }),
        Value::Array(items) => items.iter().any(|v| nested_annotation(v, depth + 1, false)),
        _ => false,
    }
}

/// An RFC 9110 token character, as a header name needs.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Keeps the tools whose annotations are valid (warning about the others), and their headers.
pub(crate) fn keep_valid(server: &str, tools: &mut Vec<Tool>) -> ToolHeaders {
    let mut map = ToolHeaders::new();
    tools.retain(|tool| match tool_headers(tool) {
        Ok(headers) => {
            if !headers.is_empty() {
                map.insert(tool.name.clone(), headers);
            }
            true
        }
        Err(reason) => {
            log::warn!("[{server}] the tool {:?} is left out: {reason}", tool.name);
            false
        }
    });
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        serde_json::from_value(json!({"name": "t", "inputSchema": schema})).unwrap()
    }

    #[test]
    fn values_are_encoded_by_the_spec_rules() {
        assert_eq!(encoded("plain text"), "plain text");
        assert_eq!(encoded("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(encoded(" lead"), "=?base64?IGxlYWQ=?=");
        assert_eq!(encoded("a\nb"), "=?base64?YQpi?=");
        assert_eq!(encoded("=?x?="), "=?base64?PT94Pz0=?=");
        assert_eq!(param_value(&json!(42)).unwrap(), "42");
        assert_eq!(param_value(&json!(true)).unwrap(), "true");
        assert_eq!(param_value(&json!(null)), None);
        assert_eq!(param_value(&json!(1.5)), None);
        assert_eq!(param_value(&json!(1_i64 << 60)), None);
    }

    #[test]
    fn valid_annotations_are_read() {
        let t = tool(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Count"},
            "other": {"type": "string"}}}));
        let mut h = tool_headers(&t).unwrap();
        h.sort();
        assert_eq!(
            h,
            [
                ("n".to_owned(), "Count".to_owned()),
                ("region".to_owned(), "Region".to_owned())
            ]
        );
    }

    #[test]
    fn invalid_annotations_are_refused() {
        for schema in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "has space"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "a:b"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "caf\u{e9}"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "a\u{1}"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                  "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"properties": {"a": {"type": "object", "properties":
                {"b": {"type": "string", "x-mcp-header": "B"}}}}}),
            json!({"anyOf": [{"properties": {"b": {"type": "string", "x-mcp-header": "B"}}}]}),
        ] {
            assert!(tool_headers(&tool(schema.clone())).is_err(), "{schema}");
        }
    }

    #[test]
    fn a_call_carries_its_name_and_params() {
        let mut tools = ToolHeaders::new();
        tools.insert(
            "t".into(),
            vec![("region".into(), "Region".into()), ("n".into(), "N".into())],
        );
        let msg = Message::request(
            7,
            "tools/call",
            Some(json!({"name": "t", "arguments": {"region": "eu-west", "n": null}})),
        );
        let h: Vec<(String, String)> = headers(&msg, &tools)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        assert_eq!(
            h,
            [
                ("mcp-method".to_owned(), "tools/call".to_owned()),
                ("mcp-name".to_owned(), "t".to_owned()),
                ("mcp-param-Region".to_owned(), "eu-west".to_owned())
            ]
        );
    }

    #[test]
    fn a_tasks_request_names_its_task() {
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let msg = Message::request(8, method, Some(json!({"taskId": "t-1"})));
            assert_eq!(
                headers(&msg, &ToolHeaders::new()),
                [
                    ("mcp-method".to_owned(), method.to_owned()),
                    ("mcp-name".to_owned(), "t-1".to_owned())
                ]
            );
        }
    }
}
