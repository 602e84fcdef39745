//! The HTTP transports against real HTTP servers on 127.0.0.1 (written in the tests).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use crossbeam_channel::Sender;
use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, Root};
use mcp_runtime::transport::{HttpOptions, HttpTarget};
use mcp_runtime::{CallOptions, Client, ClientHandler, ConnectOptions, Endpoint, Error};
use serde_json::json;

fn http(server: &TestHttp) -> Endpoint {
    Endpoint::Http(HttpTarget::new(server.url()).header("X-Api-Key", "secret-value"))
}

fn echo(client: &Client, message: &str) -> Result<String, Error> {
    client
        .call_tool("echo", json!({ "message": message }))
        .map(|r| r.text())
}

#[test]
fn json_replies_with_session_and_version_headers() {
    let server = TestHttp::start(Behaviour::default());
    let client = Client::connect("json", &http(&server), common::options()).unwrap();
    assert_eq!(client.transport_kind(), "http");
    assert_eq!(client.list_tools().unwrap()[0].name, "echo");
    assert_eq!(echo(&client, "over http").unwrap(), "over http");
    client.close();

    let seen = server.seen();
    let posts: Vec<_> = seen.iter().filter(|r| r.method == "POST").collect();
    let init = posts
        .iter()
        .find(|r| r.rpc_method() == Some("initialize"))
        .unwrap();
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.header("x-api-key"), Some("secret-value"));
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    // The era probe (`server/discover`) goes before the session, with the stateless headers.
    for later in posts
        .iter()
        .filter(|r| !matches!(r.rpc_method(), Some("initialize" | "server/discover")))
    {
        assert_eq!(
            later.header("mcp-session-id"),
            Some("session-1"),
            "{later:?}"
        );
        assert_eq!(
            later.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{later:?}"
        );
    }
    assert!(posts
        .iter()
        .any(|r| r.rpc_method() == Some("notifications/initialized")));
    let delete = seen
        .iter()
        .find(|r| r.method == "DELETE")
        .expect("DELETE on close");
    assert_eq!(delete.header("mcp-session-id"), Some("session-1"));
}

#[test]
fn sse_replies_deliver_progress_then_the_response() {
    let server = TestHttp::start(Behaviour {
        sse_replies: true,
        ..Behaviour::default()
    });
    let client = Client::connect("sse-replies", &http(&server), common::options()).unwrap();
    let mut progress = Vec::new();
    let out = client
        .call_tool_with(
            "echo",
            json!({"message": "streamed"}),
            CallOptions::default().with_progress(|p| progress.push(p.progress)),
        )
        .unwrap();
    assert_eq!(out.text(), "streamed");
    assert_eq!(progress, [1.0]);
    assert_eq!(client.list_tools().unwrap().len(), 1);
}

struct Roots {
    changed: Sender<String>,
}

impl ClientHandler for Roots {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(json!({})),
            ..Default::default()
        }
    }
    fn list_roots(&self, _: &str) -> Result<Vec<Root>, RpcError> {
        Ok(vec![Root::from_path(std::path::Path::new("/srv/project"))])
    }
    fn on_tools_list_changed(&self, server: &str) {
        let _ = self.changed.send(server.to_owned());
    }
}

