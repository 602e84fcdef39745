//! The HTTP transports under faults and hostile servers: redirects, secrets in URLs, deadlines
//! in every phase, abandoned exchanges, dead servers. Real HTTP servers on 127.0.0.1.

mod common;

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::eventually;
use common::http_server::{Behaviour, TestHttp};
use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, Root};
use mcp_runtime::transport::{HttpOptions, HttpTarget};
use mcp_runtime::{
    CallOptions, CancelToken, Client, ClientHandler, ConnectOptions, Endpoint, Error,
};
use serde_json::json;

fn http(url: String) -> Endpoint {
    Endpoint::Http(HttpTarget::new(url).header("X-Api-Key", "secret-value"))
}

fn echo(client: &Client, message: &str, options: CallOptions<'_>) -> Result<String, Error> {
    client
        .call_tool_with("echo", json!({ "message": message }), options)
        .map(|r| r.text())
}

/// Whether this process has a thread of that name.
fn thread_running(name: &str) -> bool {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .any(|comm| comm.trim_end() == name)
}

#[test]
fn a_redirect_of_a_call_is_never_followed_and_the_other_origin_gets_nothing() {
    let other = TestHttp::start(Behaviour::default());
    for status in [301, 302, 303, 307, 308] {
        let location = format!("{}?token=LOCATION-SECRET", other.url());
        let server = TestHttp::start(Behaviour {
            redirect_calls: Some((status, location)),
            ..Behaviour::default()
        });
        let client = Client::connect("redirect", &http(server.url()), common::options()).unwrap();
        let err = echo(&client, "x", CallOptions::default()).unwrap_err();
        let Error::Redirect {
            status: got,
            location,
        } = &err
        else {
            panic!("{status}: {err:?}");
        };
        assert_eq!(*got, status);
        assert!(location.contains(&other.url()), "{location}");
        assert!(location.contains("another origin"), "{location}");
        assert!(!err.to_string().contains("LOCATION-SECRET"), "{err}");
        // The connection carries on.
        assert!(client.closed_reason().is_none());
        client.close();
    }
    assert!(
        other.seen().is_empty(),
        "the other origin was reached: {:?}",
        other.seen()
    );
}

#[test]
fn a_same_origin_redirect_is_not_followed_either() {
    let server = TestHttp::start(Behaviour {
        redirect_calls: Some((307, "/elsewhere".to_owned())),
        ..Behaviour::default()
    });
    let client = Client::connect("same", &http(server.url()), common::options()).unwrap();
    let err = echo(&client, "x", CallOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::Redirect { status: 307, location } if location.ends_with("/elsewhere")),
        "{err:?}"
    );
    client.close();
    assert!(server.seen().iter().all(|r| r.path != "/elsewhere"));
}

#[test]
fn a_redirect_of_the_get_stream_is_not_followed() {
    let other = TestHttp::start(Behaviour {
        get_stream: true,
        ..Behaviour::default()
    });
    let server = TestHttp::start(Behaviour {
        get_stream: true,
        redirect_get: Some((307, other.url())),
        ..Behaviour::default()
    });
    let client = Client::connect("rg", &http(server.url()), common::options()).unwrap();
    eventually("the GET stream was tried", Duration::from_secs(10), || {
        server.seen().iter().any(|r| r.method == "GET")
    });
    // Once the listener has given up, whatever it would have done is done.
    eventually("the listener ended", Duration::from_secs(10), || {
        !thread_running("mcp-rg-listen")
    });
    assert!(
        other.seen().is_empty(),
        "the other origin was reached: {:?}",
        other.seen()
    );
    assert_eq!(
        echo(&client, "still", CallOptions::default()).unwrap(),
        "still"
    );
    client.close();
}

const SECRETS: [&str; 3] = ["QUERY-SECRET", "user-secret", "PASS-SECRET"];

fn assert_clean(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows {secret}: {text}");
    }
}

fn secret_url(base: &str) -> String {
    let rest = base.strip_prefix("http://").unwrap();
    format!("http://user-secret:PASS-SECRET@{rest}?apiKey=QUERY-SECRET")
}

