//! A panic inside a connection never ends in silence: at each of the threads a connection runs
//! (put there by the test's own fault hook, `faults::inject`, which the threads started from
//! the test's thread inherit) the connection ends with `Error::Internal` naming the place, every
//! call waiting on it fails at once, and the server's process is gone. A panic in a host
//! callback fails what it answered, and the connection stays.
#![cfg(feature = "fault-injection")]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use common::{capture_logs, endpoint, eventually, logs, options, processes_tagged};
use mcp_runtime::faults::{self, inject};
use mcp_runtime::protocol::{ClientCapabilities, LoggingLevel, RpcError};
use mcp_runtime::transport::{AuthProvider, HttpTarget};
use mcp_runtime::{CallOptions, Client, ClientHandler, ConnectOptions, Endpoint, Error};
use serde_json::{json, Value};

const GONE: Duration = Duration::from_secs(15);

/// A hook that panics at `at`, every time.
fn at(at: &'static str) -> impl Fn(&str) + Send + Sync + 'static {
    move |here| {
        if here == at {
            panic!("injected at {here}");
        }
    }
}

/// A hook that panics at `at` the first time only.
fn once(at: &'static str) -> impl Fn(&str) + Send + Sync + 'static {
    let fired = AtomicBool::new(false);
    move |here| {
        if here == at && !fired.swap(true, Ordering::SeqCst) {
            panic!("injected once at {here}");
        }
    }
}

/// `e` is the internal error of a panic caught at `place`.
fn assert_internal(e: &Error, place: &str) {
    match e {
        Error::Internal { place: p, message } => {
            assert_eq!(p, place, "{e}");
            assert!(message.starts_with("injected"), "{e}");
        }
        other => panic!("not an internal error at {place}: {other:?}"),
    }
}

fn stdio(tag: &str) -> Endpoint {
    endpoint(&["--tag", tag])
}

fn echo(client: &Client) -> Result<String, Error> {
    client
        .call_tool("echo", json!({"message": "still here"}))
        .map(|r| r.text())
}

#[test]
fn a_panic_in_the_stdout_reader_fails_the_connect_and_stops_the_server() {
    let tag = "fault-stdout-reader";
    let _faults = inject(at(faults::STDIO_READER));
    // The handshake may be read by the caller itself before the reader thread runs: then the
    // connection ends with the panic as soon as it does.
    let e = match Client::connect("r", &stdio(tag), options()) {
        Err(e) => e,
        Ok(client) => {
            eventually("the connection ended", GONE, || {
                client.closed_reason().is_some()
            });
            client.closed_reason().unwrap()
        }
    };
    assert_internal(&e, "the stdout reader");
    eventually("the server is gone", GONE, || {
        processes_tagged(tag).is_empty()
    });
}

#[test]
fn a_panic_sending_a_request_ends_the_connection_with_it() {
    let tag = "fault-send";
    let client = Client::connect("s", &stdio(tag), options()).unwrap();
    let _faults = inject(at(faults::SEND));
    let e = echo(&client).unwrap_err();
    assert_internal(&e, "sending a request");
    assert_internal(&client.closed_reason().unwrap(), "sending a request");
    eventually("the server is gone", GONE, || {
        processes_tagged(tag).is_empty()
    });
}

#[test]
fn a_panic_in_the_stdin_writer_fails_the_call_waiting_on_it() {
    let tag = "fault-stdin-writer";
    let client = Client::connect("w", &stdio(tag), options()).unwrap();
    // A server that no longer reads: what the pipe cannot take is queued for the writer.
    client.call_tool("stop_reading", json!({})).unwrap();
    let _faults = inject(at(faults::STDIO_WRITER));
    let big = "x".repeat(1 << 20);
    let e = client
        .call_tool("echo", json!({"message": big}))
        .map(|_| ())
        .unwrap_err();
    assert_internal(&e, "the stdin writer");
    eventually("the server is gone", GONE, || {
        processes_tagged(tag).is_empty()
    });
}

#[test]
fn a_panic_in_the_stderr_reader_is_logged_and_the_server_still_stopped() {
    capture_logs();
    let tag = "fault-stderr-reader";
    // Set before the connection's threads start: they inherit it.
    let _faults = inject(at(faults::STDIO_STDERR));
    let client = Client::connect("e", &stdio(tag), options()).unwrap();
    // Stdout ends: stderr is handed to a thread of its own, which panics.
    let _ = client.call_tool("close_stdout", json!({}));
    eventually("the panic is logged", GONE, || {
        !logs("Internal error in the stderr reader").is_empty()
    });
    eventually("the connection ended", GONE, || {
        client.closed_reason().is_some()
    });
    eventually("the server is gone", GONE, || {
        processes_tagged(tag).is_empty()
    });
}

/// Counts the log messages it hears.
#[derive(Default)]
struct Counting {
    heard: AtomicUsize,
    panic_on_sampling: bool,
}

impl ClientHandler for Counting {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(json!({})),
            ..Default::default()
        }
    }

    fn create_message(&self, _: &str, _: Value) -> Result<Value, RpcError> {
        if self.panic_on_sampling {
            panic!("the host's sampling broke");
        }
        Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": "ok"},
                  "model": "canned"}),
        )
    }

    fn on_log_message(&self, _: &str, _: LoggingLevel, _: Option<&str>, _: &Value) {
        self.heard.fetch_add(1, Ordering::SeqCst);
    }
}

