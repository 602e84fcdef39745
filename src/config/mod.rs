//! The config layer: server configs and the files they come from.

mod file;
mod server;

pub use file::{parse_mcp_json, read_mcp_json, McpJson};
pub use server::{ServerConfig, TransportType};
