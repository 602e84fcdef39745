//! `mcp`: use MCP servers from the command line, and the black box that checks the crate.
//! See `mcp --help` and its reference, docs/cli.md.

// A panic is a bug: no `unwrap`/`expect` outside tests, except where an `allow` says why it
// cannot fail.
#![deny(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod output;
mod app;
mod app_http;
mod app_pages;
mod approve;
mod args;
mod arguments;
mod auth;
mod call;
mod demo;
mod demo_server;
mod failure;
mod features;
mod host;
mod install;
mod probe;
mod repl;
mod search;
mod servers;
mod signals;
mod skills;
mod target;
mod telemetry;
mod usage;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use args::{Args, Command};
use mcp_runtime::config::{DiscoveryOptions, LoadedConfigs, ProjectTrust};
use mcp_runtime::host::untrust_server;
use mcp_runtime::manager::FileToolCache;
use mcp_runtime::manager::{ManagerOptions, ServerStatus};
use mcp_runtime::ConnectOptions;
use serde_json::{json, Value};
use servers::{from_config_file, start, wait_for_outcomes, Session};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--demo-server") {
        let kind = argv.get(1).map(String::as_str).unwrap_or("");
        return ExitCode::from(demo_server::run(kind) as u8);
    }
    // Before any other thread exists: the signal mask is inherited by every thread.
    signals::install();
    // `${MCP_CLI}` in a config this command reads is this program (examples/mcp.json starts
    // the built-in demo servers with it, from any directory); set before any thread exists.
    if let Ok(exe) = std::env::current_exe() {
        std::env::set_var("MCP_CLI", exe);
    }
    let args = match args::parse(&argv) {
        Ok(a) => a,
        Err(args::Stop::Show(text)) => {
            out!("{text}");
            output::flush();
            return ExitCode::from(signals::finish(0));
        }
        Err(args::Stop::Usage(message)) => {
            eprintln!("mcp: {message}");
            return ExitCode::from(2);
        }
    };
    // `mcp logs` shows the servers' messages on stdout; the log crate's copy of them (target
    // `mcp::<server>`) would repeat each on stderr.
    init_logging(args.verbosity, args.command == Command::Logs);
    panic_hook();
    telemetry::install();
    let ran = std::panic::catch_unwind(|| {
        #[cfg(feature = "fault-injection")]
        let _faults = inject_faults();
        run(&args)
    });
    let code = match ran {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            eprintln!("mcp: {e}");
            2
        }
        // The hook said it, in one line.
        Err(_) => 70,
    };
    output::flush();
    telemetry::shutdown();
    ExitCode::from(signals::finish(code))
}

/// A panic of the command's own (on its main thread, exit status 70, EX_SOFTWARE, or one of
/// its own threads, `cli-*`) is one line on stderr. One on the library's threads (`mcp-*`),
/// which the library catches and hands back as an error with the place (status 70 too), is
/// only noted where it was, at debug level.
fn panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = failure::panic_text(info.payload());
        let place = info
            .location()
            .map(|l| format!(" (at {}:{})", l.file(), l.line()))
            .unwrap_or_default();
        match std::thread::current().name() {
            Some(thread) if thread.starts_with("mcp-") => {
                log::debug!("{thread} panicked: {message}{place}");
            }
            Some("main") | None => eprintln!("mcp: internal error: {message}{place}"),
            Some(thread) => eprintln!("mcp: internal error in {thread}: {message}{place}"),
        }
    }));
}

/// `MCP_FAULT=<boundary>[,<boundary>...]` (`main`, or a boundary's name: `connect`,
/// `stdio_reader`, ...): a panic there, for the tests of the command's faults.
#[cfg(feature = "fault-injection")]
fn inject_faults() -> Option<impl Drop> {
    let wanted = std::env::var("MCP_FAULT").ok()?;
    let wanted: Vec<String> = wanted
        .split(',')
        .map(|w| w.trim().replace('_', ""))
        .collect();
    if wanted.iter().any(|w| w == "main") {
        panic!("injected in main");
    }
    Some(mcp_runtime::faults::inject(move |at| {
        if wanted.contains(&at.replace('_', "")) {
            panic!("injected");
        }
    }))
}

