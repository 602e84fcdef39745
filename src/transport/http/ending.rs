//! How requests and the Streamable HTTP transport end: which requests have a fixed deadline,
//! which exchange a cancellation is about, and the failures that end the whole transport.

use std::sync::atomic::Ordering;

use super::Shared;
use crate::error::Error;
use crate::jsonrpc::{Message, Request};
use crate::transport::web;

/// Whether a request asked for progress (its deadline then moves with each progress).
pub(super) fn has_progress_token(request: &Request) -> bool {
    request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("progressToken"))
        .is_some()
}

/// The request a cancellation is about.
pub(super) fn cancelled_id(message: &Message) -> Option<i64> {
    let Message::Notification(n) = message else {
        return None;
    };
    let id = n.params.as_ref()?.get("requestId")?;
    id.as_i64()
        .or_else(|| id.as_str().and_then(|s| s.parse().ok()))
}

impl Shared {
    /// Maps a `ureq` failure of a request; one at the connection level ends the transport.
    pub(super) fn failure(&self, e: ureq::Error, what: &str) -> Error {
        let dead = web::is_connection_failure(&e);
        let error = web::transport_error(e, &self.wire.split.shown, what);
        if dead {
            self.die(error.clone());
        }
        error
    }

    /// The server is gone: the transport ends with `error`.
    pub(super) fn die(&self, error: Error) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        log::warn!("[{}] the server is unreachable: {error}", self.name);
        self.stop.cancel();
        self.remote.shutdown();
        self.inbound.on_closed(error);
    }
}
