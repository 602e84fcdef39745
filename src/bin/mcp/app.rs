//! `mcp app TOOL [ARGS]`: the CLI as an MCP Apps host. Calls the tool, serves a page on
//! 127.0.0.1 that renders its App in the sandbox proxy (on a second port: an origin of its
//! own) and relays the View's messages to the library's [`AppBridge`], which decides; opens the
//! browser (`--no-open`: prints the URL only). The App's tool calls and resource reads go to
//! its server; its messages (`ui/message`) are printed on stdout; its logs on stderr.
//!
//! Runs until the App asks to be closed, the page has been gone for [`GONE_AFTER`] (or no page
//! came within [`NO_PAGE_AFTER`]), or a signal; the View is asked to clean up
//! (`ui/resource-teardown`) first. The pages answer only requests that name `127.0.0.1:<port>`
//! as their host (no DNS rebinding) and, for the relay, carry the run's token in a header
//! (which no other site's page can send without a preflight we refuse). Links the App opens
//! are `http`/`https` to other machines, one every [`LINK_GAP`] at most.

use std::net::{IpAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::host::{AppBridge, AppEvent, AppHostOptions};
use mcp_runtime::Client;
use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};

use crate::app_http::serve;
use crate::app_pages::{HostPages, SandboxPages, Shared, View};
use crate::args::Args;
use crate::servers::{owners_of, start_with};

/// How long a page may be gone (no request for messages) before the command ends.
const GONE_AFTER: Duration = Duration::from_secs(10);
/// How long the command waits for the first page.
const NO_PAGE_AFTER: Duration = Duration::from_secs(600);
/// How long a View has to clean up when it is closed.
const TEARDOWN_WAIT: Duration = Duration::from_secs(5);
/// The View's events waiting for the command; past it, requests are refused as busy.
const EVENTS: usize = 256;
/// The least time between two links an App opens.
const LINK_GAP: Duration = Duration::from_secs(2);

const HOST_PAGE: &str = include_str!("app_page.html");

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
    session.manager.close();
    code
}

