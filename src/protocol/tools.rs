//! Tools: definitions, listing, calling, results.

use std::fmt;

use serde::de::{self, DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::content::ContentBlock;
use super::is_none;
use super::member::Names;

/// A tool definition, as `tools/list` returns it. Schemas are raw JSON; unknown fields are kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tool {
    /// The tool's name on its server.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "is_none")]
    pub title: Option<String>,
    /// What the tool does (a hint for the model).
    #[serde(default, skip_serializing_if = "is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments, exactly as sent (`Null` when the server sent none).
    #[serde(
        rename = "inputSchema",
        default,
        skip_serializing_if = "Value::is_null"
    )]
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (2025-06-18+).
    #[serde(rename = "outputSchema", default, skip_serializing_if = "is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints (2025-03-26+). Untrusted unless the server is.
    #[serde(default, skip_serializing_if = "is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons (2025-11-25+), as sent.
    #[serde(default, skip_serializing_if = "is_none")]
    pub icons: Option<Value>,
    /// Opaque metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "is_none")]
    pub meta: Option<Value>,
    /// Everything else (`execution`, future fields).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Read member by member, unknown members straight into `extra`; as the derived reader did, a
/// repeated known member is refused (two `name`s could be read differently elsewhere). The
/// derived reader (because of `extra`'s `flatten`) collected unknown members into an
/// intermediate buffer and read them again, and matched names as owned strings; measured on a
/// fleet of HTTP connects, reading tool definitions went from 17% of the samples to 14%, the
/// rest being the schemas' own `Value`s.
impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ToolVisitor)
    }
}

const TOOL_MEMBERS: [&str; 8] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "_meta",
];

struct ToolVisitor;