#[test]
fn the_get_stream_carries_server_requests_and_notifications() {
    let server = TestHttp::start(Behaviour {
        get_stream: true,
        ..Behaviour::default()
    });
    let (tx, changed) = crossbeam_channel::unbounded();
    let opts = ConnectOptions {
        handler: Arc::new(Roots { changed: tx }),
        ..common::options()
    };
    let client = Client::connect("listening", &http(&server), opts).unwrap();
    server.push(json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"}));
    let answer = server.answer();
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": "s1", "result": {}}));
    server.push(json!({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"}));
    let answer = server.answer();
    assert_eq!(answer["result"]["roots"][0]["uri"], "file:///srv/project");
    server.push(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    assert_eq!(
        changed.recv_timeout(Duration::from_secs(10)).unwrap(),
        "listening"
    );
    let get = server
        .seen()
        .into_iter()
        .find(|r| r.method == "GET")
        .unwrap();
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("session-1"));
    client.close();
}

#[test]
fn no_get_stream_is_opened_when_neither_side_declared_anything_to_send_on_it() {
    let quiet = TestHttp::start(Behaviour {
        get_stream: true,
        quiet_capabilities: true,
        ..Behaviour::default()
    });
    let client = Client::connect("quiet", &http(&quiet), common::options()).unwrap();
    client.list_tools().unwrap();
    client.ping(Duration::from_secs(5)).unwrap();
    client.close();
    let methods: Vec<String> = quiet.seen().into_iter().map(|r| r.method).collect();
    assert!(!methods.iter().any(|m| m == "GET"), "{methods:?}");
    // The same server with a handler that answers roots/list: it may ask, so the stream opens.
    let asking = TestHttp::start(Behaviour {
        get_stream: true,
        quiet_capabilities: true,
        ..Behaviour::default()
    });
    let (tx, _changed) = crossbeam_channel::unbounded();
    let opts = ConnectOptions {
        handler: Arc::new(Roots { changed: tx }),
        ..common::options()
    };
    let client = Client::connect("asking", &http(&asking), opts).unwrap();
    common::eventually("a GET stream", Duration::from_secs(10), || {
        asking.seen().iter().any(|r| r.method == "GET")
    });
    client.close();
}

#[test]
fn the_get_stream_reconnects_with_last_event_id() {
    let server = TestHttp::start(Behaviour {
        get_stream: true,
        ..Behaviour::default()
    });
    let opts = ConnectOptions {
        http: HttpOptions {
            default_retry: Duration::from_millis(10),
            ..HttpOptions::default()
        },
        ..common::options()
    };
    let client = Client::connect("reconnecting", &http(&server), opts).unwrap();
    server.push(json!({"jsonrpc": "2.0", "id": "before", "method": "ping"}));
    assert_eq!(server.answer()["id"], "before");
    // The server ends the stream; a later server request arrives on the next one.
    server.push(serde_json::Value::Null);
    server.push(json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}));
    assert_eq!(server.answer()["id"], "after");
    let gets: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|r| r.method == "GET")
        .collect();
    assert!(gets.len() >= 2);
    assert_eq!(gets[0].header("last-event-id"), None);
    assert_eq!(gets[1].header("last-event-id"), Some("g0"));
    client.close();
}

struct CountingAuth(std::sync::atomic::AtomicUsize);

impl mcp_runtime::transport::AuthProvider for CountingAuth {
    fn authorization(&self) -> Option<String> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Some(format!("Bearer token-{n}"))
    }
}

#[test]
fn the_auth_provider_is_asked_before_every_request() {
    let server = TestHttp::start(Behaviour::default());
    let target = HttpTarget {
        auth: Some(Arc::new(CountingAuth(Default::default()))),
        ..HttpTarget::new(server.url())
    };
    let client = Client::connect("auth-hook", &Endpoint::Http(target), common::options()).unwrap();
    echo(&client, "x").unwrap();
    let auth: Vec<String> = server
        .seen()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.header("authorization").unwrap_or("").to_owned())
        .collect();
    assert_eq!(auth[0], "Bearer token-0");
    let distinct: std::collections::HashSet<_> = auth.iter().collect();
    assert_eq!(
        distinct.len(),
        auth.len(),
        "a fresh value for each request: {auth:?}"
    );
}

#[test]
fn a_server_without_a_get_stream_is_fine() {
    let server = TestHttp::start(Behaviour::default());
    let client = Client::connect("no-get", &http(&server), common::options()).unwrap();
    assert_eq!(echo(&client, "still works").unwrap(), "still works");
}

#[test]
fn a_cut_response_stream_is_resumed_with_last_event_id() {
    let server = TestHttp::start(Behaviour {
        cut_first_call: true,
        ..Behaviour::default()
    });
    let client = Client::connect("resume", &http(&server), common::options()).unwrap();
    assert_eq!(echo(&client, "after the cut").unwrap(), "after the cut");
    let resumed = server
        .seen()
        .into_iter()
        .find(|r| r.method == "GET" && r.header("last-event-id").is_some())
        .expect("a resuming GET");
    assert_eq!(resumed.header("last-event-id"), Some("e1"));
    assert_eq!(resumed.header("mcp-session-id"), Some("session-1"));
}

