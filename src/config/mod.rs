//! The config layer: where users keep MCP servers, and how a config becomes a connection.
//!
//! - [`load_all_mcp_configs`] runs every [`ConfigSource`] (the host's own files and every
//!   tool's in the table below), merges by name (highest priority wins whole), and filters.
//! - [`ServerConfig`] is one server in the `.mcp.json` shape; [`validate_server_config`] checks
//!   it; `${VAR}` / `${VAR:-default}` are expanded at discovery.
//! - [`resolve_server_config`] runs at connect time: `!command` values, environment-variable
//!   names, OAuth tokens from an [`AuthStorage`](crate::auth::AuthStorage). Resolved values are never logged or cached.
//! - [`ConfigWriter`] edits the host's own files atomically.
//!
#![doc = include_str!("../../docs/config.md")]

mod auth;
mod discovery;
mod exa;
mod expand;
mod file;
pub(crate) mod jsonc;
pub(crate) mod oauth;
mod policy;
pub use policy::{policy_refusal, policy_requires_sandbox};
mod resolve;
pub(crate) mod sandbox;
mod server;
mod source;
pub(crate) mod sources;
mod trust;
mod trust_facts;
mod writer;

pub use auth::FileAuthStorage;
pub(crate) use discovery::network_settings;
pub use discovery::{load_all_mcp_configs, DiscoveredServer, DiscoveryOptions, LoadedConfigs};
pub use exa::{exa_api_key, is_exa};
pub use file::{parse_mcp_json, read_mcp_json};
pub(crate) use file::{read_text, ReadError, CACHE_FILE_CAP};
#[cfg(feature = "oauth")]
pub use oauth::provider_for;
pub use oauth::uses_oauth;
pub(crate) use resolve::resolve_cancellable;
pub use resolve::{resolve_server_config, ResolvedConfig};
pub use server::{config_hash, validate_server_config, validate_server_name, ServerConfig};
pub use source::{ConfigSource, DiscoveryContext, Level, ServerProblem, SourceMeta, SourceOutput};
pub use sources::{
    builtin_source, default_sources, file_source, HostConfig, DEFAULT_DIR_NAME,
    GEMINI_DEFAULT_TIMEOUT_MS,
};
pub use trust::{ProjectTrust, TrustDecision, TrustState};
pub use trust_facts::approval_lines;
pub use writer::ConfigWriter;
