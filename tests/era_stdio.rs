//! The era of a stdio server, found by the `server/discover` probe, and 2026-07-28 spoken over
//! it: per-request `_meta`, `resultType`, `input_required` rounds, the stateless errors.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::log_lines;

use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, ProtocolVersion};
use mcp_runtime::{
    CallOptions, CancelToken, Client, ClientHandler, ConnectOptions, Endpoint, EraChoice, Error,
};
use serde_json::{json, Value};

fn server() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        common::example_path("mcp-modern-server")
            .display()
            .to_string()
    })
}

fn log_path(test: &str) -> String {
    common::server_log(&format!("era-{test}"))
}

fn endpoint(args: &[&str]) -> Endpoint {
    Endpoint::stdio(server(), args.iter().copied())
}

fn connect_with(args: &[&str], options: ConnectOptions) -> Result<Client, Error> {
    Client::connect("era", &endpoint(args), options)
}

fn connect(args: &[&str]) -> Client {
    connect_with(args, common::options()).expect("connect")
}

#[test]
fn a_stateless_server_is_spoken_to_without_a_handshake() {
    let log = log_path("modern");
    let client = connect(&["--mode", "modern", "--log", &log]);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.protocol_version().as_str(), "2026-07-28");
    assert_eq!(client.server_info().name, "modern-test-server");
    assert_eq!(client.instructions().as_deref(), Some("Stateless."));
    let tools = client.list_tools().unwrap();
    assert_eq!(tools.len(), 7);
    let out = client.call_tool("echo", json!({"message": "hi"})).unwrap();
    assert_eq!(out.text(), "hi");
    let out = client.call_tool("meta", json!({})).unwrap();
    let meta = out.structured_content.unwrap();
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        "the tasks extension is declared by default"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "mcp-runtime"
    );
    client.close();
    let lines: Vec<String> = log_lines(&log)
        .into_iter()
        .filter(|l| l != "subscriptions/listen")
        .collect();
    assert_eq!(
        lines,
        [
            "start",
            "server/discover",
            "tools/list",
            "tools/call",
            "tools/call"
        ],
        "one process, no initialize"
    );
}

#[test]
fn a_progress_token_joins_the_meta() {
    let client = connect(&["--mode", "modern"]);
    let out = client
        .call_tool_with(
            "meta",
            json!({}),
            CallOptions::default().with_progress(|_| {}),
        )
        .unwrap();
    let meta = out.structured_content.unwrap();
    assert!(meta["progressToken"].is_i64(), "{meta}");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}

#[test]
fn a_log_level_travels_in_each_requests_meta() {
    let client = connect(&["--mode", "modern"]);
    client
        .set_log_level(mcp_runtime::protocol::LoggingLevel::Warning)
        .unwrap();
    let out = client.call_tool("meta", json!({})).unwrap();
    assert_eq!(
        out.structured_content.unwrap()["io.modelcontextprotocol/logLevel"],
        "warning"
    );
}

#[test]
fn a_dual_server_is_spoken_to_statelessly() {
    let log = log_path("dual");
    let client = connect(&["--mode", "dual", "--log", &log]);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    client.list_tools().unwrap();
    client.close();
    assert!(!log_lines(&log).contains(&"initialize".to_owned()));
}

