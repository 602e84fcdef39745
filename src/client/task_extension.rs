//! The tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`, 2026-07-28): a server that
//! both sides declared it to may answer `tools/call` with a task (`resultType: "task"`, a flat
//! task: `taskId`, `status`, `pollIntervalMs`, ...) instead of the result. The call follows it:
//! `tasks/get` at the server's interval (the result comes inline once `completed`, the error
//! once `failed`); the requests a task waits on (`input_required`: `inputRequests`, keyed) are
//! answered through the host's handler, each key once, and sent with `tasks/update`; a call
//! that ends early (its timeout, its cancel) sends `tasks/cancel` and does not wait for the
//! task to stop. Status messages arrive as progress. No `params.task` is sent and neither
//! `tasks/result` nor `tasks/list` exist here (they are 2025-11-25's: `client::tasks`).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crossbeam_channel::select;
use serde_json::{json, Map, Value};

use super::{CallOptions, Client, ProgressFn, SessionEra};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::protocol::{methods, CallToolResult, Progress, TASKS_EXTENSION};

/// The shortest and longest wait between two `tasks/get` polls.
const MIN_POLL: Duration = Duration::from_millis(20);
const MAX_POLL: Duration = Duration::from_secs(5);
/// The poll interval when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
/// How long a `tasks/cancel` for a call that ended may take.
const CANCEL_BOUND: Duration = Duration::from_secs(2);

/// The whole call's bounds, kept across its requests.
pub(super) struct Bounds {
    pub(super) timeout: Duration,
    pub(super) deadline: Instant,
    pub(super) cancel: Option<CancelToken>,
}

impl Client {
    /// Whether a `tools/call` result may be a task: always from a 2026-07-28 server (whose
    /// results all say their `resultType`, read anyway), and from a handshake-era one when
    /// both sides declared the extension (else its results are not looked at twice).
    pub(super) fn may_answer_with_tasks(&self) -> bool {
        if matches!(self.inner.era, SessionEra::Stateless(_)) {
            return true;
        }
        let ours = self.inner.conn.router.declared().extra.get("extensions");
        ours.and_then(|e| e.get(TASKS_EXTENSION)).is_some()
            && self
                .initialize_result()
                .capabilities
                .extra
                .get("extensions")
                .and_then(|e| e.get(TASKS_EXTENSION))
                .is_some()
    }

