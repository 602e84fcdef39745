//! `mcp app` as a host, spoken to over HTTP the way its page speaks (no browser: that is
//! `apps_browser.rs`): the pages answer only their own host name and the run's token; the
//! View's messages go through the bridge (initialize, the tool's input and result held until it
//! is initialized, tool calls to its server, a message printed, a teardown that ends the
//! command); and `mcp info` shows a server's Apps and the extensions agreed.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn setup(name: &str) -> (PathBuf, PathBuf) {
    let root = common::temp_dir(&format!("cli-app-{name}"));
    let cfg = root.join("servers.json");
    let servers =
        json!({"mcpServers": {"clock": {"command": common::server_path(), "args": ["--app"]}}});
    std::fs::write(&cfg, servers.to_string()).unwrap();
    (root, cfg)
}

fn mcp(root: &std::path::Path, cfg: &std::path::Path) -> Command {
    let mut cmd = common::cli(&root.join("home"));
    cmd.current_dir(root)
        .arg("--config")
        .arg(cfg)
        .arg("--no-project-config");
    cmd
}

/// One HTTP request to 127.0.0.1; the status and body.
fn http(at: &str, host: &str, head: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(at).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (method, path) = head.split_once(' ').unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    read_response(stream)
}

fn http_with(at: &str, head: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(at).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (method, path) = head.split_once(' ').unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {at}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let (status, _, body) = read_response(stream);
    (status, body)
}

fn read_response(stream: TcpStream) -> (u16, String, String) {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut body = String::new();
    let _ = reader.read_to_string(&mut body);
    (status, head, body)
}

/// `mcp app show_clock --no-open`, and the URL it printed.
fn start(root: &std::path::Path, cfg: &std::path::Path) -> (Child, String) {
    let mut child = mcp(root, cfg)
        .args(["app", "--no-open", "show_clock"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
    (child, line.trim().to_owned())
}

/// The page's relay, as its script speaks it: the run's token, and the page it is.
struct Page {
    at: String,
    token: String,
    view: String,
}

impl Page {
    /// Loads the host page (a new View); its HTML.
    fn load(at: &str, token: &str) -> (Page, String) {
        let (status, _, html) = http(at, at, &format!("GET /?t={token}"), "");
        assert_eq!(status, 200);
        let view = between(&html, "const view = \"", "\"");
        let page = Page {
            at: at.to_owned(),
            token: token.to_owned(),
            view,
        };
        (page, html)
    }

    fn post(&self, message: Value) -> u16 {
        let headers = [
            ("X-Mcp-App", self.token.as_str()),
            ("X-Mcp-App-Page", &self.view),
        ];
        http_with(&self.at, "POST /from-view", &headers, &message.to_string()).0
    }

    fn send(&self, message: Value) {
        assert_eq!(self.post(message), 200);
    }

    /// One request for messages: its status and the messages.
    fn poll(&self) -> (u16, Vec<Value>) {
        let headers = [
            ("X-Mcp-App", self.token.as_str()),
            ("X-Mcp-App-Page", &self.view),
        ];
        let (status, body) = http_with(&self.at, "GET /to-view", &headers, "");
        (status, serde_json::from_str(&body).unwrap_or_default())
    }

    /// Messages for the View until `fact` holds of one (bounded).
    fn until(&self, what: &str, fact: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let (status, messages) = self.poll();
            assert_eq!(status, 200, "{what}");
            if let Some(m) = messages.into_iter().find(&fact) {
                return m;
            }
        }
        panic!("no message for the View: {what}");
    }

    fn initialize(&self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
            "protocolVersion": "2026-01-26", "appInfo": {"name": "t", "version": "1"},
            "appCapabilities": {}}}),
        );
    }
}

fn between(text: &str, start: &str, end: &str) -> String {
    text.split(start)
        .nth(1)
        .and_then(|s| s.split(end).next())
        .unwrap_or_else(|| panic!("no {start:?} in the page"))
        .to_owned()
}

