//! Speaking 2026-07-28: every request carries its own `_meta` (version, capabilities, client
//! info), every result its `resultType`, and what a handshake-era server asked through server
//! requests comes back as `input_required` rounds, answered through the host's
//! [`ClientHandler`] and retried under a new id.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::cancel::CancelToken;
use crate::client::handler::ClientHandler;
use crate::client::{Connection, Wait};
use crate::error::Error;
use crate::protocol::stateless::{
    supported_versions_of, HEADER_MISMATCH, META_CLIENT_CAPABILITIES, META_CLIENT_INFO,
    META_LOG_LEVEL, META_PROTOCOL_VERSION, MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::protocol::{
    check_elicitation_mode, methods, ClientCapabilities, Implementation, ProtocolVersion,
    ResultType,
};

/// The most `input_required` rounds one request may take before it fails.
pub const MAX_INPUT_ROUNDS: usize = 16;

/// A stateless session: the `_meta` every request carries, built once.
pub(crate) struct Stateless {
    meta: Map<String, Value>,
    /// The level of the server logs the host asked for (`_meta` logLevel on every request).
    log_level: parking_lot::Mutex<Option<Value>>,
    declared: ClientCapabilities,
    handler: Arc<dyn ClientHandler>,
}

impl Stateless {
    pub(crate) fn new(
        version: ProtocolVersion,
        declared: &ClientCapabilities,
        client_info: &Implementation,
        handler: Arc<dyn ClientHandler>,
    ) -> Stateless {
        Stateless {
            meta: base_meta(version, declared, client_info),
            log_level: parking_lot::Mutex::new(None),
            declared: declared.clone(),
            handler,
        }
    }

    /// Asks for server logs at `level` from now on: 2026-07-28 has no `logging/setLevel`, each
    /// request carries the level in its `_meta`.
    pub(crate) fn set_log_level(&self, level: Value) {
        *self.log_level.lock() = Some(level);
    }

    /// The `_meta` every request of this session carries.
    pub(crate) fn meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// Sends `method` and waits for its complete result, answering `input_required` rounds
    /// on the way, all within the caller's deadline and cancel. A `tools/call` refused for its
    /// headers (`-32020`) is retried once after `relist` re-read the tools.
    pub(crate) fn request(
        &self,
        conn: &Connection,
        method: &str,
        params: Option<Value>,
        wait: Wait<'_>,
        relist: &dyn Fn() -> Result<(), Error>,
    ) -> Result<Box<RawValue>, Error> {
        let Wait {
            timeout,
            hard_deadline,
            cancel,
            mut on_progress,
            notify_cancel,
        } = wait;
        let original = params.unwrap_or_else(|| Value::Object(Map::new()));
        let mut retry: Option<Map<String, Value>> = None;
        let mut relisted = false;
        for _ in 0..=MAX_INPUT_ROUNDS {
            let mut params = stamp(&self.meta, original.clone());
            let level = self.log_level.lock().clone();
            if let (Some(level), Some(Value::Object(meta))) = (level, params.get_mut("_meta")) {
                meta.entry(META_LOG_LEVEL).or_insert(level);
            }
            if let (Some(extra), Value::Object(p)) = (&retry, &mut params) {
                p.extend(extra.clone());
            }
            let left = hard_deadline.saturating_duration_since(Instant::now());
            let round = Wait {
                timeout: timeout.min(left),
                hard_deadline,
                cancel: cancel.clone(),
                on_progress: on_progress
                    .as_mut()
                    .map(|cb| Box::new(|p: &_| cb(p)) as crate::client::ProgressFn<'_>),
                notify_cancel,
            };
            let result = match conn.request_raw(method, Some(params), round) {
                Ok(result) => result,
                Err(e) => match typed(method, e) {
                    Error::Rpc {
                        code: HEADER_MISMATCH,
                        ..
                    } if method == methods::TOOLS_CALL && !relisted => {
                        relisted = true;
                        relist()?;
                        continue;
                    }
                    other => return Err(other),
                },
            };
            match ResultType::of_json(&result) {
                Ok(ResultType::Complete) => return Ok(result),
                // A task (the tasks extension): the caller follows it.
                Ok(ResultType::Task) if method == methods::TOOLS_CALL => return Ok(result),
                Ok(ResultType::Task) => {
                    return Err(Error::protocol(format!(
                        "invalid {method} result: only tools/call may become a task"
                    )))
                }
                Ok(ResultType::InputRequired) => {
                    let deadline = hard_deadline.min(Instant::now() + timeout);
                    let result: Value = crate::client::parse_result(method, &result)?;
                    retry = Some(answer_input(
                        &self.handler,
                        &self.declared,
                        conn,
                        method,
                        &result,
                        deadline,
                        cancel.as_ref(),
                    )?);
                }
                Err(unknown) => {
                    return Err(Error::protocol(format!(
                        "invalid {method} result: unknown resultType {unknown}"
                    )))
                }
            }
        }
        Err(Error::protocol(format!(
            "{method} still asked for input after {MAX_INPUT_ROUNDS} rounds"
        )))
    }
}

/// Answers one `input_required` result (or a task's `inputRequests`): every entry through
/// the handler (on a thread of its own, so the deadline and cancel hold however long the host
/// takes), and the retry's extra params: `inputResponses` and `requestState`, echoed exactly.
/// A request for a capability the client did not declare fails it.
pub(crate) fn answer_input(
    handler: &Arc<dyn ClientHandler>,
    declared: &ClientCapabilities,
    conn: &Connection,
    method: &str,
    result: &Value,
    deadline: Instant,
    cancel: Option<&CancelToken>,
) -> Result<Map<String, Value>, Error> {
    let requests = match result.get("inputRequests") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(Error::protocol(format!(
                "invalid {method} result: inputRequests is not an object"
            )))
        }
    };
    let state = result.get("requestState").cloned();
    if requests.is_empty() && state.is_none() {
        return Err(Error::protocol(format!(
            "invalid {method} result: input_required with neither inputRequests nor requestState"
        )));
    }
    let mut extra = Map::new();
    if let Some(state) = state {
        extra.insert("requestState".into(), state);
    }
    if requests.is_empty() {
        return Ok(extra);
    }
    for (key, request) in &requests {
        let asked = request.get("method").and_then(Value::as_str).unwrap_or("");
        if !declares(declared, asked) {
            return Err(Error::protocol(format!(
                "the server asked for {asked:?} (input {key:?}), which this client did not declare"
            )));
        }
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let handler = Arc::clone(handler);
    let server = conn.name.clone();
    // A handler that panics fails this request with the panic (the connection stays).
    let failed = tx.clone();
    crate::panic::spawn(
        format!("mcp-input-{server}"),
        crate::panic::Boundary::StatelessInput,
        move || {
            let _ = tx.send(answer_all(&*handler, &server, requests));
        },
        move |e| {
            let _ = failed.send(Err(e));
        },
    )
    .map_err(|e| Error::protocol(format!("could not start the input thread: {e}")))?;
    let never = crossbeam_channel::never();
    let cancel_rx = cancel.map(CancelToken::receiver).unwrap_or(&never);
    let left = deadline.saturating_duration_since(Instant::now());
    crossbeam_channel::select! {
        recv(rx) -> answers => {
            let answers = answers.map_err(|_| Error::protocol("the input thread died"))??;
            extra.insert("inputResponses".into(), Value::Object(answers));
            Ok(extra)
        }
        recv(cancel_rx) -> _ => Err(Error::Cancelled),
        default(left) => Err(Error::Timeout { method: method.to_owned(), after: left.max(Duration::from_millis(1)) }),
    }
}

fn declares(declared: &ClientCapabilities, method: &str) -> bool {
    match method {
        methods::ELICITATION_CREATE => declared.elicitation.is_some(),
        methods::SAMPLING_CREATE_MESSAGE => declared.sampling.is_some(),
        methods::ROOTS_LIST => declared.roots.is_some(),
        _ => false,
    }
}

/// Every input request answered by the host (on the input thread).
fn answer_all(
    handler: &dyn ClientHandler,
    server: &str,
    requests: Map<String, Value>,
) -> Result<Map<String, Value>, Error> {
    let mut answers = Map::new();
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        let answer = match method {
            methods::ELICITATION_CREATE => match handler.capabilities().elicitation {
                Some(declared) => check_elicitation_mode(&declared, &params)
                    .and_then(|()| handler.elicit(server, params)),
                None => handler.elicit(server, params),
            },
            methods::SAMPLING_CREATE_MESSAGE => handler.create_message(server, params),
            _ => handler
                .list_roots(server)
                .and_then(|r| serde_json::to_value(r).map_err(|e| internal(&e.to_string()))),
        };
        let answer = answer.map_err(|e| {
            Error::protocol(format!(
                "the host could not answer {method} (input {key:?}): {}",
                e.message
            ))
        })?;
        answers.insert(key, answer);
    }
    Ok(answers)
}

