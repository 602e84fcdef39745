use serde_json::{json, Value};

use super::*;

fn tool(name: &str, ui: Value) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"},
                                  "_meta": {"ui": ui}}))
    .unwrap()
}

fn bridge(options: AppHostOptions) -> AppBridge {
    let main = tool("show", json!({"resourceUri": "ui://s/app.html"}));
    let tools = [
        main.clone(),
        tool("refresh", json!({"visibility": ["app"]})),
        tool("secret", json!({"visibility": ["model"]})),
    ];
    let page = AppPage {
        uri: "ui://s/app.html".into(),
        html: "<html><head><title>x</title></head></html>".into(),
        ui: None,
    };
    AppBridge::new(&main, &page, &tools, options)
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn note(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": {}})
}

fn ready(options: AppHostOptions) -> AppBridge {
    let mut b = bridge(options);
    b.receive(&request(
        1,
        "ui/initialize",
        json!({"protocolVersion": "2026-01-26",
        "appInfo": {"name": "v", "version": "1"}, "appCapabilities": {}}),
    ));
    assert_eq!(
        b.receive(&note("ui/notifications/initialized")),
        Some(AppEvent::Ready)
    );
    b.take_messages();
    b
}

#[test]
fn initialize_is_answered_and_nothing_reaches_the_view_before_it_is_ready() {
    let mut b = bridge(AppHostOptions {
        open_links: true,
        ..AppHostOptions::default()
    });
    b.tool_input(json!({"a": 1}));
    b.tool_input(json!({"a": 2}));
    b.tool_result(json!({"content": []}));
    b.context_changed(serde_json::from_value(json!({"theme": "dark"})).unwrap());
    assert!(b.take_messages().is_empty());
    // Before ui/initialize, a request is refused; initialized before initialize is dropped.
    b.receive(&request(7, "tools/call", json!({"name": "show"})));
    assert_eq!(b.take_messages()[0]["error"]["code"], -32600);
    assert_eq!(b.receive(&note("ui/notifications/initialized")), None);

    b.receive(&request(
        1,
        "ui/initialize",
        json!({"protocolVersion": "2026-01-26",
        "appInfo": {"name": "v", "version": "1"}, "appCapabilities": {}}),
    ));
    let answer = b.take_messages();
    assert_eq!(answer.len(), 1);
    let result = &answer[0]["result"];
    assert_eq!(result["protocolVersion"], APPS_PROTOCOL_VERSION);
    assert_eq!(result["hostCapabilities"]["openLinks"], json!({}));
    assert!(result["hostCapabilities"].get("message").is_none());
    assert_eq!(result["hostContext"]["toolInfo"]["tool"]["name"], "show");
    assert_eq!(result["hostContext"]["theme"], "dark");
    assert!(!b.is_ready());

    assert_eq!(
        b.receive(&note("ui/notifications/initialized")),
        Some(AppEvent::Ready)
    );
    let held = b.take_messages();
    let methods: Vec<&str> = held.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "ui/notifications/tool-input",
            "ui/notifications/tool-result",
            "ui/notifications/host-context-changed"
        ]
    );
    assert_eq!(held[0]["params"]["arguments"]["a"], 2, "the later input");
    b.tool_input_partial(json!({"b": 1}));
    assert_eq!(
        b.take_messages()[0]["method"],
        "ui/notifications/tool-input-partial"
    );
}

#[test]
fn a_view_calls_only_its_servers_tools_that_are_for_apps() {
    let mut b = ready(AppHostOptions::default());
    let Some(AppEvent::CallTool {
        id,
        name,
        arguments,
    }) = b.receive(&request(2, "tools/call", json!({"name": "refresh"})))
    else {
        panic!("an app-only tool is the App's to call")
    };
    assert_eq!((name.as_str(), arguments), ("refresh", json!({})));
    assert!(b.take_messages().is_empty());
    b.answer(id, Ok(json!({"content": [{"type": "text", "text": "ok"}]})));
    b.answer(id, Ok(json!({})));
    let answers = b.take_messages();
    assert_eq!(answers.len(), 1, "one answer a request");
    assert_eq!(answers[0]["result"]["content"][0]["text"], "ok");

    for (name, code) in [("secret", -32602), ("elsewhere", -32602)] {
        assert_eq!(
            b.receive(&request(3, "tools/call", json!({"name": name}))),
            None
        );
        assert_eq!(b.take_messages()[0]["error"]["code"], code, "{name}");
    }
    b.receive(&request(
        4,
        "tools/call",
        json!({"name": "show", "arguments": [1]}),
    ));
    assert_eq!(b.take_messages()[0]["error"]["code"], -32602);

    // tools/list: what an App may call.
    b.receive(&request(5, "tools/list", json!({})));
    let listed = b.take_messages();
    let names: Vec<&str> = listed[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["show", "refresh"]);

    // The server's list changes: the bridge follows.
    b.set_server_tools(&[tool("show", json!({"visibility": ["model"]}))]);
    b.receive(&request(6, "tools/call", json!({"name": "show"})));
    assert_eq!(b.take_messages()[0]["error"]["code"], -32602);
}