    /// Follows the task `created` (a `tools/call` result with `resultType: "task"`) to its end
    /// (see the module docs).
    pub(super) fn follow_task(
        &self,
        created: Value,
        bounds: Bounds,
        on_progress: &mut Option<ProgressFn<'_>>,
    ) -> Result<CallToolResult, Error> {
        let task_id = created
            .get("taskId")
            .filter(|id| id.is_string())
            .cloned()
            .ok_or_else(|| Error::protocol("a task without a taskId (a string)"))?;
        let left = || bounds.deadline.saturating_duration_since(Instant::now());
        let timed_out = || Error::Timeout {
            method: methods::TOOLS_CALL.to_owned(),
            after: bounds.timeout,
        };
        let step = |method: &str, params: Value| {
            self.request(
                method,
                Some(params),
                CallOptions {
                    timeout: Some(left()),
                    cancel: bounds.cancel.clone(),
                    on_progress: None,
                },
            )
        };
        let mut answered: HashSet<String> = HashSet::new();
        let mut task = created;
        let mut rounds = 0.0;
        let outcome = loop {
            let status = task
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("working")
                .to_owned();
            if let Some(report) = on_progress.as_mut() {
                rounds += 1.0;
                report(&Progress {
                    progress_token: task_id.clone(),
                    progress: rounds,
                    total: None,
                    message: task
                        .get("statusMessage")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .or_else(|| Some(status.clone())),
                });
            }
            match status.as_str() {
                "completed" => {
                    break match task.get("result") {
                        Some(result) => CallToolResult::from_value(result.clone())
                            .map_err(|e| Error::protocol(format!("invalid task result: {e}"))),
                        None => Err(Error::protocol("a completed task without its result")),
                    }
                }
                "failed" => break Err(task_failure(&task)),
                "cancelled" => {
                    break Err(Error::protocol(format!(
                        "the server cancelled the task{}",
                        task.get("statusMessage")
                            .and_then(Value::as_str)
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    )))
                }
                "input_required" => {
                    match self.task_input(&task, &mut answered, bounds.deadline, &bounds) {
                        Ok(Some(responses)) => {
                            let update = json!({"taskId": task_id, "inputResponses": responses});
                            if let Err(e) = step(methods::TASKS_UPDATE, update) {
                                break Err(e);
                            }
                            // The answers change the task now: look again at once.
                            match step(methods::TASKS_GET, json!({ "taskId": task_id })) {
                                Ok(next) => {
                                    task = next;
                                    continue;
                                }
                                Err(e) => break Err(e),
                            }
                        }
                        Ok(None) => {}
                        Err(e) => break Err(e),
                    }
                }
                _ => {}
            }
            let poll = task
                .get("pollIntervalMs")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_POLL, Duration::from_millis)
                .clamp(MIN_POLL, MAX_POLL);
            if left().is_zero() {
                break Err(timed_out());
            }
            let never = crossbeam_channel::never();
            let cancelled = bounds
                .cancel
                .as_ref()
                .map(CancelToken::receiver)
                .unwrap_or(&never);
            select! {
                recv(cancelled) -> _ => break Err(Error::Cancelled),
                default(poll.min(left())) => {}
            }
            match step(methods::TASKS_GET, json!({ "taskId": task_id })) {
                Ok(next) => task = next,
                Err(e) => break Err(e),
            }
        };
        if let Err(e) = &outcome {
            if matches!(e, Error::Timeout { .. } | Error::Cancelled) {
                // Cooperative: the task may go on; the call does not wait to see.
                let _ = self.request(
                    methods::TASKS_CANCEL,
                    Some(json!({ "taskId": task_id })),
                    CallOptions::timeout(CANCEL_BOUND),
                );
            }
        }
        outcome.map_err(|e| match e {
            Error::Timeout { .. } => timed_out(),
            other => other,
        })
    }

    /// The answers to the task's `inputRequests` not answered before (each key once, for the
    /// task's life), through the host's handler; `None` when every key was answered already.
    fn task_input(
        &self,
        task: &Value,
        answered: &mut HashSet<String>,
        deadline: Instant,
        bounds: &Bounds,
    ) -> Result<Option<Map<String, Value>>, Error> {
        let SessionEra::Stateless(session) = &self.inner.era else {
            return Err(Error::protocol(
                "a task asked for input outside the 2026-07-28 era (whose input rounds it uses)",
            ));
        };
        let asked = match task.get("inputRequests") {
            Some(Value::Object(asked)) => asked,
            None | Some(Value::Null) => return Ok(None),
            Some(_) => return Err(Error::protocol("a task's inputRequests is not an object")),
        };
        let fresh: Map<String, Value> = asked
            .iter()
            .filter(|(key, _)| !answered.contains(*key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(None);
        }
        let extra = session.answer(
            &self.inner.conn,
            methods::TOOLS_CALL,
            &json!({ "inputRequests": fresh }),
            deadline,
            bounds.cancel.as_ref(),
        )?;
        answered.extend(fresh.keys().cloned());
        match extra.get("inputResponses") {
            Some(Value::Object(responses)) => Ok(Some(responses.clone())),
            _ => Ok(None),
        }
    }
}

/// A failed task's error (a JSON-RPC error object), as the call's.
fn task_failure(task: &Value) -> Error {
    let error = task.get("error");
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64)
        .unwrap_or(crate::jsonrpc::codes::INTERNAL_ERROR);
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or_else(|| task.get("statusMessage").and_then(Value::as_str))
        .unwrap_or("the task failed")
        .to_owned();
    Error::Rpc {
        code,
        message,
        data: error.and_then(|e| e.get("data")).cloned(),
    }
}
