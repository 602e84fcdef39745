//! The manager's registries, under one lock.
//!
//! The manager has five registries, all views of one map of [`Server`] entries, so they can
//! never disagree:
//! - `connections`: entries in [`Phase::Connected`];
//! - `pending_connections`: [`Phase::Connecting`] without a client yet (handshake running);
//! - `pending_tool_loads`: [`Phase::Connecting`] with a client (listing tools);
//! - `tools`: each entry's `tools` (live, or deferred from the cache while connecting);
//! - `sources`: each entry's `source`, known before the connection completes.
//!
//! Nothing holds this lock across I/O. Every change wakes the waiters registered in
//! `watchers` (a bounded channel each, so a waiter can also select on its cancel signal).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Sender;

use super::features::Features;
use crate::cancel::CancelToken;
use crate::client::Client;
use crate::config::{ServerConfig, SourceMeta};
use crate::error::Error;
use crate::protocol::Tool;

/// Where a server is in its life.
pub(crate) enum Phase {
    /// A connect task is running (identified by `attempt`); `client` is set once the handshake
    /// is done and tools are being listed.
    Connecting {
        attempt: u64,
        cancel: CancelToken,
        client: Option<Client>,
    },
    /// Connected and listed.
    Connected { attempt: u64, client: Client },
    /// The last attempt failed, or the connection died; `last_error` says why.
    Disconnected,
}

/// One known server.
pub(crate) struct Server {
    pub config: ServerConfig,
    pub source: Option<SourceMeta>,
    pub phase: Phase,
    /// The server's tools after its filters; from the cache while `deferred`.
    pub tools: Vec<Arc<Tool>>,
    pub deferred: bool,
    pub last_error: Option<Error>,
    /// When automatic reconnections started (for the burst breaker).
    pub reconnects: Vec<Instant>,
    /// Whether any attempt ever connected (only those servers are reconnected).
    pub ever_connected: bool,
    /// Resources, templates and prompts (listed once connected).
    pub features: Features,
    /// The coalescing of `tools/list_changed` refreshes...
    pub tools_refresh: Coalesce,
    /// ...and of `resources/list_changed` and `prompts/list_changed` ones.
    pub features_refresh: Coalesce,
}

/// One refresh in flight and at most one queued behind it, however many notifications come.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Coalesce {
    /// A refresh is running...
    pub running: bool,
    /// ...and another notification came meanwhile: one more refresh follows it.
    pub queued: bool,
}

impl Server {
    pub(crate) fn new(
        config: ServerConfig,
        source: Option<SourceMeta>,
        attempt: u64,
        cancel: CancelToken,
    ) -> Server {
        Server {
            config,
            source,
            phase: Phase::Connecting {
                attempt,
                cancel,
                client: None,
            },
            tools: Vec::new(),
            deferred: false,
            last_error: None,
            reconnects: Vec::new(),
            ever_connected: false,
            features: Features::default(),
            tools_refresh: Coalesce::default(),
            features_refresh: Coalesce::default(),
        }
    }

    /// The attempt currently in charge of this entry, if connecting or connected.
    pub(crate) fn attempt(&self) -> Option<u64> {
        match &self.phase {
            Phase::Connecting { attempt, .. } | Phase::Connected { attempt, .. } => Some(*attempt),
            Phase::Disconnected => None,
        }
    }

    /// The connected client.
    pub(crate) fn client(&self) -> Option<&Client> {
        match &self.phase {
            Phase::Connected { client, .. } => Some(client),
            _ => None,
        }
    }

    /// A client that can be called: connected, or done with its handshake and still listing
    /// its tools.
    pub(crate) fn usable_client(&self) -> Option<&Client> {
        match &self.phase {
            Phase::Connected { client, .. }
            | Phase::Connecting {
                client: Some(client),
                ..
            } => Some(client),
            _ => None,
        }
    }

    /// Stops whatever this entry is doing: fires its connect task's cancel signal and hands
    /// back its client (to be closed outside the lock).
    pub(crate) fn stop(self) -> Option<Client> {
        match self.phase {
            Phase::Connecting { cancel, client, .. } => {
                cancel.cancel();
                client
            }
            Phase::Connected { client, .. } => Some(client),
            Phase::Disconnected => None,
        }
    }
}

/// Everything the manager knows.
#[derive(Default)]
pub(crate) struct State {
    pub servers: BTreeMap<String, Server>,
    pub watchers: Vec<Sender<()>>,
}

impl State {
    /// Wakes every waiter; forgets the ones that went away.
    pub(crate) fn notify(&mut self) {
        self.watchers.retain(|w| {
            !matches!(
                w.try_send(()),
                Err(crossbeam_channel::TrySendError::Disconnected(_))
            )
        });
    }
}