#[test]
fn secrets_in_the_url_never_show_in_errors_or_debug() {
    let opts = || ConnectOptions {
        timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        ..ConnectOptions::default()
    };
    // Connection refused.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = secret_url(&format!("http://127.0.0.1:{port}/mcp"));
    let endpoint = Endpoint::Http(HttpTarget::new(url.clone()));
    assert_clean("the endpoint's Debug", &format!("{endpoint:?}"));
    assert_clean("the options' Debug", &format!("{:?}", opts()));
    let err = Client::connect("refused", &endpoint, opts()).unwrap_err();
    assert_clean("a refused connection", &format!("{err} {err:?}"));

    // HTTP 500.
    let server = TestHttp::start(Behaviour {
        post_status: Some((500, vec![], "boom".into())),
        ..Behaviour::default()
    });
    let err = Client::connect("500", &http(secret_url(&server.url())), opts()).unwrap_err();
    assert!(matches!(err, Error::Http { status: 500, .. }), "{err:?}");
    assert_clean("HTTP 500", &format!("{err} {err:?}"));

    // A legacy endpoint event naming another origin.
    let legacy = TestHttp::start(Behaviour {
        cross_origin_endpoint: true,
        ..Behaviour::default()
    });
    let err = Client::connect(
        "cross",
        &Endpoint::Sse(HttpTarget::new(secret_url(&legacy.sse_url()))),
        opts(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("refused"), "{err}");
    assert_clean("a cross-origin endpoint", &format!("{err} {err:?}"));

    // A call that fails at the transport (a stream cut mid-event), and a redirect.
    let cut = TestHttp::start(Behaviour {
        cut_mid_event: true,
        ..Behaviour::default()
    });
    let client = Client::connect("cut", &http(secret_url(&cut.url())), opts()).unwrap();
    let err = echo(&client, "x", CallOptions::default()).unwrap_err();
    assert_clean("a cut stream", &format!("{err} {err:?}"));
    assert_clean("the client's Debug", &format!("{client:?}"));
    client.close();
    let redirect = TestHttp::start(Behaviour {
        redirect_calls: Some((302, secret_url(&cut.url()))),
        ..Behaviour::default()
    });
    let client = Client::connect("moved", &http(secret_url(&redirect.url())), opts()).unwrap();
    let err = echo(&client, "x", CallOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Redirect { .. }), "{err:?}");
    assert_clean("a redirect", &format!("{err} {err:?}"));
    client.close();
    // The real query still reaches the server.
    assert!(redirect
        .seen()
        .iter()
        .all(|r| r.path == "/mcp?apiKey=QUERY-SECRET"));

    // (The transport's own Debug: a unit test in transport/http.rs.)
}

#[test]
fn connecting_is_bounded_by_the_call_and_close_by_its_own_short_bound() {
    let server = TestHttp::start(Behaviour::default());
    let client = Client::connect("backlog", &http(server.url()), common::options()).unwrap();
    assert_eq!(echo(&client, "up", CallOptions::default()).unwrap(), "up");
    // Every connection gone, and a new one hangs in its handshake (a full accept queue).
    server.stop_accepting();
    server.drop_connections();
    let started = Instant::now();
    let err = client.ping(Duration::from_secs(1)).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // The connect phase alone used to take its own 10 s.
    assert!(took < Duration::from_secs(5), "ping(1 s) took {took:?}");
    let started = Instant::now();
    client.close();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "close took {took:?}");
}

#[test]
fn late_headers_and_a_trickling_body_stay_within_the_deadline() {
    let server = TestHttp::start(Behaviour {
        slow_head: Some(Duration::from_millis(2700)),
        ..Behaviour::default()
    });
    let client = Client::connect("slow", &http(server.url()), common::options()).unwrap();
    let started = Instant::now();
    let err = echo(&client, "x", CallOptions::timeout(Duration::from_secs(3))).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // Headers and body used to get a fresh 3 s each: about 5.7 s.
    assert!(
        took < Duration::from_millis(4500),
        "a 3 s call took {took:?}"
    );
    assert!(took >= Duration::from_secs(3), "ended early: {took:?}");
    client.close();
}

