//! `mcp`: use MCP servers from the command line, and the black box that checks the crate.
//! See `mcp --help` and the README.

mod args;
mod demo;
mod demo_server;
mod fleet;
mod probe;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use args::{Args, Command};
use fleet::Fleet;
use mcp_runtime::config::{
    load_all_mcp_configs, read_mcp_json, DiscoveredServer, Level, LoadOptions, ServerConfig,
    SourceMeta,
};
use mcp_runtime::tool::render_text;
use mcp_runtime::{CallOptions, ConnectOptions};
use serde_json::{json, Value};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--demo-server") {
        let kind = argv.get(1).map(String::as_str).unwrap_or("");
        return ExitCode::from(demo_server::run(kind) as u8);
    }
    let args = match args::parse(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mcp: {e}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    init_logging(args.verbosity);
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("mcp: {e}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbosity: usize) {
    let level = ["warn", "info", "debug", "trace"][verbosity.min(3)];
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp(None)
        .init();
}

/// Runs a command; `Ok(exit status)`, or `Err` for bad usage (status 2).
fn run(args: &Args) -> Result<u8, String> {
    let project = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    let options = connect_options(args);
    match &args.command {
        Command::Help => {
            print!("{}", args::USAGE);
            Ok(0)
        }
        Command::Demo => demo::run(&options),
        Command::Tools => {
            let fleet = open(args, &project, &options)?;
            print_tools(&fleet, args.json);
            fleet.close();
            Ok(0)
        }
        Command::Servers => {
            print_servers(&load(args, &project)?.discovered, args.json);
            Ok(0)
        }
        Command::Status => {
            let fleet = open(args, &project, &options)?;
            print_status(&fleet, args.json);
            fleet.close();
            Ok(0)
        }
        Command::Probe(target) => {
            let call_timeout = Duration::from_millis(args.timeout_ms.unwrap_or(30_000));
            Ok(probe::run(target, &options, call_timeout, args.json))
        }
        Command::Call {
            tool,
            args: json_args,
        } => {
            let arguments: Value = serde_json::from_str(json_args)
                .map_err(|e| format!("ARGS_JSON is not JSON: {e}"))?;
            let fleet = open(args, &project, &options)?;
            let code = call(&fleet, tool, arguments, args.json);
            fleet.close();
            Ok(code)
        }
    }
}

fn connect_options(args: &Args) -> ConnectOptions {
    let mut options = ConnectOptions::default();
    if let Some(ms) = args.timeout_ms {
        options.timeout = Duration::from_millis(ms);
        options.request_timeout = Duration::from_millis(ms);
    }
    options
}

/// The servers to use: from `--config`, or discovered from the project and the home directory.
struct Loaded {
    servers: Vec<(String, ServerConfig, SourceMeta)>,
    discovered: Vec<DiscoveredServer>,
}

fn load(args: &Args, project: &Path) -> Result<Loaded, String> {
    if let Some(path) = &args.config {
        let file = read_mcp_json(path).map_err(|e| e.to_string())?;
        for (name, e) in &file.errors {
            log::warn!("skipping server {name}: {e}");
        }
        let source = SourceMeta {
            provider: "mcp-json".into(),
            provider_name: "MCP Config".into(),
            path: path.clone(),
            level: Level::Project,
        };
        let discovered = file
            .servers
            .iter()
            .map(|(name, config)| DiscoveredServer {
                name: name.clone(),
                config: config.clone(),
                source: source.clone(),
                enabled: config.is_enabled(),
                shadowed: false,
                skipped: (!config.is_enabled()).then(|| "enabled: false".to_owned()),
            })
            .collect();
        let servers = file
            .servers
            .into_iter()
            .map(|(n, c)| (n, c, source.clone()))
            .collect();
        return Ok(Loaded {
            servers,
            discovered,
        });
    }
    let loaded = load_all_mcp_configs(project, &LoadOptions::default());
    for p in &loaded.problems {
        log::warn!("{} ({}): {}", p.name, p.path.display(), p.message);
    }
    let servers = loaded
        .configs
        .into_iter()
        .filter_map(|(name, config)| {
            let source = loaded.sources.get(&name)?.clone();
            Some((name, config, source))
        })
        .collect();
    Ok(Loaded {
        servers,
        discovered: loaded.discovered,
    })
}

fn open(args: &Args, project: &Path, options: &ConnectOptions) -> Result<Fleet, String> {
    let loaded = load(args, project)?;
    Ok(Fleet::connect(loaded.servers, project, options))
}

fn print_servers(discovered: &[DiscoveredServer], as_json: bool) {
    let kind = |c: &ServerConfig| c.transport_type().map(|t| t.as_str()).unwrap_or("unknown");
    if as_json {
        let rows: Vec<Value> = discovered
            .iter()
            .map(|d| {
                json!({"name": d.name, "provider": d.source.provider, "providerName": d.source.provider_name,
                       "path": d.source.path.display().to_string(), "level": d.source.level.as_str(),
                       "type": kind(&d.config), "enabled": d.enabled, "shadowed": d.shadowed})
            })
            .collect();
        println!("{}", Value::Array(rows));
        return;
    }
    if discovered.is_empty() {
        println!("no MCP servers found");
    }
    for d in discovered {
        let state = match (&d.skipped, d.shadowed) {
            (_, true) => "shadowed".to_owned(),
            (Some(why), _) => format!("off ({why})"),
            (None, _) => "on".to_owned(),
        };
        println!(
            "{:20} {:5} {:7} {:13} {} [{}]",
            d.name,
            kind(&d.config),
            d.source.level.as_str(),
            d.source.provider_name,
            d.source.path.display(),
            state
        );
    }
}

fn first_line(s: Option<&str>) -> &str {
    s.and_then(|d| d.lines().next()).unwrap_or("")
}

fn print_tools(fleet: &Fleet, as_json: bool) {
    if as_json {
        let rows: Vec<Value> = fleet
            .tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "server": fleet.servers[t.server].name, "tool": t.tool.name,
                       "description": t.tool.description})
            })
            .collect();
        println!("{}", Value::Array(rows));
        return;
    }
    let width = fleet.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in &fleet.tools {
        println!(
            "{:width$}  {}",
            t.name,
            first_line(t.tool.description.as_deref())
        );
    }
    for s in &fleet.servers {
        if let Err(e) = &s.outcome {
            eprintln!("{}: {e}", s.name);
        }
    }
}

