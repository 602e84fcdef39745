//! JSON-RPC 2.0 messages: the wire layer's envelope.
//!
//! A [`Message`] is a request, a response or a notification. Reading is lenient where the
//! protocol allows it (a batch array is split into its messages, a string id that spells a number
//! matches that number) and strict where it must be (a message that is none of the three is an
//! error the transport can log and skip). Writing is compact, one message per line, never with
//! an embedded newline.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The JSON-RPC error codes this crate sends.
pub mod codes {
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Implementation-defined server error; we send it when we are overloaded.
    pub const SERVER_ERROR: i64 = -32000;
}

/// A request id. We allocate integers; a server may echo them back as strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (the kind we send).
    Number(i64),
    /// A string id (the kind some servers send).
    String(String),
}

impl RequestId {
    /// The id as an integer: a number, or a string that spells one (`"7"` is 7).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            RequestId::Number(n) => Some(*n),
            RequestId::String(s) => s.parse().ok(),
        }
    }

    fn from_value(v: Value) -> Option<RequestId> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .map(RequestId::Number),
            Value::String(s) => Some(RequestId::String(s)),
            _ => None,
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

/// The `error` member of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (JSON-RPC's `-32601` method not found, `-32602` invalid params, `-32603`
    /// internal error, ...; MCP's own codes).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra information, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32601 Method not found: <method>`.
    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }
}

impl From<RpcError> for crate::error::Error {
    fn from(e: RpcError) -> Self {
        crate::error::Error::Rpc {
            code: e.code,
            message: e.message,
            data: e.data,
        }
    }
}

/// A request: a method call that wants a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response will carry.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A notification: a method call without a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A response to a request.
///
/// The result is kept as the JSON text it came as ([`RawValue`]): the caller parses it into the
/// type it expects (a tool result, a listing page) in one pass, so a large reply is never also
/// held as a tree of [`Value`]s, which can take 30 times the text's size.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request answered; `None` when the peer could not parse our request.
    pub id: Option<RequestId>,
    /// The result's JSON text, or the error.
    pub outcome: Result<Box<RawValue>, RpcError>,
}

/// Two responses are equal when their ids are and their results are the same JSON (however
/// it was spaced) or their errors are equal.
impl PartialEq for Response {
    fn eq(&self, other: &Response) -> bool {
        let same = match (&self.outcome, &other.outcome) {
            (Ok(a), Ok(b)) => {
                a.get() == b.get()
                    || serde_json::from_str::<Value>(a.get()).ok()
                        == serde_json::from_str::<Value>(b.get()).ok()
            }
            (Err(a), Err(b)) => a == b,
            _ => false,
        };
        self.id == other.id && same
    }
}

/// A value's JSON text, for a [`Response`]'s result. Serializing a `Value` cannot fail.
#[allow(
    clippy::expect_used,
    reason = "a Value's keys are strings and its numbers finite: serializing it cannot fail"
)]
pub fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("serializing a JSON value")
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A response.
    Response(Response),
    /// A notification.
    Notification(Notification),
}

/// Why a piece of input is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// Not JSON at all (a banner, a log line printed to stdout, ...).
    NotJson(String),
    /// JSON, but not a request, a response or a notification.
    NotJsonRpc(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::NotJson(e) => write!(f, "not JSON: {e}"),
            ParseError::NotJsonRpc(e) => write!(f, "not a JSON-RPC message: {e}"),
        }
    }
}

impl Message {
    /// A request with an integer id.
    pub fn request(id: i64, method: impl Into<String>, params: Option<Value>) -> Message {
        Message::Request(Request {
            id: RequestId::Number(id),
            method: method.into(),
            params,
        })
    }

    /// A notification.
    pub fn notification(method: impl Into<String>, params: Option<Value>) -> Message {
        Message::Notification(Notification {
            method: method.into(),
            params,
        })
    }

    /// A successful response.
    pub fn result(id: RequestId, result: Value) -> Message {
        Message::result_raw(id, raw(&result))
    }

    /// A successful response whose result is already JSON text.
    pub fn result_raw(id: RequestId, result: Box<RawValue>) -> Message {
        Message::Response(Response {
            id: Some(id),
            outcome: Ok(result),
        })
    }

    /// An error response.
    pub fn error(id: RequestId, error: RpcError) -> Message {
        Message::Response(Response {
            id: Some(id),
            outcome: Err(error),
        })
    }

