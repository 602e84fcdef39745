//! Tools that run as tasks (2025-11-25): a tool whose `execution.taskSupport` is `"required"`,
//! on a server that declares `tasks.requests.tools.call`, is called with `params.task`; the
//! server answers at once with a task, which is polled with `tasks/get` (at the server's
//! `pollInterval`) until it is done or needs input, and its result is fetched with
//! `tasks/result` (server requests such as elicitation are answered meanwhile, as for any
//! call). The host sees one blocking call: its timeout and cancel bound the whole task, status
//! messages arrive as progress, and a call that ends early cancels the task (`tasks/cancel`).
//! `"optional"` tools are called the ordinary way.

use std::time::{Duration, Instant};

use crossbeam_channel::select;
use serde_json::{json, Value};

use super::{CallOptions, Client};
use crate::error::Error;
use crate::protocol::{methods, CallToolResult, Progress, ServerCapabilities, Tool};

/// The shortest and longest wait between two `tasks/get` polls.
const MIN_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(5);
/// The poll interval when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
/// How long a `tasks/cancel` for a call that ended may take.
const CANCEL_BOUND: Duration = Duration::from_secs(2);

/// Whether a tool definition says it must be called as a task.
pub(crate) fn requires_task(tool: &Tool) -> bool {
    tool.extra
        .get("execution")
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
        == Some("required")
}

/// Whether a server with `caps` runs tool calls as tasks on request.
pub(crate) fn runs_tool_tasks(caps: &ServerCapabilities) -> bool {
    caps.extra
        .get("tasks")
        .and_then(|t| t.get("requests"))
        .and_then(|r| r.get("tools"))
        .and_then(|t| t.get("call"))
        .is_some()
}

impl Client {
    /// Whether the server runs tool calls as tasks on request.
    pub(crate) fn server_runs_tool_tasks(&self) -> bool {
        self.inner.session.runs_tool_tasks()
    }

    /// Calls `name` as a task (see the module docs).
    pub(crate) fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        mut options: CallOptions<'_>,
    ) -> Result<CallToolResult, Error> {
        let timeout = crate::cancel::capped(options.timeout.unwrap_or(self.inner.request_timeout));
        let deadline = Instant::now() + timeout;
        let timed_out = || Error::Timeout {
            method: methods::TOOLS_CALL.to_owned(),
            after: timeout,
        };
        let left = || deadline.saturating_duration_since(Instant::now());
        let bounded = |options: &CallOptions<'_>| CallOptions {
            timeout: Some(left()),
            cancel: options.cancel.clone(),
            on_progress: None,
        };
        let params = json!({
            "name": name,
            "arguments": arguments,
            "task": {"ttl": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)},
        });
        let created = self.request(methods::TOOLS_CALL, Some(params), bounded(&options))?;
        let Some(mut task) = created.get("task").cloned() else {
            // The server ran it the ordinary way after all.
            return parse_result(created);
        };
        let task_id = task
            .get("taskId")
            .cloned()
            .ok_or_else(|| Error::protocol("a task without a taskId"))?;
        let mut rounds = 0.0;
        let outcome = loop {
            let status = task
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("working");
            if let Some(report) = options.on_progress.as_mut() {
                rounds += 1.0;
                report(&Progress {
                    progress_token: task_id.clone(),
                    progress: rounds,
                    total: None,
                    message: task
                        .get("statusMessage")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .or_else(|| Some(status.to_owned())),
                });
            }
            if matches!(
                status,
                "completed" | "failed" | "cancelled" | "input_required"
            ) {
                break self.request(
                    methods::TASKS_RESULT,
                    Some(json!({ "taskId": task_id })),
                    bounded(&options),
                );
            }
            let poll = task
                .get("pollInterval")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_POLL, Duration::from_millis)
                .clamp(MIN_POLL, MAX_POLL);
            if left().is_zero() {
                break Err(timed_out());
            }
            let never = crossbeam_channel::never();
            let cancelled = options
                .cancel
                .as_ref()
                .map(|c| c.receiver())
                .unwrap_or(&never);
            select! {
                recv(cancelled) -> _ => break Err(Error::Cancelled),
                default(poll.min(left())) => {}
            }
            match self.request(
                methods::TASKS_GET,
                Some(json!({ "taskId": task_id })),
                bounded(&options),
            ) {
                Ok(next) => task = next,
                Err(e) => break Err(e),
            }
        };
        match outcome {
            Ok(result) => parse_result(result),
            Err(e) => {
                if matches!(e, Error::Timeout { .. } | Error::Cancelled) {
                    let _ = self.request(
                        methods::TASKS_CANCEL,
                        Some(json!({ "taskId": task_id })),
                        CallOptions::timeout(CANCEL_BOUND),
                    );
                }
                Err(match e {
                    Error::Timeout { .. } => timed_out(),
                    other => other,
                })
            }
        }
    }
}

fn parse_result(value: Value) -> Result<CallToolResult, Error> {
    CallToolResult::from_value(value)
        .map_err(|e| Error::protocol(format!("invalid {} result: {e}", methods::TOOLS_CALL)))
}
