//! Resources (listing, templates, reading, subscriptions), prompts and completions.
//!
//! As everywhere in `protocol`, unknown fields are kept in `extra`, and contents stay as the
//! server sent them (text as text, blobs as their base64 text).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::{ContentBlock, EmbeddedResource};
use super::is_none;

/// A resource, as `resources/list` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    /// Its URI (the key to read it).
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, when the server knows it.
    #[serde(default, skip_serializing_if = "is_none")]
    pub size: Option<u64>,
    /// Everything else (`annotations`, `icons`, `_meta`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource template (RFC 6570 URI template), as `resources/templates/list` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplate {
    /// The URI template, e.g. `file:///{path}`.
    #[serde(rename = "uriTemplate")]
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "is_none")]
    pub description: Option<String>,
    /// MIME type of what it yields.
    #[serde(rename = "mimeType", default, skip_serializing_if = "is_none")]
    pub mime_type: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `resources/read`: one or more contents (text, or a base64 `blob`), as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceResult {
    /// The contents.
    pub contents: Vec<EmbeddedResource>,
    /// Everything else (`_meta`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "is_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    #[serde(default, skip_serializing_if = "is_none")]
    pub required: Option<bool>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A prompt, as `prompts/list` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Its name (the key to get it).
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// Its content block.
    pub content: ContentBlock,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "is_none")]
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a completion is asked for: a prompt's argument, or a resource template's variable.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionRef {
    /// `ref/prompt` with the prompt's name.
    Prompt(String),
    /// `ref/resource` with the template's URI template.
    Resource(String),
}

impl CompletionRef {
    /// As sent in `completion/complete`'s `ref`.
    pub fn to_value(&self) -> Value {
        match self {
            CompletionRef::Prompt(name) => serde_json::json!({"type": "ref/prompt", "name": name}),
            CompletionRef::Resource(uri) => {
                serde_json::json!({"type": "ref/resource", "uri": uri})
            }
        }
    }
}

/// The completion values of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The suggested values (at most 100).
    pub values: Vec<String>,
    /// How many there are in all, when known.
    #[serde(default, skip_serializing_if = "is_none")]
    pub total: Option<u64>,
    /// Whether there are more than `values`.
    #[serde(rename = "hasMore", default, skip_serializing_if = "is_none")]
    pub has_more: Option<bool>,
}

/// The result of `completion/complete` (a host gets its [`Completion`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The values.
    pub completion: Completion,
}