#[test]
fn the_pages_answer_only_their_own_host_and_token_and_the_bridge_decides() {
    let (root, cfg) = setup("relay");
    let (mut child, url) = start(&root, &cfg);
    let rest = url.strip_prefix("http://").unwrap();
    let (at, query) = rest.split_once("/?t=").unwrap();

    // Another host name (DNS rebinding), a wrong token, no token on the relay, another
    // method (a preflight): refused.
    let evil = http(at, "evil.example:80", &format!("GET /?t={query}"), "");
    assert_eq!(evil.0, 403);
    assert_eq!(http(at, at, "GET /?t=guess", "").0, 403);
    assert_eq!(http(at, at, "POST /from-view", "{}").0, 403);
    assert_eq!(http(at, at, "GET /to-view", "").0, 403);
    assert_eq!(http(at, at, "OPTIONS /from-view", "").0, 405);
    let wrong = [("X-Mcp-App", "guess"), ("X-Mcp-App-Page", "1")];
    assert_eq!(http_with(at, "POST /from-view", &wrong, "{}").0, 403);

    // The host page: its own policy, and the sandbox proxy on another origin.
    let (_, head, _) = http(at, at, &format!("GET /?t={query}"), "");
    assert!(
        head.contains("Content-Security-Policy: default-src 'none'"),
        "{head}"
    );
    let (page, html) = Page::load(at, query);
    let sandbox_at = between(&html, "const sandboxOrigin = \"http://", "\"");
    assert_ne!(sandbox_at, at);
    let (status, head, proxy) = http(&sandbox_at, &sandbox_at, "GET /sandbox", "");
    assert_eq!(status, 200);
    assert!(proxy.contains("sandbox-proxy-ready"));
    // The page's own CSP (connect-src from its _meta.ui.csp) as the proxy's header, which
    // only the host page may frame.
    assert!(
        head.contains("connect-src https://api.example.com"),
        "{head}"
    );
    assert!(
        head.contains(&format!("frame-ancestors http://{at} ")),
        "{head}"
    );
    assert_eq!(http(&sandbox_at, "evil.example", "GET /sandbox", "").0, 403);

    // The sandbox proxy gets the page, its policy written into it.
    page.send(
        json!({"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}),
    );
    let ready = page.until("the page", |m| {
        m["method"] == "ui/notifications/sandbox-resource-ready"
    });
    let view_html = ready["params"]["html"].as_str().unwrap();
    assert!(view_html.contains("http-equiv=\"Content-Security-Policy\""));
    assert!(view_html.contains("<p>clock</p>"));

    // Initialize: answered (at once: the answer is waiting when the post returns); the tool's
    // input and result only after `initialized`.
    page.initialize();
    let (status, first) = page.poll();
    assert_eq!(status, 200);
    assert_eq!(first.len(), 1, "the answer alone: {first:?}");
    assert_eq!(first[0]["id"], 1);
    assert_eq!(first[0]["result"]["hostInfo"]["name"], "mcp");
    assert_eq!(
        first[0]["result"]["hostContext"]["toolInfo"]["tool"]["name"],
        "show_clock"
    );
    page.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}));
    let result = page.until("the tool's result", |m| {
        m["method"] == "ui/notifications/tool-result"
    });
    assert_eq!(result["params"]["content"][0]["text"], "show_clock called");

    // The App calls a tool only it may call: it reaches the server.
    page.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "clock_tick", "arguments": {}}}));
    let tick = page.until("clock_tick's answer", |m| m["id"] == 2);
    assert_eq!(
        tick["result"]["content"][0]["text"], "clock_tick called",
        "{tick}"
    );
    page.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "elsewhere"}}));
    let refused = page.until("a refusal", |m| m["id"] == 3);
    assert_eq!(refused["error"]["code"], -32602);

    // A log line: no escape reaches the terminal, whatever the level says.
    page.send(
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "warning\u{1b}]0;x\u{7}", "data": "tick\u{1b}[2J"}}),
    );

    // A message for the conversation: the command's output.
    page.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "ui/message", "params": {
        "role": "user", "content": [{"type": "text", "text": "hello from the App\u{1b}[31m"}]}}),
    );
    assert_eq!(
        page.until("the message's answer", |m| m["id"] == 4)["result"],
        json!({})
    );

    // The App asks to be closed: asked to clean up, it answers, and the command ends.
    page.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/request-teardown"}));
    let teardown = page.until("the teardown", |m| m["method"] == "ui/resource-teardown");
    page.send(json!({"jsonrpc": "2.0", "id": teardown["id"], "result": {}}));
    let out = wait_output(&mut child);
    let stdout = String::from_utf8_lossy(&out.0);
    let stderr = String::from_utf8_lossy(&out.1);
    assert_eq!(out.2, Some(0), "{stderr}");
    assert!(stdout.contains("hello from the App[31m"), "{stdout:?}");
    assert!(stderr.contains("the App logs [info] tick[2J"), "{stderr:?}");
    assert!(
        !stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'),
        "no escape reaches the terminal"
    );
    assert!(stderr.contains("the App calls clock_tick"), "{stderr}");
}