#[test]
fn requests_the_host_did_not_enable_are_not_found_and_links_are_web_links() {
    let mut b = ready(AppHostOptions::default());
    for method in [
        "ui/open-link",
        "ui/message",
        "ui/update-model-context",
        "ui/download-file",
        "sampling/createMessage",
        "prompts/list",
    ] {
        assert_eq!(b.receive(&request(2, method, json!({}))), None);
        assert_eq!(b.take_messages()[0]["error"]["code"], -32601, "{method}");
    }
    let mut b = ready(AppHostOptions {
        open_links: true,
        accept_messages: true,
        ..AppHostOptions::default()
    });
    for bad in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,x",
        "https://a b",
    ] {
        assert_eq!(
            b.receive(&request(2, "ui/open-link", json!({"url": bad}))),
            None
        );
        assert_eq!(b.take_messages()[0]["result"]["isError"], true, "{bad}");
    }
    assert!(matches!(
        b.receive(&request(3, "ui/open-link", json!({"url": "https://example.com/x"}))),
        Some(AppEvent::OpenLink { url, .. }) if url == "https://example.com/x"
    ));
    assert!(matches!(
        b.receive(&request(4, "ui/message",
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}))),
        Some(AppEvent::Message { content, .. }) if content.len() == 1
    ));
}

#[test]
fn pings_notifications_cancels_and_bounds() {
    let mut b = ready(AppHostOptions::default());
    b.receive(&request(2, "ping", json!({})));
    assert_eq!(b.take_messages()[0]["result"], json!({}));
    assert_eq!(
        b.receive(
            &json!({"jsonrpc": "2.0", "method": "ui/notifications/size-changed",
                          "params": {"height": 240}})
        ),
        Some(AppEvent::SizeChanged {
            width: None,
            height: Some(240.0)
        })
    );
    assert!(matches!(
        b.receive(&json!({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "hello"}})),
        Some(AppEvent::Log { level, data, .. }) if level == "info" && data == "hello"
    ));
    // A cancelled request's answer is dropped.
    let Some(AppEvent::CallTool { id, .. }) =
        b.receive(&request(9, "tools/call", json!({"name": "show"})))
    else {
        panic!()
    };
    assert_eq!(
        b.receive(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 9}})
        ),
        Some(AppEvent::Cancelled { id })
    );
    b.answer(id, Ok(json!({})));
    assert!(b.take_messages().is_empty());
    // A duplicate id in flight is refused.
    b.receive(&request(10, "tools/call", json!({"name": "show"})));
    b.receive(&request(10, "tools/call", json!({"name": "show"})));
    assert_eq!(b.take_messages()[0]["error"]["code"], -32600);
    // At most APP_MAX_PENDING in flight.
    for i in 100..(100 + APP_MAX_PENDING as u64) {
        b.receive(&request(i, "tools/call", json!({"name": "show"})));
    }
    assert_eq!(b.take_messages().len(), 1, "the one over the bound");
    // Malformed input changes nothing.
    for bad in [
        json!(1),
        json!({"id": 1, "method": "ping"}),
        json!({"jsonrpc": "2.0",
                "id": {"x": 1}, "method": "ping"}),
        json!({"jsonrpc": "2.0"}),
    ] {
        assert_eq!(b.receive(&bad), None);
    }
    assert!(b.take_messages().is_empty());
}

