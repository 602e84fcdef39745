//! What servers offer beside tools, at the terminal: `resources`, `read URI`, `templates`,
//! `prompts`, `prompt NAME [ARGS]`, `complete REF ARG [VALUE]`, `logs [--level L]` and
//! `info NAME`.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::manager::McpManager;
use mcp_runtime::protocol::{CompletionRef, LoggingLevel};
use serde_json::{json, Value};

use crate::args::{Args, Command};
use crate::host::CliHandler;
use crate::servers::{start_with_handler, wait_for_outcomes, Session};

/// Runs one of the features commands; the exit status.
pub fn run(args: &Args, project: &Path) -> Result<u8, String> {
    let handler = Arc::new(CliHandler::new(project.to_path_buf()));
    let level = parse_level(args.level.as_deref())?;
    // `info NAME` starts NAME only (and says so when there is no such server).
    let mut only_named;
    let args = match &args.command {
        Command::Info(name) if args.servers.is_empty() => {
            only_named = args.clone();
            only_named.servers = vec![name.clone()];
            &only_named
        }
        _ => args,
    };
    let (logs, log_rx) = crossbeam_channel::unbounded();
    if args.command == Command::Logs {
        // Before anything starts: a server's first messages are not missed.
        handler.follow_logs(logs);
    }
    let session = start_with_handler(args, project, handler, |_, _| None)?;
    wait_for_outcomes(&session.manager);
    list_features(&session.manager);
    for e in &session.errors {
        eprintln!("{}", crate::servers::error_line(e));
    }
    let code = match &args.command {
        Command::Resources => resources(&session, args.json),
        Command::Templates => templates(&session, args.json),
        Command::Prompts => prompts(&session, args.json),
        Command::Read(uri) => read(&session, uri, args.json),
        Command::Prompt { name, args: words } => prompt(&session, name, words, args.json),
        Command::Complete {
            reference,
            argument,
            value,
        } => complete(&session, reference, argument, value, args.json),
        Command::Info(name) => info(&session, name, args.json),
        Command::Logs => follow(&session, level, args.json, &log_rx),
        _ => Err("not a features command".to_owned()),
    };
    session.manager.close();
    code
}

/// Lists, now, the features of every connected server that offers some (the manager lists them
/// in the background once a server connects; a command must not race that).
fn list_features(manager: &McpManager) {
    for name in manager.server_names() {
        let Some(client) = manager.client(&name) else {
            continue;
        };
        let caps = client.server_capabilities();
        if caps.resources.is_some() || caps.prompts.is_some() {
            if let Err(e) = manager.refresh_server_features(&name) {
                log::debug!("[{name}] listing resources and prompts: {e}");
            }
        }
    }
}

fn print_json(value: Value) {
    outln!("{value}");
}

fn with_server(server: &str, item: Value) -> Value {
    let mut row = json!({"server": server});
    if let (Some(row), Value::Object(fields)) = (row.as_object_mut(), item) {
        row.extend(fields);
    }
    row
}

fn resources(session: &Session, as_json: bool) -> Result<u8, String> {
    let listed = session.manager.resources();
    if as_json {
        let rows = listed
            .iter()
            .map(|r| with_server(&r.server, json!(r.item.as_ref())));
        print_json(Value::Array(rows.collect()));
        return Ok(0);
    }
    for r in &listed {
        let mime = r.item.mime_type.as_deref().unwrap_or("");
        outln!(
            "{:16} {}  {} {}",
            r.server,
            r.item.uri,
            r.item.name,
            if mime.is_empty() {
                String::new()
            } else {
                format!("({mime})")
            }
        );
    }
    Ok(0)
}

fn templates(session: &Session, as_json: bool) -> Result<u8, String> {
    let listed = session.manager.resource_templates();
    if as_json {
        let rows = listed
            .iter()
            .map(|t| with_server(&t.server, json!(t.item.as_ref())));
        print_json(Value::Array(rows.collect()));
        return Ok(0);
    }
    for t in &listed {
        outln!("{:16} {}  {}", t.server, t.item.uri_template, t.item.name);
    }
    Ok(0)
}

fn prompts(session: &Session, as_json: bool) -> Result<u8, String> {
    let listed = session.manager.prompts();
    if as_json {
        let rows = listed.iter().map(|p| {
            let mut row = with_server(&p.server, json!(p.item.as_ref()));
            row["command"] = json!(p.name);
            row
        });
        print_json(Value::Array(rows.collect()));
        return Ok(0);
    }
    for p in &listed {
        let params: Vec<String> = p
            .item
            .arguments
            .iter()
            .map(|a| {
                if a.required == Some(true) {
                    format!("{}=…", a.name)
                } else {
                    format!("[{}=…]", a.name)
                }
            })
            .collect();
        outln!(
            "{} {}  {}",
            p.name,
            params.join(" "),
            p.item.description.as_deref().unwrap_or("")
        );
    }
    Ok(0)
}