#[test]
fn a_reloaded_page_is_a_new_view_and_the_old_one_is_told_it_is_gone() {
    let (root, cfg) = setup("reload");
    let (mut child, url) = start(&root, &cfg);
    let rest = url.strip_prefix("http://").unwrap();
    let (at, token) = rest.split_once("/?t=").unwrap();
    let (old, _) = Page::load(at, token);
    old.initialize();
    old.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}));
    old.until("the old page's result", |m| {
        m["method"] == "ui/notifications/tool-result"
    });
    // An old page's request for messages, waiting when the page is reloaded, ends with 410.
    let waiting = {
        let (at, token, view) = (old.at.clone(), old.token.clone(), old.view.clone());
        std::thread::spawn(move || {
            let headers = [
                ("X-Mcp-App", token.as_str()),
                ("X-Mcp-App-Page", view.as_str()),
            ];
            http_with(&at, "GET /to-view", &headers, "").0
        })
    };
    let (new, _) = Page::load(at, token);
    assert_ne!(new.view, old.view);
    assert_eq!(waiting.join().unwrap(), 410);
    assert_eq!(old.poll().0, 410);
    let teardown = json!({"jsonrpc": "2.0", "method": "ui/notifications/request-teardown"});
    assert_eq!(old.post(teardown.clone()), 410);
    // The new page is shown the tool's input and result again, once initialized.
    new.initialize();
    new.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}));
    let result = new.until("the new page's result", |m| {
        m["method"] == "ui/notifications/tool-result"
    });
    assert_eq!(result["params"]["content"][0]["text"], "show_clock called");
    new.send(teardown);
    let asked = new.until("the teardown", |m| m["method"] == "ui/resource-teardown");
    new.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {}}));
    assert_eq!(wait_output(&mut child).2, Some(0));
}

fn wait_output(child: &mut Child) -> (Vec<u8>, Vec<u8>, Option<i32>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = Vec::new();
            let mut err = Vec::new();
            child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
            child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
            return (out, err, status.code());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mcp app did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_tool_without_an_app_is_a_usage_error_and_info_shows_the_apps() {
    let (root, cfg) = setup("info");
    let out = mcp(&root, &cfg)
        .args(["app", "--no-open", "pid"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pid has no App"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");

    let out = mcp(&root, &cfg).args(["info", "clock"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("app:          show_clock -> ui://clock/app.html\n"),
        "{text}"
    );
    assert!(
        text.contains("app:          clock_tick -> ui://clock/app.html (for its App only)"),
        "{text}"
    );
    assert!(
        text.contains("io.modelcontextprotocol/ui  agreed"),
        "{text}"
    );
    let out = mcp(&root, &cfg)
        .args(["--json", "info", "clock"])
        .output()
        .unwrap();
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ui = info["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "io.modelcontextprotocol/ui")
        .unwrap();
    assert_eq!(ui["agreed"], true);
    assert_eq!(ui["client"]["mimeTypes"][0], "text/html;profile=mcp-app");
    assert_eq!(info["apps"].as_array().unwrap().len(), 2);
}
