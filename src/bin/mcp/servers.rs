//! Which servers a run has (from `--config FILE` or discovery), and starting some or all of
//! them: `--server NAME` limits every command to the named ones, and `call` starts only the
//! server that owns its tool.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::config::config_hash;
use mcp_runtime::config::{
    parse_mcp_json, policy_refusal, policy_requires_sandbox, DiscoveredServer, DiscoveryOptions,
    Level, ServerConfig, SourceMeta, TrustState,
};
use mcp_runtime::host::{
    all_loaded_tools, approval_errors, display_path, try_load_all_mcp_configs, AgentTool, LoadError,
};
use mcp_runtime::manager::McpManager;
use mcp_runtime::manager::ToolCache;
use mcp_runtime::manager::{exposed_names, exposed_prefix};

use crate::args::Args;
use crate::host::CliHandler;

/// A running set of servers and their tools.
pub struct Session {
    pub manager: McpManager,
    pub tools: Vec<Arc<dyn AgentTool>>,
    pub errors: Vec<LoadError>,
    /// Project servers not started because they wait for approval.
    pub needs_approval: Vec<DiscoveredServer>,
    /// What each of them needs (the library's message, with the CLI's hint).
    pub approval_messages: BTreeMap<String, String>,
    /// Every server that could be started (enabled, approved).
    configs: BTreeMap<String, ServerConfig>,
    sources: BTreeMap<String, SourceMeta>,
}