/// The server a URI belongs to: the one that lists it, else one whose template's fixed start
/// it has, else the only server.
fn owner_of_uri(session: &Session, uri: &str) -> Result<String, String> {
    let m = &session.manager;
    if let Some(r) = m.resources().into_iter().find(|r| r.item.uri == uri) {
        return Ok(r.server);
    }
    let by_template = m.resource_templates().into_iter().find(|t| {
        let fixed = t.item.uri_template.split('{').next().unwrap_or("");
        !fixed.is_empty() && uri.starts_with(fixed)
    });
    if let Some(t) = by_template {
        return Ok(t.server);
    }
    let connected: Vec<String> = m
        .server_names()
        .into_iter()
        .filter(|n| m.connection_status(n).is_connected())
        .collect();
    match connected.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err("no server is connected".into()),
        _ => Err(format!(
            "no server lists {uri}; name the one to ask with --server NAME"
        )),
    }
}

fn read(session: &Session, uri: &str, as_json: bool) -> Result<u8, String> {
    let server = owner_of_uri(session, uri)?;
    let result = match session.manager.read_resource(&server, uri) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp: {server}: {e}");
            return Ok(1);
        }
    };
    if as_json {
        print_json(json!(result));
        return Ok(0);
    }
    for c in &result.contents {
        match (&c.text, &c.blob) {
            (Some(text), _) => outln!("{text}"),
            (None, Some(blob)) => outln!(
                "[binary {}: about {} bytes; --json shows its base64]",
                c.mime_type.as_deref().unwrap_or("contents"),
                blob.len() / 4 * 3
            ),
            (None, None) => outln!("[{}: no contents]", c.uri),
        }
    }
    Ok(0)
}

fn prompt(session: &Session, command: &str, words: &[String], as_json: bool) -> Result<u8, String> {
    let arguments = crate::arguments::arguments(words, None)?;
    let prompts = session.manager.prompts();
    let Some(p) = prompts.iter().find(|p| p.name == command) else {
        eprintln!("mcp: no prompt named {command} (see `mcp prompts`)");
        return Ok(1);
    };
    let result = match session
        .manager
        .get_prompt(&p.server, &p.item.name, arguments)
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp: {}: {e}", p.server);
            return Ok(1);
        }
    };
    if as_json {
        print_json(json!(result));
        return Ok(0);
    }
    if let Some(d) = &result.description {
        outln!("# {d}");
    }
    for m in &result.messages {
        let text = m
            .content
            .as_text()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("[{}]", m.content.kind()));
        outln!("{}: {text}", m.role);
    }
    Ok(0)
}

fn complete(
    session: &Session,
    reference: &str,
    argument: &str,
    value: &str,
    as_json: bool,
) -> Result<u8, String> {
    let m = &session.manager;
    let target = match m.prompts().into_iter().find(|p| p.name == reference) {
        Some(p) => Some((p.server, CompletionRef::Prompt(p.item.name.to_string()))),
        None => m
            .resource_templates()
            .into_iter()
            .find(|t| t.item.uri_template == reference)
            .map(|t| (t.server, CompletionRef::Resource(reference.to_owned()))),
    };
    let Some((server, reference)) = target else {
        eprintln!(
            "mcp: {reference} is neither a prompt's command name (see `mcp prompts`) nor a \
             resource template (see `mcp templates`)"
        );
        return Ok(1);
    };
    match m.complete(&server, &reference, argument, value, None) {
        Ok(done) => {
            if as_json {
                print_json(json!(done));
            } else {
                for v in &done.values {
                    outln!("{v}");
                }
            }
            Ok(0)
        }
        Err(e) => {
            eprintln!("mcp: {server}: {e}");
            Ok(1)
        }
    }
}

