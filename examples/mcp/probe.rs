//! `mcp probe`: a headless check of one server. It connects (a URL, with the transport detected,
//! or a stdio command), answers server requests without asking anyone, lists the tools, calls
//! every one with arguments built from its schema, and reports.

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::jsonrpc::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, ListRootsResult, Root, Tool};
use mcp_runtime::transport::{HttpTarget, StdioCommand};
use mcp_runtime::{CallOptions, Client, ClientHandler, ConnectOptions, Endpoint};
use serde_json::{json, Map, Value};

/// What to probe.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Url {
        url: String,
        headers: Vec<(String, String)>,
    },
    Command(Vec<String>),
}

/// Answers every server request the way a cooperative, non-interactive host would.
struct Unattended {
    cwd: std::path::PathBuf,
}

impl ClientHandler for Unattended {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(json!({"listChanged": false})),
            sampling: Some(json!({})),
            elicitation: Some(json!({})),
            ..Default::default()
        }
    }

    fn list_roots(&self, _: &str) -> Result<ListRootsResult, RpcError> {
        Ok(ListRootsResult {
            roots: vec![Root::from_path(&self.cwd)],
        })
    }

    fn create_message(&self, _: &str, _: Value) -> Result<Value, RpcError> {
        Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": "This is a canned reply from mcp probe."},
                  "model": "mcp-probe", "stopReason": "endTurn"}),
        )
    }

    fn elicit(&self, _: &str, params: Value) -> Result<Value, RpcError> {
        let content = arguments_for(params.get("requestedSchema").unwrap_or(&Value::Null));
        Ok(json!({"action": "accept", "content": content}))
    }
}

/// Arguments from a JSON schema: each property's default, else its first enum value, else a
/// placeholder of its type.
pub fn arguments_for(schema: &Value) -> Value {
    let mut args = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let value = prop
                .get("default")
                .cloned()
                .or_else(|| prop.get("enum").and_then(|e| e.get(0)).cloned())
                .unwrap_or_else(|| match prop.get("type").and_then(Value::as_str) {
                    Some("integer") | Some("number") => json!(1),
                    Some("boolean") => json!(true),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => json!("test"),
                });
            args.insert(name.clone(), value);
        }
    }
    Value::Object(args)
}

/// Runs the probe; the exit status is 1 on a protocol failure.
pub fn run(target: &Target, options: &ConnectOptions, call_timeout: Duration, as_json: bool) -> u8 {
    let endpoint = match target {
        Target::Url { url, headers } => Endpoint::Url(HttpTarget {
            url: url.clone(),
            headers: headers.clone(),
            auth: None,
        }),
        Target::Command(argv) => Endpoint::Stdio(StdioCommand::new(
            argv[0].clone(),
            argv[1..].iter().cloned(),
        )),
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut options = options.clone();
    options.handler = Arc::new(Unattended { cwd });
    let client = match Client::connect("probe", &endpoint, options) {
        Ok(c) => c,
        Err(e) => {
            if as_json {
                println!(
                    "{}",
                    json!({"server": null, "protocolVersion": null, "tools": [], "calls": [], "error": e.to_string()})
                );
            } else {
                println!("connect: FAILED: {e}");
            }
            return 1;
        }
    };
    let info = &client.initialize_result().server_info;
    let tools = match client.list_tools() {
        Ok(t) => t,
        Err(e) => {
            println!("tools/list: FAILED: {e}");
            client.close();
            return 1;
        }
    };
    if !as_json {
        println!(
            "server: {} {} (protocol {}, {})",
            info.name,
            info.version,
            client.protocol_version(),
            client.transport_kind()
        );
        println!("tools: {}", tools.len());
    }
    let calls = call_all(&client, &tools, call_timeout);
    let failed = calls.iter().any(|c| !c["ok"].as_bool().unwrap_or(false));
    if as_json {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        println!(
            "{}",
            json!({"server": info.name, "protocolVersion": client.protocol_version().as_str(),
                              "transport": client.transport_kind(), "tools": names, "calls": calls})
        );
    } else {
        for c in &calls {
            let verdict = match (c["ok"].as_bool(), c["isError"].as_bool()) {
                (Some(true), Some(true)) => "ok (the tool reported an error)".to_owned(),
                (Some(true), _) => "ok".to_owned(),
                _ => format!("FAILED: {}", c["error"].as_str().unwrap_or("")),
            };
            println!("  {:40} {verdict}", c["tool"].as_str().unwrap_or(""));
        }
        println!(
            "{}",
            if failed {
                "probe: protocol failures found"
            } else {
                "probe: every call completed"
            }
        );
    }
    client.close();
    u8::from(failed)
}

/// Calls every tool, all at once (one slow tool does not hold up the others).
fn call_all(client: &Client, tools: &[Tool], timeout: Duration) -> Vec<Value> {
    std::thread::scope(|s| {
        let handles: Vec<_> = tools
            .iter()
            .map(|tool| {
                s.spawn(move || {
                    let args = arguments_for(&tool.input_schema);
                    match client.call_tool(&tool.name, args, CallOptions::timeout(timeout)) {
                        Ok(r) => json!({"tool": tool.name, "ok": true, "isError": r.is_error(), "error": null}),
                        Err(e) => json!({"tool": tool.name, "ok": false, "isError": null, "error": e.to_string()}),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("probe call thread"))
            .collect()
    })
}
