//! The 2026-07-28 (stateless) revision's own shapes: the reserved `_meta` keys, `server/discover`,
//! `resultType`, the cache hints and the error codes of its allocated range.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::top_level::Scan;
use super::{is_none, Implementation, ServerCapabilities};

/// `_meta` key: the request's protocol version (required on every request).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: what the client can do, for this request (required on every request).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: who the client is (display and logging only).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: opt in to `notifications/message` at this level, for this request only.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of a result: who the server is (display and logging only).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of a notification on a listen stream: the `subscriptions/listen` request id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Server → client: the first message of a `subscriptions/listen` stream, with the
/// notifications the server agreed to send.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// `-32020`: the HTTP headers do not match the body (re-list tools, then retry once).
pub const HEADER_MISMATCH: i64 = -32020;
/// `-32021`: the request needs a client capability we did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// `-32022`: the server does not speak the requested version; `data.supported` lists what it
/// does.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Whether a JSON-RPC error code is one the stateless revision defines (evidence that the
/// server speaks it). The `-32000…-32019` range is implementation-defined and never is.
pub fn is_stateless_error(code: i64) -> bool {
    matches!(
        code,
        HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// The versions a `-32022` error says the server supports (`data.supported`), if it lists any.
pub fn supported_versions_of(data: Option<&Value>) -> Option<Vec<String>> {
    let list = data?.get("supported")?.as_array()?;
    Some(
        list.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

/// The result of `server/discover`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The revisions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Instructions for the model.
    #[serde(default, skip_serializing_if = "is_none")]
    pub instructions: Option<String>,
    /// How long (ms) this answer stays fresh.
    #[serde(default, skip_serializing_if = "is_none")]
    pub ttl_ms: Option<i64>,
    /// `public` or `private` (reusable only within the same authorization context).
    #[serde(default, skip_serializing_if = "is_none")]
    pub cache_scope: Option<String>,
    /// The result's `_meta` (holds `io.modelcontextprotocol/serverInfo`).
    #[serde(rename = "_meta", default, skip_serializing_if = "is_none")]
    pub meta: Option<Value>,
    /// Everything else the server sent (`resultType`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    /// The server's identity from `_meta`, or an empty one.
    pub fn server_info(&self) -> Implementation {
        self.meta
            .as_ref()
            .and_then(|m| m.get(META_SERVER_INFO))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_else(|| Implementation::new("", ""))
    }
}

/// What a stateless result says it is (`resultType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultType {
    /// `complete` (also when absent): the final result.
    Complete,
    /// `input_required`: answer `inputRequests`, then retry with `inputResponses`.
    InputRequired,
    /// `task` (the tasks extension, `tools/call` only): the server runs it as a task, to be
    /// followed with `tasks/get`.
    Task,
}

impl ResultType {
    /// The `resultType` of a result; `Err` holds a value we do not know (a protocol error).
    #[cfg(test)]
    pub fn of(result: &Value) -> Result<ResultType, String> {
        ResultType::of_member(result.get("resultType"))
    }

    /// The `resultType` of a result still in its JSON text, read without building the rest.
    pub fn of_json(result: &RawValue) -> Result<ResultType, String> {
        #[derive(Deserialize)]
        struct Head {
            #[serde(rename = "resultType", default)]
            result_type: Option<Value>,
        }
        if !result.get().trim_start().starts_with('{') {
            return Ok(ResultType::Complete);
        }
        // A listing page's thousands of tools are skipped over, not read.
        match super::top_level::member(result.get(), "resultType") {
            Scan::Found(text) => {
                let member = serde_json::from_str::<Value>(text).ok();
                return ResultType::of_member(member.as_ref());
            }
            Scan::Absent => return Ok(ResultType::Complete),
            Scan::Unsure => {}
        }
        match serde_json::from_str::<Head>(result.get()) {
            Ok(head) => ResultType::of_member(head.result_type.as_ref()),
            // Not an object: no `resultType` (whoever parses the result says what is wrong).
            Err(_) => Ok(ResultType::Complete),
        }
    }

    fn of_member(member: Option<&Value>) -> Result<ResultType, String> {
        match member {
            None | Some(Value::Null) => Ok(ResultType::Complete),
            Some(Value::String(s)) if s == "complete" => Ok(ResultType::Complete),
            Some(Value::String(s)) if s == "input_required" => Ok(ResultType::InputRequired),
            Some(Value::String(s)) if s == "task" => Ok(ResultType::Task),
            Some(other) => Err(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_types_are_read_strictly() {
        assert_eq!(ResultType::of(&json!({})), Ok(ResultType::Complete));
        assert_eq!(
            ResultType::of(&json!({"resultType": "complete"})),
            Ok(ResultType::Complete)
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "input_required"})),
            Ok(ResultType::InputRequired)
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "task"})),
            Ok(ResultType::Task)
        );
        assert!(ResultType::of(&json!({"resultType": "tasks"})).is_err());
        assert!(ResultType::of(&json!({"resultType": 1})).is_err());
        let raw = |v: Value| serde_json::value::to_raw_value(&v).unwrap();
        for v in [
            json!({}),
            json!({"resultType": "input_required", "x": [1, {"a": 2}]}),
            json!({"resultType": "task"}),
            json!([1]),
            json!(null),
        ] {
            assert_eq!(
                ResultType::of_json(&raw(v.clone())),
                ResultType::of(&v),
                "{v}"
            );
        }
    }

    #[test]
    fn discover_result_keeps_what_it_does_not_model() {
        let value = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 5000, "cacheScope": "public",
            "_meta": {META_SERVER_INFO: {"name": "m", "version": "1"}}});
        let d: DiscoverResult = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(d.supported_versions, ["2026-07-28"]);
        assert_eq!(d.server_info().name, "m");
        assert_eq!(d.ttl_ms, Some(5000));
        assert_eq!(serde_json::to_value(&d).unwrap(), value);
        assert!(is_stateless_error(-32022) && !is_stateless_error(-32001));
        assert_eq!(
            supported_versions_of(Some(&json!({"supported": ["2025-11-25"]}))),
            Some(vec!["2025-11-25".to_owned()])
        );
    }
}