impl<'de> Visitor<'de> for ToolVisitor {
    type Value = Tool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool definition (an object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tool, A::Error> {
        let mut name = None;
        let mut tool = Tool {
            name: String::new(),
            title: None,
            description: None,
            input_schema: Value::Null,
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        };
        let mut seen = [false; TOOL_MEMBERS.len()];
        while let Some(member) = map.next_key_seed(Names(&TOOL_MEMBERS))? {
            if let Ok(i) = member {
                if std::mem::replace(&mut seen[i], true) {
                    return Err(A::Error::duplicate_field(TOOL_MEMBERS[i]));
                }
            }
            match member {
                Ok(0) => name = Some(map.next_value::<String>()?),
                Ok(1) => tool.title = map.next_value()?,
                Ok(2) => tool.description = map.next_value()?,
                Ok(3) => tool.input_schema = map.next_value()?,
                Ok(4) => tool.output_schema = map.next_value()?,
                Ok(5) => tool.annotations = map.next_value()?,
                Ok(6) => tool.icons = map.next_value()?,
                Ok(_) => tool.meta = map.next_value()?,
                Err(key) => {
                    let value = map.next_value()?;
                    tool.extra.insert(key, value);
                }
            }
        }
        tool.name = name.ok_or_else(|| A::Error::missing_field("name"))?;
        Ok(tool)
    }
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Tool {
        Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// The name to show a person: `title`, then `annotations.title`, then `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.name)
    }
}

/// Tool behaviour hints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (default true).
    #[serde(default, skip_serializing_if = "is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments has no further effect (default false).
    #[serde(default, skip_serializing_if = "is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside (default true).
    #[serde(default, skip_serializing_if = "is_none")]
    pub open_world_hint: Option<bool>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tools/call` result: content blocks of every type, structured content, the error flag and
/// metadata, exactly as the server sent them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallToolResult {
    /// The content blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured output (an object through 2025-11-25), matching the tool's `outputSchema`.
    #[serde(rename = "structuredContent", default, skip_serializing_if = "is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool itself failed (the model should see it and may self-correct).
    #[serde(rename = "isError", default, skip_serializing_if = "is_none")]
    pub is_error: Option<bool>,
    /// Opaque metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "is_none")]
    pub meta: Option<Value>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// The result from its parsed JSON. `null` in an optional field is its absence.
    pub fn from_value(value: Value) -> Result<CallToolResult, String> {
        CallToolResult::deserialize(value).map_err(|e| e.to_string())
    }

    /// Whether the result is a tool error (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }

    /// The text blocks joined by blank lines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// Reads a result straight from its JSON: the content blocks one by one (see
/// [`ContentBlock`]'s reader), the other members as values. A call's result is on every call's
/// path, and can be tens of megabytes.
impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ResultVisitor)
    }
}

const RESULT_MEMBERS: [&str; 4] = ["content", "structuredContent", "isError", "_meta"];

struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = CallToolResult;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallToolResult, A::Error> {
        let mut result = CallToolResult::default();
        let optional = |v: Value| Some(v).filter(|v| !v.is_null());
        while let Some(member) = map.next_key_seed(Names(&RESULT_MEMBERS))? {
            match member {
                Ok(0) => result.content = map.next_value_seed(Blocks)?,
                Ok(1) => result.structured_content = optional(map.next_value()?),
                Ok(2) => {
                    result.is_error = match map.next_value::<Value>()? {
                        Value::Null => None,
                        Value::Bool(b) => Some(b),
                        other => {
                            return Err(A::Error::custom(format!(
                                "`isError`: expected a boolean, found {}",
                                json_kind(&other)
                            )))
                        }
                    }
                }
                Ok(_) => result.meta = optional(map.next_value()?),
                Err(key) => {
                    let value = map.next_value()?;
                    result.extra.insert(key, value);
                }
            }
        }
        Ok(result)
    }

    fn visit_unit<E: de::Error>(self) -> Result<CallToolResult, E> {
        Err(not_an_object("null"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<CallToolResult, E> {
        Err(not_an_object("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<CallToolResult, E> {
        Err(not_an_object("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<CallToolResult, E> {
        Err(not_an_object("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<CallToolResult, E> {
        Err(not_an_object("a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<CallToolResult, E> {
        Err(not_an_object("a string"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<CallToolResult, A::Error> {
        Err(not_an_object("an array"))
    }
}

fn not_an_object<E: de::Error>(found: &str) -> E {
    E::custom(format!("expected an object, found {found}"))
}

/// A result's `content`: an array of blocks, each read as it comes.
struct Blocks;

impl<'de> DeserializeSeed<'de> for Blocks {
    type Value = Vec<ContentBlock>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<ContentBlock>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Blocks {
    type Value = Vec<ContentBlock>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of content blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<ContentBlock>, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(block) = seq.next_element::<ContentBlock>()? {
            blocks.push(block);
        }
        Ok(blocks)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<ContentBlock>, E> {
        Err(not_an_array("null"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Vec<ContentBlock>, E> {
        Err(not_an_array("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Vec<ContentBlock>, E> {
        Err(not_an_array("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Vec<ContentBlock>, E> {
        Err(not_an_array("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Vec<ContentBlock>, E> {
        Err(not_an_array("a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Vec<ContentBlock>, E> {
        Err(not_an_array("a string"))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Vec<ContentBlock>, A::Error> {
        Err(not_an_array("an object"))
    }
}

fn not_an_array<E: de::Error>(found: &str) -> E {
    E::custom(format!("`content`: expected an array, found {found}"))
}

/// A JSON value's kind, for error texts (`a string`, `an object`, ...).
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    /// The reader `serde` derives for `Tool`, to compare ours with.
    #[derive(Debug, serde::Deserialize)]
    struct Derived {
        name: String,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        description: Option<String>,
        #[serde(rename = "inputSchema", default)]
        input_schema: serde_json::Value,
        #[serde(rename = "outputSchema", default)]
        output_schema: Option<serde_json::Value>,
        #[serde(default)]
        annotations: Option<super::ToolAnnotations>,
        #[serde(default)]
        icons: Option<serde_json::Value>,
        #[serde(rename = "_meta", default)]
        meta: Option<serde_json::Value>,
        #[serde(flatten)]
        extra: serde_json::Map<String, serde_json::Value>,
    }

    #[test]
    fn a_tool_is_read_as_the_derived_reader_read_it() {
        let cases = [
            r#"{"name":"a"}"#,
            r#"{"name":"a","title":"A","description":"d","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}"#,
            r#"{"inputSchema":null,"name":"b","outputSchema":null,"icons":[{"src":"i"}],"_meta":{"k":1},"execution":{"taskSupport":"optional"},"z":[1,2]}"#,
            r#"{"name":"c","annotations":{"title":"C","readOnlyHint":true,"other":1},"title":null,"description":null}"#,
            r#"{"name":"\u0064","outputSchema":{"type":"object"}}"#,
        ];
        for json in cases {
            let ours: super::Tool = serde_json::from_str(json).unwrap();
            let derived: Derived = serde_json::from_str(json).unwrap();
            assert_eq!(ours.name, derived.name, "{json}");
            assert_eq!(ours.title, derived.title, "{json}");
            assert_eq!(ours.description, derived.description, "{json}");
            assert_eq!(ours.input_schema, derived.input_schema, "{json}");
            assert_eq!(ours.output_schema, derived.output_schema, "{json}");
            assert_eq!(ours.annotations, derived.annotations, "{json}");
            assert_eq!(ours.icons, derived.icons, "{json}");
            assert_eq!(ours.meta, derived.meta, "{json}");
            assert_eq!(ours.extra, derived.extra, "{json}");
            // From a tree too (the cache, `from_value`), and back to the same text.
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            let from_value: super::Tool = serde_json::from_value(value).unwrap();
            assert_eq!(from_value, ours, "{json}");
            let again: super::Tool =
                serde_json::from_str(&serde_json::to_string(&ours).unwrap()).unwrap();
            assert_eq!(again, ours, "{json}");
        }
    }

    #[test]
    fn a_tool_the_derived_reader_refused_is_refused() {
        for json in [
            r#"{"title":"no name"}"#,
            r#"{"name":7}"#,
            r#"{"name":"a","title":3}"#,
            r#"{"name":"a","annotations":"x"}"#,
            r#"["a"]"#,
            r#"null"#,
            r#"{"name":"a","name":"b"}"#,
            r#"{"name":"a","inputSchema":{},"inputSchema":{"type":"object"}}"#,
        ] {
            assert!(serde_json::from_str::<Derived>(json).is_err(), "{json}");
            let ours = serde_json::from_str::<super::Tool>(json);
            assert!(ours.is_err(), "{json}: {ours:?}");
        }
        let missing = serde_json::from_str::<super::Tool>(r#"{"title":"t"}"#).unwrap_err();
        assert!(
            missing.to_string().contains("missing field `name`"),
            "{missing}"
        );
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn tool_round_trips_exactly() {
        let raw = json!({
            "name": "get-sum",
            "title": "Get Sum",
            "description": "Adds",
            "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"a": {"type": "number"}}, "required": ["a"]},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "title": "Sum", "custom": 1},
            "icons": [{"src": "data:image/png;base64,AA=="}],
            "execution": {"taskSupport": "forbidden"},
            "_meta": {"k": "v"}
        });
        let t: Tool = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(t.display_name(), "Get Sum");
        assert_eq!(t.annotations.as_ref().unwrap().read_only_hint, Some(true));
        assert_eq!(serde_json::to_value(&t).unwrap(), raw);
    }

    #[test]
    fn call_result_round_trips_exactly() {
        let raw = json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "structuredContent": {"x": 1},
            "isError": false,
            "_meta": {"m": true},
            "resultType": "complete"
        });
        let r: CallToolResult = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(r.text(), "a\n\nb");
        assert!(!r.is_error());
        assert_eq!(serde_json::to_value(&r).unwrap(), raw);
        assert_eq!(CallToolResult::from_value(raw).unwrap(), r);
    }

    #[test]
    fn call_result_shapes() {
        let empty = CallToolResult::from_value(json!({})).unwrap();
        assert_eq!(empty, CallToolResult::default());
        let nulls = json!({"structuredContent": null, "isError": null, "_meta": null});
        assert_eq!(
            CallToolResult::from_value(nulls).unwrap(),
            CallToolResult::default()
        );
        let odd = json!({"content": [{"type": "hologram"}, 7], "isError": true});
        let r = CallToolResult::from_value(odd).unwrap();
        assert_eq!(r.content.len(), 2);
        assert_eq!(r.content[0].kind(), "hologram");
        assert!(r.is_error());
        for (bad, says) in [
            (json!([]), "expected an object, found an array"),
            (
                json!({"content": null}),
                "`content`: expected an array, found null",
            ),
            (json!({"content": [null]}), "a content block cannot be null"),
            (
                json!({"isError": "yes"}),
                "`isError`: expected a boolean, found a string",
            ),
        ] {
            assert_eq!(CallToolResult::from_value(bad.clone()).unwrap_err(), says);
            let text = serde_json::from_value::<CallToolResult>(bad).unwrap_err();
            assert_eq!(text.to_string(), says);
        }
    }
}

/// What a tool listing said of itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    /// The protocol version the server spoke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// 2026-07-28: how long (ms) the listing stays fresh (the smallest of its pages').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28: `public` or `private`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}

impl Listing {
    /// Whether the server spoke the stateless era.
    pub fn is_stateless(&self) -> bool {
        self.protocol_version
            .as_deref()
            .and_then(super::ProtocolVersion::parse)
            .is_some_and(super::ProtocolVersion::is_stateless)
    }

    /// Whether the tools may be shared beyond one authorization context.
    pub fn is_private(&self) -> bool {
        self.cache_scope.as_deref() == Some("private")
    }
}
