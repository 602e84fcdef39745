//! Content blocks of tool results: text, image, audio, resource links, embedded resources.
//!
//! Each block keeps the fields it does not model (`annotations`, `_meta`, `title`, ...) in
//! `extra`, and a block of a type we do not know is kept whole as [`ContentBlock::Unknown`].
//! Serializing a block gives back the JSON the server sent.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One item of a tool result's `content`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{"type":"text","text":...}`
    Text {
        /// The text.
        text: String,
        /// Other fields (`annotations`, `_meta`).
        extra: Map<String, Value>,
    },
    /// `{"type":"image","data":<base64>,"mimeType":...}`
    Image {
        /// Base64 data.
        data: String,
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// `{"type":"audio","data":<base64>,"mimeType":...}` (2025-03-26+)
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type, e.g. `audio/wav`.
        mime_type: String,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// `{"type":"resource_link","uri":...,"name":...}` (2025-06-18+)
    ResourceLink {
        /// The linked resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Other fields (`title`, `description`, `mimeType`, `size`, `icons`, ...).
        extra: Map<String, Value>,
    },
    /// `{"type":"resource","resource":{...}}`: an embedded resource.
    Resource {
        /// The resource's contents.
        resource: EmbeddedResource,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// A block of a type this crate does not know (or a malformed one), kept as sent.
    Unknown(Value),
}

/// The `resource` of an embedded-resource block: text or base64 blob contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }

    /// The block's `type` string.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Image { .. } => "image",
            ContentBlock::Audio { .. } => "audio",
            ContentBlock::ResourceLink { .. } => "resource_link",
            ContentBlock::Resource { .. } => "resource",
            ContentBlock::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    fn from_object(mut obj: Map<String, Value>) -> Result<ContentBlock, Map<String, Value>> {
        let is_str =
            |obj: &Map<String, Value>, key: &str| obj.get(key).is_some_and(Value::is_string);
        let take = |obj: &mut Map<String, Value>, key: &str| match obj.remove(key) {
            Some(Value::String(s)) => s,
            _ => unreachable!("checked to be a string"),
        };
        // Check the shape first, so a block of the wrong shape is handed back untouched.
        let kind = match obj.get("type").and_then(Value::as_str) {
            Some(k @ ("text" | "image" | "audio" | "resource_link" | "resource")) => k.to_owned(),
            _ => return Err(obj),
        };
        let well_formed = match kind.as_str() {
            "text" => is_str(&obj, "text"),
            "image" | "audio" => is_str(&obj, "data") && is_str(&obj, "mimeType"),
            "resource_link" => is_str(&obj, "uri") && is_str(&obj, "name"),
            _ => obj
                .get("resource")
                .is_some_and(|r| r.get("uri").is_some_and(Value::is_string)),
        };
        if !well_formed {
            return Err(obj);
        }
        if kind == "resource" {
            let raw = obj.remove("resource").expect("checked above");
            return match serde_json::from_value::<EmbeddedResource>(raw.clone()) {
                Ok(resource) => {
                    obj.remove("type");
                    Ok(ContentBlock::Resource {
                        resource,
                        extra: obj,
                    })
                }
                Err(_) => {
                    obj.insert("resource".into(), raw);
                    Err(obj)
                }
            };
        }
        obj.remove("type");
        Ok(match kind.as_str() {
            "text" => ContentBlock::Text {
                text: take(&mut obj, "text"),
                extra: obj,
            },
            "image" | "audio" => {
                let (data, mime_type) = (take(&mut obj, "data"), take(&mut obj, "mimeType"));
                if kind == "image" {
                    ContentBlock::Image {
                        data,
                        mime_type,
                        extra: obj,
                    }
                } else {
                    ContentBlock::Audio {
                        data,
                        mime_type,
                        extra: obj,
                    }
                }
            }
            _ => ContentBlock::ResourceLink {
                uri: take(&mut obj, "uri"),
                name: take(&mut obj, "name"),
                extra: obj,
            },
        })
    }

    fn to_object(&self) -> Value {
        let (mut map, fields): (Map<String, Value>, Vec<(&str, Value)>) = match self {
            ContentBlock::Unknown(v) => return v.clone(),
            ContentBlock::Text { text, extra } => {
                (extra.clone(), vec![("text", Value::String(text.clone()))])
            }
            ContentBlock::Image {
                data,
                mime_type,
                extra,
            }
            | ContentBlock::Audio {
                data,
                mime_type,
                extra,
            } => (
                extra.clone(),
                vec![
                    ("data", Value::String(data.clone())),
                    ("mimeType", Value::String(mime_type.clone())),
                ],
            ),
            ContentBlock::ResourceLink { uri, name, extra } => (
                extra.clone(),
                vec![
                    ("uri", Value::String(uri.clone())),
                    ("name", Value::String(name.clone())),
                ],
            ),
            ContentBlock::Resource { resource, extra } => (
                extra.clone(),
                vec![(
                    "resource",
                    serde_json::to_value(resource).unwrap_or(Value::Null),
                )],
            ),
        };
        map.insert("type".into(), Value::String(self.kind().to_owned()));
        for (k, v) in fields {
            map.insert(k.into(), v);
        }
        Value::Object(map)
    }
}

impl ContentBlock {
    /// The block from its parsed JSON: a known type of the right shape becomes its variant,
    /// anything else but `null` is [`ContentBlock::Unknown`].
    pub fn from_value(value: Value) -> Result<ContentBlock, String> {
        match value {
            Value::Object(obj) => Ok(ContentBlock::from_object(obj)
                .unwrap_or_else(|obj| ContentBlock::Unknown(Value::Object(obj)))),
            Value::Null => Err("a content block cannot be null".to_owned()),
            other => Ok(ContentBlock::Unknown(other)),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ContentBlock::from_value(Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_object().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_block_type_round_trips_exactly() {
        let blocks = json!([
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav", "_meta": {"x": 1}},
            {"type": "resource_link", "uri": "file:///a", "name": "a", "title": "A", "size": 3},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "text": "b"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "aGk="}},
            {"type": "hologram", "frames": 3},
            {"type": "text", "text": 42}
        ]);
        let parsed: Vec<ContentBlock> = serde_json::from_value(blocks.clone()).unwrap();
        let kinds: Vec<&str> = parsed.iter().map(ContentBlock::kind).collect();
        assert_eq!(
            kinds,
            [
                "text",
                "image",
                "audio",
                "resource_link",
                "resource",
                "resource",
                "hologram",
                "text"
            ]
        );
        assert!(matches!(parsed[7], ContentBlock::Unknown(_)));
        assert_eq!(parsed[0].as_text(), Some("hi"));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), blocks);
    }
}