fn print_status(fleet: &Fleet, as_json: bool) {
    let rows: Vec<Value> = fleet
        .servers
        .iter()
        .map(|s| {
            let transport = s
                .config
                .transport_type()
                .map(|t| t.as_str())
                .unwrap_or("unknown");
            json!({
                "name": s.name,
                "status": if s.outcome.is_ok() { "connected" } else { "disconnected" },
                "error": s.outcome.as_ref().err().map(ToString::to_string),
                "provider": s.source.provider,
                "providerName": s.source.provider_name,
                "path": s.source.path.display().to_string(),
                "level": s.source.level.as_str(),
                "transport": transport,
            })
        })
        .collect();
    if as_json {
        println!("{}", Value::Array(rows));
        return;
    }
    for r in &rows {
        print!(
            "{:16} {:13} {:6} {}",
            r["name"].as_str().unwrap_or(""),
            r["status"].as_str().unwrap_or(""),
            r["transport"].as_str().unwrap_or(""),
            r["path"].as_str().unwrap_or("")
        );
        if let Some(e) = r["error"].as_str() {
            print!("\n    error: {}", e.replace('\n', "\n    "));
        }
        println!();
    }
}

fn call(fleet: &Fleet, tool: &str, arguments: Value, as_json: bool) -> u8 {
    let Some((exposed, connected)) = fleet.find(tool) else {
        eprintln!("mcp: no tool named {tool} (see `mcp tools`)");
        for s in &fleet.servers {
            if let Err(e) = &s.outcome {
                eprintln!("{}: {e}", s.name);
            }
        }
        return 1;
    };
    match connected
        .client
        .call_tool(&exposed.tool.name, arguments, CallOptions::default())
    {
        Ok(result) => {
            if as_json {
                println!("{}", serde_json::to_string(&result).unwrap_or_default());
            } else {
                println!("{}", render_text(&result));
            }
            let _ = std::io::stdout().flush();
            u8::from(result.is_error())
        }
        Err(e) => {
            eprintln!("mcp: {e}");
            1
        }
    }
}
