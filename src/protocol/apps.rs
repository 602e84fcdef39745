//! MCP Apps (the `io.modelcontextprotocol/ui` extension, SEP-1865, stable 2026-01-26): what a
//! tool and a `ui://` resource say of their interactive UI, typed.
//!
//! A tool names its UI in `_meta.ui.resourceUri` (servers of the first drafts: the flat key
//! `_meta["ui/resourceUri"]`, read too) and says who may call it in `_meta.ui.visibility`
//! (`"model"`, `"app"`; both when absent). A host **must not** offer the model a tool whose
//! visibility leaves out `"model"`: [`Tool::visible_to_model`]. A UI resource's contents carry
//! `_meta.ui` too: the content security policy the host builds for its frame, the browser
//! permissions it asks for, its origin and whether it wants a border.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Tool;

/// The extension's name in `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an App's HTML resource.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// What a tool says of its UI (`_meta.ui`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolUi {
    /// The `ui://` resource that renders it.
    #[serde(
        rename = "resourceUri",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_uri: Option<String>,
    /// Who may call it: `"model"`, `"app"` (both when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<String>>,
}

impl ToolUi {
    /// Whether the model may be offered the tool: no `visibility`, or one that names
    /// `"model"`.
    pub fn visible_to_model(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.iter().any(|w| w == "model"))
    }

    /// Whether an App may call the tool: no `visibility`, or one that names `"app"`.
    pub fn visible_to_app(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.iter().any(|w| w == "app"))
    }
}

/// The content security policy a UI resource asks for (`_meta.ui.csp`): origins, per kind of
/// request, beside its own.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiCsp {
    /// `fetch`, XHR and WebSocket (`connect-src`).
    #[serde(default)]
    pub connect_domains: Vec<String>,
    /// Images, scripts, styles, fonts, media.
    #[serde(default)]
    pub resource_domains: Vec<String>,
    /// Nested frames (`frame-src`).
    #[serde(default)]
    pub frame_domains: Vec<String>,
    /// `<base href>` (`base-uri`).
    #[serde(default)]
    pub base_uri_domains: Vec<String>,
}

/// What a UI resource says of itself (`_meta.ui` on its contents or its listing).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUi {
    /// The origins it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiCsp>,
    /// The browser permissions it asks for (`camera`, `microphone`, `geolocation`,
    /// `clipboardWrite`), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Value>,
    /// The origin it should be served from, when the host gives each App its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether it would like a border around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

impl ResourceUi {
    /// The `ui` of a `_meta` object, when it has a well-formed one.
    pub fn from_meta(meta: Option<&Value>) -> Option<ResourceUi> {
        serde_json::from_value(meta?.get("ui")?.clone()).ok()
    }
}

impl Tool {
    /// What the tool says of its UI: `_meta.ui`, or the flat `_meta["ui/resourceUri"]` of the
    /// first drafts. `None` when it says nothing (or nothing well-formed).
    pub fn ui(&self) -> Option<ToolUi> {
        let meta = self.meta.as_ref()?;
        let mut ui: ToolUi = meta
            .get("ui")
            .and_then(|u| serde_json::from_value(u.clone()).ok())
            .unwrap_or_default();
        if ui.resource_uri.is_none() {
            ui.resource_uri = meta
                .get("ui/resourceUri")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        (ui != ToolUi::default()).then_some(ui)
    }

    /// Whether a host may offer the tool to the model (see the module docs). A `visibility`
    /// that is there but not a list of strings naming `"model"` (an off-spec server's) keeps
    /// the tool from the model: the rule errs on the side it protects.
    pub fn visible_to_model(&self) -> bool {
        self.visible_to("model")
    }

    /// Whether an App of the tool's server may call it: no `visibility`, or one that names
    /// `"app"`; an off-spec `visibility` refuses it, as for the model.
    pub fn visible_to_app(&self) -> bool {
        self.visible_to("app")
    }

    fn visible_to(&self, who: &str) -> bool {
        match self
            .meta
            .as_ref()
            .and_then(|m| m.get("ui"))
            .map(|ui| ui.get("visibility"))
        {
            None | Some(None) | Some(Some(Value::Null)) => true,
            Some(Some(Value::Array(list))) => {
                list.iter().all(Value::is_string) && list.iter().any(|w| w == who)
            }
            Some(Some(_)) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(meta: Value) -> Tool {
        serde_json::from_value(
            json!({"name": "t", "inputSchema": {"type": "object"}, "_meta": meta}),
        )
        .unwrap()
    }

    #[test]
    fn visibility_decides_what_the_model_is_offered() {
        assert!(tool(json!({})).visible_to_model());
        assert!(tool(json!({"ui": {"resourceUri": "ui://a/b"}})).visible_to_model());
        assert!(tool(json!({"ui": {"visibility": ["model", "app"]}})).visible_to_model());
        let app_only = tool(json!({"ui": {"resourceUri": "ui://a/b", "visibility": ["app"]}}));
        assert!(!app_only.visible_to_model());
        assert!(app_only.ui().unwrap().visible_to_app());
        assert!(app_only.visible_to_app());
        assert!(tool(json!({})).visible_to_app());
        assert!(!tool(json!({"ui": {"visibility": ["model"]}})).visible_to_app());
        assert!(!tool(json!({"ui": {"visibility": "app"}})).visible_to_app());
        assert!(!tool(json!({"ui": {"visibility": []}})).visible_to_model());
        // Off-spec visibility keeps the tool from the model.
        assert!(!tool(json!({"ui": {"visibility": "app"}})).visible_to_model());
        assert!(!tool(json!({"ui": {"visibility": ["app", 1]}})).visible_to_model());
        assert!(!tool(json!({"ui": {"resourceUri": 5, "visibility": ["app"]}})).visible_to_model());
        assert!(tool(json!({"ui": 7})).visible_to_model());
    }

    #[test]
    fn the_flat_key_of_the_first_drafts_is_read_too() {
        let ui = tool(json!({"ui/resourceUri": "ui://get-time/mcp-app.html"}))
            .ui()
            .unwrap();
        assert_eq!(
            ui.resource_uri.as_deref(),
            Some("ui://get-time/mcp-app.html")
        );
        assert_eq!(tool(json!({"other": 1})).ui(), None);
    }

    #[test]
    fn a_resources_ui_is_typed() {
        let meta = json!({"ui": {"csp": {"connectDomains": ["https://api.example.com"]},
                                  "permissions": {"camera": {}}, "prefersBorder": true}});
        let ui = ResourceUi::from_meta(Some(&meta)).unwrap();
        assert_eq!(ui.csp.unwrap().connect_domains, ["https://api.example.com"]);
        assert_eq!(ui.prefers_border, Some(true));
        assert!(ResourceUi::from_meta(Some(&json!({}))).is_none());
    }
}
