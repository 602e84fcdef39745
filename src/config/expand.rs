//! Discovery-time expansion of each tool's variable syntax in string values. Every source
//! expands its own tool's syntax only, never another tool's:
//!
//! - [`expand_value`] / [`expand_str`]: `${VAR}` and `${VAR:-default}` (Claude Code's
//!   `.mcp.json`, and our own files). `${NAME}` becomes the environment variable's value;
//!   `${NAME:-default}` its value or, when it is unset or empty, `default`; an unset `${NAME}`
//!   without a default is left as written.
//! - [`expand_editor_value`]: the VS Code family's `${env:NAME}`, `${userHome}`,
//!   `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}` / `${/}` and (VS Code
//!   only) `${input:ID}` (Cursor, Windsurf, Roo Code, VS Code).
//! - [`expand_dollar_value`]: Gemini CLI's `$VAR` and `${VAR}`.
//! - [`expand_braced_env_value`]: opencode's `{env:VAR}`.

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

/// What the editor-style variables refer to.
pub(crate) struct EditorVars<'a> {
    /// `${workspaceFolder}`.
    pub cwd: &'a std::path::Path,
    /// `${userHome}`.
    pub home: &'a std::path::Path,
    /// `${input:ID}` defaults (VS Code); `None` leaves `${input:...}` as written.
    pub inputs: Option<&'a std::collections::BTreeMap<String, String>>,
    /// Which variables the tool knows; others are left as written.
    pub known: &'a [&'a str],
}

/// Replaces the editor-style variables in every string; `Err(input id)` for a VS Code input
/// without a default.
pub(crate) fn expand_editor_value(value: &mut Value, vars: &EditorVars<'_>) -> Result<(), String> {
    match value {
        Value::String(s) if s.contains("${") => *s = expand_editor_str(s, vars)?,
        Value::Array(items) => {
            for v in items {
                expand_editor_value(v, vars)?;
            }
        }
        Value::Object(map) => {
            for v in map.values_mut() {
                expand_editor_value(v, vars)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn expand_editor_str(s: &str, vars: &EditorVars<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = &rest[start + 2..start + end];
        let head = var.split(':').next().unwrap_or(var);
        let replacement = if !vars.known.contains(&head) {
            None
        } else {
            match var {
                "workspaceFolder" | "workspaceRoot" => {
                    Some(vars.cwd.to_string_lossy().into_owned())
                }
                "workspaceFolderBasename" => vars
                    .cwd
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned()),
                "userHome" => Some(vars.home.to_string_lossy().into_owned()),
                "pathSeparator" | "/" => Some(std::path::MAIN_SEPARATOR.to_string()),
                _ => match (
                    var.strip_prefix("env:"),
                    var.strip_prefix("input:"),
                    vars.inputs,
                ) {
                    (Some(name), _, _) => Some(std::env::var(name).unwrap_or_default()),
                    (_, Some(id), Some(inputs)) => {
                        Some(inputs.get(id).cloned().ok_or_else(|| id.to_owned())?)
                    }
                    _ => None,
                },
            }
        };
        match replacement {
            Some(r) => out.push_str(&r),
            None => out.push_str(&rest[start..start + end + 1]),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Gemini CLI's expansion: `$VAR` and `${VAR}` become the variable's value; an unset one is
/// left as written.
pub(crate) fn expand_dollar_value(value: &mut Value, lookup: &dyn Fn(&str) -> Option<String>) {
    walk_strings(value, &|s| {
        if !s.contains('$') {
            return None;
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let (name, used) = if let Some(inner) = after.strip_prefix('{') {
                match inner.find('}') {
                    Some(end) => (&inner[..end], end + 2),
                    None => ("", 0),
                }
            } else {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            };
            let valid = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            match valid.then(|| lookup(name)).flatten() {
                Some(v) => out.push_str(&v),
                None if used == 0 => out.push('$'),
                None => out.push_str(&rest[i..i + 1 + used]),
            }
            rest = &rest[i + 1 + used..];
        }
        out.push_str(rest);
        Some(out)
    });
}

/// opencode's expansion: `{env:VAR}` becomes the variable's value, or nothing when unset (as
/// opencode does).
pub(crate) fn expand_braced_env_value(value: &mut Value, lookup: &dyn Fn(&str) -> Option<String>) {
    walk_strings(value, &|s| {
        if !s.contains("{env:") {
            return None;
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find("{env:") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 5..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[i..]);
                return Some(out);
            };
            out.push_str(&lookup(after[..end].trim()).unwrap_or_default());
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Some(out)
    });
}

fn walk_strings(value: &mut Value, f: &dyn Fn(&str) -> Option<String>) {
    match value {
        Value::String(s) => {
            if let Some(new) = f(s) {
                *s = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk_strings(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| walk_strings(v, f)),
        _ => {}
    }
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
    fn each_tools_own_syntax() {
        let mut v = json!([
            "$HOME/a",
            "${HOME}/b",
            "$MISSING c",
            "cost $5",
            "$",
            "${EMPTY}"
        ]);
        expand_dollar_value(&mut v, &env);
        assert_eq!(
            v,
            json!(["/home/me/a", "/home/me/b", "$MISSING c", "cost $5", "$", ""])
        );
        let mut v = json!(["{env:HOME}/x", "{env:MISSING}y", "${HOME}", "{env:HOME"]);
        expand_braced_env_value(&mut v, &env);
        assert_eq!(v, json!(["/home/me/x", "y", "${HOME}", "{env:HOME"]));
        let vars = EditorVars {
            cwd: std::path::Path::new("/w/proj"),
            home: std::path::Path::new("/home/me"),
            inputs: None,
            known: &[
                "env",
                "userHome",
                "workspaceFolder",
                "workspaceFolderBasename",
                "/",
            ],
        };
        let mut v = json!([
            "${userHome}${/}x",
            "${workspaceFolderBasename}",
            "${HOME}",
            "${input:k}",
            "${pathSeparator}"
        ]);
        expand_editor_value(&mut v, &vars).unwrap();
        let sep = std::path::MAIN_SEPARATOR;
        assert_eq!(
            v,
            json!([
                format!("/home/me{sep}x"),
                "proj",
                "${HOME}",
                "${input:k}",
                "${pathSeparator}"
            ])
        );
    }

    #[test]
    fn walks_arrays_and_objects_but_not_keys() {
        let mut v = json!({"${HOME}": ["${HOME}", 1, {"k": "${MISSING:-d}"}]});
        expand_value(&mut v, &env);
        assert_eq!(v, json!({"${HOME}": ["/home/me", 1, {"k": "d"}]}));
    }
}