fn with_handler(tag: &str, handler: Arc<Counting>) -> Client {
    let options = ConnectOptions {
        handler,
        ..options()
    };
    Client::connect("h", &stdio(tag), options).unwrap()
}

#[test]
fn a_notification_whose_delivery_panics_is_logged_and_the_next_is_delivered() {
    capture_logs();
    let handler = Arc::new(Counting::default());
    let _faults = inject(once(faults::EVENTS));
    let client = with_handler("fault-events", Arc::clone(&handler));
    for n in 0..2 {
        client
            .call_tool("log", json!({"message": format!("message {n}")}))
            .unwrap();
    }
    eventually("the second message is delivered", GONE, || {
        handler.heard.load(Ordering::SeqCst) == 1
    });
    assert!(!logs("delivering a notification to the ClientHandler").is_empty());
    assert_eq!(echo(&client).unwrap(), "still here");
}

/// What the server got back for its sampling request, and whether it was an error.
fn sampled(client: &Client) -> (Value, bool) {
    let out = client
        .call_tool(
            "ask",
            json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}),
        )
        .unwrap();
    let is_error = out.is_error();
    (
        out.structured_content.unwrap()["response"].clone(),
        is_error,
    )
}

#[test]
fn a_host_handler_that_panics_answers_that_request_with_an_error() {
    let handler = Arc::new(Counting {
        panic_on_sampling: true,
        ..Counting::default()
    });
    let client = with_handler("fault-handler", handler);
    let (response, is_error) = sampled(&client);
    assert!(is_error, "{response}");
    let text = response.to_string();
    assert!(
        text.contains("the host's sampling broke") && text.contains("-32603"),
        "{text}"
    );
    assert_eq!(echo(&client).unwrap(), "still here");
}

#[test]
fn a_panic_answering_a_server_request_answers_it_with_an_error() {
    let client = with_handler("fault-server-request", Arc::new(Counting::default()));
    let _faults = inject(at(faults::SERVER_REQUEST));
    let (response, is_error) = sampled(&client);
    assert!(is_error, "{response}");
    assert!(
        response.to_string().contains("answering a server request"),
        "{response}"
    );
    assert_eq!(echo(&client).unwrap(), "still here");
}

fn http(url: String) -> Endpoint {
    Endpoint::Http(HttpTarget::new(url))
}

