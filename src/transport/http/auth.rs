//! A request answered `401` or `403`: the auth provider (OAuth) decides whether a new
//! authorization is worth a re-send (see [`AuthProvider`](crate::transport::AuthProvider)).

use std::time::Instant;

use super::Shared;
use crate::error::Error;
use crate::jsonrpc::{Message, RequestId, Response as RpcResponse};
use crate::net::abort::Abort;
use crate::net::target::MAX_AUTH_RETRIES;
use crate::transport::Envelope;

impl Shared {
    /// [`Shared::post_and_resume`], re-sent while the auth provider, told of a `401` or a
    /// `403`, says a new authorization is worth a try (bounded by `MAX_AUTH_RETRIES` re-sends
    /// per status, and the deadline).
    pub(super) fn post_authorized(
        &self,
        message: &Message,
        envelope: &Envelope,
        id: &RequestId,
        deadline: Option<Instant>,
        abort: Option<&Abort>,
    ) -> Result<RpcResponse, Error> {
        // Re-sends so far after a 401, and after a 403; and whether the one re-send a DPoP
        // nonce is worth (RFC 9449 §9) was made.
        let (mut unauthorized, mut forbidden) = (0, 0);
        let mut nonce_resent = false;
        loop {
            let outcome = self.post_and_resume(message, envelope, id, deadline, abort);
            let Some(auth) = self.target_auth.as_ref() else {
                return outcome;
            };
            let in_time = deadline.is_none_or(|d| Instant::now() < d);
            let (again, consulted) = match &outcome {
                _ if !in_time => (false, false),
                // The server wants a DPoP nonce it has just sent (the provider has it, see
                // `web::note_nonce`): one re-send, which is no new authorization and costs the
                // provider none of its own budget (a refresh, a login).
                Err(Error::Http {
                    status: 401,
                    www_authenticate: Some(challenge),
                    ..
                }) if !nonce_resent && asks_dpop_nonce(challenge) => {
                    nonce_resent = true;
                    (true, false)
                }
                Err(Error::Http {
                    status: 401,
                    www_authenticate,
                    ..
                }) if unauthorized < MAX_AUTH_RETRIES => {
                    unauthorized += 1;
                    let again = auth.on_unauthorized(www_authenticate.as_deref(), unauthorized - 1);
                    (again, true)
                }
                Err(Error::Http {
                    status: 403,
                    www_authenticate: Some(challenge),
                    ..
                }) if forbidden < MAX_AUTH_RETRIES => {
                    forbidden += 1;
                    (auth.on_forbidden(challenge, forbidden - 1), true)
                }
                _ => (false, false),
            };
            if !again {
                // The provider declined: its reason (a refused refresh, a login that cannot
                // run here) says more than the server's bare 401/403.
                return match (outcome, consulted) {
                    (Err(e), true) => Err(auth.refusal().unwrap_or(e)),
                    (outcome, _) => outcome,
                };
            }
            log::debug!(
                "[{}] re-sending request {id} with a new authorization",
                self.name
            );
        }
    }
}

/// Whether a `WWW-Authenticate` holds a DPoP `use_dpop_nonce` error (whichever challenge of
/// the header it is in).
pub(crate) fn asks_dpop_nonce(challenge: &str) -> bool {
    let lower = challenge.to_ascii_lowercase();
    lower.contains("dpop") && lower.contains("use_dpop_nonce")
}
