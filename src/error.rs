//! The crate's one error type.
//!
//! Every failure a caller can see is an [`Error`]. It is `Clone`, so one startup failure can be
//! handed to many waiters, and its variants are what a caller matches on: a timeout, a
//! cancellation, a dead transport, a JSON-RPC error from the server, an HTTP status, and so on.
//! The `Display` texts are stable (hosts show them to users and models).

use std::fmt;
use std::time::Duration;

use serde_json::Value;

/// Everything that can go wrong talking to an MCP server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A request got no answer in time. Renders as `Request timeout after <N>ms`.
    Timeout {
        /// The JSON-RPC method that timed out.
        method: String,
        /// How long the request waited.
        after: Duration,
    },
    /// The whole connect sequence (spawn or first POST, `initialize`, `notifications/initialized`)
    /// did not finish in time. Renders as `Connection to MCP server "<name>" timed out after <N>ms`.
    ConnectTimeout {
        /// The server's configured name.
        server: String,
        /// The handshake bound that ran out.
        after: Duration,
        /// The last lines the server wrote to stderr, if it is a local process.
        stderr_tail: Vec<String>,
        /// How many stdout lines that were not JSON-RPC a local server printed (and that were
        /// skipped) before it answered, and the first of them, trimmed and with its secrets
        /// masked: a server that prints a banner, or is not an MCP server at all.
        skipped_stdout: Option<(usize, String)>,
    },
    /// The caller's [`CancelToken`](crate::cancel::CancelToken) fired.
    Cancelled,
    /// The connection is gone: the process exited, stdout reached EOF, the stream ended, or the
    /// client was closed. Every pending request ends with this.
    TransportClosed {
        /// Why the transport closed, in words.
        reason: String,
        /// The last lines the server wrote to stderr, if it is a local process.
        stderr_tail: Vec<String>,
    },
    /// The server sent a message larger than the configured `max_message_bytes`. The message is
    /// never buffered whole; the connection is closed and every pending request fails with this.
    MessageTooLarge {
        /// The configured limit, in bytes.
        limit: usize,
    },
    /// The server answered with a JSON-RPC error. Renders as `MCP error <code>: <message>`.
    Rpc {
        /// The JSON-RPC error code (`-32601` method not found, `-32602` invalid params, ...).
        code: i64,
        /// The server's message.
        message: String,
        /// The error's `data` member, as the server sent it.
        data: Option<Value>,
    },
    /// An HTTP request got a non-success status.
    Http {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body (capped).
        body: String,
        /// The `WWW-Authenticate` header, when the server sent one (a 401 asks for credentials).
        www_authenticate: Option<String>,
    },
    /// The server forgot our HTTP session (404 on a request that carried `Mcp-Session-Id`) and the
    /// request could not be re-sent safely.
    SessionExpired,
    /// The server chose a protocol version this crate does not speak.
    UnsupportedProtocolVersion {
        /// The version we offered.
        requested: String,
        /// The version the server answered with.
        received: String,
    },
    /// The server could not be started (the command was not found, not executable, ...).
    Spawn {
        /// The server's configured name.
        server: String,
        /// What the operating system said.
        message: String,
    },
    /// The server asks for a sandbox that cannot be applied here (a kernel without Landlock,
    /// user namespaces turned off, another operating system, a rule that cannot be enforced):
    /// it was not started. Never a silent fallback to running unconfined.
    Sandbox {
        /// The server's configured name.
        server: String,
        /// What is missing or wrong.
        message: String,
    },
    /// The server sent something that breaks the protocol (a result of the wrong shape, ...).
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// A configuration is invalid or could not be read.
    Config {
        /// What was wrong, naming the file or server where known.
        message: String,
    },
    /// The named server is not connected. Renders as `MCP server not connected: <name>`.
    NotConnected {
        /// The server's configured name.
        server: String,
        /// Why it is not connected, when known (its last error: a failed connect, a dead
        /// transport). Renders as `MCP server not connected: <name> (<reason>)`.
        reason: Option<String>,
    },
    /// A local I/O failure outside the transport (writing a file, ...).
    Io {
        /// What failed, and what the operating system said.
        message: String,
        /// The kind of the operating system's error, when there was one.
        kind: Option<std::io::ErrorKind>,
    },
    /// The OAuth authorization of an HTTP server failed (discovery, registration, the
    /// authorization step, the token endpoint). The message never holds a token, code,
    /// verifier, secret or key.
    OAuth {
        /// What kind of failure it is.
        kind: OAuthErrorKind,
        /// What went wrong, in words.
        message: String,
    },
    /// An HTTP server answered with a redirect. Redirects are never followed (they would carry
    /// the configured headers and the session elsewhere). Renders as
    /// `HTTP <status>: redirect to <location> not followed`.
    Redirect {
        /// The HTTP status code (301, 302, 303, 307, 308).
        status: u16,
        /// Where it pointed, with its query values and userinfo redacted.
        location: String,
    },
    /// What a server sent does not match what it said of it (a skill's file whose size,
    /// digest or frontmatter differs from the skill's list): nothing of it was handed over.
    /// Renders as `<uri> failed its check: <problem>`.
    Integrity {
        /// What was read.
        uri: String,
        /// What differs.
        problem: String,
    },
    /// What was asked needs a Cargo feature this build of the crate leaves out (an `https://`
    /// server without `tls`, ...). Renders as `<what> needs the "<feature>" feature, which this
    /// build of mcp-runtime leaves out`.
    FeatureMissing {
        /// The Cargo feature: `tls`, `yaml`, `toml` or `oauth`.
        feature: &'static str,
        /// What needed it, naming the server or file (URLs redacted).
        what: String,
    },
    /// A panic, caught: in a thread of this crate (a bug in it: please report it), or in a host
    /// callback it ran. What that thread served fails with this (a connection's machinery: the
    /// connection; a callback: the one request it answered). Renders as
    /// `Internal error in <place>: <message>`.
    Internal {
        /// Where it was caught (`the stdout reader`, `the ClientHandler's sampling`, ...).
        place: String,
        /// The panic's message.
        message: String,
    },
}

