//! `mcp app TOOL [ARGS]`: the CLI as an MCP Apps host. Calls the tool, serves a page on
//! 127.0.0.1 that renders its App in the sandbox proxy (on a second port: an origin of its
//! own) and relays the View's messages to the library's [`AppBridge`], which decides; opens the
//! browser (`--no-open`: prints the URL only). The App's tool calls and resource reads go to
//! its server; its messages (`ui/message`) are printed on stdout; its logs on stderr.
//!
//! Runs until the App asks to be closed, the page has been gone for [`GONE_AFTER`] (or no page
//! came within [`NO_PAGE_AFTER`]), or a signal. The pages answer only requests that name
//! `127.0.0.1:<port>` as their host (no DNS rebinding) and, for the relay, carry the run's
//! token in a header (which no other site's page can send without a preflight we refuse).

use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::client::AppPage;
use mcp_runtime::host::{AppBridge, AppHostOptions, AppRequest, APP_SANDBOX_PROXY_HTML};
use mcp_runtime::protocol::Tool;
use mcp_runtime::Client;
use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};

use crate::app_http::{serve, Request, Response};
use crate::args::Args;
use crate::servers::{owners_of, start_with};

/// How long a page may be gone (no request for messages) before the command ends.
const GONE_AFTER: Duration = Duration::from_secs(10);
/// How long the command waits for the first page.
const NO_PAGE_AFTER: Duration = Duration::from_secs(600);
/// How long a request for messages waits for one.
const POLL_WAIT: Duration = Duration::from_secs(20);
/// How long a View has to clean up when it asked to be closed.
const TEARDOWN_WAIT: Duration = Duration::from_secs(5);

const HOST_PAGE: &str = include_str!("app_page.html");

/// What the pages' threads and the command's share.
struct Shared {
    bridge: Mutex<AppBridge>,
    wake: Condvar,
    /// Requests for messages in flight, and when the last one began or ended.
    polls: Mutex<(usize, Option<Instant>)>,
    closed: AtomicBool,
    requests: crossbeam_channel::Sender<AppRequest>,
    /// For a reload: the bridge made anew with the tool's input and result.
    fresh: Box<dyn Fn() -> AppBridge + Send + Sync>,
}

/// Runs the command; the exit status.
pub fn run(
    args: &Args,
    project: &Path,
    name: &str,
    words: &[String],
    open: bool,
) -> Result<u8, String> {
    let mut session = start_with(args, project, |configs, cache| {
        owners_of(name, configs, cache)
    })?;
    if crate::call::find(&session, name).is_err() {
        session.connect_all();
    }
    // A tool known from the cache may be ahead of its server: the App needs the server itself.
    crate::servers::wait_for_outcomes(&session.manager);
    let code = host(&session, name, words, open);
    session.manager.disconnect_all();
    code
}

fn host(
    session: &crate::servers::Session,
    name: &str,
    words: &[String],
    open: bool,
) -> Result<u8, String> {
    let loaded = crate::call::find(session, name)?;
    let (Some((server, _)), Some(tool)) =
        (loaded.tool.mcp_identity(), loaded.tool.mcp_definition())
    else {
        return Err(format!("{name} is not an MCP server's tool"));
    };
    let Some(uri) = tool.ui().and_then(|ui| ui.resource_uri) else {
        return Err(format!(
            "{name} has no App (its definition names no ui:// resource)"
        ));
    };
    let client = session
        .manager
        .client(server)
        .ok_or_else(|| format!("{server} is not connected"))?;
    let arguments = crate::host::arguments(words, Some(loaded.tool.parameters()))?;
    let failed = |e: mcp_runtime::Error| {
        eprintln!("mcp: {server}: {e}");
        Ok(crate::failure::classify(&e).1)
    };
    let page = match client.read_app(&uri) {
        Ok(page) => page,
        Err(e) => return failed(e),
    };
    let tools = match client.list_tools() {
        Ok(tools) => tools,
        Err(e) => return failed(e),
    };
    let (result, call_failed) = match client.call_tool(&tool.name, arguments.clone()) {
        Ok(result) => (serde_json::to_value(&result).unwrap_or(Value::Null), false),
        // The App is shown the failure as the tool's (error) result.
        Err(e) => {
            eprintln!("mcp: {}: {e}", loaded.tool.name());
            let text = e.to_string();
            (
                json!({"content": [{"type": "text", "text": text}], "isError": true}),
                true,
            )
        }
    };
    let options = AppHostOptions {
        host_name: "mcp".into(),
        open_links: true,
        messages: true,
        model_context: true,
        permissions: vec!["clipboardWrite".into()],
        ..AppHostOptions::default()
    };
    let fresh = {
        let (tool, page, tools) = (tool.clone(), Arc::clone(&page), tools.clone());
        let (arguments, result) = (arguments.clone(), result.clone());
        move || {
            let mut bridge = AppBridge::new(&tool, &page, &tools, options.clone());
            bridge.tool_input(arguments.clone());
            bridge.tool_result(result.clone());
            bridge
        }
    };
    let (tx, rx) = crossbeam_channel::unbounded();
    let shared = Arc::new(Shared {
        bridge: Mutex::new(fresh()),
        wake: Condvar::new(),
        polls: Mutex::new((0, None)),
        closed: AtomicBool::new(false),
        requests: tx,
        fresh: Box::new(fresh),
    });
    let url = match start_pages(&shared, tool, &page, loaded.tool.name()) {
        Ok(url) => url,
        Err(e) => return Err(format!("cannot serve the App's page: {e}")),
    };
    outln!("{url}");
    crate::output::flush();
    eprintln!(
        "mcp: the App of {} is at {url} (Ctrl-C to stop)",
        loaded.tool.name()
    );
    if open {
        if let Err(e) = mcp_runtime::auth::BrowserAuthorizer::new().open(&url) {
            eprintln!("mcp: {e}; open {url} yourself");
        }
    }
    let code = relay(&shared, &client, &rx, open);
    shared.closed.store(true, Ordering::SeqCst);
    shared.wake.notify_all();
    Ok(if call_failed { code.max(1) } else { code })
}

