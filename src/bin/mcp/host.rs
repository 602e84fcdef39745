//! What the CLI answers when a server asks something of it, and where server log messages go.
//!
//! Declared: `roots` (the project directory) and `elicitation` (form mode: asked field by field
//! on the terminal; without a terminal, accepted with the schema's defaults when they cover
//! every required field, declined otherwise). Sampling is not declared: the CLI has no model,
//! so servers do not offer the tools that need one.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use crossbeam_channel::Sender;
use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, LoggingLevel, Root};
use mcp_runtime::ClientHandler;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::arguments::typed;

/// One log message of a server, for `mcp logs`.
#[derive(Debug, Clone)]
pub struct LogLine {
    pub server: String,
    pub level: LoggingLevel,
    pub logger: Option<String>,
    pub data: Value,
}

/// The CLI's handler, shared by every server of a run.
pub struct CliHandler {
    project: PathBuf,
    /// Where `mcp logs` wants log messages (none: they go to the `log` crate only).
    logs: Mutex<Option<Sender<LogLine>>>,
    /// One terminal prompt at a time (servers may ask at once).
    asking: Mutex<()>,
}

impl CliHandler {
    pub fn new(project: PathBuf) -> CliHandler {
        CliHandler {
            project,
            logs: Mutex::new(None),
            asking: Mutex::new(()),
        }
    }

    /// Sends every log message from now on to `sink`.
    pub fn follow_logs(&self, sink: Sender<LogLine>) {
        *self.logs.lock() = Some(sink);
    }
}

fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

impl ClientHandler for CliHandler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(json!({"listChanged": false})),
            elicitation: Some(json!({})),
            ..Default::default()
        }
    }

    fn list_roots(&self, _: &str) -> Result<Vec<Root>, RpcError> {
        Ok(vec![Root::from_path(&self.project)])
    }

    fn elicit(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        let schema = params
            .get("requestedSchema")
            .cloned()
            .unwrap_or(Value::Null);
        let message = params["message"].as_str().unwrap_or("");
        if !interactive() {
            return Ok(match defaults(&schema) {
                Some(content) => json!({"action": "accept", "content": content}),
                None => json!({"action": "decline"}),
            });
        }
        // The terminal is one; a second question waits for the first (bounded by the user).
        let _turn = self.asking.lock();
        Ok(ask(server, message, &schema))
    }

    fn on_log_message(
        &self,
        server: &str,
        level: LoggingLevel,
        logger: Option<&str>,
        data: &Value,
    ) {
        // Cloned out of the lock: the send never happens under it.
        let sink = self.logs.lock().clone();
        if let Some(sink) = sink {
            let _ = sink.send(LogLine {
                server: server.to_owned(),
                level,
                logger: logger.map(str::to_owned),
                data: data.clone(),
            });
        }
    }
}

/// The schema's defaults, when they cover every required field.
pub fn defaults(schema: &Value) -> Option<Value> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut content = Map::new();
    for (name, prop) in props.into_iter().flatten() {
        if let Some(d) = prop.get("default") {
            content.insert(name.clone(), d.clone());
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    let covered = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|r| content.contains_key(r));
    covered.then_some(Value::Object(content))
}

/// Asks on the terminal, field by field; an empty answer takes the default (or leaves an
/// optional field out), `!decline` / `!cancel` end the request so.
fn ask(server: &str, message: &str, schema: &Value) -> Value {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\n[{server}] asks: {message}");
    let _ = writeln!(
        err,
        "  (Enter takes the default; !decline or !cancel to refuse)"
    );
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut content = Map::new();
    let props = schema.get("properties").and_then(Value::as_object);
    let stdin = std::io::stdin();
    for (name, prop) in props.into_iter().flatten() {
        loop {
            let default = prop.get("default");
            let hint = prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let _ = write!(
                err,
                "  {name}{}{}: ",
                if hint.is_empty() {
                    String::new()
                } else {
                    format!(" ({hint})")
                },
                default.map(|d| format!(" [{d}]")).unwrap_or_default()
            );
            let _ = err.flush();
            let mut line = String::new();
            if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
                return json!({"action": "cancel"});
            }
            let line = line.trim();
            match line {
                "!decline" => return json!({"action": "decline"}),
                "!cancel" => return json!({"action": "cancel"}),
                "" => {
                    if let Some(d) = default {
                        content.insert(name.clone(), d.clone());
                    } else if required.contains(&name.as_str()) {
                        let _ = writeln!(err, "  {name} is required");
                        continue;
                    }
                }
                text => match typed(prop, text) {
                    Ok(v) => {
                        content.insert(name.clone(), v);
                    }
                    Err(e) => {
                        let _ = writeln!(err, "  {e}");
                        continue;
                    }
                },
            }
            break;
        }
    }
    json!({"action": "accept", "content": content})
}
