//! The facade a host calls at startup: discover, connect behind the 250 ms gate, and get tool
//! objects ready to register. It never fails as a whole: a failing server is an entry in
//! `errors`, and a discovery that fails outright gives no tools and one error
//! `{ path: ".mcp.json", error }`, so the host session still starts.
//!
//! Project-level servers pass the trust gate first (see [`crate::config::ProjectTrust`], set in
//! `config.project_trust`): with the default policy a project server nobody approved yet is not
//! started and none of its values is resolved; the session lists it in
//! [`needs_approval`](crate::host::AgentSession::needs_approval), with one entry in its startup
//! errors naming the file that declared it and saying how to approve it.

use std::path::Path;
use std::sync::Arc;

use crate::config::{load_all_mcp_configs, DiscoveredServer, DiscoveryOptions, LoadedConfigs};
use crate::manager::{ConnectReport, McpManager};
use crate::tool::{build_tools_numbered, display_path, AgentTool};

/// One thing that went wrong while loading.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    /// Where: a server's display path (`mcp:<server> via <providerName>`), a config file, or
    /// `.mcp.json` when discovery itself failed.
    pub path: String,
    /// What.
    pub error: String,
}

/// What the loader produced (the session keeps it).
#[derive(Debug, Clone)]
pub(crate) struct McpLoadResult {
    /// The tools, live and deferred.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// Per-server (and per-file) errors.
    pub errors: Vec<LoadError>,
    /// The manager that owns the connections (disconnect it to stop them).
    pub manager: McpManager,
    /// API keys of filtered Exa servers.
    pub exa_api_keys: Vec<String>,
    /// Config files that could not be read.
    pub warnings: Vec<String>,
    /// The project servers that wait for approval: not started, nothing of them resolved.
    pub needs_approval: Vec<DiscoveredServer>,
    /// The manager's report of the startup.
    pub report: ConnectReport,
}

/// Runs discovery, turning a failure of discovery itself (a source that panics) into the one
/// synthetic error `{ path: ".mcp.json", error }`. Every path that discovers (startup, reload,
/// the `/mcp` commands) goes through here, so none of them can be cut short by a source.
pub fn try_load_all_mcp_configs(
    cwd: &Path,
    options: &DiscoveryOptions,
) -> Result<LoadedConfigs, LoadError> {
    let discovered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load_all_mcp_configs(cwd, options)
    }));
    discovered.map_err(|panic| {
        let error = crate::panic::message(&*panic, "MCP config discovery failed");
        log::error!("MCP discovery failed: {error}");
        LoadError {
            path: ".mcp.json".into(),
            error,
        }
    })
}

/// Discovers the servers of the project at `cwd`, connects them on `manager`, and returns
/// their tools (what [`create_agent_session`](crate::host::create_agent_session) starts from).
pub(crate) fn load_with_manager(
    manager: McpManager,
    cwd: &Path,
    config: &DiscoveryOptions,
) -> McpLoadResult {
    let loaded = match try_load_all_mcp_configs(cwd, config) {
        Ok(l) => l,
        Err(error) => {
            return McpLoadResult {
                tools: Vec::new(),
                errors: vec![error],
                manager,
                exa_api_keys: Vec::new(),
                warnings: Vec::new(),
                needs_approval: Vec::new(),
                report: ConnectReport::default(),
            };
        }
    };
    let report = manager.connect_found(&loaded);
    let mut errors: Vec<LoadError> = loaded
        .problems
        .iter()
        .map(|p| LoadError {
            path: p.path.display().to_string(),
            error: p.message.clone(),
        })
        .collect();
    errors.extend(approval_errors(&loaded));
    for (server, error) in &report.errors {
        let provider = loaded.sources.get(server).map(|s| s.provider_name.as_str());
        errors.push(LoadError {
            path: display_path(server, provider),
            error: error.to_string(),
        });
    }
    McpLoadResult {
        tools: loaded_tools(&manager),
        errors,
        needs_approval: loaded.needs_approval().into_iter().cloned().collect(),
        exa_api_keys: loaded.exa_api_keys,
        warnings: loaded.warnings,
        report,
        manager,
    }
}