/// Serves the host page and the sandbox proxy, each on a port of its own; the host page's
/// URL.
fn start_pages(
    shared: &Arc<Shared>,
    tool: &Tool,
    page: &AppPage,
    title: &str,
) -> std::io::Result<String> {
    let host_listener = TcpListener::bind("127.0.0.1:0")?;
    let sandbox_listener = TcpListener::bind("127.0.0.1:0")?;
    let host_at = format!("127.0.0.1:{}", host_listener.local_addr()?.port());
    let sandbox_at = format!("127.0.0.1:{}", sandbox_listener.local_addr()?.port());
    let token = token();
    let sandbox = shared.bridge.lock().sandbox();
    let allow = if sandbox.allow.is_empty() {
        String::new()
    } else {
        format!("frame.setAttribute(\"allow\", {});", json!(sandbox.allow))
    };
    let title = html_text(&format!(
        "{title}{}",
        tool.title
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default()
    ));
    // The title (the server's words) goes in last: nothing in it is taken for a placeholder.
    let page_html = HOST_PAGE
        .replace("{{TOKEN}}", &token)
        .replace("{{SANDBOX_ORIGIN}}", &format!("http://{sandbox_at}"))
        .replace("{{ALLOW}}", &allow)
        .replace("{{TITLE}}", &title);
    log::info!(
        "the App's page {} is framed with the policy {}",
        page.uri,
        sandbox.csp
    );
    let host_policy = format!(
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
         connect-src 'self'; frame-src http://{sandbox_at}; base-uri 'none'; form-action 'none'"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let host_handler = {
        let (shared, host_at, token) = (Arc::clone(shared), host_at.clone(), token.clone());
        move |r: Request| host_request(&shared, &host_at, &token, &page_html, &host_policy, r)
    };
    let sandbox_handler = {
        let (sandbox_at, csp) = (sandbox_at.clone(), sandbox.csp.clone());
        move |r: Request| {
            if r.header("host") != Some(sandbox_at.as_str()) {
                return Response::text(403, "wrong host");
            }
            match (r.method.as_str(), r.path.as_str()) {
                ("GET", "/sandbox") => {
                    Response::new(200, "text/html; charset=utf-8", APP_SANDBOX_PROXY_HTML)
                        .with("Content-Security-Policy", csp.clone())
                }
                _ => Response::text(404, "not found"),
            }
        }
    };
    serve(host_listener, Arc::clone(&stop), Arc::new(host_handler))?;
    serve(
        sandbox_listener,
        Arc::clone(&stop),
        Arc::new(sandbox_handler),
    )?;
    // The listeners' threads end with the process (the command's last act); `stop` is set when
    // the relay ends so they stop accepting first.
    let closing = Arc::clone(shared);
    std::thread::Builder::new()
        .name("mcp-app-stop".into())
        .spawn(move || loop {
            if closing.closed.load(Ordering::SeqCst) {
                stop.store(true, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        })?;
    Ok(format!("http://{host_at}/?t={token}"))
}

fn host_request(
    shared: &Shared,
    host_at: &str,
    token: &str,
    page_html: &str,
    policy: &str,
    r: Request,
) -> Response {
    if r.header("host") != Some(host_at) {
        return Response::text(403, "wrong host");
    }
    let from_page = r.header("x-mcp-app") == Some(token);
    match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/") if r.param("t") == Some(token) => {
            // A new page (or a reload): a View of its own, with the tool's input and result.
            *shared.bridge.lock() = (shared.fresh)();
            Response::new(200, "text/html; charset=utf-8", page_html)
                .with("Content-Security-Policy", policy)
                .with("Referrer-Policy", "origin")
        }
        ("POST", "/from-view") if from_page => {
            let Ok(message) = serde_json::from_slice::<Value>(&r.body) else {
                return Response::text(400, "not JSON");
            };
            let request = shared.bridge.lock().receive(&message);
            shared.wake.notify_all();
            if let Some(request) = request {
                let _ = shared.requests.send(request);
            }
            Response::new(200, "application/json", "{}")
        }
        ("GET", "/to-view") if from_page => poll(shared),
        ("GET", _) | ("POST", _) => Response::text(403, "not for this page"),
        _ => Response::text(405, "method not allowed"),
    }
}