#[test]
fn a_stream_cut_mid_event_without_an_id_fails_that_call_only() {
    let server = TestHttp::start(Behaviour {
        cut_mid_event: true,
        ..Behaviour::default()
    });
    let client = Client::connect("cut", &http(&server), common::options()).unwrap();
    let err = echo(&client, "lost").unwrap_err();
    assert!(
        matches!(&err, Error::TransportClosed { reason, .. } if reason.contains("no event id")),
        "{err:?}"
    );
    assert_eq!(client.list_tools().unwrap().len(), 1);
}

#[test]
fn an_oversized_reply_fails_the_call_with_message_too_large() {
    // As one event of a stream, and as a JSON body (with its Content-Length).
    let event = Behaviour {
        oversized_event: Some(100_000),
        ..Behaviour::default()
    };
    let json = Behaviour {
        oversized_json: Some(100_000),
        ..Behaviour::default()
    };
    for behaviour in [event, json] {
        let server = TestHttp::start(behaviour);
        let opts = ConnectOptions {
            http: HttpOptions {
                max_message_bytes: 10_000,
                ..HttpOptions::default()
            },
            ..common::options()
        };
        let client = Client::connect("oversized", &http(&server), opts).unwrap();
        let err = echo(&client, "big").unwrap_err();
        assert_eq!(err, Error::MessageTooLarge { limit: 10_000 });
        // Only that call failed (and a half-read connection was not reused).
        assert_eq!(client.list_tools().unwrap().len(), 1);
    }
}

#[test]
fn a_body_shorter_than_its_content_length_fails_that_call_only() {
    let server = TestHttp::start(Behaviour {
        short_json_body: true,
        ..Behaviour::default()
    });
    let client = Client::connect("short", &http(&server), common::options()).unwrap();
    let err = echo(&client, "cut").unwrap_err();
    assert!(
        matches!(err, Error::TransportClosed { .. }),
        "unexpected error: {err:?}"
    );
    assert_eq!(client.list_tools().unwrap().len(), 1);
}

#[test]
fn a_hanging_server_times_the_call_out_and_close_interrupts_it() {
    let server = TestHttp::start(Behaviour {
        hang_calls: true,
        ..Behaviour::default()
    });
    let client = Client::connect("hanging", &http(&server), common::options()).unwrap();
    let err = client
        .call_tool_with(
            "echo",
            json!({}),
            CallOptions::timeout(Duration::from_millis(200)),
        )
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // The timeout is announced to the server (in the background).
    let cancelled = server.wait_for("notifications/cancelled");
    assert!(cancelled.body["params"]["requestId"].is_i64());
    client.close();
}

#[test]
fn status_401_is_typed_with_www_authenticate_and_never_falls_back() {
    let server = TestHttp::start(Behaviour {
        post_status: Some((
            401,
            vec![(
                "WWW-Authenticate".into(),
                "Bearer resource_metadata=\"x\"".into(),
            )],
            "unauthorized".into(),
        )),
        ..Behaviour::default()
    });
    let err = Client::connect("auth", &Endpoint::url(server.url()), common::options()).unwrap_err();
    assert_eq!(
        err,
        Error::Http {
            status: 401,
            body: "unauthorized".into(),
            www_authenticate: Some("Bearer resource_metadata=\"x\"".into())
        }
    );
    assert!(
        server.seen().iter().all(|r| r.method == "POST"),
        "no fallback GET"
    );
}

#[test]
fn status_500_is_typed_and_never_falls_back() {
    let server = TestHttp::start(Behaviour {
        post_status: Some((500, vec![], "boom".into())),
        ..Behaviour::default()
    });
    let err = Client::connect(
        "fivehundred",
        &Endpoint::url(server.url()),
        common::options(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Http { status: 500, .. }), "{err:?}");
    assert_eq!(err.to_string(), "HTTP 500: boom");
    assert!(server.seen().iter().all(|r| r.method == "POST"));
}

