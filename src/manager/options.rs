//! The manager's options, its report, and the opt-in reconnect policy.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::auth::AuthStorage;
use crate::client::ConnectOptions;
use crate::error::{Error, OAuthErrorKind};
use crate::manager::cache::ToolCache;
use crate::transport::MemoryConnector;

/// The startup gate's default bound.
pub const STARTUP_TIMEOUT: Duration = Duration::from_millis(250);

/// How the manager connects.
#[derive(Clone)]
pub struct ManagerOptions {
    /// The default working directory of stdio servers, and the base of relative `cwd`s.
    pub project_dir: PathBuf,
    /// How long `connect_servers` waits before serving cached tools for servers still
    /// connecting. Default 250 ms.
    pub startup_timeout: Duration,
    /// Never start without a server's tools: a server still connecting after the gate with
    /// nothing in the cache is waited for (true, the default). With false, `connect_servers`
    /// returns at once and the server's tools arrive later through `on_tools_changed`.
    pub wait_without_cache: bool,
    /// The tool cache (`None`: no cache, no deferred tools).
    pub cache: Option<Arc<dyn ToolCache>>,
    /// OAuth credentials for configs with `auth`.
    pub auth: Option<Arc<dyn AuthStorage>>,
    /// The template of every connection (timeouts, handler, limits). A server's own `timeout`
    /// replaces `timeout`; its `toolTimeout` is the default bound of its tool calls.
    pub connect: ConnectOptions,
    /// How long disconnecting may hold the caller; closing goes on in the background after.
    /// Default 3 s: more than a stdio server's whole teardown (stdin close, 0.5 s, SIGTERM,
    /// 0.5 s, SIGKILL, at most 1 s to be reaped), so with the defaults `disconnect_*` returns
    /// only once every process it stopped is gone.
    pub disconnect_wait: Duration,
    /// Automatic reconnection after a transport dies (off by default: a server that died stays
    /// disconnected until the host reconnects it, so a host always knows what it talks to).
    pub reconnect: Option<ReconnectPolicy>,
    /// Reaches servers by other means than their config's transport: asked with the server's
    /// name and config at each connect attempt, it gives the in-memory pipe to connect through
    /// (the handshake era; no era probe), or `None` for the config's own transport. For
    /// in-memory servers in tests ([`memory_pair`](crate::transport::memory_pair)), and for a
    /// transport of the host's own, which moves messages between its end of the pipe (a
    /// [`MemoryServer`](crate::transport::MemoryServer)) and the server.
    #[allow(clippy::type_complexity)]
    pub connector: Option<
        Arc<dyn Fn(&str, &crate::config::ServerConfig) -> Option<MemoryConnector> + Send + Sync>,
    >,
    /// What a tool result may show the model (default: 25,000 tokens, nothing written to
    /// files). See [`OutputBudget`](super::OutputBudget).
    pub output_budget: super::OutputBudget,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            project_dir: std::env::current_dir().unwrap_or_default(),
            startup_timeout: STARTUP_TIMEOUT,
            wait_without_cache: true,
            cache: None,
            auth: None,
            connect: ConnectOptions::default(),
            disconnect_wait: Duration::from_secs(3),
            reconnect: None,
            connector: None,
            output_budget: super::OutputBudget::default(),
        }
    }
}

impl std::fmt::Debug for ManagerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerOptions")
            .field("project_dir", &self.project_dir)
            .field("startup_timeout", &self.startup_timeout)
            .field("wait_without_cache", &self.wait_without_cache)
            .field("cache", &self.cache.is_some())
            .field("auth", &self.auth.is_some())
            .field("connect", &self.connect)
            .field("disconnect_wait", &self.disconnect_wait)
            .field("output_budget", &self.output_budget)
            .field("reconnect", &self.reconnect)
            .field("connector", &self.connector.is_some())
            .finish()
    }
}

