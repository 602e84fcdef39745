//! The tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`, 2026-07-28): a server that
//! both sides declared it to may answer `tools/call` with a task (`resultType: "task"`, a flat
//! task: `taskId`, `status`, `pollIntervalMs`, ...) instead of the result. The call follows it:
//! `tasks/get` at the server's interval (the result comes inline once `completed`, the error
//! once `failed`); the requests a task waits on (`input_required`: `inputRequests`, keyed) are
//! answered through the host's handler, each key once, and sent with `tasks/update` (at most
//! `MAX_INPUT_ROUNDS` times); a call that gives up on its task (its timeout, its cancel, a
//! failure of its own) sends `tasks/cancel` and does not wait for it, and none of the task's
//! requests is ever cancelled with `notifications/cancelled`. A new status or status message
//! arrives as progress and, for a caller that follows progress, keeps the call alive as
//! progress does (up to `max_request_timeout`). A missing or unknown status is a protocol
//! error. No `params.task` is sent and neither `tasks/result` nor `tasks/list` exist here
//! (they are 2025-11-25's: `client::tasks`).

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
/// How long a `tasks/cancel` sent for a call that ended may take (on a thread of its own: the
/// call does not wait for it).
const CANCEL_BOUND: Duration = Duration::from_secs(2);

/// The whole call's bounds, kept across its requests.
pub(super) struct Bounds {
    timeout: Duration,
    deadline: Instant,
    /// How far news of the task may push `deadline` (as progress pushes a call's): the
    /// connection's `max_request_timeout` when the caller follows progress, else `deadline`.
    furthest: Instant,
    cancel: Option<CancelToken>,
}

impl Bounds {
    /// A call's bounds, from its options, taken when it starts.
    pub(super) fn of(client: &Client, options: &CallOptions<'_>) -> Bounds {
        let now = Instant::now();
        let timeout =
            crate::cancel::capped(options.timeout.unwrap_or(client.inner.request_timeout));
        let furthest = if options.on_progress.is_some() {
            now + client.inner.max_request_timeout.max(timeout)
        } else {
            now + timeout
        };
        Bounds {
            timeout,
            deadline: now + timeout,
            furthest,
            cancel: options.cancel.clone(),
        }
    }

    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// How a followed task ended, for whether it must be cancelled.
enum Ended {
    /// The server said it is over (completed, failed, cancelled).
    ByServer(Result<CallToolResult, Error>),
    /// The call gave up on it (its deadline, its cancel, a failure of ours).
    ByUs(Error),
}

impl Client {
    /// Whether a `tools/call` result may be a task, so is worth looking at: always from a
    /// 2026-07-28 server (whose results all say their `resultType`, read anyway), and from a
    /// handshake-era one when the client declared the extension.
    pub(super) fn may_answer_with_a_task(&self) -> bool {
        matches!(self.inner.era, SessionEra::Stateless(_)) || self.declares_tasks()
    }

    fn declares_tasks(&self) -> bool {
        self.inner
            .conn
            .declared
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
        mut bounds: Bounds,
        on_progress: &mut Option<ProgressFn<'_>>,
    ) -> Result<CallToolResult, Error> {
        if !self.declares_tasks() {
            return Err(Error::protocol(
                "the server answered with a task, which this client did not ask for \
                 (the tasks extension is not declared)",
            ));
        }
        let task_id = created
            .get("taskId")
            .filter(|id| id.is_string())
            .cloned()
            .ok_or_else(|| Error::protocol("a task without a taskId (a string)"))?;
        let timeout = bounds.timeout;
        match self.follow(&task_id, created, &mut bounds, on_progress) {
            Ended::ByServer(outcome) => outcome,
            Ended::ByUs(e) => {
                if !matches!(e, Error::TransportClosed { .. }) {
                    // Cooperative: the task may go on; the call does not wait to see.
                    let client = self.clone();
                    let params = json!({ "taskId": task_id });
                    // A panic here is logged: the cancellation is a courtesy.
                    let _ = crate::panic::spawn(
                        "mcp-task-cancel".into(),
                        crate::panic::Boundary::CancelSend,
                        move || {
                            let _ = client.request_raw_with(
                                methods::TASKS_CANCEL,
                                Some(params),
                                CallOptions::timeout(CANCEL_BOUND),
                                false,
                            );
                        },
                        |_| {},
                    );
                }
                Err(match e {
                    Error::Timeout { .. } => Error::Timeout {
                        method: methods::TOOLS_CALL.to_owned(),
                        after: timeout,
                    },
                    other => other,
                })
            }
        }
    }