#[test]
fn a_silent_stream_with_an_event_store_ends_at_the_deadline_with_the_timeout() {
    let server = TestHttp::start(Behaviour {
        silent_calls: true,
        ..Behaviour::default()
    });
    let client = Client::connect("silent", &http(server.url()), common::options()).unwrap();
    for cancel in [None, Some(CancelToken::new())] {
        let (c, worker) = (client.clone(), cancel.is_some());
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let started = Instant::now();
            let options = CallOptions {
                timeout: Some(Duration::from_secs(3)),
                cancel,
                ..CallOptions::default()
            };
            let outcome = echo(&c, "x", options);
            let _ = tx.send((outcome, started.elapsed()));
        });
        // It used to resume with a GET that had no bound at all.
        let (outcome, took) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the call never returned");
        let err = outcome.unwrap_err();
        assert!(
            matches!(err, Error::Timeout { .. }),
            "worker={worker}: {err} after {took:?}"
        );
        assert!(took >= Duration::from_millis(2950), "early: {took:?}");
        assert!(took < Duration::from_secs(6), "late: {took:?}");
    }
    eventually("the streams were closed", Duration::from_secs(5), || {
        server.open_streams() == 0
    });
    client.close();
}

#[test]
fn calls_that_ended_stop_their_exchanges() {
    let server = TestHttp::start(Behaviour {
        silent_calls: true,
        ..Behaviour::default()
    });
    let client = Client::connect("ended", &http(server.url()), common::options()).unwrap();
    let (done, calls) = crossbeam_channel::unbounded();
    for i in 0..24 {
        let (c, done) = (client.clone(), done.clone());
        std::thread::spawn(move || {
            let token = CancelToken::new();
            let options = CallOptions {
                timeout: Some(Duration::from_millis(500)),
                // A third run on the caller's thread, a third on workers that time out, a
                // third on workers cancelled.
                cancel: (i % 3 != 0).then(|| token.clone()),
                ..CallOptions::default()
            };
            if i % 3 == 2 {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(100));
                    token.cancel();
                });
            }
            let _ = done.send(echo(&c, "x", options).unwrap_err());
        });
    }
    for _ in 0..24 {
        let err = calls
            .recv_timeout(Duration::from_secs(20))
            .expect("a call never returned");
        assert!(
            matches!(err, Error::Timeout { .. } | Error::Cancelled),
            "{err:?}"
        );
    }
    // Nothing reads on behalf of calls that are over.
    eventually("every stream was closed", Duration::from_secs(5), || {
        server.open_streams() == 0
    });
    assert!(client.closed_reason().is_none());
    client.close();
}

#[test]
fn a_cancel_ends_a_call_that_runs_on_its_callers_thread_at_once() {
    let server = TestHttp::start(Behaviour {
        silent_calls: true,
        ..Behaviour::default()
    });
    let client = Client::connect("cancelled", &http(server.url()), common::options()).unwrap();
    let token = CancelToken::new();
    let firing = token.clone();
    // Which threads exist while the call waits (the server holds it): no HTTP worker runs it
    // (a thread's name is cut to 15 bytes: `mcp-cancelled-h`).
    let names = std::thread::scope(|scope| {
        let fired = scope.spawn(|| {
            server.wait_for("tools/call");
            let names: Vec<String> = std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .map(|n| n.trim().to_owned())
                .collect();
            firing.cancel();
            names
        });
        let options = CallOptions::timeout(Duration::from_secs(60)).with_cancel(token);
        let started = Instant::now();
        let err = echo(&client, "x", options).unwrap_err();
        assert!(matches!(err, Error::Cancelled), "{err:?}");
        // Its 60 s timeout played no part.
        assert!(started.elapsed() < Duration::from_secs(20));
        fired.join().unwrap()
    });
    assert!(
        !names.iter().any(|n| n.starts_with("mcp-cancelled-h")),
        "{names:?}"
    );
    eventually(
        "the server heard of the cancel",
        Duration::from_secs(10),
        || {
            server
                .seen()
                .iter()
                .any(|r| r.rpc_method() == Some("notifications/cancelled"))
        },
    );
    eventually("its stream was closed", Duration::from_secs(5), || {
        server.open_streams() == 0
    });
    assert!(client.closed_reason().is_none());
    client.close();
}