#[test]
fn a_refused_connection_is_a_transport_error_without_fallback() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = Client::connect(
        "refused",
        &Endpoint::url(format!("http://127.0.0.1:{port}/mcp")),
        common::options(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::TransportClosed { .. }), "{err:?}");
}

#[test]
fn legacy_sse_with_a_relative_endpoint() {
    for absolute in [false, true] {
        let server = TestHttp::start(Behaviour {
            absolute_endpoint: absolute,
            ..Behaviour::default()
        });
        let endpoint = Endpoint::Sse(HttpTarget::new(server.sse_url()).header("X-Api-Key", "k"));
        let client = Client::connect("legacy", &endpoint, common::options()).unwrap();
        assert_eq!(client.transport_kind(), "sse");
        assert_eq!(client.list_tools().unwrap().len(), 1);
        assert_eq!(echo(&client, "legacy").unwrap(), "legacy");
        let post = server
            .seen()
            .into_iter()
            .find(|r| r.method == "POST")
            .unwrap();
        assert_eq!(post.path, "/messages?sessionId=abc");
        assert_eq!(post.header("x-api-key"), Some("k"));
        client.close();
    }
}

#[test]
fn legacy_sse_refuses_an_endpoint_on_another_origin() {
    let server = TestHttp::start(Behaviour {
        cross_origin_endpoint: true,
        ..Behaviour::default()
    });
    let err = Client::connect(
        "evil",
        &Endpoint::Sse(HttpTarget::new(server.sse_url())),
        common::options(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::Protocol { message } if message.contains("origin")),
        "{err:?}"
    );
    assert!(
        server.seen().iter().all(|r| r.method == "GET"),
        "nothing was POSTed anywhere"
    );
}

#[test]
fn the_end_of_the_legacy_stream_fails_every_pending_call() {
    let server = TestHttp::start(Behaviour::default());
    let client = Client::connect(
        "ending",
        &Endpoint::Sse(HttpTarget::new(server.sse_url())),
        common::options(),
    )
    .unwrap();
    let c2 = client.clone();
    let pending =
        std::thread::spawn(move || c2.request("hang/forever", None, CallOptions::default()));
    server.wait_for("hang/forever");
    server.end_legacy_stream();
    let err = pending.join().unwrap().unwrap_err();
    assert!(
        matches!(&err, Error::TransportClosed { reason, .. } if reason.contains("ended")),
        "{err:?}"
    );
    let err = echo(&client, "after the end").unwrap_err();
    assert!(
        matches!(&err, Error::TransportClosed { reason, .. } if reason.contains("ended")),
        "{err:?}"
    );
}

#[test]
fn a_url_falls_back_to_legacy_sse_on_405() {
    // The server refuses POST to the URL with 405 but serves a legacy stream at GET /sse: point
    // the URL there.
    let server = TestHttp::start(Behaviour::default());
    let client = Client::connect(
        "fallback",
        &Endpoint::url(server.sse_url()),
        common::options(),
    )
    .unwrap();
    assert_eq!(client.transport_kind(), "sse");
    assert_eq!(echo(&client, "fell back").unwrap(), "fell back");
}

#[test]
fn large_messages_stream_through_small_buffers() {
    let big = "y".repeat(1024 * 1024);
    for sse in [false, true] {
        let server = TestHttp::start(Behaviour {
            sse_replies: sse,
            ..Behaviour::default()
        });
        let client = Client::connect("large", &http(&server), common::options()).unwrap();
        assert_eq!(echo(&client, &big).unwrap().len(), big.len(), "sse: {sse}");
        client.close();
    }
}

#[test]
fn a_kept_alive_connection_the_server_closed_is_not_reused() {
    let server = TestHttp::start(Behaviour {
        close_after_calls: true,
        ..Behaviour::default()
    });
    let client = Client::connect("closing", &http(&server), common::options()).unwrap();
    calls_over_closed_connections(&server, &client);
    client.close();
}

