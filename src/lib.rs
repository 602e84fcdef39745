//! mcp-runtime
pub mod cancel;
pub mod client;
pub mod error;
pub mod jsonrpc;
pub mod protocol;
pub mod transport;

pub use cancel::CancelToken;
pub use client::{CallOptions, Client, ClientHandler, ConnectOptions, Endpoint, NoHandler};
pub use error::{Error, Result};
