//! Discovery-time expansion of `${VAR}` and `${VAR:-default}` in string values.
//!
//! `${NAME}` becomes the environment variable's value; `${NAME:-default}` its value or, when it
//! is unset or empty, `default`; an unset `${NAME}` without a default is left as written. No
//! other syntax is special.

use serde_json::Value;

/// Expands every string inside `value` (keys are left alone).
pub fn expand_value(value: &mut Value, lookup: &dyn Fn(&str) -> Option<String>) {
    match value {
        Value::String(s) if s.contains("${") => *s = expand_str(s, lookup),
        Value::Array(items) => items.iter_mut().for_each(|v| expand_value(v, lookup)),
        Value::Object(map) => map.values_mut().for_each(|v| expand_value(v, lookup)),
        _ => {}
    }
}

/// Expands one string.
pub fn expand_str(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let value = if valid {
            lookup(name).filter(|v| !v.is_empty() || default.is_none())
        } else {
            None
        };
        match (valid, value, default) {
            (true, Some(v), _) => out.push_str(&v),
            (true, None, Some(d)) => out.push_str(d),
            _ => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The process environment, as a lookup.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_the_two_forms_only() {
        assert_eq!(expand_str("${HOME}/x", &env), "/home/me/x");
        assert_eq!(expand_str("${MISSING:-fallback}", &env), "fallback");
        assert_eq!(expand_str("${EMPTY:-fallback}", &env), "fallback");
        assert_eq!(expand_str("${EMPTY}", &env), "");
        assert_eq!(expand_str("${MISSING}", &env), "${MISSING}");
        assert_eq!(
            expand_str("$HOME ${env:HOME} ${ HOME}", &env),
            "$HOME ${env:HOME} ${ HOME}"
        );
        assert_eq!(
            expand_str("a ${HOME} b ${HOME", &env),
            "a /home/me b ${HOME"
        );
        assert_eq!(expand_str("${MISSING:-}", &env), "");
    }

    #[test]
    fn walks_arrays_and_objects_but_not_keys() {
        let mut v = json!({"${HOME}": ["${HOME}", 1, {"k": "${MISSING:-d}"}]});
        expand_value(&mut v, &env);
        assert_eq!(v, json!({"${HOME}": ["/home/me", 1, {"k": "d"}]}));
    }
}