/// Three calls, each on a new connection: the server closed the previous one, and sending on
/// it would fail the call, so it must be found closed and replaced.
fn calls_over_closed_connections(server: &TestHttp, client: &Client) {
    for n in 1..=3 {
        assert_eq!(
            echo(client, &format!("call {n}")).unwrap(),
            format!("call {n}")
        );
        server.wait_closed(n);
    }
}

#[test]
fn a_host_name_is_resolved_for_each_new_connection() {
    let server = TestHttp::start(Behaviour {
        close_after_calls: true,
        ..Behaviour::default()
    });
    // The server listens on 127.0.0.1; `localhost` must be looked up, and looked up again
    // for each connection that replaces a closed one.
    let url = server.url().replace("127.0.0.1", "localhost");
    let client = Client::connect(
        "named",
        &Endpoint::Http(HttpTarget::new(url)),
        common::options(),
    )
    .unwrap();
    calls_over_closed_connections(&server, &client);
    client.close();
    let port = server
        .url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let posts: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert!(posts.len() >= 4, "{} POSTs", posts.len());
    for post in &posts {
        assert_eq!(
            post.header("host"),
            Some(format!("localhost:{port}").as_str())
        );
    }
}

#[test]
fn a_response_sent_on_the_get_stream_answers_its_request() {
    // Against the specification (a response goes on its request's own stream), some servers
    // send it on the standalone GET stream: the call is answered, not left to time out.
    let server = TestHttp::start(Behaviour {
        get_stream: true,
        hang_calls: true,
        ..Behaviour::default()
    });
    let (tx, _changed) = crossbeam_channel::unbounded();
    let opts = ConnectOptions {
        handler: Arc::new(Roots { changed: tx }),
        ..common::options()
    };
    let client = Client::connect("stray", &http(&server), opts).unwrap();
    // The call's own timeout is far away: without the stray answer it would end only there.
    let (done, answered) = crossbeam_channel::bounded(1);
    {
        let client = client.clone();
        std::thread::spawn(move || {
            let _ = done.send(client.call_tool_with(
                "echo",
                json!({"message": "x"}),
                CallOptions::timeout(Duration::from_secs(300)),
            ));
        });
    }
    let call = server.wait_for("tools/call");
    let id = call.body["id"].clone();
    server.push(json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "from the GET stream"}]}}));
    let out = answered
        .recv_timeout(Duration::from_secs(30))
        .expect("the call was answered from the GET stream, not at its timeout")
        .expect("answered");
    assert_eq!(out.text(), "from the GET stream");
    client.close();
}

/// A host that means "no bound" with `Duration::MAX` (every timeout, the backoff, the close)
/// gets a working connection: no deadline made of it overflows, here or in the HTTP stack.
#[test]
fn durations_of_duration_max_mean_no_bound_and_never_overflow() {
    let server = TestHttp::start(Behaviour {
        get_stream: true,
        ..Behaviour::default()
    });
    let max = Duration::MAX;
    let options = ConnectOptions {
        timeout: max,
        request_timeout: max,
        max_request_timeout: max,
        probe_timeout: max,
        http: HttpOptions {
            connect_timeout: max,
            exchange_timeout: max,
            post_timeout: max,
            close_timeout: max,
            default_retry: max,
            max_backoff: max,
            ..HttpOptions::default()
        },
        ..ConnectOptions::default()
    };
    let client = Client::connect(
        "max",
        &Endpoint::Http(HttpTarget::new(server.url())),
        options,
    )
    .unwrap();
    let out = client
        .call_tool_with(
            "echo",
            json!({"message": "unbounded"}),
            CallOptions::timeout(max).with_progress(|_| {}),
        )
        .unwrap();
    assert_eq!(out.text(), "unbounded");
    client.close();
    let stdio = Client::connect(
        "max-stdio",
        &common::endpoint(&[]),
        ConnectOptions {
            timeout: max,
            request_timeout: max,
            stdio: mcp_runtime::transport::StdioOptions {
                close_grace: max,
                ..Default::default()
            },
            ..ConnectOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        stdio
            .call_tool("echo", json!({"message": "x"}))
            .unwrap()
            .text(),
        "x"
    );
    stdio.close();
}
