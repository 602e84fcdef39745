//! Server → client requests whose shapes we model: `roots/list`.
//!
//! `sampling/createMessage` and `elicitation/create` travel as raw JSON between the server and
//! the host's handler, so nothing the server sends is lost in translation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::is_none;

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

/// `roots/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
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