#[test]
fn a_server_that_exits_on_the_probe_is_started_again_for_initialize() {
    let log = log_path("exit");
    let client = connect(&["--mode", "legacy-exit", "--log", &log]);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let out = client
        .call_tool("echo", json!({"message": "again"}))
        .unwrap();
    assert_eq!(out.text(), "again");
    client.close();
    assert_eq!(
        log_lines(&log),
        [
            "start",
            "server/discover",
            "start",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
}

#[test]
fn a_silent_server_gets_initialize_on_the_same_process_after_the_probe_timeout() {
    let log = log_path("silent");
    let options = ConnectOptions {
        probe_timeout: Duration::from_millis(300),
        ..common::options()
    };
    let started = Instant::now();
    let client = connect_with(&["--mode", "legacy-silent", "--log", &log], options).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    client.close();
    let lines = log_lines(&log);
    assert_eq!(lines[..3], ["start", "server/discover", "initialize"]);
}

/// A stateless server slow to start answers the probe after the probe gave up, and refuses the
/// `initialize` that followed with -32022: discovery again, then the stateless session.
#[test]
fn a_stateless_server_too_slow_for_the_probe_is_discovered_again_after_refusing_initialize() {
    let log = log_path("slow-start");
    let options = ConnectOptions {
        probe_timeout: Duration::from_millis(200),
        ..common::options()
    };
    let args = ["--mode", "modern", "--slow-start", "--log", &log];
    let client = connect_with(&args, options).unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let out = client
        .call_tool("echo", json!({"message": "late"}))
        .unwrap();
    assert_eq!(out.text(), "late");
    client.close();
    // The session's listen stream opens beside the call, before or after it.
    let lines: Vec<String> = log_lines(&log)
        .into_iter()
        .filter(|l| l != "subscriptions/listen")
        .collect();
    assert_eq!(
        lines[..lines.len().min(5)],
        [
            "start",
            "server/discover",
            "initialize",
            "server/discover",
            "tools/call"
        ]
    );
}

#[test]
fn the_handshake_era_test_server_answers_the_probe_with_an_error_and_keeps_its_process() {
    let client = common::connect("probe-legacy", &[]);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.list_tools().unwrap().len(), 17);
}

#[test]
fn no_common_version_fails_naming_the_servers_versions() {
    let err = connect_with(
        &["--mode", "modern", "--versions", "2099-01-01"],
        common::options(),
    )
    .unwrap_err();
    match &err {
        Error::UnsupportedProtocolVersion { received, .. } => {
            assert_eq!(received, "2099-01-01")
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("2099-01-01"), "{err}");
}

#[test]
fn a_common_handshake_version_named_by_unsupported_version_means_initialize_there() {
    let log = log_path("fallback");
    let client = connect(&["--mode", "dual", "--versions", "2099-01-01", "--log", &log]);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    client.close();
    assert_eq!(
        log_lines(&log)[..3],
        ["start", "server/discover", "initialize"]
    );
}

#[test]
fn a_handshake_only_choice_never_probes_and_a_stateless_only_choice_never_falls_back() {
    let options = ConnectOptions {
        era: EraChoice::Handshake,
        ..common::options()
    };
    // The refusal of `initialize` keeps the server's list of versions.
    let err = connect_with(&["--mode", "modern"], options).unwrap_err();
    match &err {
        Error::UnsupportedProtocolVersion { received, .. } => assert_eq!(received, "2026-07-28"),
        other => panic!("{other:?}"),
    }
    let options = ConnectOptions {
        era: EraChoice::Stateless,
        ..common::options()
    };
    let err = connect_with(&["--mode", "legacy-exit"], options).unwrap_err();
    assert!(
        matches!(err, Error::UnsupportedProtocolVersion { .. }),
        "{err:?}"
    );
}

/// A host that answers elicitations (and, when told to, blocks in them until released,
/// saying when it is in one).
struct Host {
    block: bool,
    entered: crossbeam_channel::Sender<()>,
    release: crossbeam_channel::Receiver<()>,
}

impl ClientHandler for Host {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }

    fn elicit(&self, _server: &str, params: Value) -> Result<Value, RpcError> {
        assert_eq!(params["message"], "Who?");
        if self.block {
            let _ = self.entered.send(());
            let _ = self.release.recv_timeout(Duration::from_secs(30));
        }
        Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
    }
}

/// The options, with a channel that says when the handler blocks and one that releases it.
fn blocking_host(
    block: bool,
) -> (
    ConnectOptions,
    crossbeam_channel::Receiver<()>,
    crossbeam_channel::Sender<()>,
) {
    let (entered, in_handler) = crossbeam_channel::unbounded();
    let (release, released) = crossbeam_channel::unbounded();
    let options = ConnectOptions {
        handler: Arc::new(Host {
            block,
            entered,
            release: released,
        }),
        ..common::options()
    };
    (options, in_handler, release)
}

fn with_host(block: bool) -> ConnectOptions {
    blocking_host(block).0
}

#[test]
fn input_required_is_answered_through_the_handler_and_retried_with_the_state() {
    let client = connect_with(&["--mode", "modern"], with_host(false)).unwrap();
    let out = client.call_tool("ask", json!({})).unwrap();
    assert_eq!(out.text(), "accept Ada state=s1");
    let out = client.call_tool("meta", json!({})).unwrap();
    assert_eq!(
        out.structured_content.unwrap()["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
        "the declared capabilities travel with each request"
    );
}

#[test]
fn a_state_only_round_is_retried_at_once_with_the_state_echoed() {
    let client = connect(&["--mode", "modern"]);
    let out = client.call_tool("state", json!({})).unwrap();
    assert_eq!(out.text(), "state opaque-42");
}

#[test]
fn input_for_an_undeclared_capability_fails_the_call() {
    let client = connect(&["--mode", "modern"]);
    let err = client.call_tool("ask", json!({})).unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("elicitation/create"), "{err}");
}

#[test]
fn endless_input_rounds_end_at_the_bound() {
    let client = connect(&["--mode", "modern"]);
    let err = client.call_tool("forever", json!({})).unwrap_err();
    assert!(err.to_string().contains("rounds"), "{err}");
}

#[test]
fn a_blocked_handler_does_not_outlive_the_callers_cancel_or_deadline() {
    let (options, in_handler, release) = blocking_host(true);
    let client = connect_with(&["--mode", "modern"], options).unwrap();
    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    // The cancel fires once the handler is blocked in the elicitation, not after a guess.
    std::thread::spawn(move || {
        if in_handler.recv_timeout(Duration::from_secs(20)).is_ok() {
            trigger.cancel();
        }
    });
    let started = Instant::now();
    let err = client
        .call_tool_with("ask", json!({}), CallOptions::default().with_cancel(cancel))
        .unwrap_err();
    assert_eq!(err, Error::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    let started = Instant::now();
    let err = client
        .call_tool_with(
            "ask",
            json!({}),
            CallOptions::timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Frees the handlers still blocked.
    drop(release);
}

#[test]
fn an_unknown_result_type_is_a_protocol_error() {
    let client = connect(&["--mode", "modern"]);
    let err = client.call_tool("bogus", json!({})).unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("mystery"), "{err}");
}

#[test]
fn a_missing_capability_is_named() {
    let client = connect(&["--mode", "modern"]);
    let err = client.call_tool("needs_roots", json!({})).unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32021));
    assert!(err.to_string().contains("roots"), "{err}");
}

