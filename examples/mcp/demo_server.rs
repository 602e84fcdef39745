//! The demo MCP servers the CLI embeds: `mcp --demo-server fast|slow` turns the binary into a
//! small stdio server, so the demo needs nothing installed.
//!
//! `fast` answers at once (tools `greet`, `add`); `slow` takes a while to start, like a server
//! fetched by `npx` on first use (tools `weather`, `countdown` with progress).

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
        let result = match method {
            "initialize" => {
                if kind == "slow" {
                    std::thread::sleep(SLOW_START);
                }
                json!({"protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-11-25"),
                       "capabilities": {"tools": {}},
                       "serverInfo": {"name": format!("demo-{kind}"), "version": env!("CARGO_PKG_VERSION")}})
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