    /// Parses one unit of input: a message, or (JSON-RPC batching, 2025-03-26) an array of them.
    /// Elements of a batch that are not messages are dropped; the rest are kept.
    pub(crate) fn parse(input: &[u8]) -> Result<Vec<Message>, ParseError> {
        let first = input.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'[') {
            // One message: read straight into its members, without building the object.
            return Parts::classify_read(serde_json::from_slice(input)).map(|m| vec![m]);
        }
        let items: Vec<&RawValue> =
            serde_json::from_slice(input).map_err(|e| ParseError::NotJson(e.to_string()))?;
        let parsed: Vec<Message> = items
            .into_iter()
            .filter_map(|item| Parts::classify_read(serde_json::from_str(item.get())).ok())
            .collect();
        if parsed.is_empty() {
            Err(ParseError::NotJsonRpc("an empty or invalid batch".into()))
        } else {
            Ok(parsed)
        }
    }

    /// Classifies a JSON value as a message (through its text: a response keeps its result as
    /// text).
    #[cfg(any(test, fuzzing))]
    #[allow(clippy::expect_used, reason = "serializing a Value cannot fail")]
    pub(crate) fn from_value(value: Value) -> Result<Message, ParseError> {
        let text = serde_json::to_vec(&value).expect("serializing a JSON value");
        Parts::classify_read(serde_json::from_slice(&text))
    }

    /// Serializes the message compactly and appends `\n` (the stdio framing).
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.write_json(&mut out);
        out.push(b'\n');
        out
    }

    /// Serializes the message compactly into `out`.
    #[allow(
        clippy::expect_used,
        reason = "serializing a tree of Values and strings into a Vec cannot fail"
    )]
    pub fn write_json(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(&mut *out, self).expect("serializing a JSON-RPC message");
    }
}

/// The members of a message object that say what it is (the others, `jsonrpc` included, are
/// not kept). A member given twice counts once, the last time, as in a parsed object.
#[derive(Default)]
struct Parts {
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Box<RawValue>>,
    error: Option<Value>,
}

impl Parts {
    /// The message the members read make, or why there is none. Once the JSON itself is
    /// sound, only a top level that is not an object fails the members' visitor.
    fn classify_read(read: Result<Parts, serde_json::Error>) -> Result<Message, ParseError> {
        match read {
            Ok(parts) => parts.classify(),
            Err(e) if e.is_data() => Err(ParseError::NotJsonRpc("not an object".into())),
            Err(e) => Err(ParseError::NotJson(e.to_string())),
        }
    }

    fn classify(self) -> Result<Message, ParseError> {
        let id = self.id.filter(|v| !v.is_null());
        if let Some(Value::String(method)) = self.method {
            return Ok(match id {
                Some(id) => Message::Request(Request {
                    id: RequestId::from_value(id)
                        .ok_or_else(|| ParseError::NotJsonRpc("invalid request id".into()))?,
                    method,
                    params: self.params,
                }),
                None => Message::Notification(Notification {
                    method,
                    params: self.params,
                }),
            });
        }
        let id = match id {
            Some(v) => Some(
                RequestId::from_value(v)
                    .ok_or_else(|| ParseError::NotJsonRpc("invalid response id".into()))?,
            ),
            None => None,
        };
        if let Some(error) = self.error {
            let error = serde_json::from_value::<RpcError>(error)
                .map_err(|e| ParseError::NotJsonRpc(format!("invalid error object: {e}")))?;
            return Ok(Message::Response(Response {
                id,
                outcome: Err(error),
            }));
        }
        if let Some(result) = self.result {
            return Ok(Message::Response(Response {
                id,
                outcome: Ok(result),
            }));
        }
        Err(ParseError::NotJsonRpc(
            "neither a request, a response nor a notification".into(),
        ))
    }
}

impl<'de> Deserialize<'de> for Parts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Parts, D::Error> {
        /// A member's name, told apart without copying it.
        enum Key {
            Id,
            Method,
            Params,
            Result,
            Error,
            Other,
        }

        impl<'de> Deserialize<'de> for Key {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
                struct Name;
                impl Visitor<'_> for Name {
                    type Value = Key;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                        Ok(match name {
                            "id" => Key::Id,
                            "method" => Key::Method,
                            "params" => Key::Params,
                            "result" => Key::Result,
                            "error" => Key::Error,
                            _ => Key::Other,
                        })
                    }
                }
                d.deserialize_identifier(Name)
            }
        }

        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Parts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
                let mut parts = Parts::default();
                while let Some(key) = map.next_key::<Key>()? {
                    let slot = match key {
                        Key::Id => &mut parts.id,
                        Key::Method => &mut parts.method,
                        Key::Params => &mut parts.params,
                        Key::Result => {
                            parts.result = Some(map.next_value()?);
                            continue;
                        }
                        Key::Error => &mut parts.error,
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value()?);
                }
                Ok(parts)
            }
        }
        d.deserialize_map(Members)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(v) => map.serialize_entry("result", v)?,
                    Err(e) => map.serialize_entry("error", e)?,
                }
            }
        }
        map.end()
    }
}

