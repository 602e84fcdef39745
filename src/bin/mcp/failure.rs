//! What a failed call means for a script: a kind (named in `--json`'s error object) and an
//! exit status, the same for every command that calls a server.
//!
//! | status | kind | what failed |
//! |---|---|---|
//! | 1 | (none) | the tool ran and reported an error of its own (`isError`) |
//! | 2 | `usage` | the command line or the config |
//! | 69 | `unavailable` | the server could not be started or reached, or went away |
//! | 69 | `sandbox` | the server asks for a sandbox this system cannot apply: it was not started |
//! | 70 | `internal` | a panic, caught (a bug: the message says where) |
//! | 76 | `protocol` | the server answered with an error, or broke the protocol |
//! | 77 | `authorization` | the server needs a login (or refused the one it had) |
//! | 124 | `timeout` | no answer within the timeout (as `timeout(1)` reports) |
//! | 130 | `interrupted` | SIGINT (143 SIGTERM, 129 SIGHUP) |

use mcp_runtime::Error;

/// The kind of failure `e` is, and the exit status that says it.
pub fn classify(e: &Error) -> (&'static str, u8) {
    match e {
        Error::Timeout { .. } | Error::ConnectTimeout { .. } => ("timeout", 124),
        Error::Cancelled => ("interrupted", 130),
        Error::Config { .. } => ("usage", 2),
        Error::OAuth { .. }
        | Error::Http {
            status: 401 | 403, ..
        } => ("authorization", 77),
        Error::Rpc { .. }
        | Error::Protocol { .. }
        | Error::MessageTooLarge { .. }
        | Error::UnsupportedProtocolVersion { .. } => ("protocol", 76),
        Error::Integrity { .. } => ("integrity", 65),
        Error::Internal { .. } => ("internal", 70),
        Error::Sandbox { .. } => ("sandbox", 69),
        _ => ("unavailable", 69),
    }
}

/// What the first server that could not be used failed with, as its kind and status (a server
/// that recorded no reason: unavailable, 69).
pub fn first_server_failure(manager: &mcp_runtime::manager::McpManager) -> (&'static str, u8) {
    manager
        .server_names()
        .iter()
        .find_map(|n| manager.connection_status(n).error().map(classify))
        .unwrap_or(("unavailable", 69))
}

/// A panic's message (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message")
}

/// `--json`'s object for a failure of the call (never a tool result).
pub fn json(e: &Error) -> serde_json::Value {
    serde_json::json!({"error": {"kind": classify(e).0, "message": e.to_string()}})
}
