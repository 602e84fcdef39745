//! The test server's resources, templates, prompts, completions and log level (`--features`).

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::Server;

/// The capabilities `--features` adds.
pub fn capabilities(caps: &mut Value) {
    caps["resources"] = json!({"subscribe": true, "listChanged": true});
    caps["prompts"] = json!({"listChanged": true});
    caps["completions"] = json!({});
}

/// Answers a features request; false when `method` is not one.
pub fn answer(server: &Server, method: &str, id: &Value, params: &Value) -> bool {
    let result = match method {
        // Two pages.
        "resources/list" => match params["cursor"].as_str() {
            None => {
                json!({"resources": [{"uri": "test://a", "name": "a", "mimeType": "text/plain"}],
                           "nextCursor": "page2"})
            }
            Some(_) => {
                json!({"resources": [{"uri": "test://b", "name": "b", "mimeType": "application/octet-stream"}]})
            }
        },
        "resources/templates/list" => {
            json!({"resourceTemplates": [{"uriTemplate": "test://item/{id}", "name": "item"}]})
        }
        "resources/read" => {
            let uri = params["uri"].as_str().unwrap_or("");
            if uri == "test://b" {
                json!({"contents": [{"uri": uri, "mimeType": "application/octet-stream", "blob": "AAEC"}]})
            } else {
                json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": format!("contents of {uri}")}]})
            }
        }
        "resources/subscribe" => {
            // Tell the subscriber at once that it changed.
            server.notify(
                "notifications/resources/updated",
                json!({"uri": params["uri"]}),
            );
            json!({})
        }
        "resources/unsubscribe" => json!({}),
        "logging/setLevel" => {
            // A message at the new level, so a client following the log sees one at once.
            server.notify(
                "notifications/message",
                json!({"level": params["level"], "logger": "features",
                       "data": format!("log level set to {}", params["level"].as_str().unwrap_or("?"))}),
            );
            json!({})
        }
        "prompts/list" => {
            let mut prompts = vec![json!({"name": "greet", "description": "Greets someone",
                                          "arguments": [{"name": "who", "required": true}]})];
            if server.extra_prompt.load(Ordering::SeqCst) {
                prompts.push(json!({"name": "late_prompt"}));
            }
            json!({ "prompts": prompts })
        }
        "prompts/get" => json!({"messages": [{"role": "user", "content": {"type": "text",
            "text": format!("Hello, {}!", params["arguments"]["who"].as_str().unwrap_or("you"))}}]}),
        "completion/complete" => {
            let typed = params["argument"]["value"].as_str().unwrap_or("");
            let values: Vec<&str> = ["alice", "alan", "bob"]
                .into_iter()
                .filter(|v| v.starts_with(typed))
                .collect();
            json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
        }
        _ => return false,
    };
    server.result(id, result);
    true
}