impl Error {
    /// [`Error::NotConnected`] with no reason known.
    pub fn not_connected(server: &str) -> Error {
        Error::NotConnected {
            server: server.to_owned(),
            reason: None,
        }
    }

    /// For a `-32042` error (URL elicitation required, 2025-11-25): the pages the user must
    /// visit before the request can succeed (retry it once they are done). Empty for any other
    /// error.
    pub fn url_elicitations(&self) -> Vec<crate::protocol::UrlElicitation> {
        match self {
            Error::Rpc {
                code: -32042,
                data: Some(data),
                ..
            } => data
                .get("elicitations")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|e| serde_json::from_value(e.clone()).ok())
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The JSON-RPC error code, when this is an error the server sent.
    pub fn rpc_code(&self) -> Option<i64> {
        match self {
            Error::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// True for errors after which the connection is unusable. Not [`Error::SessionExpired`]:
    /// the client has started a new session by then (or the next request starts it), and only
    /// the request that met the old one failed.
    pub fn is_fatal_to_connection(&self) -> bool {
        matches!(
            self,
            Error::TransportClosed { .. } | Error::MessageTooLarge { .. }
        )
    }

    pub(crate) fn closed(reason: impl Into<String>) -> Error {
        Error::TransportClosed {
            reason: reason.into(),
            stderr_tail: Vec::new(),
        }
    }

    /// The reason of a connection its owner closed (`close`, a drop), not a failure.
    pub(crate) const CLOSED: &'static str = "the connection was closed";

    /// A connection its owner closed.
    pub(crate) fn closed_by_owner() -> Error {
        Error::closed(Error::CLOSED)
    }

    /// Whether this is the end of a connection its owner closed.
    pub(crate) fn is_closed_by_owner(&self) -> bool {
        matches!(self, Error::TransportClosed { reason, .. } if reason == Error::CLOSED)
    }

    /// An [`Error::FeatureMissing`].
    pub(crate) fn feature_missing(feature: &'static str, what: impl Into<String>) -> Error {
        Error::FeatureMissing {
            feature,
            what: what.into(),
        }
    }

    pub(crate) fn protocol(message: impl Into<String>) -> Error {
        Error::Protocol {
            message: message.into(),
        }
    }
}

fn write_tail(f: &mut fmt::Formatter<'_>, tail: &[String]) -> fmt::Result {
    if tail.is_empty() {
        return Ok(());
    }
    write!(f, "\nserver stderr (last {} lines):", tail.len())?;
    for line in tail {
        write!(f, "\n  {line}")?;
    }
    Ok(())
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Timeout { after, .. } => write!(f, "Request timeout after {}ms", after.as_millis()),
            Error::ConnectTimeout {
                server,
                after,
                stderr_tail,
                skipped_stdout,
            } => {
                write!(
                    f,
                    "Connection to MCP server \"{server}\" timed out after {}ms",
                    after.as_millis()
                )?;
                if let Some((lines, first)) = skipped_stdout {
                    let s = if *lines == 1 { "" } else { "s" };
                    write!(
                        f,
                        "; it printed {lines} line{s} that {} not JSON-RPC on stdout (the \
                         first: \"{first}\")",
                        if *lines == 1 { "is" } else { "are" }
                    )?;
                }
                write_tail(f, stderr_tail)
            }
            Error::Cancelled => f.write_str("Request cancelled"),
            Error::TransportClosed {
                reason,
                stderr_tail,
            } => {
                write!(f, "Transport closed: {reason}")?;
                write_tail(f, stderr_tail)
            }
            Error::MessageTooLarge { limit } => write!(
                f,
                "Message from server exceeds the limit of {limit} bytes; connection closed"
            ),
            Error::Rpc { code, message, .. } => write!(f, "MCP error {code}: {message}"),
            Error::Http {
                status,
                body,
                www_authenticate,
            } => {
                write!(f, "HTTP {status}")?;
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                if let Some(auth) = www_authenticate {
                    write!(f, " [WWW-Authenticate: {auth}]")?;
                }
                Ok(())
            }
            Error::SessionExpired => f.write_str(
                "MCP session expired; the request was not re-sent because it may not be idempotent",
            ),
            Error::UnsupportedProtocolVersion {
                requested,
                received,
            } => write!(
                f,
                "Unsupported protocol version: the server answered \"{received}\" to our \"{requested}\""
            ),
            Error::Spawn { server, message } => {
                write!(f, "Failed to start MCP server \"{server}\": {message}")
            }
            Error::Sandbox { server, message } => write!(
                f,
                "MCP server \"{server}\" was not started: its sandbox cannot be applied ({message})"
            ),
            Error::Protocol { message } => write!(f, "Protocol error: {message}"),
            Error::Internal { place, message } => {
                write!(f, "Internal error in {place}: {message}")
            }
            Error::Config { message } => write!(f, "Invalid config: {message}"),
            Error::NotConnected {
                server,
                reason: None,
            } => write!(f, "MCP server not connected: {server}"),
            Error::NotConnected {
                server,
                reason: Some(reason),
            } => write!(f, "MCP server not connected: {server} ({reason})"),
            Error::Io { message, .. } => write!(f, "I/O error: {message}"),
            Error::OAuth { message, .. } => write!(f, "OAuth: {message}"),
            Error::Redirect { status, location } => {
                write!(f, "HTTP {status}: redirect to {location} not followed")
            }
            Error::Integrity { uri, problem } => write!(f, "{uri} failed its check: {problem}"),
            Error::FeatureMissing { feature, what } => write!(
                f,
                "{what} needs the \"{feature}\" feature, which this build of mcp-runtime leaves out"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// An [`Error::Io`]: `what` failed because of `error` (its text goes into the message, its
    /// kind into `kind`).
    pub fn io(what: impl fmt::Display, error: std::io::Error) -> Error {
        Error::Io {
            message: format!("{what}: {error}"),
            kind: Some(error.kind()),
        }
    }
}

/// What kind of OAuth failure an [`Error::OAuth`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthErrorKind {
    /// The `oauth` config is invalid (a bad value, an unreadable key file).
    Config,
    /// Refused as unsafe: a non-http(s) URL, plain http to a non-loopback host, a metadata
    /// `resource` that is not this server, an AS without PKCE S256, a `state` or `iss` mismatch.
    Refused,
    /// The metadata could not be found, or was malformed.
    Discovery,
    /// No client identity: nothing configured, and the AS offers no way to register.
    Registration,
    /// The authorization step was denied or failed (the redirect carried `error=…`).
    Denied,
    /// The token endpoint refused or answered with something that is not a token response.
    Token,
    /// An authorization server or identity provider could not be reached in time.
    Unreachable,
    /// A login is needed and no interactive step is available.
    LoginRequired,
    /// The retries allowed for one operation are used up.
    RetryLimit,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_keeps_the_system_errors_text_and_kind() {
        let e = Error::io(
            "writing /x",
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied"),
        );
        assert_eq!(e.to_string(), "I/O error: writing /x: denied");
        assert!(matches!(
            e,
            Error::Io {
                kind: Some(std::io::ErrorKind::PermissionDenied),
                ..
            }
        ));
        assert_eq!(e.clone(), e);
    }

    #[test]
    fn texts_match_the_design() {
        let t = Error::Timeout {
            method: "tools/call".into(),
            after: Duration::from_millis(1500),
        };
        assert_eq!(t.to_string(), "Request timeout after 1500ms");
        let c = Error::ConnectTimeout {
            server: "files".into(),
            after: Duration::from_secs(30),
            stderr_tail: vec![],
            skipped_stdout: None,
        };
        assert_eq!(
            c.to_string(),
            "Connection to MCP server \"files\" timed out after 30000ms"
        );
        let noisy = Error::ConnectTimeout {
            server: "files".into(),
            after: Duration::from_secs(30),
            stderr_tail: vec![],
            skipped_stdout: Some((3, "Server v1 ready".into())),
        };
        assert_eq!(
            noisy.to_string(),
            "Connection to MCP server \"files\" timed out after 30000ms; it printed 3 lines \
             that are not JSON-RPC on stdout (the first: \"Server v1 ready\")"
        );
        let r = Error::Rpc {
            code: -32601,
            message: "Method not found".into(),
            data: None,
        };
        assert_eq!(r.to_string(), "MCP error -32601: Method not found");
        assert_eq!(r.rpc_code(), Some(-32601));
        let n = Error::NotConnected {
            server: "x".into(),
            reason: None,
        };
        assert_eq!(n.to_string(), "MCP server not connected: x");
        let url = Error::Rpc {
            code: -32042,
            message: "URL elicitation required".into(),
            data: Some(serde_json::json!({"elicitations": [
                {"mode": "url", "url": "https://example.test/consent", "message": "Approve",
                 "elicitationId": "e1"}
            ]})),
        };
        let asked = url.url_elicitations();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].url, "https://example.test/consent");
        assert_eq!(asked[0].elicitation_id.as_deref(), Some("e1"));
        assert!(r.url_elicitations().is_empty());
    }

    #[test]
    fn stderr_tail_is_shown() {
        let e = Error::TransportClosed {
            reason: "server exited with exit status: 3".into(),
            stderr_tail: vec!["boom".into()],
        };
        assert!(e
            .to_string()
            .ends_with("server stderr (last 1 lines):\n  boom"));
        assert!(e.is_fatal_to_connection());
        // The client renews an expired session itself: the connection goes on.
        assert!(!Error::SessionExpired.is_fatal_to_connection());
    }
}