fn init_logging(verbosity: usize, following_logs: bool) {
    let level = ["warn", "info", "debug", "trace"][verbosity.min(3)];
    // Discovery's warnings are printed by the commands themselves (`warning: ...`), once; a
    // panic the library caught comes back as the error of what it served, which is printed.
    let level = format!("{level},mcp_runtime::config::discovery=error");
    let level = if verbosity == 0 {
        format!("{level},mcp_runtime::panic=off")
    } else {
        level
    };
    let level = if following_logs {
        format!("{level},mcp=off")
    } else {
        level
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp(None)
        .init();
}

/// Runs a command; `Ok(exit status)`, or `Err` for bad usage (status 2).
fn run(args: &Args) -> Result<u8, String> {
    let project = match &args.cwd {
        Some(dir) if !dir.is_dir() => {
            return Err(format!("--cwd {}: no such directory", dir.display()))
        }
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    match &args.command {
        Command::Completions(shell) => {
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut usage::command(), "mcp", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
            Ok(0)
        }
        Command::Resources
        | Command::Read(_)
        | Command::Templates
        | Command::Prompts
        | Command::Prompt { .. }
        | Command::Complete { .. }
        | Command::Logs
        | Command::Info(_) => features::run(args, &project),
        Command::Skills | Command::Skill { .. } => skills::run(args, &project),
        Command::Demo => demo::run(args),
        Command::Servers => {
            approve::print_servers(&discovered(args, &project)?, args.json);
            Ok(0)
        }
        Command::Trust(names) => approve::trust(args, &project, names),
        Command::Untrust(name) => {
            let removed =
                untrust_server(&project, &load_options(args), name).map_err(|e| e.to_string())?;
            if removed {
                outln!("forgot the approval of {name}; it needs approval again");
            } else {
                outln!("{name} has no approval in this project");
            }
            Ok(0)
        }
        Command::Probe(target) => {
            let call_timeout = Duration::from_millis(args.timeout_ms.unwrap_or(30_000));
            Ok(probe::run(
                target,
                &connect_options(args),
                call_timeout,
                args.json,
                args.call_all,
            ))
        }
        Command::Repl => repl::run(args, &project),
        Command::RegistrySearch {
            query,
            cursor,
            registry,
        } => install::search(args, query, cursor.as_deref(), registry.as_deref()),
        Command::RegistryShow { what, registry } => install::show(args, what, registry.as_deref()),
        Command::Add(request) => install::add(args, &project, request),
        Command::Login { name, how } => auth::login(args, &project, name, *how),
        Command::Logout(name) => auth::logout(args, &project, name),
        Command::AuthStatus => auth::status(args, &project),
        Command::Tools => {
            let session = start(args, &project)?;
            print_tools(&session, args.json, args.tokens);
            let code = failure_status(&session);
            session.manager.close();
            Ok(code)
        }
        Command::Search(query) => {
            let session = start(args, &project)?;
            let found = search::run(&session, query, args);
            let code = match failure_status(&session) {
                0 => u8::from(!found),
                failed => failed,
            };
            session.manager.close();
            Ok(code)
        }
        Command::Status => {
            let session = start(args, &project)?;
            wait_for_outcomes(&session.manager);
            print_status(&session, args.json);
            // As `tools`: a failure's own status when no server is usable.
            let code = failure_status(&session);
            session.manager.close();
            Ok(code)
        }
        Command::Call { tool, args: words } => call::run(args, &project, tool, words),
        Command::App { tool, args: words } => app::run(args, &project, tool, words, !args.no_open),
    }
}

/// The status of a command whose every server failed (none connected, none still
/// connecting): the first failure's kind (a timeout 124, a server that could not start 69,
/// ...); 0 when any server is alive or nothing failed.
fn failure_status(session: &Session) -> u8 {
    let m = &session.manager;
    let statuses: Vec<_> = m
        .server_names()
        .iter()
        .map(|n| m.connection_status(n))
        .collect();
    let alive = (statuses.iter()).any(|s| !matches!(s, ServerStatus::Disconnected { .. }));
    let failed = session.errors.len() > session.needs_approval.len();
    if !failed || alive {
        return 0;
    }
    failure::first_server_failure(m).1
}

/// Discovery settings from the command line: project config on or off, and the trust policy
/// (report unapproved project servers, or trust them for this run with --trust-project).
pub fn load_options(args: &Args) -> DiscoveryOptions {
    DiscoveryOptions {
        enable_project_config: !args.no_project_config,
        project_trust: if args.trust_project {
            ProjectTrust::TrustAll
        } else {
            ProjectTrust::Report
        },
        approval_hint: Some(
            "approve it with `mcp trust {name}`, or trust the project for one run with \
             `--trust-project`"
                .into(),
        ),
        ..DiscoveryOptions::default()
    }
}

/// The connection settings every server gets.
pub fn connect_options(args: &Args) -> ConnectOptions {
    let mut options = ConnectOptions::default();
    // The extensions the CLI speaks, declared to every server.
    options.extensions.insert(
        mcp_runtime::protocol::SKILLS_EXTENSION.to_owned(),
        json!({}),
    );
    // MCP Apps: `mcp app` renders them.
    options.extensions.insert(
        mcp_runtime::protocol::UI_EXTENSION.to_owned(),
        json!({"mimeTypes": [mcp_runtime::protocol::APP_MIME_TYPE]}),
    );
    if let Some(ms) = args.timeout_ms {
        options.timeout = Duration::from_millis(ms);
        options.request_timeout = Duration::from_millis(ms);
    }
    options
}

/// What a result shows: on a terminal, what a model would be shown (the default budget),
/// unless `--full`; piped, all of it.
fn output_budget(args: &Args) -> mcp_runtime::manager::OutputBudget {
    use std::io::IsTerminal;
    if args.full || args.json || !std::io::stdout().is_terminal() {
        return mcp_runtime::manager::OutputBudget::unlimited();
    }
    let budget = mcp_runtime::manager::OutputBudget::default();
    match args.command {
        Command::Call { .. } => mcp_runtime::manager::OutputBudget {
            hint: "run the call again with --full to see all of it".into(),
            ..budget
        },
        _ => budget,
    }
}

/// The manager settings from the command line.
pub fn manager_options(args: &Args, project: &Path) -> ManagerOptions {
    let cache = (!args.no_cache).then(|| {
        let cache = match &args.cache_dir {
            Some(dir) => FileToolCache::new(dir),
            None => FileToolCache::user_default(),
        };
        Arc::new(cache) as Arc<dyn mcp_runtime::manager::ToolCache>
    });
    let connect = connect_options(args);
    let manager = ManagerOptions {
        project_dir: project.to_path_buf(),
        wait_without_cache: !args.no_wait,
        cache,
        // Long enough for a stdio server's whole teardown (stdin closed, SIGTERM, SIGKILL,
        // each after the grace): the CLI exits only once every server is gone.
        disconnect_wait: connect.stdio.close_grace * 2 + Duration::from_secs(2),
        connect,
        output_budget: output_budget(args),
        ..ManagerOptions::default()
    };
    // What a session adds: the user's own file's runtime-wide proxy and CA file.
    mcp_runtime::SessionOptions {
        cwd: project.to_path_buf(),
        config: load_options(args),
        manager,
        default_cache: false,
        ..mcp_runtime::SessionOptions::default()
    }
    .manager_options()
}

pub fn discovered(args: &Args, project: &Path) -> Result<LoadedConfigs, String> {
    match &args.config {
        Some(path) => Ok(LoadedConfigs {
            discovered: from_config_file(path, &load_options(args))?,
            ..LoadedConfigs::default()
        }),
        None => {
            let loaded = mcp_runtime::config::load_all_mcp_configs(project, &load_options(args));
            Ok(loaded)
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn print_tools(session: &Session, as_json: bool, tokens: bool) {
    if as_json {
        let rows: Vec<Value> = session
            .tools
            .iter()
            .map(|t| {
                let (server, tool) = t.mcp_identity().unwrap_or(("", ""));
                let definition = t.mcp_definition();
                json!({"name": t.name(), "server": server, "tool": tool, "description": t.description(),
                       "definitionTokens": t.definition_tokens(),
                       "inputSchema": definition.map(|d| &d.input_schema),
                       "outputSchema": definition.and_then(|d| d.output_schema.as_ref()),
                       "annotations": definition.and_then(|d| d.annotations.as_ref()),
                       "ui": definition.and_then(|d| d.ui()),
                       "visibleToModel": definition.is_none_or(|d| d.visible_to_model())})
            })
            .collect();
        outln!("{}", Value::Array(rows));
    } else if tokens {
        print_tool_tokens(session);
    } else {
        let width = output::column_width(session.tools.iter().map(|t| t.name()));
        for t in &session.tools {
            outln!("{:width$}  {}", t.name(), first_line(t.description()));
        }
    }
    for e in &session.errors {
        eprintln!("{}", crate::servers::error_line(e));
    }
}

/// `tools --tokens`: each tool's estimated definition tokens, then each server's and the total.
fn print_tool_tokens(session: &Session) {
    let width = output::column_width(session.model_tools().map(|t| t.name()));
    let mut servers: Vec<(String, usize, usize)> = Vec::new();
    for t in session.model_tools() {
        let cost = t.definition_tokens();
        outln!("{:width$}  {cost:>6}", t.name());
        let server = t.mcp_identity().map_or("", |(s, _)| s).to_owned();
        match servers.iter_mut().find(|(s, _, _)| *s == server) {
            Some((_, n, sum)) => {
                *n += 1;
                *sum += cost;
            }
            None => servers.push((server, 1, cost)),
        }
    }
    outln!();
    for (server, n, sum) in &servers {
        outln!("{server}: {n} tools, ~{sum} tokens");
    }
    let (n, sum) = servers
        .iter()
        .fold((0, 0), |(n, s), (_, tn, ts)| (n + tn, s + ts));
    outln!(
        "total: {n} tools, ~{sum} tokens (estimated: a token per {} bytes of definition)",
        mcp_runtime::host::BYTES_PER_TOKEN
    );
}

fn print_status(session: &Session, as_json: bool) {
    let m = &session.manager;
    // Each server's exposed tools and their definitions' estimated tokens.
    let mut tokens: std::collections::HashMap<&str, (usize, usize)> =
        std::collections::HashMap::new();
    for t in session.model_tools() {
        if let Some((server, _)) = t.mcp_identity() {
            let entry = tokens.entry(server).or_default();
            entry.0 += 1;
            entry.1 += t.definition_tokens();
        }
    }
    let rows: Vec<Value> = m
        .server_names()
        .iter()
        .map(|name| {
            let status = m.connection_status(name);
            let source = m.source(name);
            // The transport actually used (a URL that fell back to legacy SSE says `sse`);
            // before a connection, the configured one.
            let transport = m
                .client(name)
                .map(|c| c.transport_kind())
                .or_else(|| m.config(name).and_then(|c| c.transport_type().ok()))
                .unwrap_or("unknown");
            json!({
                "name": name,
                "status": if status.needs_login() { "needs login" } else { status.as_str() },
                "error": status.error().map(|e| e.to_string()),
                "provider": source.as_ref().map(|s| s.provider.clone()),
                "providerName": source.as_ref().map(|s| s.provider_name.clone()),
                "path": source.as_ref().map(|s| s.path.display().to_string()),
                "level": source.as_ref().map(|s| s.level.as_str()),
                "transport": transport,
                // The proxy a connected server is reached through, without its credentials.
                "proxy": m.client(name).and_then(|c| c.proxy()),
                // What its tools' definitions cost in a model's context (estimated).
                "tools": tokens.get(name.as_str()).map(|(n, _)| *n),
                "definitionTokens": tokens.get(name.as_str()).map(|(_, t)| *t),
                // The sandbox it runs in, its rules as the kernel gets them.
                "sandbox": m.sandbox(name).as_ref().map(output::sandbox_json),
            })
        })
        .chain(session.needs_approval.iter().map(|d| {
            json!({
                "name": d.name,
                "status": "needs approval",
                "error": session.approval_messages.get(&d.name),
                "provider": d.source.provider,
                "providerName": d.source.provider_name,
                "path": d.source.path.display().to_string(),
                "level": d.source.level.as_str(),
                "transport": d.config.transport_type().unwrap_or("unknown"),
            })
        }))
        .collect();
    if as_json {
        outln!("{}", Value::Array(rows));
        return;
    }
    let width =
        |key: &str| output::column_width(rows.iter().map(|r| r[key].as_str().unwrap_or("")));
    let (name_w, status_w, transport_w) = (width("name"), width("status"), width("transport"));
    for r in &rows {
        out!(
            "{:name_w$}  {:status_w$}  {:transport_w$}  {} {}",
            r["name"].as_str().unwrap_or(""),
            r["status"].as_str().unwrap_or(""),
            r["transport"].as_str().unwrap_or(""),
            r["providerName"].as_str().unwrap_or(""),
            r["path"].as_str().unwrap_or("")
        );
        if let Some(p) = r["proxy"].as_str() {
            out!("\n    through the proxy {p}");
        }
        if let (Some(n), Some(t)) = (r["tools"].as_u64(), r["definitionTokens"].as_u64()) {
            out!("\n    {n} tools, ~{t} tokens of definitions");
        }
        if let Some(sandbox) = m.sandbox(r["name"].as_str().unwrap_or("")) {
            out!("\n    sandboxed: {}", sandbox.describe().join("; "));
        }
        if let Some(e) = r["error"].as_str() {
            out!("\n    error: {}", e.replace('\n', "\n    "));
        }
        outln!();
    }
}