    fn follow(
        &self,
        task_id: &Value,
        created: Value,
        bounds: &mut Bounds,
        on_progress: &mut Option<ProgressFn<'_>>,
    ) -> Ended {
        let step = |bounds: &Bounds, method: &str, params: Value| -> Result<Value, Error> {
            let raw = self.request_raw_with(
                method,
                Some(params),
                CallOptions {
                    timeout: Some(bounds.left()),
                    cancel: bounds.cancel.clone(),
                    on_progress: None,
                },
                false,
            )?;
            super::parse_result(method, &raw)
        };
        let get = |bounds: &Bounds| step(bounds, methods::TASKS_GET, json!({ "taskId": task_id }));
        let mut task = created;
        let mut seen: Option<(String, Option<String>)> = None;
        let mut reports = 0.0;
        let mut answered: HashSet<String> = HashSet::new();
        let mut input_rounds = 0;
        let mut fetched_again = false;
        loop {
            let Some(status) = task
                .get("status")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return Ended::ByUs(Error::protocol("a task without a status"));
            };
            let message = task
                .get("statusMessage")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let news = (status.clone(), message.clone());
            if seen.as_ref() != Some(&news) {
                if seen.is_some() && on_progress.is_some() {
                    // News of the task keeps the call alive, as progress does (bounded).
                    bounds.deadline = (Instant::now() + bounds.timeout).min(bounds.furthest);
                }
                seen = Some(news);
                if let (Some(report), "working" | "input_required") =
                    (on_progress.as_mut(), status.as_str())
                {
                    reports += 1.0;
                    report(&Progress {
                        progress_token: task_id.clone(),
                        progress: reports,
                        total: None,
                        message: message.or_else(|| Some(status.clone())),
                    });
                }
            }
            match status.as_str() {
                "completed" | "failed"
                    if !fetched_again
                        && task.get("result").is_none()
                        && task.get("error").is_none() =>
                {
                    // Over already when it was created: its outcome comes with tasks/get.
                    fetched_again = true;
                    match get(bounds) {
                        Ok(next) => {
                            task = next;
                            continue;
                        }
                        Err(e) => return Ended::ByUs(e),
                    }
                }
                "completed" => {
                    return Ended::ByServer(match task.get_mut("result").map(Value::take) {
                        Some(result) => CallToolResult::from_value(result)
                            .map_err(|e| Error::protocol(format!("invalid task result: {e}"))),
                        None => Err(Error::protocol("a completed task without its result")),
                    })
                }
                "failed" => return Ended::ByServer(Err(task_failure(&task))),
                "cancelled" => {
                    return Ended::ByServer(Err(Error::protocol(format!(
                        "the server cancelled the task{}",
                        task.get("statusMessage")
                            .and_then(Value::as_str)
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    ))))
                }
                "input_required" => {
                    let responses = match self.task_input(&task, &mut answered, bounds) {
                        Ok(responses) => responses,
                        Err(e) => return Ended::ByUs(e),
                    };
                    if let Some(responses) = responses {
                        input_rounds += 1;
                        if input_rounds > super::MAX_INPUT_ROUNDS {
                            return Ended::ByUs(Error::protocol(format!(
                                "the task still asked for input after {} rounds",
                                super::MAX_INPUT_ROUNDS
                            )));
                        }
                        let update = json!({"taskId": task_id, "inputResponses": responses});
                        if let Err(e) = step(bounds, methods::TASKS_UPDATE, update) {
                            return Ended::ByUs(e);
                        }
                        // The answers change the task now: look again at once.
                        match get(bounds) {
                            Ok(next) => {
                                task = next;
                                continue;
                            }
                            Err(e) => return Ended::ByUs(e),
                        }
                    }
                }
                "working" => {}
                other => {
                    return Ended::ByUs(Error::protocol(format!(
                        "a task in an unknown status {other:?}"
                    )))
                }
            }
            let poll = task
                .get("pollIntervalMs")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_POLL, Duration::from_millis)
                .clamp(MIN_POLL, MAX_POLL);
            if bounds.left().is_zero() {
                return Ended::ByUs(Error::Timeout {
                    method: methods::TOOLS_CALL.to_owned(),
                    after: bounds.timeout,
                });
            }
            let never = crossbeam_channel::never();
            let cancelled = bounds
                .cancel
                .as_ref()
                .map(CancelToken::receiver)
                .unwrap_or(&never);
            select! {
                recv(cancelled) -> _ => return Ended::ByUs(Error::Cancelled),
                default(poll.min(bounds.left())) => {}
            }
            match get(bounds) {
                Ok(next) => task = next,
                Err(e) => return Ended::ByUs(e),
            }
        }
    }

    /// The answers to the task's `inputRequests` not answered before (each key once, for the
    /// task's life), through the host's handler; `None` when every key was answered already.
    fn task_input(
        &self,
        task: &Value,
        answered: &mut HashSet<String>,
        bounds: &Bounds,
    ) -> Result<Option<Map<String, Value>>, Error> {
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
        let conn = &self.inner.conn;
        let extra = super::era::answer_input(
            &conn.handler,
            &conn.declared,
            conn,
            methods::TOOLS_CALL,
            &json!({ "inputRequests": fresh }),
            bounds.deadline,
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
