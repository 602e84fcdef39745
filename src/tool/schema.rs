//! A tool's `structuredContent` checked against its `outputSchema`: the common JSON Schema
//! keywords (`type`, `properties`, `required`, `additionalProperties: false`, `items`, `enum`,
//! `const`, `allOf` / `anyOf` / `oneOf`, numeric and length bounds). The check reports, it never
//! rejects: the output stays as the server sent it. Other keywords are not checked, and a
//! `$ref` is never followed (it could point at the network).

use serde_json::{Map, Value};

use crate::protocol::json_kind;

/// How deep the check goes into nested schemas before it stops looking.
const MAX_DEPTH: usize = 32;

/// The first place where `value` does not match `schema`, in words (`$.a[2]: expected a
/// string, got a number`), or `None` when it matches (as far as the keywords above go).
pub fn schema_mismatch(schema: &Value, value: &Value) -> Option<String> {
    check(schema, value, "$", 0)
}

fn check(schema: &Value, value: &Value, at: &str, depth: usize) -> Option<String> {
    let Value::Object(schema) = schema else {
        // `true`, `false`, or not a schema at all.
        return (schema == &Value::Bool(false)).then(|| format!("{at}: nothing is allowed here"));
    };
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(problem) = check_type(schema, value, at) {
        return Some(problem);
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            return Some(format!(
                "{at}: {} is not one of the allowed values",
                short(value)
            ));
        }
    }
    if let Some(expected) = schema.get("const") {
        if expected != value {
            return Some(format!("{at}: expected {}", short(expected)));
        }
    }
    if let Some(problem) = check_bounds(schema, value, at) {
        return Some(problem);
    }
    if let Some(problem) = check_combinators(schema, value, at, depth) {
        return Some(problem);
    }
    match value {
        Value::Object(object) => check_object(schema, object, at, depth),
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, item)| check(item_schema, item, &format!("{at}[{i}]"), depth + 1))
        }
        _ => None,
    }
}

fn check_type(schema: &Map<String, Value>, value: &Value, at: &str) -> Option<String> {
    let types: Vec<&str> = match schema.get("type")? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let fits = |t: &str| match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    };
    if types.iter().any(|t| fits(t)) {
        return None;
    }
    Some(format!(
        "{at}: expected {}, got {}",
        types.join(" or "),
        json_kind(value)
    ))
}

fn check_bounds(schema: &Map<String, Value>, value: &Value, at: &str) -> Option<String> {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if bound("minimum").is_some_and(|m| n < m) || bound("maximum").is_some_and(|m| n > m) {
            return Some(format!("{at}: {n} is out of range"));
        }
    }
    let length = match value {
        Value::String(s) => Some(s.chars().count()),
        _ => None,
    };
    if let Some(len) = length {
        let len = len as f64;
        if bound("minLength").is_some_and(|m| len < m)
            || bound("maxLength").is_some_and(|m| len > m)
        {
            return Some(format!(
                "{at}: a string of {len} characters is out of range"
            ));
        }
    }
    if let Value::Array(items) = value {
        let len = items.len() as f64;
        if bound("minItems").is_some_and(|m| len < m) || bound("maxItems").is_some_and(|m| len > m)
        {
            return Some(format!("{at}: {len} items is out of range"));
        }
    }
    None
}

fn check_combinators(
    schema: &Map<String, Value>,
    value: &Value,
    at: &str,
    depth: usize,
) -> Option<String> {
    let list = |key: &str| schema.get(key).and_then(Value::as_array);
    if let Some(all) = list("allOf") {
        if let Some(problem) = all.iter().find_map(|s| check(s, value, at, depth + 1)) {
            return Some(problem);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(any) = list(key) {
            if !any.is_empty() && any.iter().all(|s| check(s, value, at, depth + 1).is_some()) {
                return Some(format!("{at}: matches none of the {key} schemas"));
            }
        }
    }
    None
}

fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    at: &str,
    depth: usize,
) -> Option<String> {
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        if let Some(missing) = required
            .iter()
            .filter_map(Value::as_str)
            .find(|k| !object.contains_key(*k))
        {
            return Some(format!("{at}: the required member {missing:?} is missing"));
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, member) in object {
        let path = format!("{at}.{key}");
        match properties.and_then(|p| p.get(key)) {
            Some(member_schema) => {
                if let Some(problem) = check(member_schema, member, &path, depth + 1) {
                    return Some(problem);
                }
            }
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Some(format!("{path}: not allowed"));
            }
            None => {}
        }
    }
    None
}

/// A value in a few characters, for messages.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matching_values_pass() {
        let schema = json!({"type": "object", "required": ["t"],
            "properties": {"t": {"type": "number", "minimum": -100},
                           "unit": {"enum": ["C", "F"]},
                           "tags": {"type": "array", "items": {"type": "string"}}}});
        assert_eq!(
            schema_mismatch(&schema, &json!({"t": 21, "unit": "C", "tags": ["a"]})),
            None
        );
        assert_eq!(schema_mismatch(&json!(true), &json!(1)), None);
        assert_eq!(
            schema_mismatch(&json!({"$ref": "https://x/y"}), &json!(1)),
            None
        );
    }

    #[test]
    fn each_keyword_reports_where() {
        let schema = json!({"type": "object", "required": ["t"], "additionalProperties": false,
            "properties": {"t": {"type": "integer"}, "tags": {"items": {"type": "string"}},
                           "unit": {"enum": ["C", "F"]}, "name": {"maxLength": 3},
                           "either": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
        let cases = [
            (json!({}), "$: the required member \"t\" is missing"),
            (json!({"t": 1.5}), "$.t: expected integer, got a number"),
            (
                json!({"t": 1, "tags": ["a", 2]}),
                "$.tags[1]: expected string, got a number",
            ),
            (
                json!({"t": 1, "unit": "K"}),
                "$.unit: \"K\" is not one of the allowed values",
            ),
            (
                json!({"t": 1, "name": "long"}),
                "$.name: a string of 4 characters is out of range",
            ),
            (
                json!({"t": 1, "either": 3}),
                "$.either: matches none of the anyOf schemas",
            ),
            (json!({"t": 1, "extra": 0}), "$.extra: not allowed"),
            (json!([1]), "$: expected object, got an array"),
        ];
        for (value, expected) in cases {
            assert_eq!(
                schema_mismatch(&schema, &value).as_deref(),
                Some(expected),
                "{value}"
            );
        }
    }
}
