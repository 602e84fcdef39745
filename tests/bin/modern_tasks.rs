//! The tasks extension (SEP-2663) for the 2026-07-28 test server (`--tasks`): tools that the
//! server runs as tasks when the request declares the extension (`-32021` when it does not),
//! and `tasks/get`, `tasks/update`, `tasks/cancel`.
//!
//! Tools: task_slow (working for two polls, then completed), task_input (input_required with
//! an `elicitation/create` keyed `confirm`, completed with what was answered), task_two
//! (asks `confirm`, then `confirm` again beside `again`: a key answered twice fails the task),
//! task_fail (failed with a JSON-RPC error), task_endless (working until cancelled),
//! task_weird (a status no one knows), task_instant (created already completed: its result
//! comes with `tasks/get`).

use std::collections::HashMap;

use serde_json::{json, Value};

pub const TASKS: &str = "io.modelcontextprotocol/tasks";

pub const TOOLS: [&str; 7] = [
    "task_slow",
    "task_input",
    "task_two",
    "task_fail",
    "task_endless",
    "task_weird",
    "task_instant",
];

struct Task {
    tool: String,
    polls: u32,
    answer: Option<Value>,
    again: Option<Value>,
    /// A key was answered twice.
    twice: bool,
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

impl Tasks {
    /// A `tools/call` of one of [`TOOLS`], from a client that `declared` the extension or not.
    pub fn call(&mut self, name: &str, declared: bool) -> Reply {
        if !declared {
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
                again: None,
                twice: false,
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
                let answers = &params["inputResponses"];
                if let Some(confirm) = answers.get("confirm") {
                    task.twice |= task.answer.is_some();
                    task.answer = Some(confirm.clone());
                }
                if let Some(again) = answers.get("again") {
                    task.twice |= task.again.is_some();
                    task.again = Some(again.clone());
                }
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
        let ask = |keys: &[&str]| {
            let mut asked = serde_json::Map::new();
            for key in keys {
                asked.insert((*key).to_owned(), json!({"method": "elicitation/create",
                    "params": {"message": format!("{key}?"), "requestedSchema": {"type": "object"}}}));
            }
            json!({"inputRequests": asked})
        };
        let (status, extra) = if task.cancelled {
            ("cancelled", json!({}))
        } else if task.twice {
            (
                "failed",
                json!({"error": {"code": -32000, "message": "a key was answered twice"}}),
            )
        } else {
            match (task.tool.as_str(), task.polls) {
                ("task_instant", 0) => ("completed", json!({})),
                ("task_instant", _) => ("completed", json!({"result": text("instant".into())})),
                ("task_weird", _) => ("pondering", json!({})),
                (_, 0) => ("working", json!({"statusMessage": "started"})),
                ("task_two", _) => match (&task.answer, &task.again) {
                    (None, _) => ("input_required", ask(&["confirm"])),
                    (Some(_), None) => ("input_required", ask(&["confirm", "again"])),
                    (Some(_), Some(_)) => {
                        ("completed", json!({"result": text("both answered".into())}))
                    }
                },
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