fn info(session: &Session, name: &str, as_json: bool) -> Result<u8, String> {
    let Some(client) = session.manager.client(name) else {
        let status = session.manager.connection_status(name);
        eprintln!(
            "mcp: {name} is {}{}",
            status.as_str(),
            status.error().map(|e| format!(": {e}")).unwrap_or_default()
        );
        return Ok(1);
    };
    // The server's tools that have an App (MCP Apps), and who may call each.
    let apps: Vec<Value> = session
        .tools
        .iter()
        .filter_map(|t| {
            let tool = t.mcp_definition()?;
            let (server, _) = t.mcp_identity()?;
            let ui = tool.ui().filter(|_| server == name)?;
            Some(json!({"tool": tool.name, "ui": ui, "visibleToModel": tool.visible_to_model()}))
        })
        .collect();
    if as_json {
        print_json(json!({
            "name": name,
            "apps": apps,
            "serverInfo": client.server_info(),
            "protocolVersion": client.protocol_version().as_str(),
            "transport": client.transport_kind(),
            "proxy": client.proxy(),
            "capabilities": client.server_capabilities(),
            "extensions": client.extension_names().iter().map(|name| {
                let (ours, theirs) = (client.client_extension(name), client.server_extension(name));
                json!({"name": name, "agreed": ours.is_some() && theirs.is_some(),
                       "client": ours, "server": theirs})
            }).collect::<Vec<_>>(),
            "instructions": client.instructions(),
            "sandbox": session.manager.sandbox(name).as_ref().map(crate::output::sandbox_json),
        }));
        return Ok(0);
    }
    let i = client.server_info();
    outln!("name:         {name}");
    outln!(
        "server:       {} {}{}",
        i.name,
        i.version,
        i.title
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default()
    );
    outln!("protocol:     {}", client.protocol_version().as_str());
    outln!("transport:    {}", client.transport_kind());
    if let Some(proxy) = client.proxy() {
        outln!("proxy:        {proxy}");
    }
    if let Some(sandbox) = session.manager.sandbox(name) {
        for (i, line) in sandbox.describe().iter().enumerate() {
            let label = if i == 0 { "sandbox:" } else { "" };
            outln!("{label:14}{line}");
        }
    }
    outln!("capabilities: {}", json!(client.server_capabilities()));
    let extensions = client.extension_names();
    if extensions.is_empty() {
        outln!("extensions:   (none)");
    } else {
        outln!("extensions:");
        for name in &extensions {
            let (ours, theirs) = (client.client_extension(name), client.server_extension(name));
            let (state, settings) = match (&ours, &theirs) {
                (Some(_), Some(server)) => ("agreed", server.to_string()),
                (Some(ours), None) => ("not offered by the server", ours.to_string()),
                (None, Some(server)) => ("the server's only", server.to_string()),
                (None, None) => continue,
            };
            outln!("  {name}  {state}  {settings}");
        }
    }
    for app in &apps {
        outln!(
            "app:          {} -> {}{}",
            app["tool"].as_str().unwrap_or(""),
            app["ui"]["resourceUri"].as_str().unwrap_or("(no page)"),
            if app["visibleToModel"] == true {
                ""
            } else {
                " (for its App only)"
            }
        );
    }
    match &client.instructions() {
        Some(text) => {
            outln!("instructions:");
            for line in text.lines() {
                outln!("  {line}");
            }
        }
        None => outln!("instructions: (none)"),
    }
    Ok(0)
}

/// Severities from the lowest.
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

fn rank(level: LoggingLevel) -> usize {
    LEVELS.iter().position(|l| *l == level).unwrap_or(0)
}

/// `--level L` as a level.
fn parse_level(level: Option<&str>) -> Result<Option<LoggingLevel>, String> {
    level
        .map(|l| {
            serde_json::from_value::<LoggingLevel>(json!(l.to_lowercase())).map_err(|_| {
                format!(
                    "--level takes debug, info, notice, warning, error, critical, alert or \
                     emergency, not {l:?}"
                )
            })
        })
        .transpose()
}

/// Prints every log message until every server has ended (or a signal ends the CLI).
fn follow(
    session: &Session,
    level: Option<LoggingLevel>,
    as_json: bool,
    messages: &crossbeam_channel::Receiver<crate::host::LogLine>,
) -> Result<u8, String> {
    let m = &session.manager;
    let names = m.server_names();
    let mut following = 0;
    for name in &names {
        let Some(client) = m.client(name) else {
            continue;
        };
        following += 1;
        if let Some(level) = level {
            if client.server_capabilities().logging.is_some() {
                if let Err(e) = m.set_log_level(name, level) {
                    eprintln!("mcp: {name}: cannot set the log level: {e}");
                }
            } else {
                eprintln!("mcp: {name} declares no logging; showing what it sends anyway");
            }
        }
    }
    if following == 0 {
        eprintln!("mcp: no server is connected");
        return Ok(1);
    }
    eprintln!("following the logs of {following} server(s); Ctrl-C ends");
    let mut out = std::io::stdout();
    loop {
        match messages.recv_timeout(Duration::from_millis(500)) {
            Ok(message) => {
                let server = &message.server;
                if level.is_some_and(|l| rank(message.level) < rank(l)) {
                    continue;
                }
                let line = if as_json {
                    json!({"server": server, "level": message.level, "logger": message.logger,
                           "data": message.data})
                    .to_string()
                } else {
                    let data = match &message.data {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let level = json!(message.level);
                    let level = level.as_str().unwrap_or("");
                    match &message.logger {
                        Some(logger) => format!("[{server}] {level} {logger}: {data}"),
                        None => format!("[{server}] {level}: {data}"),
                    }
                };
                // A server's text: no control characters reach the terminal.
                let line: String = line
                    .chars()
                    .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
                    .collect();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                let alive = names.iter().any(|n| m.connection_status(n).is_connected());
                if !alive {
                    eprintln!("every server has ended");
                    return Ok(0);
                }
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return Ok(0),
        }
    }
}
