//! Server → client requests whose shapes we model: `roots/list`.
//!
//! `sampling/createMessage` and `elicitation/create` travel as raw JSON between the server and
//! the host's handler, so nothing the server sends is lost in translation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::is_none;
use crate::jsonrpc::{codes, RpcError};

/// A root the client exposes to the server (a directory, as a `file://` URI).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// The root's URI, e.g. `file:///home/me/project`.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "is_none")]
    pub name: Option<String>,
    /// Anything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Root {
    /// The root for a local directory.
    pub fn from_path(path: &std::path::Path) -> Root {
        Root {
            uri: format!("file://{}", path.display()),
            name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
            extra: Map::new(),
        }
    }
}

/// A URL-mode elicitation (2025-11-25): the server asks the user to visit `url` (a login, a
/// payment, a consent page). A host shows the whole URL and asks before opening it; it never
/// opens or fetches it by itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlElicitation {
    /// The page to visit.
    pub url: String,
    /// Why, in the server's words.
    #[serde(default)]
    pub message: String,
    /// The id a `notifications/elicitation/complete` will name when the user is done.
    #[serde(rename = "elicitationId", default, skip_serializing_if = "is_none")]
    pub elicitation_id: Option<String>,
}

/// Whether an `elicitation/create` asks in a mode the client declared (2025-11-25): the
/// request's `mode` (absent: `form`) must be a member of the declared `elicitation` capability,
/// where a capability naming no mode (`{}`, as before modes existed) means `form` only. A mode
/// not declared is `-32602` (invalid params), as the specification says, and the host is not
/// asked.
pub fn check_elicitation_mode(declared: &Value, params: &Value) -> Result<(), RpcError> {
    let mode = match params.get("mode") {
        None | Some(Value::Null) => "form",
        Some(Value::String(m)) => m.as_str(),
        Some(_) => {
            return Err(RpcError::new(
                codes::INVALID_PARAMS,
                "elicitation/create: `mode` is not a string",
            ))
        }
    };
    let named = |m: &str| declared.get(m).is_some();
    let allowed = if named("form") || named("url") {
        named(mode)
    } else {
        mode == "form"
    };
    if allowed {
        Ok(())
    } else {
        Err(RpcError::new(
            codes::INVALID_PARAMS,
            format!("elicitation/create: this client did not declare the {mode:?} mode"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_elicitation_mode_must_be_declared() {
        let ok = |cap: Value, params: Value| check_elicitation_mode(&cap, &params).is_ok();
        // `{}` is form only.
        assert!(ok(json!({}), json!({"message": "m"})));
        assert!(ok(json!({}), json!({"mode": "form"})));
        assert!(!ok(json!({}), json!({"mode": "url", "url": "https://x"})));
        // Modes named: only those.
        assert!(ok(json!({"url": {}}), json!({"mode": "url"})));
        assert!(!ok(json!({"url": {}}), json!({"mode": "form"})));
        assert!(!ok(json!({"url": {}}), json!({})));
        assert!(ok(json!({"form": {}, "url": {}}), json!({"mode": "url"})));
        assert!(!ok(json!({"form": {}}), json!({"mode": "telepathy"})));
        let e = check_elicitation_mode(&json!({}), &json!({"mode": 3})).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
    }
}
