//! The handshake: `initialize` and its result, capabilities, implementation info.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::is_none;

/// A program's name and version (`clientInfo` / `serverInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Machine name.
    #[serde(default)]
    pub name: String,
    /// Version string.
    #[serde(default)]
    pub version: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "is_none")]
    pub title: Option<String>,
    /// Everything else the peer sent (`description`, `icons`, `websiteUrl`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            extra: Map::new(),
        }
    }
}

impl Default for Implementation {
    /// This crate: `mcp-runtime` and its version.
    fn default() -> Self {
        Implementation::new("mcp-runtime", env!("CARGO_PKG_VERSION"))
    }
}

/// What the client can do for the server. We only declare what the host's handler implements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// `roots` (the server may call `roots/list`).
    #[serde(default, skip_serializing_if = "is_none")]
    pub roots: Option<Value>,
    /// `sampling` (the server may call `sampling/createMessage`).
    #[serde(default, skip_serializing_if = "is_none")]
    pub sampling: Option<Value>,
    /// `elicitation` (the server may call `elicitation/create`).
    #[serde(default, skip_serializing_if = "is_none")]
    pub elicitation: Option<Value>,
    /// Anything else (`experimental`, `tasks`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ClientCapabilities {
    /// Whether we declared something a server may ask of us at any time (`roots`,
    /// `sampling`, `elicitation`, or another capability; the extensions we speak ask nothing of
    /// themselves).
    pub fn invites_requests(&self) -> bool {
        self.roots.is_some()
            || self.sampling.is_some()
            || self.elicitation.is_some()
            || self.extra.keys().any(|k| k != "extensions")
    }
}

/// What the server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// `tools`, with `listChanged` when the server sends change notifications.
    #[serde(default, skip_serializing_if = "is_none")]
    pub tools: Option<Value>,
    /// `logging`.
    #[serde(default, skip_serializing_if = "is_none")]
    pub logging: Option<Value>,
    /// `resources`.
    #[serde(default, skip_serializing_if = "is_none")]
    pub resources: Option<Value>,
    /// `prompts`.
    #[serde(default, skip_serializing_if = "is_none")]
    pub prompts: Option<Value>,
    /// Anything else (`completions`, `tasks`, `experimental`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ServerCapabilities {
    /// Whether the server declared something it may send unasked, outside any response: a
    /// `listChanged` of tools, resources or prompts, resource subscriptions, log messages, or
    /// a capability this crate does not model (`tasks`, `experimental`, ...; only
    /// `completions` is known to send nothing).
    pub fn may_notify(&self) -> bool {
        let flag = |cap: &Option<Value>, key: &str| {
            cap.as_ref()
                .and_then(|c| c.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        flag(&self.tools, "listChanged")
            || flag(&self.resources, "listChanged")
            || flag(&self.resources, "subscribe")
            || flag(&self.prompts, "listChanged")
            || self.logging.is_some()
            || self.extra.keys().any(|k| k != "completions")
    }

    /// Whether the server declared `tools.listChanged: true`.
    pub fn tools_list_changed(&self) -> bool {
        self.tools
            .as_ref()
            .and_then(|t| t.get("listChanged"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// `initialize` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The revision we offer (our latest).
    pub protocol_version: String,
    /// What we can do.
    pub capabilities: ClientCapabilities,
    /// Who we are.
    pub client_info: Implementation,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    #[serde(default = "unknown_server")]
    pub server_info: Implementation,
    /// Usage hints for the model, when the server gives some.
    #[serde(default, skip_serializing_if = "is_none")]
    pub instructions: Option<String>,
    /// Anything else (`_meta`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn unknown_server() -> Implementation {
    Implementation::new("unknown", "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_may_come_unasked() {
        let caps = |v: serde_json::Value| serde_json::from_value::<ServerCapabilities>(v).unwrap();
        let none = [
            json!({}),
            json!({"tools": {}}),
            json!({"tools": {"listChanged": false},
            "resources": {}, "prompts": {}, "completions": {}}),
        ];
        for v in none {
            assert!(!caps(v.clone()).may_notify(), "{v}");
        }
        let some = [
            json!({"tools": {"listChanged": true}}),
            json!({"resources": {"subscribe": true}}),
            json!({"prompts": {"listChanged": true}}),
            json!({"logging": {}}),
            json!({"tasks": {}}),
            json!({"experimental": {"x": {}}}),
        ];
        for v in some {
            assert!(caps(v.clone()).may_notify(), "{v}");
        }
        assert!(!ClientCapabilities::default().invites_requests());
        let roots = ClientCapabilities {
            roots: Some(json!({})),
            ..ClientCapabilities::default()
        };
        assert!(roots.invites_requests());
    }

    #[test]
    fn keeps_unknown_fields() {
        let raw = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}, "completions": {}},
            "serverInfo": {"name": "s", "version": "1", "websiteUrl": "https://example.invalid"},
            "_meta": {"k": 1}
        });
        let r: InitializeResult = serde_json::from_value(raw.clone()).unwrap();
        assert!(r.capabilities.tools_list_changed());
        assert_eq!(serde_json::to_value(&r).unwrap(), raw);
    }

    #[test]
    fn empty_capabilities_serialize_to_an_empty_object() {
        assert_eq!(
            serde_json::to_value(ClientCapabilities::default()).unwrap(),
            json!({})
        );
    }
}