#[test]
fn display_modes_and_teardown() {
    let mut b = bridge(AppHostOptions {
        display_modes: vec!["inline".into(), "fullscreen".into()],
        ..AppHostOptions::default()
    });
    b.receive(&request(
        1,
        "ui/initialize",
        json!({"protocolVersion": "2026-01-26",
        "appInfo": {"name": "v", "version": "1"},
        "appCapabilities": {"availableDisplayModes": ["inline", "fullscreen"]}}),
    ));
    b.receive(&note("ui/notifications/initialized"));
    b.take_messages();
    assert_eq!(
        b.receive(&request(
            2,
            "ui/request-display-mode",
            json!({"mode": "fullscreen"})
        )),
        Some(AppEvent::DisplayMode("fullscreen".into()))
    );
    assert_eq!(b.take_messages()[0]["result"]["mode"], "fullscreen");
    assert_eq!(
        b.receive(&request(
            3,
            "ui/request-display-mode",
            json!({"mode": "pip"})
        )),
        None
    );
    assert_eq!(b.take_messages()[0]["result"]["mode"], "fullscreen");

    assert_eq!(
        b.receive(&note("ui/notifications/request-teardown")),
        Some(AppEvent::RequestTeardown)
    );
    assert!(b.teardown());
    let asked = b.take_messages();
    assert_eq!(asked[0]["method"], "ui/resource-teardown");
    let id = asked[0]["id"].clone();
    assert_eq!(
        b.receive(&json!({"jsonrpc": "2.0", "id": id, "result": {}})),
        Some(AppEvent::TornDown)
    );
    assert!(!b.teardown());
}

#[test]
fn the_sandbox_proxy_gets_the_page_with_its_policy() {
    let mut b = bridge(AppHostOptions::default());
    b.receive(&note("ui/notifications/sandbox-proxy-ready"));
    let sent = b.take_messages();
    assert_eq!(sent[0]["method"], "ui/notifications/sandbox-resource-ready");
    let html = sent[0]["params"]["html"].as_str().unwrap();
    assert!(html.starts_with("<meta http-equiv=\"Content-Security-Policy\""));
    assert_eq!(sent[0]["params"]["sandbox"], VIEW_SANDBOX);
    assert!(APP_SANDBOX_PROXY_HTML.contains("ui/notifications/sandbox-proxy-ready"));
}

#[test]
fn a_view_that_initializes_again_is_shown_its_input_and_result_again() {
    let mut b = bridge(AppHostOptions::default());
    b.tool_input(json!({"a": 1}));
    b.tool_result(json!({"content": []}));
    let init = || {
        request(
            1,
            "ui/initialize",
            json!({"protocolVersion": "2026-01-26",
            "appInfo": {"name": "v", "version": "1"}, "appCapabilities": {}}),
        )
    };
    b.receive(&init());
    b.receive(&note("ui/notifications/initialized"));
    assert_eq!(b.take_messages().len(), 3);
    // A call in flight when it reloads: its answer is dropped.
    let Some(AppEvent::CallTool { id, .. }) =
        b.receive(&request(2, "tools/call", json!({"name": "show"})))
    else {
        panic!()
    };
    b.receive(&init());
    assert_eq!(
        b.take_messages().len(),
        1,
        "the answer only; the rest waits"
    );
    b.answer(id, Ok(json!({})));
    assert!(
        b.take_messages().is_empty(),
        "the old page's answer is dropped"
    );
    assert_eq!(
        b.receive(&note("ui/notifications/initialized")),
        Some(AppEvent::Ready)
    );
    let again: Vec<Value> = b.take_messages();
    assert_eq!(again[0]["method"], "ui/notifications/tool-input");
    assert_eq!(again[1]["method"], "ui/notifications/tool-result");
}

#[test]
fn what_a_view_says_is_checked() {
    let mut b = ready(AppHostOptions {
        accept_messages: true,
        ..AppHostOptions::default()
    });
    b.receive(&request(
        2,
        "ui/message",
        json!({"role": "assistant", "content": []}),
    ));
    assert_eq!(b.take_messages()[0]["error"]["code"], -32602);
    assert!(matches!(
        b.receive(&json!({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info\u{1b}[31m", "data": "x"}})),
        Some(AppEvent::Log { level, .. }) if level == "info"
    ));
    // Once it is being torn down, it asks nothing more.
    assert!(b.teardown());
    b.take_messages();
    b.receive(&request(3, "tools/call", json!({"name": "show"})));
    assert_eq!(b.take_messages()[0]["error"]["code"], -32600);
}

#[test]
fn a_new_display_mode_is_announced_as_a_context_change() {
    let mut b = ready(AppHostOptions {
        display_modes: vec!["inline".into(), "fullscreen".into()],
        ..AppHostOptions::default()
    });
    b.receive(&request(
        2,
        "ui/request-display-mode",
        json!({"mode": "fullscreen"}),
    ));
    let sent = b.take_messages();
    assert_eq!(sent[0]["result"]["mode"], "fullscreen");
    assert_eq!(sent[1]["method"], "ui/notifications/host-context-changed");
    assert_eq!(sent[1]["params"]["displayMode"], "fullscreen");
}
