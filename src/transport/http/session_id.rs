//! The Streamable HTTP session id: sent with every message once the server gave one, and
//! forgotten when the server says it no longer knows it (a 404 to a request that carried it,
//! or a 400 that names the session, as the TypeScript SDK's example servers answer).
//! The request that learned it fails with [`Error::SessionExpired`], and so does every other
//! one, without being sent, until an `initialize` succeeds: re-initializing is the client's
//! job (`client::renewal`), never the transport's.

use std::sync::atomic::Ordering;
use std::time::Instant;

use ureq::http::{HeaderValue, Response};
use ureq::Body;

use super::{Shared, SESSION_HEADER};
use crate::error::Error;
use crate::jsonrpc::{Message, Response as RpcResponse};
use crate::net::abort::Abort;
use crate::protocol::methods;
use crate::transport::Envelope;

impl Shared {
    /// `request` with the session id, once there is one.
    pub(super) fn with_session<R: super::WithHeader>(&self, request: R) -> R {
        match self.session.read().clone() {
            Some(id) => request.with_header(SESSION_HEADER, id),
            None => request,
        }
    }

    /// Keeps the session id a response carries. Once the session expired, only the answer to
    /// `initialize` (`to_initialize`) brings one: a late answer of the old session does not
    /// bring its id back.
    /// A `stateless` message (2026-07-28) has no session, whatever its response carries.
    pub(super) fn remember_session(
        &self,
        response: &Response<Body>,
        to_initialize: bool,
        stateless: bool,
    ) {
        let Some(id) = response.headers().get(SESSION_HEADER) else {
            return;
        };
        let stale = || !to_initialize && self.expired.load(Ordering::SeqCst);
        if stateless || stale() {
            return;
        }
        if self.session.read().as_ref() == Some(id) {
            return;
        }
        let mut session = self.session.write();
        // `expired` changes under this lock: checked again, it is settled.
        if session.as_ref() != Some(id) && !stale() {
            log::debug!("[{}] session assigned", self.name);
            *session = Some(id.clone());
        }
    }

    /// A request's exchange; `message` is that request. A session the server forgot is
    /// reported ([`Error::SessionExpired`]), never re-established here.
    pub(super) fn exchange(
        &self,
        message: &Message,
        envelope: &Envelope,
        deadline: Option<Instant>,
        abort: Option<&Abort>,
    ) -> Result<Option<RpcResponse>, Error> {
        let Message::Request(request) = message else {
            return Ok(None);
        };
        let initialize = request.method == methods::INITIALIZE;
        let sent_with = {
            let session = self.session.read();
            if !initialize && self.expired.load(Ordering::SeqCst) {
                // Without a session it could only be refused.
                return Err(Error::SessionExpired);
            }
            session.clone()
        };
        match self.post_authorized(message, envelope, &request.id, deadline, abort) {
            Err(Error::Http { status, body, .. })
                if sent_with.is_some() && !initialize && forgotten(status, &body) =>
            {
                self.forget_session(sent_with.as_ref());
                Err(Error::SessionExpired)
            }
            // Another request learned meanwhile that the session is gone, and this one went
            // without it.
            Err(Error::Http { status: 400, .. })
                if sent_with.is_some() && !initialize && *self.session.read() != sent_with =>
            {
                Err(Error::SessionExpired)
            }
            Ok(response) if initialize && response.outcome.is_ok() => {
                let _session = self.session.write();
                self.expired.store(false, Ordering::SeqCst);
                Ok(Some(response))
            }
            other => other.map(Some),
        }
    }

    /// The server said it does not know the session of a request sent with `stale`: unless another request already
    /// brought a new session, the session is gone, and requests fail until `initialize`.
    fn forget_session(&self, stale: Option<&HeaderValue>) {
        let mut session = self.session.write();
        if session.as_ref() == stale {
            *session = None;
            self.expired.store(true, Ordering::SeqCst);
            log::info!("[{}] the server forgot the session", self.name);
        }
    }
}

/// Whether a refusal of a request that carried a session says the server does not know it: a
/// 404, as the specification says, or a 400 that names the session, as the TypeScript SDK's
/// example servers (and the many servers built from them) answer once they restarted
/// (`Bad Request: No valid session ID provided`).
fn forgotten(status: u16, body: &str) -> bool {
    status == 404 || (status == 400 && body.to_ascii_lowercase().contains("session"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_forgotten_session_is_a_404_or_a_400_that_names_it() {
        assert!(super::forgotten(404, ""));
        let ts_sdk = r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
        assert!(super::forgotten(400, ts_sdk));
        assert!(super::forgotten(400, "Invalid or missing session ID"));
        assert!(!super::forgotten(
            400,
            r#"{"error":{"message":"Parse error"}}"#
        ));
        assert!(!super::forgotten(401, "session"));
    }
}