fn internal(message: &str) -> crate::jsonrpc::RpcError {
    crate::jsonrpc::RpcError {
        code: crate::jsonrpc::codes::INTERNAL_ERROR,
        message: message.to_owned(),
        data: None,
    }
}

impl crate::client::Client {
    /// What the last complete `tools/list` said of itself: the protocol version and, from a
    /// stateless server, `ttlMs` (the smallest of its pages') and `cacheScope`. The manager
    /// stores it beside the tools in the [`ToolCache`](crate::manager::cache::ToolCache).
    pub fn tools_listing(&self) -> crate::protocol::Listing {
        self.inner.listing.lock().clone()
    }

    /// Whether the last `tools/list` is still fresh by its `ttlMs` (a stateless server's hint;
    /// a handshake-era listing stays fresh until `list_changed`). Stale means: list again
    /// when the tools are next needed.
    pub fn tools_fresh(&self) -> bool {
        let listing = self.inner.listing.lock();
        if !listing.is_stateless() {
            return true;
        }
        let ttl = Duration::from_millis(listing.ttl_ms.unwrap_or(0));
        self.inner
            .listed_at
            .lock()
            .is_some_and(|at| at.elapsed() < ttl)
    }

    /// Records one `tools/list` page's cache hints (`first` starts a new listing).
    pub(crate) fn note_tools_page(&self, ttl_ms: Option<i64>, scope: Option<&str>, first: bool) {
        let ttl = ttl_ms.map(|t| t.max(0) as u64);
        let mut listing = self.inner.listing.lock();
        if first {
            *listing = crate::protocol::Listing {
                protocol_version: Some(self.protocol_version().as_str().to_owned()),
                ttl_ms: None,
                cache_scope: None,
            };
            *self.inner.listed_at.lock() = Some(Instant::now());
        }
        if self.protocol_version().is_stateless() {
            // Absent means 0; every page has its own clock, so the listing is as fresh as
            // its stalest page.
            let ttl = ttl.unwrap_or(0);
            listing.ttl_ms = Some(listing.ttl_ms.map_or(ttl, |t| t.min(ttl)));
            if let Some(scope) = scope {
                listing.cache_scope = Some(scope.to_owned());
            }
        }
    }
}

