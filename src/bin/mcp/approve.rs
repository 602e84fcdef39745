//! What is configured and what is approved: `servers` lists every discovered config with what
//! it runs (the command and its arguments, the names of its environment values and headers,
//! its URL with secrets masked) and, for a project server whose config changed since its
//! approval, what changed; `trust` shows the same before it approves, and on a terminal asks.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use mcp_runtime::config::{
    approval_lines, load_all_mcp_configs, DiscoveredServer, LoadedConfigs, ProjectTrust,
    ServerConfig,
};
use serde_json::{json, Value};

use crate::args::Args;

/// The lines under a server: what it runs, and what changed since its approval.
fn details(d: &DiscoveredServer) -> Vec<String> {
    let mut lines = approval_lines(&d.config);
    if !d.changes.is_empty() {
        lines.push(format!(
            "changed since its approval: {}",
            d.changes.join("; ")
        ));
    }
    lines
}

/// One row per entry (problems included, as `invalid`), each saying why it is skipped, with
/// what it runs under it.
pub fn print_servers(loaded: &LoadedConfigs, as_json: bool) {
    let kind = |c: &ServerConfig| c.transport_type().unwrap_or("unknown");
    let why = |d: &DiscoveredServer| -> Option<String> {
        if d.shadowed {
            Some("shadowed by a higher-priority source".to_owned())
        } else {
            d.skipped.clone()
        }
    };
    if as_json {
        let mut rows: Vec<Value> = loaded
            .discovered
            .iter()
            .map(|d| {
                let c = &d.config;
                json!({"name": d.name, "provider": d.source.provider, "providerName": d.source.provider_name,
                       "path": d.source.path.display().to_string(), "level": d.source.level.as_str(),
                       "type": kind(c), "enabled": d.enabled, "shadowed": d.shadowed,
                       "trust": d.trust.describe(), "skipped": why(d),
                       "command": c.command, "args": c.args, "cwd": c.cwd,
                       "env": c.env.keys().collect::<Vec<_>>(),
                       "url": c.url_for_display(),
                       "headers": c.headers.keys().collect::<Vec<_>>(),
                       "changes": d.changes})
            })
            .collect();
        for p in &loaded.problems {
            rows.push(
                json!({"name": p.name, "path": p.path.display().to_string(), "enabled": false,
                             "shadowed": false, "skipped": format!("invalid: {}", p.message)}),
            );
        }
        outln!("{}", Value::Array(rows));
    } else {
        if loaded.discovered.is_empty() && loaded.problems.is_empty() {
            outln!("no MCP servers found");
        }
        let width = |f: &dyn Fn(&DiscoveredServer) -> &str| {
            crate::output::column_width(loaded.discovered.iter().map(f))
        };
        let name_w = width(&|d| d.name.as_str());
        let kind_w = width(&|d| kind(&d.config));
        let level_w = width(&|d| d.source.level.as_str());
        let provider_w = width(&|d| d.source.provider_name.as_str());
        for d in &loaded.discovered {
            let state = match why(d) {
                Some(why) => format!("off: {why}"),
                None => format!("on, {}", d.trust.describe()),
            };
            outln!(
                "{:name_w$}  {:kind_w$}  {:level_w$}  {:provider_w$}  {} [{}]",
                d.name,
                kind(&d.config),
                d.source.level.as_str(),
                d.source.provider_name,
                d.source.path.display(),
                state
            );
            for line in details(d) {
                outln!("    {line}");
            }
        }
        for p in &loaded.problems {
            outln!(
                "{:20} invalid: {} ({})",
                p.name,
                p.message,
                p.path.display()
            );
        }
    }
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let waiting = loaded.needs_approval();
    if !as_json {
        for d in &waiting {
            eprintln!("{}", loaded.approval_message(d));
        }
    }
}

/// `mcp trust NAME... | --all`: shows each project server to approve (what it runs, what
/// changed since an earlier approval), asks on a terminal, and remembers the approval of
/// exactly the configs shown.
pub fn trust(args: &Args, project: &Path, names: &[String]) -> Result<u8, String> {
    if args.config.is_some() {
        return Err(
            "trust is for discovered project servers; --config FILE needs no approval".into(),
        );
    }
    let mut options = crate::load_options(args);
    options.project_trust = ProjectTrust::Report;
    let loaded = load_all_mcp_configs(project, &options);
    let pending: Vec<&DiscoveredServer> = loaded
        .needs_approval()
        .into_iter()
        .filter(|d| names.is_empty() || names.contains(&d.name))
        .collect();
    // A name that does not wait for approval (a name given twice still waits): the library
    // says why.
    if let Some(name) = names
        .iter()
        .find(|n| !pending.iter().any(|d| &d.name == *n))
    {
        mcp_runtime::host::trust_servers(project, &options, std::slice::from_ref(name))
            .map_err(|e| e.to_string())?;
    }
    if pending.is_empty() {
        outln!("no project MCP server waits for approval");
        return Ok(0);
    }
    for d in &pending {
        outln!("{} (declared in {})", d.name, d.source.path.display());
        for line in details(d) {
            outln!("    {line}");
        }
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        crate::output::flush();
        let question = match pending.len() {
            1 => format!("Trust {} in {}? [y/N] ", pending[0].name, project.display()),
            n => format!("Trust these {n} servers in {}? [y/N] ", project.display()),
        };
        if !confirm(&question) {
            eprintln!("nothing was trusted");
            return Ok(1);
        }
    }
    let names: Vec<String> = pending.iter().map(|d| d.name.clone()).collect();
    let approved =
        mcp_runtime::host::trust_servers(project, &options, &names).map_err(|e| e.to_string())?;
    for d in &approved {
        outln!(
            "trusted {} (declared in {})",
            d.name,
            d.source.path.display()
        );
    }
    Ok(0)
}

/// Asks `question` on stderr; true for an answer that starts with `y`.
fn confirm(question: &str) -> bool {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    match std::io::stdin().lock().read_line(&mut answer) {
        Ok(_) => answer.trim().to_ascii_lowercase().starts_with('y'),
        Err(_) => false,
    }
}