fn host(
    session: &crate::servers::Session,
    name: &str,
    words: &[String],
    open: bool,
) -> Result<u8, String> {
    let loaded = crate::call::find(session, name)?;
    let (Some((server, _)), Some(tool)) = (loaded.mcp_identity(), loaded.mcp_definition()) else {
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
    let arguments = crate::arguments::arguments(words, Some(loaded.parameters()))?;
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
    let token = token()?;
    let (result, call_failed) = match client.call_tool(&tool.name, arguments.clone()) {
        Ok(result) => (serde_json::to_value(&result).unwrap_or(Value::Null), false),
        // The App is shown the failure as the tool's (error) result.
        Err(e) => {
            eprintln!("mcp: {}: {e}", loaded.name());
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
        accept_messages: true,
        accept_model_context: true,
        permissions: vec!["clipboardWrite".into()],
        ..AppHostOptions::default()
    };
    let fresh = {
        let (tool, page, tools) = (tool.clone(), Arc::clone(&page), tools.clone());
        move || {
            let mut bridge = AppBridge::new(&tool, &page, &tools, options.clone());
            bridge.tool_input(arguments.clone());
            bridge.tool_result(result.clone());
            bridge
        }
    };
    let bridge = fresh();
    let (csp, frame_allow) = (bridge.csp(), bridge.frame_allow());
    if page.ui.as_ref().is_some_and(|ui| ui.csp.is_some()) {
        // The origins the App may reach, as its server declared them: the user's to know.
        eprintln!("mcp: the App's content security policy: {csp}");
    }
    let (events_tx, events) = crossbeam_channel::bounded(EVENTS);
    let shared = Arc::new(Shared {
        view: Mutex::new(View {
            generation: 0,
            bridge: fresh(),
        }),
        wake: Condvar::new(),
        polls: Mutex::new((0, None)),
        closed: AtomicBool::new(false),
        torn_down: AtomicBool::new(false),
        events: events_tx,
        fresh: Box::new(fresh),
    });

    let bind = || TcpListener::bind("127.0.0.1:0");
    let (host_listener, sandbox_listener) = bind()
        .and_then(|h| Ok((h, bind()?)))
        .map_err(|e| format!("cannot serve the App's page: {e}"))?;
    let port = |l: &TcpListener| l.local_addr().map(|a| a.port()).unwrap_or(0);
    let host_at = format!("127.0.0.1:{}", port(&host_listener));
    let sandbox_at = format!("127.0.0.1:{}", port(&sandbox_listener));
    let title = html_text(&format!(
        "{}{}",
        loaded.name(),
        tool.title
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default()
    ));
    let allow = if frame_allow.is_empty() {
        String::new()
    } else {
        format!("frame.setAttribute(\"allow\", {});", json!(frame_allow))
    };
    // The title (the server's words) goes in last: nothing in it is taken for a placeholder.
    let page_html = HOST_PAGE
        .replace("{{TOKEN}}", &token)
        .replace("{{SANDBOX_ORIGIN}}", &format!("http://{sandbox_at}"))
        .replace("{{ALLOW}}", &allow)
        .replace("{{TITLE}}", &title);
    let host_pages = HostPages {
        shared: Arc::clone(&shared),
        host_at: host_at.clone(),
        token: token.clone(),
        page_html,
        policy: format!(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; frame-src http://{sandbox_at}; base-uri 'none'; \
             form-action 'none'; frame-ancestors 'none'"
        ),
    };
    let sandbox_pages = SandboxPages {
        sandbox_at: sandbox_at.clone(),
        // Framed by the host page only (the View's frame, inside it, is the proxy's own).
        policy: format!("{csp}; frame-ancestors http://{host_at} http://{sandbox_at}"),
    };
    let servers = serve(host_listener, Arc::new(host_pages))
        .and_then(|h| Ok((h, serve(sandbox_listener, Arc::new(sandbox_pages))?)))
        .map_err(|e| format!("cannot serve the App's page: {e}"))?;
    {
        // A signal: the View is asked to clean up (the servers are closed by then).
        let shared = Arc::clone(&shared);
        crate::signals::on_signal(move || shared.close_view(TEARDOWN_WAIT));
    }

    let url = format!("http://{host_at}/?t={token}");
    outln!("{url}");
    crate::output::flush();
    eprintln!(
        "mcp: the App of {} is at {url} (Ctrl-C to stop)",
        loaded.name()
    );
    if open {
        if let Err(e) = mcp_runtime::auth::open_in_browser(&url) {
            eprintln!("mcp: {e}; open {url} yourself");
        }
    }
    let code = relay(&shared, &client, &events, open);
    shared.close_view(TEARDOWN_WAIT);
    drop(servers);
    Ok(if call_failed { code.max(1) } else { code })
}

/// Acts on the View's events until it is closed or gone; the exit status.
fn relay(
    shared: &Shared,
    client: &Client,
    events: &crossbeam_channel::Receiver<(u64, AppEvent)>,
    opens_links: bool,
) -> u8 {
    let started = Instant::now();
    let mut closing: Option<Instant> = None;
    let mut last_link: Option<Instant> = None;
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
        let Ok((generation, event)) = events.recv_timeout(Duration::from_millis(250)) else {
            continue;
        };
        if shared.view.lock().generation != generation {
            // A page that was replaced: nothing it asked is done.
            continue;
        }
        let answer = |id, outcome| shared.answer(generation, id, outcome);
        match event {
            AppEvent::Ready => eprintln!("mcp: the App is showing"),
            AppEvent::CallTool {
                id,
                name,
                arguments,
            } => {
                eprintln!("mcp: the App calls {}", printable(&name));
                let outcome = client
                    .call_tool(&name, arguments)
                    .map(|r| serde_json::to_value(&r).unwrap_or(Value::Null))
                    .map_err(|e| e.to_string());
                answer(id, outcome);
            }
            AppEvent::ReadResource { id, uri } => {
                let outcome = client
                    .read_resource(&uri)
                    .map(|r| serde_json::to_value(&r).unwrap_or(Value::Null))
                    .map_err(|e| e.to_string());
                answer(id, outcome);
            }
            AppEvent::OpenLink { id, url } => {
                let allowed = opens_links
                    && !names_a_local_host(&url)
                    && last_link.is_none_or(|at| at.elapsed() >= LINK_GAP);
                let opened = allowed && mcp_runtime::auth::open_in_browser(&url).is_ok();
                if opened {
                    last_link = Some(Instant::now());
                }
                eprintln!(
                    "mcp: the App {} {}",
                    if opened { "opened" } else { "asked to open" },
                    printable(&url)
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
            AppEvent::Message { id, content, .. } => {
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
            AppEvent::UpdateModelContext { id, content, .. } => {
                eprintln!(
                    "mcp: the App gives the model context ({} block(s))",
                    content.len()
                );
                answer(id, Ok(json!({})));
            }
            AppEvent::DownloadFile { id, .. } => answer(id, Ok(json!({"isError": true}))),
            AppEvent::Log { level, data, .. } => {
                let text = data
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| data.to_string());
                eprintln!(
                    "mcp: the App logs [{}] {}",
                    printable(&level),
                    printable(&text)
                );
            }
            AppEvent::RequestTeardown => {
                let asked = shared.view.lock().bridge.teardown();
                shared.wake.notify_all();
                if !asked {
                    return 0;
                }
                closing = Some(Instant::now());
            }
            AppEvent::TornDown => return 0,
            AppEvent::SizeChanged { .. }
            | AppEvent::Cancelled { .. }
            | AppEvent::DisplayMode(_) => {}
        }
    }
}

/// Whether `url` names this machine or a private network (an App is not let at local
/// services through the user's browser).
fn names_a_local_host(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    }
    .trim_end_matches('.')
    .to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") || host.is_empty() {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
        }
        Ok(IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            ip.is_loopback()
                || ip.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_private() || v4.is_unspecified())
        }
        Err(_) => false,
    }
}

/// The App's words as the terminal gets them: no control characters.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// A token no other page can guess: 128 bits from the system's random source.
fn token() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no random source for the page's token".to_owned())?;
    use std::fmt::Write;
    Ok(bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    }))
}

fn html_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_to_this_machine_or_a_private_network_are_not_opened() {
        for local in [
            "http://localhost:8080/x",
            "http://app.localhost/",
            "http://127.0.0.1/",
            "http://user:pw@127.0.0.2:9/",
            "http://10.1.2.3/",
            "http://192.168.0.1",
            "http://169.254.169.254/latest",
            "http://[::1]:80/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0/",
            "http:///x",
        ] {
            assert!(names_a_local_host(local), "{local}");
        }
        for remote in [
            "https://modelcontextprotocol.io/",
            "http://8.8.8.8/",
            "https://[2001:db8::1]/",
        ] {
            assert!(!names_a_local_host(remote), "{remote}");
        }
    }
}