/// `--config FILE` as discovery results. The user named the file, so its servers need no
/// approval.
///
/// The file is `.mcp.json`-shaped (`{"mcpServers": {...}}`) or VS Code's (`{"servers":
/// {...}}`); anything else, or a file whose every entry is invalid, is an error that says what
/// was expected: a command given a file it can do nothing with fails instead of doing nothing.
pub fn from_config_file(
    path: &Path,
    options: &DiscoveryOptions,
) -> Result<Vec<DiscoveredServer>, String> {
    let shown = path.display();
    // A regular file of a sane size only (a FIFO or /dev/zero would never end).
    const CAP: u64 = 16 << 20;
    let meta = std::fs::metadata(path).map_err(|e| format!("--config {shown}: {e}"))?;
    if !meta.is_file() || meta.len() > CAP {
        return Err(format!(
            "--config {shown}: not a regular file of at most {} MiB",
            CAP >> 20
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("--config {shown}: {e}"))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("--config {shown}: malformed JSON: {e}"))?;
    const EXPECTED: &str =
        "expected {\"mcpServers\": {\"NAME\": {\"command\": ...} or {\"url\": ...}}} (or VS Code's {\"servers\": {...}})";
    let text = match &value {
        serde_json::Value::Object(m) if m.contains_key("mcpServers") => text,
        serde_json::Value::Object(m) if m.get("servers").is_some_and(|s| s.is_object()) => {
            serde_json::json!({"mcpServers": m["servers"]}).to_string()
        }
        serde_json::Value::Object(_) => {
            return Err(format!("--config {shown}: no servers in it: {EXPECTED}"))
        }
        _ => return Err(format!("--config {shown}: not a JSON object: {EXPECTED}")),
    };
    let file = parse_mcp_json(&text).map_err(|e| format!("--config {shown}: {e}"))?;
    let (mut servers, mut errors) = (Vec::new(), Vec::new());
    for (name, parsed) in file {
        match parsed {
            Ok(config) => servers.push((name, config)),
            Err(e) => errors.push((name, e)),
        }
    }
    if servers.is_empty() {
        let why: Vec<String> = errors
            .iter()
            .map(|(name, e)| format!("{name}: {e}"))
            .collect();
        return Err(match why.is_empty() {
            true => format!("--config {shown}: no servers in it: {EXPECTED}"),
            false => format!("--config {shown}: no usable server ({})", why.join("; ")),
        });
    }
    for (name, e) in &errors {
        log::warn!("skipping server {name}: {e}");
    }
    let source = SourceMeta {
        provider: "mcp-json".into(),
        provider_name: "MCP Config".into(),
        path: path.to_path_buf(),
        level: Level::Project,
    };
    Ok(servers
        .into_iter()
        .map(|(name, mut config)| {
            // The administrator's policy holds for a file named on the command line too.
            if policy_requires_sandbox(options, &name, &config) {
                config.sandbox_enabled = Some(true);
            }
            let skipped = policy_refusal(options, &name, &config)
                .or_else(|| (!config.is_enabled()).then(|| "enabled: false".to_owned()));
            DiscoveredServer {
                enabled: skipped.is_none(),
                skipped,
                name,
                config,
                source: source.clone(),
                shadowed: false,
                trust: TrustState::User,
                changes: Vec::new(),
            }
        })
        .collect())
}

/// A load error as one line: `where: what`, or only `what` when it names the place itself (a
/// project server waiting for approval names its file).
pub fn error_line(e: &LoadError) -> String {
    if e.error.contains(&e.path) {
        e.error.clone()
    } else {
        format!("{}: {}", e.path, e.error)
    }
}

/// Starts the servers (all of them, or the `--server` ones).
pub fn start(args: &Args, project: &Path) -> Result<Session, String> {
    start_with(args, project, |_, _| None)
}

/// Picks the servers to start among the startable ones, given their configs and the tool
/// cache; `None` (or none): all of them.
pub trait Choose:
    FnOnce(&BTreeMap<String, ServerConfig>, Option<&Arc<dyn ToolCache>>) -> Option<Vec<String>>
{
}

impl<F> Choose for F where
    F: FnOnce(&BTreeMap<String, ServerConfig>, Option<&Arc<dyn ToolCache>>) -> Option<Vec<String>>
{
}

/// Starts the servers `choose` picks among the startable ones (all of them, or the `--server`
/// ones).
pub fn start_with(args: &Args, project: &Path, choose: impl Choose) -> Result<Session, String> {
    let handler = Arc::new(CliHandler::new(project.to_path_buf()));
    start_with_handler(args, project, handler, choose)
}

/// [`start_with`], every server answered by `handler`.
pub fn start_with_handler(
    args: &Args,
    project: &Path,
    handler: Arc<CliHandler>,
    choose: impl Choose,
) -> Result<Session, String> {
    let mut options = crate::manager_options(args, project);
    options.connect.handler = Arc::clone(&handler) as Arc<dyn mcp_runtime::ClientHandler>;
    let loader = mcp_runtime::SessionOptions {
        cwd: project.to_path_buf(),
        config: crate::load_options(args),
        manager: options,
        // The cache is chosen by manager_options (--cache-dir, --no-cache).
        default_cache: false,
        ..mcp_runtime::SessionOptions::default()
    };
    let manager = McpManager::new(loader.manager_options());
    crate::signals::close_on_signal(&manager);
    let mut session = Session {
        manager,
        tools: Vec::new(),
        errors: Vec::new(),
        needs_approval: Vec::new(),
        approval_messages: BTreeMap::new(),
        configs: BTreeMap::new(),
        sources: BTreeMap::new(),
    };
    match &args.config {
        _ if args.target.is_some() => {
            #[allow(clippy::expect_used, reason = "the arm's guard checked it")]
            let (name, mut config) = args.target.clone().expect("a target");
            if let Some(why) = policy_refusal(&loader.config, &name, &config) {
                return Err(format!("{name}: {why}"));
            }
            if policy_requires_sandbox(&loader.config, &name, &config) {
                config.sandbox_enabled = Some(true);
            }
            let source = SourceMeta {
                provider: "command-line".into(),
                provider_name: "the command line".into(),
                path: Default::default(),
                level: Level::User,
            };
            session.sources.insert(name.clone(), source);
            session.configs.insert(name, config);
        }
        Some(path) => {
            for d in from_config_file(path, &loader.config)? {
                session.sources.insert(d.name.clone(), d.source.clone());
                if d.enabled {
                    session.configs.insert(d.name, d.config);
                }
            }
        }
        None => match try_load_all_mcp_configs(project, &loader.config) {
            Err(e) => session.errors.push(e),
            Ok(loaded) => {
                for w in &loaded.warnings {
                    eprintln!("warning: {w}");
                }
                session
                    .errors
                    .extend(loaded.problems.iter().map(|p| LoadError {
                        path: p.path.display().to_string(),
                        error: p.message.clone(),
                    }));
                let waiting = |d: &&DiscoveredServer| {
                    args.servers.is_empty() || args.servers.contains(&d.name)
                };
                let loaded_waiting: Vec<DiscoveredServer> = loaded
                    .needs_approval()
                    .into_iter()
                    .filter(waiting)
                    .cloned()
                    .collect();
                session.errors.extend(
                    approval_errors(&loaded)
                        .into_iter()
                        .zip(loaded.needs_approval())
                        .filter(|(_, d)| waiting(d))
                        .map(|(e, _)| e),
                );
                session.approval_messages = loaded_waiting
                    .iter()
                    .map(|d| (d.name.clone(), loaded.approval_message(d)))
                    .collect();
                session.needs_approval = loaded_waiting;
                session.configs = loaded.configs;
                session.sources = loaded.sources;
            }
        },
    }
    for name in &args.servers {
        let known = session.configs.contains_key(name)
            || session.needs_approval.iter().any(|d| &d.name == name);
        if !known {
            return Err(match session.sources.get(name) {
                Some(_) => format!("server {name:?} is turned off (enabled: false)"),
                None => format!("no configured server is named {name:?} (see `mcp servers`)"),
            });
        }
    }
    if !args.servers.is_empty() {
        session
            .configs
            .retain(|name, _| args.servers.contains(name));
    }
    // Nothing to start is an error, not a silent success (the repl may add servers itself).
    if session.configs.is_empty()
        && session.needs_approval.is_empty()
        && args.command != crate::args::Command::Repl
    {
        let mut why = String::from(
            "no MCP server is configured here: pass --config FILE, or add one to a config file discovery reads (`mcp servers` lists what it found)",
        );
        for e in &session.errors {
            why.push_str(&format!("; {}", error_line(e)));
        }
        return Err(why);
    }
    let cache = session.manager.options().cache.clone();
    let names = choose(&session.configs, cache.as_ref())
        .filter(|names| !names.is_empty())
        .unwrap_or_else(|| session.configs.keys().cloned().collect());
    session.connect(&names);
    Ok(session)
}

impl Session {
    /// Starts the named servers (those not started yet) and refreshes the tools.
    pub fn connect(&mut self, names: &[String]) {
        let started = self.manager.server_names();
        let configs: BTreeMap<String, ServerConfig> = self
            .configs
            .iter()
            .filter(|(n, _)| names.contains(n) && !started.contains(n))
            .map(|(n, c)| (n.clone(), c.clone()))
            .collect();
        if configs.is_empty() {
            return;
        }
        let found = mcp_runtime::config::LoadedConfigs {
            configs,
            sources: self.sources.clone(),
            ..Default::default()
        };
        let report = self.manager.connect_found(&found);
        for (name, e) in &report.errors {
            let provider = self.sources.get(name).map(|s| s.provider_name.as_str());
            self.errors.push(LoadError {
                path: display_path(name, provider),
                error: e.to_string(),
            });
        }
        // The CLI is a host: it lists and calls the tools only an MCP App may call too.
        self.tools = all_loaded_tools(&self.manager);
    }

    /// The tools a model may be offered (those only an MCP App may call left out): what
    /// `tools --tokens`, `status` and `search` speak of.
    pub fn model_tools(&self) -> impl Iterator<Item = &Arc<dyn AgentTool>> {
        self.tools.iter().filter(|t| {
            t.mcp_definition()
                .is_none_or(mcp_runtime::protocol::Tool::visible_to_model)
        })
    }

    /// Starts every server not started yet.
    pub fn connect_all(&mut self) {
        let names: Vec<String> = self.configs.keys().cloned().collect();
        self.connect(&names);
    }
}

/// The servers that may own the exposed tool name `tool`: the one the tool cache knows it of
/// (the names the cached tools of every server get), else those whose sanitised name is the
/// name's `mcp_<server>_` prefix. `None`: no idea (start them all).
pub fn owners_of(
    tool: &str,
    configs: &BTreeMap<String, ServerConfig>,
    cache: Option<&Arc<dyn ToolCache>>,
) -> Option<Vec<String>> {
    if let Some(cache) = cache {
        let mut identities: Vec<(String, String)> = Vec::new();
        for (name, config) in configs {
            for t in cache.get(name, &config_hash(config)).unwrap_or_default() {
                identities.push((name.clone(), t.name.clone()));
            }
        }
        let names = exposed_names(&identities);
        if let Some(i) = names.iter().position(|n| n == tool) {
            return Some(vec![identities[i].0.clone()]);
        }
    }
    let by_prefix: Vec<String> = configs
        .keys()
        .filter(|name| tool.starts_with(&exposed_prefix(name)))
        .cloned()
        .collect();
    (!by_prefix.is_empty()).then_some(by_prefix)
}

/// Waits until each server has connected or failed, each bounded by its connect timeout.
pub fn wait_for_outcomes(manager: &McpManager) {
    let default = manager.options().connect.timeout;
    let names = manager.server_names();
    log::debug!("waiting for the outcome of {} servers", names.len());
    std::thread::scope(|s| {
        for name in names {
            let timeout = manager
                .config(&name)
                .map_or(default, |c| c.connect_bound(default));
            s.spawn(move || {
                // The connect itself ends at `timeout`; the margin lets its outcome land.
                let _ = manager.wait_for_connection(&name, timeout + Duration::from_secs(2), None);
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_on_the_command_line_is_held_to_the_administrators_policy() {
        let dir = std::env::temp_dir().join(format!("mcp-cli-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(".mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {"ok": {"command": "a"}, "no": {"command": "b"}}}"#,
        )
        .unwrap();
        let policy = dir.join("policy.json");
        std::fs::write(&policy, r#"{"deniedMcpServers": [{"serverName": "no"}]}"#).unwrap();
        let options = DiscoveryOptions {
            policy_file: Some(policy),
            ..DiscoveryOptions::default()
        };
        let found = from_config_file(&file, &options).unwrap();
        let no = found.iter().find(|d| d.name == "no").unwrap();
        assert!(!no.enabled);
        assert!(
            no.skipped
                .as_deref()
                .unwrap()
                .starts_with("denied by the administrator's policy"),
            "{:?}",
            no.skipped
        );
        assert!(found.iter().find(|d| d.name == "ok").unwrap().enabled);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