/// A host that records the change notifications it is given, in order.
struct Recorder(std::sync::Mutex<Vec<String>>, std::sync::Condvar);

struct Recording(Arc<Recorder>);

impl ClientHandler for Recording {
    fn on_tools_list_changed(&self, _server: &str) {
        self.0 .0.lock().unwrap().push("tools_list_changed".into());
        self.0 .1.notify_all();
    }

    fn on_notification(&self, _server: &str, method: &str, _: Option<&Value>) {
        self.0 .0.lock().unwrap().push(method.to_owned());
        self.0 .1.notify_all();
    }
}

#[test]
fn change_notifications_come_over_subscriptions_listen_and_only_ours_count() {
    let log = log_path("listen");
    let recorder = Arc::new(Recorder(Default::default(), Default::default()));
    let options = ConnectOptions {
        handler: Arc::new(Recording(recorder.clone())),
        ..common::options()
    };
    let client = connect_with(&["--mode", "modern", "--log", &log], options).unwrap();
    // The listen request is under way once the server acknowledged it.
    let wait_for = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = recorder.0.lock().unwrap();
        while !seen.iter().any(|m| m == what) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {what}: {seen:?}");
            seen = recorder.1.wait_timeout(seen, left).unwrap().0;
        }
        seen.clone()
    };
    wait_for("notifications/subscriptions/acknowledged");
    client.call_tool("change", json!({})).unwrap();
    let seen = wait_for("notifications/done");
    assert_eq!(
        seen,
        [
            "notifications/subscriptions/acknowledged",
            "tools_list_changed",
            "notifications/done"
        ],
        "the foreign subscription's notification is dropped"
    );
    client.close();
    assert!(log_lines(&log).contains(&"subscriptions/listen".to_owned()));
}

/// A host whose current span travels with each request.
struct Traced;

impl ClientHandler for Traced {
    fn trace_context(&self, _server: &str) -> Option<serde_json::Map<String, Value>> {
        let context = json!({
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "tracestate": "vendor=1",
            "baggage": "user=1",
        });
        context.as_object().cloned()
    }
}

#[test]
fn the_hosts_trace_context_travels_in_the_meta() {
    let options = ConnectOptions {
        handler: Arc::new(Traced),
        ..common::options()
    };
    let client = connect_with(&["--mode", "modern"], options).unwrap();
    let out = client.call_tool("meta", json!({})).unwrap();
    let meta = out.structured_content.unwrap();
    assert_eq!(
        meta["traceparent"],
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    );
    assert_eq!(meta["tracestate"], "vendor=1");
    assert_eq!(meta["baggage"], "user=1");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}

#[test]
fn an_extension_this_crate_does_not_know_is_declared_as_given_on_every_request() {
    let settings = json!({"deep": [1, {"x": null}], "flag": true});
    let mut options = common::options();
    options
        .extensions
        .insert("com.example/thing".into(), settings.clone());
    let client = connect_with(&["--mode", "modern"], options).unwrap();
    let out = client.call_tool("meta", json!({})).unwrap();
    let declared = &out.structured_content.unwrap()["io.modelcontextprotocol/clientCapabilities"]
        ["extensions"];
    assert_eq!(declared["com.example/thing"], settings);
    assert!(client
        .extension_names()
        .contains(&"com.example/thing".to_owned()));
    assert_eq!(client.client_extension("com.example/thing"), Some(settings));
    assert_eq!(client.server_extension("com.example/thing"), None);
    assert!(client.agreed_extension("com.example/thing").is_none());
}
