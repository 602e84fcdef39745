//! The era a session speaks, and everything that depends on it, in one place: how a session
//! opens, what goes around each message on the wire, how a request goes, and what a listing
//! does.
//!
//! - **Opening** (`negotiate`): the era probe (`probe`, a sans-IO state machine; its driver
//!   tries `server/discover` at our stateless versions, then falls back to) the `initialize`
//!   handshake (`handshake`) of 2024-11-05 … 2025-11-25.
//! - **The envelope** ([`Envelopes`]): the version every message goes under and, in a
//!   2026-07-28 session over HTTP, the headers that mirror its body (`mirror`). The transport
//!   is told nothing else: it sends what the envelope holds.
//! - **The request** ([`SessionEra`]): as it is after a handshake; stamped with its `_meta`
//!   and read by `resultType` (with `input_required` rounds) in a stateless session
//!   (`stateless`).
//! - **After a listing** ([`SessionEra::after_listing`]): a stateless session over HTTP keeps
//!   the tools' `x-mcp-header` arguments for its envelopes, and drops the tools whose
//!   annotations are invalid.

use std::sync::Arc;

use parking_lot::RwLock;

use crate::jsonrpc::Message;
use crate::protocol::{ProtocolVersion, Tool};
use crate::transport::Envelope;

pub(crate) mod handshake;
mod mirror;
mod negotiate;
mod probe;
mod stateless;

pub(crate) use negotiate::ProbeKind;
pub use stateless::MAX_INPUT_ROUNDS;
pub(crate) use stateless::{answer_input, is_stateless_refusal, stamp, Stateless};

/// The era a session negotiated: it alone decides how a request goes.
pub(crate) enum SessionEra {
    /// The `initialize` handshake was done; requests go as they are.
    Handshake,
    /// 2026-07-28: no handshake; each request is stamped and its result read by `resultType`.
    Stateless(Stateless),
}

impl SessionEra {
    /// After a complete `tools/list`: a stateless session keeps what its envelopes need of
    /// `tools` (and drops the tools they could not carry).
    pub(crate) fn after_listing(&self, envelopes: &Envelopes, server: &str, tools: &mut Vec<Tool>) {
        if let SessionEra::Stateless(_) = self {
            envelopes.tools_listed(server, tools);
        }
    }
}

/// What every message of a connection goes in: the version the session settled (none before
/// it), and for a stateless session over HTTP the tools' header arguments. Shared by the
/// connection and its router (which answers the server's requests).
pub(crate) struct Envelopes {
    version: RwLock<Option<ProtocolVersion>>,
    /// Whether the wire has headers that mirror the body (Streamable HTTP).
    mirrors: bool,
    tools: RwLock<mirror::ToolHeaders>,
}

impl Envelopes {
    /// Envelopes for a connection whose transport is of `kind` (only `http` has headers that
    /// mirror the body).
    pub(crate) fn new(kind: &str) -> Arc<Envelopes> {
        Arc::new(Envelopes {
            version: RwLock::new(None),
            mirrors: kind == "http",
            tools: RwLock::new(mirror::ToolHeaders::new()),
        })
    }

    /// From now on messages go under `version` (`None`: under none, as `initialize` does).
    pub(crate) fn settle(&self, version: Option<ProtocolVersion>) {
        *self.version.write() = version;
    }

    /// The protocol version messages go under, once one is settled.
    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        *self.version.read()
    }

    /// The envelope of `message`, without a deadline (a request's sender adds how it waits).
    pub(crate) fn envelope(&self, message: &Message) -> Envelope {
        let version = *self.version.read();
        let headers = match version {
            Some(v) if self.mirrors && v.is_stateless() => {
                mirror::headers(message, &self.tools.read())
            }
            _ => Vec::new(),
        };
        Envelope {
            version,
            headers,
            ..Envelope::default()
        }
    }

    /// A stateless listing of `tools`: what their calls' headers need, kept; over HTTP, the
    /// tools whose `x-mcp-header` annotations are invalid are dropped (with a warning).
    fn tools_listed(&self, server: &str, tools: &mut Vec<Tool>) {
        if self.mirrors {
            *self.tools.write() = mirror::keep_valid(server, tools);
        }
    }
}
