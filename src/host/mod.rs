//! The host layer as a host author meets it: the loader (the one call at startup), the
//! session (a tool registry that follows the servers), the `/mcp` commands, the tools a
//! subagent is given, the tool object itself ([`AgentTool`]), and the host's
//! side of an MCP App ([`AppBridge`]).

//!
#![doc = include_str!("../../docs/host.md")]

// Defined in this module's `loader`, `session`, `commands`, `subagent` and `app` modules and
// in the tools layer's `tool` (one concern per file); this module is where a host finds them.

pub(crate) mod app;
pub(crate) mod commands;
pub(crate) mod loader;
pub(crate) mod session;
pub(crate) mod subagent;

pub use self::app::{
    AppBridge, AppEvent, AppHostOptions, APPS_PROTOCOL_VERSION, APP_MAX_PENDING,
    APP_SANDBOX_PROXY_HTML, VIEW_SANDBOX,
};
pub use self::commands::{command_edits_config, HELP as COMMANDS_HELP};
pub use self::loader::{
    all_loaded_tools, approval_errors, discover_mcp_servers, loaded_tools, trust_servers,
    try_load_all_mcp_configs, untrust_server, LoadError,
};
pub use self::session::{create_agent_session, AgentSession, SessionOptions, ToolSearchOptions};
pub use self::subagent::{subagent_tools, DEFAULT_CALL_CAP};
pub use crate::tool::tokens::{estimated_tokens, BYTES_PER_TOKEN};
pub use crate::tool::{
    build_tools, display_path, parameters_of, render_text, schema_mismatch, AgentTool, ToolIndex,
    ToolOutput,
};