/// Reconnection after a transport dies: a backoff, and a burst breaker.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconnectPolicy {
    /// The delay before each try; the last one repeats.
    pub backoff: Vec<Duration>,
    /// At most this many tries...
    pub max_tries: usize,
    /// ...within this window.
    pub window: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            backoff: [500, 1000, 2000, 4000]
                .into_iter()
                .map(Duration::from_millis)
                .collect(),
            max_tries: 5,
            window: Duration::from_secs(30),
        }
    }
}

impl ReconnectPolicy {
    /// The delay before the next try, given the tries already made (their start times), or
    /// `None` when the burst breaker says stop.
    pub fn next_delay(&self, tries: &[Instant], now: Instant) -> Option<Duration> {
        let recent = tries
            .iter()
            .filter(|t| now.duration_since(**t) < self.window)
            .count();
        if recent >= self.max_tries {
            return None;
        }
        let last = self
            .backoff
            .last()
            .copied()
            .unwrap_or(Duration::from_secs(1));
        Some(self.backoff.get(recent).copied().unwrap_or(last))
    }
}

/// What `connect_servers` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectReport {
    /// Connected, tools listed.
    pub connected: Vec<String>,
    /// Still connecting; their tools come from the cache for now (deferred tools).
    pub deferred: Vec<String>,
    /// Still connecting with nothing cached (only when not waiting for them).
    pub pending: Vec<String>,
    /// Failed: invalid config, spawn or handshake failure, ...
    pub errors: BTreeMap<String, Error>,
    /// Already connected or connecting, left alone.
    pub skipped: Vec<String>,
}

/// A server's state, for hosts to show: connected, connecting or disconnected, with why it is
/// not connected when that is known.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerStatus {
    /// Connected; its tools are live.
    Connected,
    /// A connection attempt is running; `last_error` is why the one before failed or the
    /// connection died, when one did.
    Connecting {
        /// Why the last attempt failed, or the connection died.
        last_error: Option<Error>,
    },
    /// Not connected (never was, failed, died, or unknown).
    Disconnected {
        /// Why, when known.
        error: Option<Error>,
    },
}

impl ServerStatus {
    /// `connected`, `connecting` or `disconnected`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerStatus::Connected => "connected",
            ServerStatus::Connecting { .. } => "connecting",
            ServerStatus::Disconnected { .. } => "disconnected",
        }
    }

    /// Whether it is connected.
    pub fn is_connected(&self) -> bool {
        matches!(self, ServerStatus::Connected)
    }

    /// Why it is not connected (or why the attempt before this one failed), when known.
    pub fn error(&self) -> Option<&Error> {
        match self {
            ServerStatus::Connected => None,
            ServerStatus::Connecting { last_error } => last_error.as_ref(),
            ServerStatus::Disconnected { error } => error.as_ref(),
        }
    }

    /// Whether the server is waiting for a login: its last attempt was refused for want of
    /// authorization (`401`, or an OAuth flow that needs the user).
    pub fn needs_login(&self) -> bool {
        matches!(
            self.error(),
            Some(Error::Http { status: 401, .. })
                | Some(Error::OAuth {
                    kind: OAuthErrorKind::LoginRequired,
                    ..
                })
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_and_burst_breaker() {
        let p = ReconnectPolicy::default();
        let now = Instant::now();
        assert_eq!(p.next_delay(&[], now), Some(Duration::from_millis(500)));
        let tries: Vec<Instant> = (0..2).map(|_| now).collect();
        assert_eq!(p.next_delay(&tries, now), Some(Duration::from_secs(2)));
        let tries: Vec<Instant> = (0..4).map(|_| now).collect();
        assert_eq!(p.next_delay(&tries, now), Some(Duration::from_secs(4)));
        let tries: Vec<Instant> = (0..5).map(|_| now).collect();
        assert_eq!(
            p.next_delay(&tries, now),
            None,
            "five tries in the window: stop"
        );
        let later = now + Duration::from_secs(31);
        assert_eq!(
            p.next_delay(&tries, later),
            Some(Duration::from_millis(500)),
            "the window passed"
        );
    }
}