/// One error per project server that waits for approval: the file that declared it, and how
/// to approve it.
pub fn approval_errors(loaded: &LoadedConfigs) -> Vec<LoadError> {
    loaded
        .needs_approval()
        .into_iter()
        .map(|d| LoadError {
            path: d.source.path.display().to_string(),
            error: loaded.approval_message(d),
        })
        .collect()
}

/// Approves project servers that wait for approval, remembering each in the trust store for
/// its current config: the ones named, or (with `names` empty) every one. Returns the servers
/// approved. A name that is not a project server waiting for approval is an error, and then
/// nothing is approved.
pub fn trust_servers(
    cwd: &Path,
    options: &DiscoveryOptions,
    names: &[String],
) -> Result<Vec<DiscoveredServer>, crate::error::Error> {
    let mut report_only = options.clone();
    report_only.project_trust = crate::config::ProjectTrust::Report;
    let loaded =
        try_load_all_mcp_configs(cwd, &report_only).map_err(|e| crate::error::Error::Config {
            message: format!("{}: {}", e.path, e.error),
        })?;
    let pending = loaded.needs_approval();
    let chosen: Vec<&DiscoveredServer> = if names.is_empty() {
        pending
    } else {
        let mut chosen = Vec::new();
        for name in names {
            match pending.iter().find(|d| &d.name == name) {
                Some(d) => chosen.push(*d),
                None => {
                    let why = match loaded
                        .discovered
                        .iter()
                        .find(|d| &d.name == name && !d.shadowed)
                    {
                        None => "no such server".to_owned(),
                        Some(d) => match &d.skipped {
                            Some(why) => format!("it is not waiting for approval ({why})"),
                            None if d.source.level == crate::config::Level::User => {
                                "it is a user-level server, which needs no approval".to_owned()
                            }
                            None => "it is already approved".to_owned(),
                        },
                    };
                    return Err(crate::error::Error::Config {
                        message: format!("cannot trust MCP server \"{name}\": {why}"),
                    });
                }
            }
        }
        chosen
    };
    let store = options.trust_store(cwd);
    for d in &chosen {
        store.approve(cwd, &d.name, &d.config, &d.source.path)?;
    }
    Ok(chosen.into_iter().cloned().collect())
}

/// Forgets the approval of the project server `name` (it asks again next time). False when
/// it had none.
pub fn untrust_server(
    cwd: &Path,
    options: &DiscoveryOptions,
    name: &str,
) -> Result<bool, crate::error::Error> {
    options.trust_store(cwd).revoke(cwd, name)
}

/// The manager's current tools (for a refresh after startup): the tools a
/// model may be offered. A tool an MCP App alone may call (its `_meta.ui.visibility` leaves out
/// `"model"`) is not among them; [`all_loaded_tools`] has those too, for a host's own use.
pub fn loaded_tools(manager: &McpManager) -> Vec<Arc<dyn AgentTool>> {
    loaded_tools_numbered(manager).1
}

/// [`loaded_tools`] from a numbered snapshot: a later snapshot has a larger number (see
/// `McpManager::get_tools_numbered`).
pub(crate) fn loaded_tools_numbered(manager: &McpManager) -> (u64, Vec<Arc<dyn AgentTool>>) {
    let (number, mut tools) = build_tools_numbered(manager);
    tools.retain(|t| {
        t.mcp_definition()
            .is_none_or(crate::protocol::Tool::visible_to_model)
    });
    (number, tools)
}

/// Every tool of the manager, those only an MCP App may call included:
/// what the host itself may call (a model is offered [`loaded_tools`]).
pub fn all_loaded_tools(manager: &McpManager) -> Vec<Arc<dyn AgentTool>> {
    build_tools_numbered(manager).1
}

/// Every server the default discovery finds (every source, [`DiscoveryOptions::default`]),
/// with where each came from, what was skipped and why: nothing is started. To connect them
/// too, [`create_agent_session`](crate::host::create_agent_session).
///
/// ```no_run
/// let found = mcp_runtime::discover_mcp_servers(std::path::Path::new("."));
/// for server in &found.discovered {
///     // e.g. "files: Claude Code (/home/me/.claude.json), skipped: None"
///     println!("{}: {} ({}), skipped: {:?}", server.name, server.source.provider_name,
///         server.source.path.display(), server.skipped);
/// }
/// ```
pub fn discover_mcp_servers(cwd: &Path) -> LoadedConfigs {
    load_all_mcp_configs(cwd, &DiscoveryOptions::default())
}