/// The JSON-RPC error an HTTP error status carried in its body (2026-07-28 answers 400 with
/// `-32022`/`-32021`/`-32020`/`-32602`, and 404 with `-32601`), if it carried one.
pub(crate) fn rpc_in_http_body(e: &Error) -> Option<Error> {
    let Error::Http { status, body, .. } = e else {
        return None;
    };
    if !(400..500).contains(status) || *status == 401 || *status == 403 {
        return None;
    }
    let value: Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    Some(Error::Rpc {
        code: error.get("code")?.as_i64()?,
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        data: error.get("data").cloned(),
    })
}

/// Whether an HTTP error status carried a stateless JSON-RPC error (never a reason to try
/// another transport: the server speaks 2026-07-28 and said what is wrong).
pub(crate) fn is_stateless_refusal(e: &Error) -> bool {
    matches!(rpc_in_http_body(e), Some(Error::Rpc { code, .. }) if crate::protocol::stateless::is_stateless_error(code))
}

/// The stateless errors, made plain: an HTTP status's JSON-RPC body is the error, `-32022`
/// names the versions, `-32021` the capabilities.
pub(crate) fn typed(method: &str, e: Error) -> Error {
    let e = rpc_in_http_body(&e).unwrap_or(e);
    match e {
        Error::Rpc {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            ref data,
            ..
        } => match supported_versions_of(data.as_ref()) {
            Some(supported) => Error::UnsupportedProtocolVersion {
                requested: ProtocolVersion::latest_stateless().as_str().to_owned(),
                received: supported.join(", "),
            },
            None => e,
        },
        Error::Rpc {
            code: MISSING_REQUIRED_CLIENT_CAPABILITY,
            message,
            data,
        } => {
            let needed = data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            Error::Rpc {
                code: MISSING_REQUIRED_CLIENT_CAPABILITY,
                message: format!(
                    "{method} needs client capabilities this host lacks: {needed} ({message})"
                ),
                data,
            }
        }
        other => other,
    }
}

/// The `_meta` every request of a session carries.
pub(crate) fn base_meta(
    version: ProtocolVersion,
    declared: &ClientCapabilities,
    client_info: &Implementation,
) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(META_PROTOCOL_VERSION.into(), version.as_str().into());
    meta.insert(
        META_CLIENT_CAPABILITIES.into(),
        serde_json::to_value(declared).unwrap_or_else(|_| Value::Object(Map::new())),
    );
    meta.insert(
        META_CLIENT_INFO.into(),
        serde_json::to_value(client_info).unwrap_or(Value::Null),
    );
    meta
}

/// `params` with the session's `_meta` merged in (keys the caller set stay theirs).
pub(crate) fn stamp(meta: &Map<String, Value>, params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let entry = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(m) = entry {
        for (k, v) in meta {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stamping_merges_into_the_callers_meta() {
        let meta = base_meta(
            ProtocolVersion::V2026_07_28,
            &ClientCapabilities::default(),
            &Implementation::new("c", "1"),
        );
        let out = stamp(
            &meta,
            json!({"name": "t", "_meta": {"traceparent": "00-x"}}),
        );
        assert_eq!(out["name"], "t");
        assert_eq!(out["_meta"]["traceparent"], "00-x");
        assert_eq!(out["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(out["_meta"][META_CLIENT_CAPABILITIES], json!({}));
        assert_eq!(out["_meta"][META_CLIENT_INFO]["name"], "c");
        let out = stamp(&meta, Value::Null);
        assert_eq!(out["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
    }

    #[test]
    fn missing_capability_names_it() {
        let e = typed(
            "tools/call",
            Error::Rpc {
                code: -32021,
                message: "needs elicitation".into(),
                data: Some(json!({"requiredCapabilities": {"elicitation": {}}})),
            },
        );
        assert!(e.to_string().contains("elicitation"), "{e}");
        let e = typed(
            "tools/list",
            Error::Rpc {
                code: -32022,
                message: "no".into(),
                data: Some(json!({"supported": ["2027-01-01"]})),
            },
        );
        assert!(
            matches!(e, Error::UnsupportedProtocolVersion { ref received, .. } if received == "2027-01-01")
        );
    }
}
