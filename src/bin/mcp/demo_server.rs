//! The demo MCP servers the CLI embeds: `mcp --demo-server fast|slow` turns the binary into a
//! small stdio server, so the demo needs nothing installed.
//!
//! `fast` answers at once (tools `greet`, `add`); `slow` takes a while to start, like a server
//! fetched by `npx` on first use (tools `weather`, `countdown` with progress); `docs` offers
//! resources, a resource template, a prompt with completions, log messages and instructions
//! (tool `note`, which logs what it is given).

use std::io::{BufRead, Write};
use std::time::Duration;

use serde_json::{json, Value};

/// How long the slow server takes to answer `initialize`.
pub const SLOW_START: Duration = Duration::from_millis(800);

/// Runs the demo server `kind` on stdin/stdout until stdin closes.
pub fn run(kind: &str) -> i32 {
    let tools = match kind {
        "fast" => json!([
            {"name": "greet", "description": "Greets someone by name",
             "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "default": "world"}}}},
            {"name": "add", "description": "Adds two numbers",
             "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}
        ]),
        "slow" => json!([
            {"name": "weather", "description": "Today's (made-up) weather for a city",
             "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "default": "Rome"}}}},
            {"name": "countdown", "description": "Counts down from n, reporting progress",
             "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}}
        ]),
        "docs" => json!([
            {"name": "note", "description": "Logs a note (a notifications/message at level info)",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
        ]),
        other => {
            eprintln!("unknown demo server {other:?}");
            return 2;
        }
    };
    let stdout = std::io::stdout();
    let send = |msg: Value| {
        let mut out = stdout.lock();
        let _ = writeln!(out, "{msg}");
        let _ = out.flush();
    };
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) else {
            continue;
        };
        let params = &msg["params"];
        if kind == "docs" {
            if let Some(result) = docs(method, params, &send) {
                send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
                continue;
            }
        }
        let result = match method {
            "initialize" => {
                if kind == "slow" {
                    std::thread::sleep(SLOW_START);
                }
                let mut init = json!({"protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-11-25"),
                       "capabilities": {"tools": {}},
                       "serverInfo": {"name": format!("demo-{kind}"), "version": env!("CARGO_PKG_VERSION")}});
                if kind == "docs" {
                    init["capabilities"] = json!({"tools": {}, "resources": {}, "prompts": {},
                                                  "completions": {}, "logging": {}});
                    init["instructions"] =
                        json!("Demo documentation server: read docs://readme first.");
                }
                init
            }
            "tools/call" if params["name"] == "note" => {
                let text = params["arguments"]["text"].as_str().unwrap_or("");
                send(json!({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "logger": "notes", "data": text}}));
                json!({"content": [{"type": "text", "text": "noted"}]})
            }
            "ping" => json!({}),
            "tools/list" => json!({"tools": tools}),
            "tools/call" => call(params, &|p| {
                send(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": p}))
            }),
            _ => {
                send(
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Method not found: {method}")}}),
                );
                continue;
            }
        };
        send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
    0
}

fn call(params: &Value, progress: &dyn Fn(Value)) -> Value {
    let args = &params["arguments"];
    let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
    match params["name"].as_str().unwrap_or("") {
        "greet" => text(format!(
            "Hello, {}!",
            args["name"].as_str().unwrap_or("world")
        )),
        "add" => match (args["a"].as_f64(), args["b"].as_f64()) {
            (Some(a), Some(b)) => text(format!("{}", a + b)),
            _ => {
                json!({"content": [{"type": "text", "text": "a and b must be numbers"}], "isError": true})
            }
        },
        "weather" => {
            let city = args["city"].as_str().unwrap_or("Rome");
            json!({"content": [{"type": "text", "text": format!("{city}: sunny, 24°C")}],
                   "structuredContent": {"city": city, "conditions": "sunny", "celsius": 24}})
        }
        "countdown" => {
            let n = args["n"].as_u64().unwrap_or(3).min(100);
            if let Some(token) = params.pointer("/_meta/progressToken") {
                for i in 1..=n {
                    progress(
                        json!({"progressToken": token, "progress": i, "total": n, "message": format!("{} left", n - i)}),
                    );
                }
            }
            text("Liftoff!".into())
        }
        other => {
            json!({"content": [{"type": "text", "text": format!("Unknown tool: {other}")}], "isError": true})
        }
    }
}

/// The `docs` server's resources, template, prompt, completions and log level.
fn docs(method: &str, params: &Value, send: &dyn Fn(Value)) -> Option<Value> {
    const TOPICS: [&str; 4] = ["install", "invoke", "introduction", "usage"];
    Some(match method {
        "resources/list" => json!({"resources": [
            {"uri": "docs://readme", "name": "readme", "mimeType": "text/markdown"},
            {"uri": "docs://logo", "name": "logo", "mimeType": "image/png"}
        ]}),
        "resources/templates/list" => json!({"resourceTemplates": [
            {"uriTemplate": "docs://topic/{topic}", "name": "topic", "description": "One topic"}
        ]}),
        "resources/read" => {
            let uri = params["uri"].as_str().unwrap_or("");
            match uri {
                "docs://logo" => {
                    json!({"contents": [{"uri": uri, "mimeType": "image/png", "blob": "iVBORw0KGgo="}]})
                }
                "docs://readme" => {
                    json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": "# Demo docs\nTopics: install, invoke, introduction, usage."}]})
                }
                _ => match uri.strip_prefix("docs://topic/") {
                    Some(topic) => json!({"contents": [{"uri": uri, "mimeType": "text/plain",
                                                         "text": format!("All about {topic}.")}]}),
                    None => return None,
                },
            }
        }
        "prompts/list" => json!({"prompts": [
            {"name": "explain", "description": "Explains a topic",
             "arguments": [{"name": "topic", "required": true}]}
        ]}),
        "prompts/get" => {
            let topic = params["arguments"]["topic"].as_str().unwrap_or("usage");
            json!({"messages": [{"role": "user", "content": {"type": "text",
                   "text": format!("Explain {topic} in two sentences.")}}]})
        }
        "completion/complete" => {
            let typed = params["argument"]["value"].as_str().unwrap_or("");
            let values: Vec<&str> = TOPICS
                .into_iter()
                .filter(|t| t.starts_with(typed))
                .collect();
            json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
        }
        "logging/setLevel" => {
            let level = params["level"].as_str().unwrap_or("info");
            send(json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": level, "logger": "docs", "data": format!("log level set to {level}")}}));
            json!({})
        }
        _ => return None,
    })
}
