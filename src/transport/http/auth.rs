//! A request answered `401` or `403`: the auth provider (OAuth) decides whether a new
//! authorization is worth a re-send (see [`web::AuthProvider`]).

use std::time::Instant;

use super::Shared;
use crate::error::Error;
use crate::jsonrpc::{Message, RequestId, Response as RpcResponse};
use crate::transport::abort::Abort;
use crate::transport::web;

impl Shared {
    /// [`Shared::post_and_resume`], re-sent while the auth provider, told of a `401` or a
    /// `403`, says a new authorization is worth a try (bounded by `MAX_AUTH_RETRIES` and the
    /// deadline).
    pub(super) fn post_authorized(
        &self,
        message: &Message,
        id: &RequestId,
        deadline: Option<Instant>,
        abort: Option<&Abort>,
    ) -> Result<Option<RpcResponse>, Error> {
        let mut retries = 0;
        loop {
            let outcome = self.post_and_resume(message, id, deadline, abort);
            let Some(auth) = self.target_auth.as_ref() else {
                return outcome;
            };
            let again = match &outcome {
                _ if retries >= web::MAX_AUTH_RETRIES => false,
                _ if deadline.is_some_and(|d| Instant::now() >= d) => false,
                Err(Error::Http {
                    status: 401,
                    www_authenticate,
                    ..
                }) => auth.on_unauthorized(www_authenticate.as_deref(), retries),
                Err(Error::Http {
                    status: 403,
                    www_authenticate: Some(challenge),
                    ..
                }) => auth.on_forbidden(challenge, retries),
                _ => false,
            };
            if !again {
                return outcome;
            }
            retries += 1;
            log::debug!(
                "[{}] re-sending request {id} with a new authorization",
                self.name
            );
        }
    }
}