/// Waits (at most [`POLL_WAIT`]) for messages for the View; 410 once the command ends.
fn poll(shared: &Shared) -> Response {
    let mark = |delta: isize| {
        let mut polls = shared.polls.lock();
        polls.0 = polls.0.saturating_add_signed(delta);
        polls.1 = Some(Instant::now());
    };
    mark(1);
    let deadline = Instant::now() + POLL_WAIT;
    let messages = {
        let mut bridge = shared.bridge.lock();
        loop {
            let messages = bridge.take_messages();
            if !messages.is_empty() || shared.closed.load(Ordering::SeqCst) {
                break messages;
            }
            if shared.wake.wait_until(&mut bridge, deadline).timed_out() {
                break Vec::new();
            }
        }
    };
    mark(-1);
    if messages.is_empty() && shared.closed.load(Ordering::SeqCst) {
        return Response::text(410, "the App was closed");
    }
    Response::new(200, "application/json", Value::Array(messages).to_string())
}

/// Acts on the View's requests until it is closed or gone; the exit status.
fn relay(
    shared: &Shared,
    client: &Client,
    requests: &crossbeam_channel::Receiver<AppRequest>,
    opens_links: bool,
) -> u8 {
    let started = Instant::now();
    let mut closing: Option<Instant> = None;
    loop {
        if crate::signals::interrupted() {
            return 130;
        }
        if closing.is_some_and(|at| at.elapsed() > TEARDOWN_WAIT) {
            return 0;
        }
        let (in_flight, last) = *shared.polls.lock();
        match last {
            None if started.elapsed() > NO_PAGE_AFTER => {
                eprintln!("mcp: no page opened the App; stopping");
                return 1;
            }
            Some(at) if in_flight == 0 && at.elapsed() > GONE_AFTER => {
                eprintln!("mcp: the App's page is gone; stopping");
                return 0;
            }
            _ => {}
        }
        let Ok(request) = requests.recv_timeout(Duration::from_millis(250)) else {
            continue;
        };
        let answer = |id, outcome| {
            shared.bridge.lock().answer(&id, outcome);
            shared.wake.notify_all();
        };
        match request {
            AppRequest::Ready => eprintln!("mcp: the App is showing"),
            AppRequest::CallTool {
                id,
                name,
                arguments,
            } => {
                eprintln!("mcp: the App calls {name}");
                let outcome = client
                    .call_tool(&name, arguments)
                    .map(|r| serde_json::to_value(&r).unwrap_or(Value::Null))
                    .map_err(|e| e.to_string());
                answer(id, outcome);
            }
            AppRequest::ReadResource { id, uri } => {
                let outcome = client
                    .read_resource(&uri)
                    .map(|r| serde_json::to_value(&r).unwrap_or(Value::Null))
                    .map_err(|e| e.to_string());
                answer(id, outcome);
            }
            AppRequest::OpenLink { id, url } => {
                let opened = opens_links
                    && mcp_runtime::auth::BrowserAuthorizer::new()
                        .open(&url)
                        .is_ok();
                eprintln!(
                    "mcp: the App {} {url}",
                    if opened { "opened" } else { "asks to open" }
                );
                answer(
                    id,
                    Ok(if opened {
                        json!({})
                    } else {
                        json!({"isError": true})
                    }),
                );
            }
            AppRequest::Message { id, content, .. } => {
                for block in &content {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        // The App's words: no control character reaches the terminal.
                        let text: String = text
                            .chars()
                            .filter(|c| *c == '\n' || !c.is_control())
                            .collect();
                        outln!("{}", text.trim_end());
                    }
                }
                crate::output::flush();
                answer(id, Ok(json!({})));
            }
            AppRequest::UpdateModelContext { id, content, .. } => {
                eprintln!(
                    "mcp: the App gives the model context ({} block(s))",
                    content.len()
                );
                answer(id, Ok(json!({})));
            }
            AppRequest::DownloadFile { id, .. } => answer(id, Ok(json!({"isError": true}))),
            AppRequest::Log { level, data, .. } => {
                let text = data
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| data.to_string());
                let text: String = text.chars().filter(|c| !c.is_control()).collect();
                eprintln!("mcp: the App logs [{level}] {text}");
            }
            AppRequest::RequestTeardown => {
                let asked = shared.bridge.lock().teardown();
                shared.wake.notify_all();
                if !asked {
                    return 0;
                }
                closing = Some(Instant::now());
            }
            AppRequest::TornDown => return 0,
            AppRequest::SizeChanged { .. }
            | AppRequest::Cancelled { .. }
            | AppRequest::DisplayMode(_) => {}
        }
    }
}

/// A token no other page can guess: 128 bits from the standard library's randomly keyed
/// hashers (seeded by the operating system).
fn token() -> String {
    use std::hash::{BuildHasher, RandomState};
    let (a, b) = (RandomState::new(), RandomState::new());
    let now = format!("{:?}{}", Instant::now(), std::process::id());
    format!("{:016x}{:016x}", a.hash_one(&now), b.hash_one(&now))
}

fn html_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