#[test]
fn a_dead_server_ends_the_transport() {
    let mut server = TestHttp::start(Behaviour::default());
    let client = Client::connect("dead", &http(server.url()), common::options()).unwrap();
    assert_eq!(
        echo(&client, "alive", CallOptions::default()).unwrap(),
        "alive"
    );
    server.kill();
    let err = echo(&client, "x", CallOptions::default()).unwrap_err();
    assert!(matches!(err, Error::TransportClosed { .. }), "{err:?}");
    let reason = client
        .closed_reason()
        .expect("the connection counts as closed");
    assert!(reason.to_string().contains("refused"), "{reason}");
    let started = Instant::now();
    let err = echo(&client, "again", CallOptions::default()).unwrap_err();
    assert!(matches!(err, Error::TransportClosed { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_dead_server_is_noticed_by_the_get_stream() {
    let mut server = TestHttp::start(Behaviour {
        get_stream: true,
        ..Behaviour::default()
    });
    let opts = ConnectOptions {
        http: HttpOptions {
            default_retry: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
            ..HttpOptions::default()
        },
        ..common::options()
    };
    let client = Client::connect("gone", &http(server.url()), opts).unwrap();
    eventually("the GET stream is open", Duration::from_secs(10), || {
        server.seen().iter().any(|r| r.method == "GET")
    });
    server.kill();
    eventually("the death was noticed", Duration::from_secs(10), || {
        client.closed_reason().is_some()
    });
    let err = echo(&client, "x", CallOptions::default()).unwrap_err();
    assert!(matches!(err, Error::TransportClosed { .. }), "{err:?}");
}

struct Roots;

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
}

#[test]
fn resumptions_and_server_requests_stay_within_their_deadlines_under_load() {
    let busy = Arc::new(AtomicBool::new(true));
    let spinners: Vec<_> = (0..3)
        .map(|_| {
            let busy = Arc::clone(&busy);
            std::thread::spawn(move || {
                let mut n = 0u64;
                while busy.load(Ordering::Relaxed) {
                    n = n.wrapping_mul(31).wrapping_add(1);
                    std::hint::black_box(n);
                }
            })
        })
        .collect();
    struct Stop(Arc<AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Relaxed);
        }
    }
    let _stop = Stop(Arc::clone(&busy));

    let resuming = TestHttp::start(Behaviour {
        cut_every_call: true,
        ..Behaviour::default()
    });
    let asking = TestHttp::start(Behaviour {
        sse_replies: true,
        ask_roots_in_calls: true,
        ..Behaviour::default()
    });
    let opts = || ConnectOptions {
        handler: Arc::new(Roots),
        ..common::options()
    };
    let a = Client::connect("resume", &http(resuming.url()), opts()).unwrap();
    let b = Client::connect("ask", &http(asking.url()), opts()).unwrap();
    let timeout = Duration::from_secs(5);
    let margin = Duration::from_secs(5);
    let all = Instant::now();
    for i in 0..100 {
        for (client, kind) in [(&a, "resumption"), (&b, "server request")] {
            let message = format!("{kind} {i}");
            let options = CallOptions {
                timeout: Some(timeout),
                // Half on the caller's thread, half on workers.
                cancel: (i % 2 == 1).then(CancelToken::new),
                ..CallOptions::default()
            };
            let started = Instant::now();
            let outcome = echo(client, &message, options);
            let took = started.elapsed();
            assert!(took < timeout + margin, "{message} took {took:?}");
            match outcome {
                Ok(text) => assert_eq!(text, message),
                Err(e) => panic!("{message}: {e} after {took:?}"),
            }
        }
        assert!(
            all.elapsed() < Duration::from_secs(240),
            "200 exchanges took over 4 minutes"
        );
    }
    assert!(asking.server_requests() >= 100);
    drop(_stop);
    for s in spinners {
        s.join().unwrap();
    }
    a.close();
    b.close();
}

#[test]
fn a_connect_whose_bound_runs_out_in_the_era_probe_is_a_connect_timeout() {
    // The probe's own bound (5 s) is longer than the connect's: the connect timed out, and the
    // error says so with the bound the host set.
    let server = TestHttp::start(Behaviour {
        hang_discover: true,
        ..Behaviour::default()
    });
    let options = ConnectOptions {
        timeout: Duration::from_millis(300),
        ..common::options()
    };
    let err = Client::connect("silent-probe", &http(server.url()), options).unwrap_err();
    match &err {
        Error::ConnectTimeout { server, after, .. } => {
            assert_eq!(server, "silent-probe");
            assert_eq!(*after, Duration::from_millis(300));
        }
        other => panic!("unexpected {other:?}"),
    }
}
