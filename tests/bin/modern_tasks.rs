//! The tasks extension (SEP-2663) for the 2026-07-28 test server (`--tasks`): tools that the
//! server runs as tasks when the request declares the extension (`-32021` when it does not),
//! and `tasks/get`, `tasks/update`, `tasks/cancel`.
//!
//! Tools: task_slow (working for two polls, then completed), task_input (input_required with
//! an `elicitation/create` keyed `confirm`, completed with what was answered), task_fail
//! (failed with a JSON-RPC error), task_endless (working until cancelled).

use std::collections::HashMap;

use serde_json::{json, Value};

pub const TASKS: &str = "io.modelcontextprotocol/tasks";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

pub const TOOLS: [&str; 4] = ["task_slow", "task_input", "task_fail", "task_endless"];

struct Task {
    tool: String,
    polls: u32,
    answer: Option<Value>,
    cancelled: bool,
}

#[derive(Default)]
pub struct Tasks {
    tasks: HashMap<String, Task>,
    next: u32,
}

/// What the server sends back: a result, or an error (code, message, data).
pub enum Reply {
    Result(Value),
    Error(i64, String, Option<Value>),
}

fn declared(params: &Value) -> bool {
    params["_meta"][CAPS]["extensions"].get(TASKS).is_some()
}

impl Tasks {
    /// A `tools/call` of one of [`TOOLS`].
    pub fn call(&mut self, name: &str, params: &Value) -> Reply {
        if !declared(params) {
            let data = json!({"requiredCapabilities": {"extensions": {TASKS: {}}}});
            return Reply::Error(
                -32021,
                "Missing required client capability".into(),
                Some(data),
            );
        }
        self.next += 1;
        let id = format!("task-{}", self.next);
        self.tasks.insert(
            id.clone(),
            Task {
                tool: name.to_owned(),
                polls: 0,
                answer: None,
                cancelled: false,
            },
        );
        let mut task = self.view(&id);
        task["resultType"] = json!("task");
        Reply::Result(task)
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`; `None` for another method.
    pub fn handle(&mut self, method: &str, params: &Value) -> Option<Reply> {
        if !matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel") {
            return None;
        }
        let id = params["taskId"].as_str().unwrap_or("").to_owned();
        let Some(task) = self.tasks.get_mut(&id) else {
            return Some(Reply::Error(-32602, format!("Unknown task: {id}"), None));
        };
        Some(match method {
            "tasks/get" => {
                task.polls += 1;
                let mut view = self.view(&id);
                view["resultType"] = json!("complete");
                Reply::Result(view)
            }
            "tasks/update" => {
                task.answer = params["inputResponses"].get("confirm").cloned();
                Reply::Result(json!({"resultType": "complete"}))
            }
            _ => {
                task.cancelled = true;
                Reply::Result(json!({"resultType": "complete"}))
            }
        })
    }

    /// The task as `tasks/get` shows it.
    fn view(&self, id: &str) -> Value {
        let task = &self.tasks[id];
        let mut view = json!({"taskId": id, "createdAt": "2026-12-01T00:00:00Z",
            "lastUpdatedAt": "2026-12-01T00:00:00Z", "ttlMs": null, "pollIntervalMs": 20});
        let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
        let (status, extra) = if task.cancelled {
            ("cancelled", json!({}))
        } else {
            match (task.tool.as_str(), task.polls) {
                (_, 0) => ("working", json!({"statusMessage": "started"})),
                ("task_slow", 1 | 2) => (
                    "working",
                    json!({"statusMessage": format!("step {}", task.polls)}),
                ),
                ("task_slow", n) => (
                    "completed",
                    json!({"result": text(format!("slow done after {n} polls"))}),
                ),
                ("task_input", _) => match &task.answer {
                    None => (
                        "input_required",
                        json!({"inputRequests": {"confirm": {"method": "elicitation/create",
                            "params": {"message": "Delete it?", "requestedSchema": {"type": "object",
                                "properties": {"ok": {"type": "boolean"}}}}}}}),
                    ),
                    Some(answer) => (
                        "completed",
                        json!({"result": text(format!("confirmed: {} {}", answer["action"].as_str().unwrap_or("?"), answer["content"]))}),
                    ),
                },
                ("task_fail", _) => (
                    "failed",
                    json!({"error": {"code": -32000, "message": "the disk is full"}}),
                ),
                _ => ("working", json!({"statusMessage": "still going"})),
            }
        };
        view["status"] = json!(status);
        if let Value::Object(extra) = extra {
            view.as_object_mut().unwrap().extend(extra);
        }
        view
    }
}