#[test]
fn a_panic_in_an_http_worker_fails_its_request_and_the_connection() {
    let server = TestHttp::start(Behaviour::default());
    let client = Client::connect("j", &http(server.url()), options()).unwrap();
    let _faults = inject(at(faults::HTTP_JOB));
    // A call with a progress callback runs its exchange on a worker.
    let e = client
        .call_tool_with(
            "echo",
            json!({"message": "x"}),
            CallOptions::default().with_progress(|_| {}),
        )
        .map(|_| ())
        .unwrap_err();
    assert_internal(&e, "an HTTP request's worker");
    assert_internal(&client.closed_reason().unwrap(), "an HTTP request's worker");
}

#[test]
fn a_panic_in_the_get_stream_listener_ends_the_connection_with_it() {
    let server = TestHttp::start(Behaviour {
        get_stream: true,
        ..Behaviour::default()
    });
    let _faults = inject(at(faults::GET_STREAM));
    let client = Client::connect("g", &http(server.url()), options()).unwrap();
    eventually("the connection ended", GONE, || {
        client.closed_reason().is_some()
    });
    assert_internal(&client.closed_reason().unwrap(), "the GET stream listener");
    assert_internal(&echo(&client).unwrap_err(), "the GET stream listener");
}

#[test]
fn a_panic_in_the_legacy_sse_reader_fails_the_connect() {
    let server = TestHttp::start(Behaviour::default());
    let _faults = inject(at(faults::SSE_STREAM));
    let endpoint = Endpoint::Sse(HttpTarget::new(server.sse_url()));
    let e = Client::connect("sse", &endpoint, options())
        .map(|_| ())
        .unwrap_err();
    assert_internal(&e, "the SSE stream reader");
}

struct PanickingAuth;

impl AuthProvider for PanickingAuth {
    fn authorization(&self) -> Option<String> {
        panic!("the host's token store broke")
    }
}

#[test]
fn an_auth_provider_that_panics_fails_the_request_it_served() {
    let server = TestHttp::start(Behaviour {
        post_status: Some((401, Vec::new(), String::new())),
        ..Behaviour::default()
    });
    let target = HttpTarget {
        auth: Some(Arc::new(PanickingAuth)),
        ..HttpTarget::new(server.url())
    };
    match Client::connect("a", &Endpoint::Http(target), options()) {
        Err(Error::Internal { place, message }) => {
            // The default `authorize_request` asks `authorization`.
            assert_eq!(place, "the AuthProvider's authorize_request");
            assert_eq!(message, "the host's token store broke");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// The 2026-07-28 test server over stdio, started with `args`.
fn modern(args: &[&str]) -> Endpoint {
    Endpoint::stdio(
        common::example_path("mcp-modern-server")
            .display()
            .to_string(),
        args.iter().copied(),
    )
}

/// A host that answers elicitations.
struct Elicits;

impl ClientHandler for Elicits {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            ..Default::default()
        }
    }

    fn elicit(&self, _: &str, _: Value) -> Result<Value, RpcError> {
        Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
    }
}

#[test]
fn a_panic_answering_a_stateless_servers_input_requests_fails_that_call_only() {
    let options = ConnectOptions {
        handler: Arc::new(Elicits),
        ..options()
    };
    let client = Client::connect("input", &modern(&["--mode", "modern"]), options).unwrap();
    let _faults = inject(at(faults::STATELESS_INPUT));
    let e = client.call_tool("ask", json!({})).unwrap_err();
    assert_internal(&e, "answering a server's input requests");
    assert!(client.closed_reason().is_none());
    assert_eq!(echo(&client).unwrap(), "still here");
}

#[test]
fn a_panic_in_the_subscription_listener_ends_the_connection_with_it() {
    let _faults = inject(at(faults::SUBSCRIPTIONS));
    let client = Client::connect("listen", &modern(&["--mode", "modern"]), options()).unwrap();
    eventually("the connection ended", GONE, || {
        client.closed_reason().is_some()
    });
    assert_internal(
        &client.closed_reason().unwrap(),
        "the subscription listener",
    );
    assert_internal(&echo(&client).unwrap_err(), "the subscription listener");
}
