//! Content blocks of tool results: text, image, audio, resource links, embedded resources.
//!
//! Each block keeps the fields it does not model (`annotations`, `_meta`, `title`, ...) in
//! `extra`, and a block of a type we do not know is kept whole as [`ContentBlock::Unknown`].
//! Serializing a block gives back the JSON the server sent.

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::member::{Member, Names};

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
        /// The resource's contents (boxed: every block is as big as the largest variant, and a
        /// result can hold millions of small text blocks).
        resource: Box<EmbeddedResource>,
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
        ContentBlock::deserialize(value).map_err(|e| e.to_string())
    }
}

/// The members of a block object that say which variant it is, each kept apart as it is read;
/// everything else goes to `extra` (which stays unallocated for a plain block).
#[derive(Default)]
struct Fields {
    known: [Option<Value>; KNOWN.len()],
    extra: Map<String, Value>,
}

/// The members [`Fields`] keeps apart, by index.
const KNOWN: [&str; 7] = [
    "type", "text", "data", "mimeType", "uri", "name", "resource",
];
const TYPE: usize = 0;
const TEXT: usize = 1;
const DATA: usize = 2;
const MIME_TYPE: usize = 3;
const URI: usize = 4;
const NAME: usize = 5;
const RESOURCE: usize = 6;

impl Fields {
    fn insert(&mut self, member: Member, value: Value) {
        match member {
            Ok(i) => self.known[i] = Some(value),
            Err(key) => {
                self.extra.insert(key, value);
            }
        }
    }

    fn is_str(&self, i: usize) -> bool {
        matches!(self.known[i], Some(Value::String(_)))
    }

    fn take_str(&mut self, i: usize) -> String {
        match self.known[i].take() {
            Some(Value::String(s)) => s,
            _ => unreachable!("checked to be a string"),
        }
    }

    /// The block these members make: a known type of the right shape becomes its variant;
    /// anything else is handed back whole, as the object it was.
    fn into_block(mut self) -> ContentBlock {
        let kind = match &self.known[TYPE] {
            Some(Value::String(k))
                if matches!(
                    k.as_str(),
                    "text" | "image" | "audio" | "resource_link" | "resource"
                ) =>
            {
                k.clone()
            }
            _ => return self.unknown(),
        };
        let well_formed = match kind.as_str() {
            "text" => self.is_str(TEXT),
            "image" | "audio" => self.is_str(DATA) && self.is_str(MIME_TYPE),
            "resource_link" => self.is_str(URI) && self.is_str(NAME),
            _ => self.known[RESOURCE]
                .as_ref()
                .is_some_and(|r| r.get("uri").is_some_and(Value::is_string)),
        };
        if !well_formed {
            return self.unknown();
        }
        self.known[TYPE] = None;
        let block = match kind.as_str() {
            "text" => ContentBlock::Text {
                text: self.take_str(TEXT),
                extra: Map::new(),
            },
            "image" => ContentBlock::Image {
                data: self.take_str(DATA),
                mime_type: self.take_str(MIME_TYPE),
                extra: Map::new(),
            },
            "audio" => ContentBlock::Audio {
                data: self.take_str(DATA),
                mime_type: self.take_str(MIME_TYPE),
                extra: Map::new(),
            },
            "resource_link" => ContentBlock::ResourceLink {
                uri: self.take_str(URI),
                name: self.take_str(NAME),
                extra: Map::new(),
            },
            #[allow(
                clippy::expect_used,
                reason = "the kind is \"resource\" only when that member was found"
            )]
            _ => {
                let raw = self.known[RESOURCE].take().expect("checked above");
                match serde_json::from_value::<EmbeddedResource>(raw.clone()) {
                    Ok(resource) => ContentBlock::Resource {
                        resource: Box::new(resource),
                        extra: Map::new(),
                    },
                    Err(_) => {
                        self.known[RESOURCE] = Some(raw);
                        self.known[TYPE] = Some(Value::String(kind));
                        return self.unknown();
                    }
                }
            }
        };
        // What the variant does not model (a `name` on a text block, ...) is its `extra`.
        let mut rest = self.extra;
        for (key, value) in KNOWN.iter().zip(self.known) {
            if let Some(value) = value {
                rest.insert((*key).to_owned(), value);
            }
        }
        block.with_extra(rest)
    }

    fn unknown(self) -> ContentBlock {
        let mut map = self.extra;
        for (key, value) in KNOWN.iter().zip(self.known) {
            if let Some(value) = value {
                map.insert((*key).to_owned(), value);
            }
        }
        ContentBlock::Unknown(Value::Object(map))
    }
}

impl ContentBlock {
    fn with_extra(mut self, rest: Map<String, Value>) -> ContentBlock {
        match &mut self {
            ContentBlock::Text { extra, .. }
            | ContentBlock::Image { extra, .. }
            | ContentBlock::Audio { extra, .. }
            | ContentBlock::ResourceLink { extra, .. }
            | ContentBlock::Resource { extra, .. } => *extra = rest,
            ContentBlock::Unknown(_) => {}
        }
        self
    }
}

/// Reads a block straight from its JSON, without building the object first: a result can
/// carry millions of blocks, and a `Value` object costs several times a typed block.
impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Block;
        impl<'de> Visitor<'de> for Block {
            type Value = ContentBlock;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
                let mut fields = Fields::default();
                while let Some(member) = map.next_key_seed(Names(&KNOWN))? {
                    let value = map.next_value::<Value>()?;
                    fields.insert(member, value);
                }
                Ok(fields.into_block())
            }
            fn visit_unit<E: de::Error>(self) -> Result<ContentBlock, E> {
                Err(E::custom("a content block cannot be null"))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ContentBlock, E> {
                Ok(ContentBlock::Unknown(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ContentBlock, E> {
                Ok(ContentBlock::Unknown(Value::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ContentBlock, E> {
                Ok(ContentBlock::Unknown(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ContentBlock, E> {
                Ok(ContentBlock::Unknown(Value::from(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ContentBlock, E> {
                Ok(ContentBlock::Unknown(Value::from(v)))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<ContentBlock, E> {
                Ok(ContentBlock::Unknown(Value::String(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ContentBlock, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Value>()? {
                    items.push(item);
                }
                Ok(ContentBlock::Unknown(Value::Array(items)))
            }
        }
        d.deserialize_any(Block)
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