/// An empty JSON object, the `params`/`result` of many MCP messages.
pub fn empty_object() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_the_three_kinds() {
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert!(matches!(&m[0], Message::Request(r) if r.id == RequestId::Number(1)));
        let m = Message::parse(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#).unwrap();
        assert!(matches!(&m[0], Message::Notification(_)));
        let m = Message::parse(br#"{"jsonrpc":"2.0","id":"7","result":{}}"#).unwrap();
        match &m[0] {
            Message::Response(r) => assert_eq!(r.id.as_ref().unwrap().as_i64(), Some(7)),
            _ => panic!(),
        }
        let m = Message::parse(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        )
        .unwrap();
        assert!(
            matches!(&m[0], Message::Response(Response { id: None, outcome: Err(e) }) if e.code == -32700)
        );
    }

    #[test]
    fn rejects_what_is_not_a_message() {
        assert!(matches!(
            Message::parse(b"Server starting on stdio..."),
            Err(ParseError::NotJson(_))
        ));
        assert!(matches!(
            Message::parse(b"[1,2]"),
            Err(ParseError::NotJsonRpc(_))
        ));
        assert!(matches!(
            Message::parse(br#"{"jsonrpc":"2.0","id":1}"#),
            Err(ParseError::NotJsonRpc(_))
        ));
        assert!(matches!(
            Message::parse(br#"{"id":{"a":1},"result":1}"#),
            Err(ParseError::NotJsonRpc(_))
        ));
    }

    #[test]
    fn never_panics_on_arbitrary_input() {
        // A small LCG makes the run repeatable; the alphabet is JSON's, so many inputs parse.
        let alphabet = br#"{}[]":,0123456789.-eE truefalsnul\"idmethodresulterrorparams"#;
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize
        };
        let seeds: [&[u8]; 4] = [
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"x","params":[1]}"#,
            br#"[{"id":"a","error":{"code":1,"message":"m"}}]"#,
            br#"{"id":1.5e300,"method":"m"}"#,
        ];
        for round in 0..20_000 {
            let mut input: Vec<u8> = seeds[round % seeds.len()].to_vec();
            for _ in 0..(next() % 6) {
                let at = next() % (input.len() + 1);
                match next() % 3 {
                    0 if !input.is_empty() => {
                        input.remove(at.min(input.len() - 1));
                    }
                    _ => input.insert(at, alphabet[next() % alphabet.len()]),
                }
            }
            if let Ok(messages) = Message::parse(&input) {
                for m in messages {
                    let _ = Message::parse(&m.to_line()).expect("what we write, we read");
                }
            }
        }
    }

    #[test]
    fn reads_a_message_as_its_object_would_read() {
        // Every input is read both ways (straight into its members, and as a parsed object)
        // and must come out the same.
        let inputs: [&[u8]; 12] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            br#"{"id":1,"id":2,"result":3}"#,
            br#"{"method":5,"id":1,"result":"r"}"#,
            br#"{"id":null,"method":"n","extra":{"deep":[1,{"x":null}]}}"#,
            br#"  {"id":"a\u0062","result":null}  "#,
            br#"{"id":3,"error":{"code":-1,"message":"m","data":[1]}}"#,
            br#"{"id":3,"error":null}"#,
            br#"{"i\u0064":4,"result":{}}"#,
            br#"5"#,
            br#""text""#,
            br#"{"id":1,"result":}"#,
            br#"{}"#,
        ];
        for input in inputs {
            let direct = Message::parse(input);
            let via_value = match serde_json::from_slice::<Value>(input) {
                Ok(v) => Message::from_value(v).map(|m| vec![m]),
                Err(e) => Err(ParseError::NotJson(e.to_string())),
            };
            assert_eq!(
                format!("{direct:?}"),
                format!("{via_value:?}"),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        let m = Message::parse(br#"{"id":1,"method":"m","params":null}"#).unwrap();
        assert!(matches!(&m[0], Message::Request(r) if r.params == Some(Value::Null)));
        assert_eq!(
            Message::parse(b"5").unwrap_err(),
            ParseError::NotJsonRpc("not an object".into())
        );
    }

    #[test]
    fn splits_batches() {
        let m = Message::parse(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"},7]"#,
        )
        .unwrap();
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn writes_one_compact_line() {
        let m = Message::request(3, "tools/call", Some(json!({"text": "a\nb"})));
        let line = m.to_line();
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"text\":\"a\\nb\"}}\n"
        );
        let back = Message::parse(&line).unwrap();
        assert_eq!(back[0], m);
        let e = Message::error(
            RequestId::String("x".into()),
            RpcError::method_not_found("a"),
        );
        let back = Message::parse(&e.to_line()).unwrap();
        assert_eq!(back[0], e);
    }
}
