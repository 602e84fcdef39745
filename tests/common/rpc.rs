//! JSON-RPC as the server end of the in-memory pipe sees it: JSON values, read and written
//! here.

use mcp_runtime::protocol::RpcError;
use serde_json::{json, Value};

/// A request the client sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: Value,
    pub method: String,
    pub params: Option<Value>,
}

impl Call {
    /// The request `message` is, if it is one (it has an id and a method).
    pub fn of(message: &Value) -> Option<Call> {
        Some(Call {
            id: message.get("id").filter(|id| !id.is_null())?.clone(),
            method: message.get("method")?.as_str()?.to_owned(),
            params: message.get("params").cloned(),
        })
    }

    /// Its answer: `result`.
    pub fn result(&self, result: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id, "result": result})
    }

    /// Its answer: `error`.
    pub fn error(&self, error: RpcError) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id, "error": error})
    }

    /// Its answer, either way.
    pub fn answer(&self, reply: Result<Value, RpcError>) -> Value {
        match reply {
            Ok(result) => self.result(result),
            Err(error) => self.error(error),
        }
    }
}

/// The method of a request or notification.
pub fn method(message: &Value) -> Option<&str> {
    message.get("method")?.as_str()
}

/// A notification `method` (no id), with `params` when given.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(params) => json!({"jsonrpc": "2.0", "method": method, "params": params}),
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
}

/// A request from the server: `method` under `id`.
pub fn request(id: i64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method})
}

/// A result to `id` (a reply to nobody, when no request has it).
pub fn result_to(id: i64, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}
