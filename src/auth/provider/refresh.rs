//! The refresh half of [`OAuthProvider`](super::OAuthProvider): when tokens are refreshed,
//! and the refresh itself, serialised across the processes that share the token store.

use serde_json::{json, Value};

use super::super::token::{ClientAuth, TokenRequest, TokenResponse};
use super::super::{error, now_ms, OAuthErrorKind};
use super::{credential_id, resource_index_id, OAuthProvider, Tokens};
use crate::error::Error;

impl OAuthProvider {
    /// Exchanges the refresh token for new tokens (a rotated refresh token replaces the old
    /// one; one not rotated is kept). A refused refresh forgets the tokens.
    ///
    /// Runs under the store's exclusive hold, so processes sharing the store refresh one at a
    /// time; what the store holds once the hold is had wins over what this process read before
    /// (another process refreshed meanwhile: its tokens are used, and the refresh token this one
    /// read, spent by then, is never sent again, which a rotating authorization server would
    /// take for theft and answer by revoking the grant).
    pub(super) fn refresh_now(&self, tokens: &Tokens) -> Result<(), Error> {
        let _hold = self
            .inner
            .storage
            .exclusive(self.inner.options.request_timeout * 2)?;
        match self.load() {
            Some(stored)
                if stored.credential.refresh_token != tokens.credential.refresh_token
                    || stored.credential.access_token != tokens.credential.access_token =>
            {
                log::debug!("oauth: the stored tokens were refreshed elsewhere; using them");
                let mut s = self.inner.state.lock();
                s.tokens = Some(stored);
                s.loaded = true;
                return Ok(());
            }
            Some(_) => {}
            None => {
                let mut s = self.inner.state.lock();
                s.tokens = None;
                s.loaded = true;
                return Err(error(
                    OAuthErrorKind::LoginRequired,
                    "the stored tokens were removed (a logout, or a refresh refused in another process)",
                ));
            }
        }
        let refresh =
            tokens.credential.refresh_token.clone().ok_or_else(|| {
                error(OAuthErrorKind::LoginRequired, "no refresh token is stored")
            })?;
        let secret = tokens
            .client
            .client_secret
            .clone()
            .or_else(|| self.inner.config.client_secret.clone());
        let request = TokenRequest::new(
            &tokens.token_endpoint,
            vec![
                ("grant_type", "refresh_token".to_owned()),
                ("refresh_token", refresh.clone()),
                ("resource", tokens.resource.clone()),
            ],
            &ClientAuth {
                client_id: &tokens.client.client_id,
                secret: secret.as_ref(),
                key: self.inner.key.as_deref(),
                method: tokens.auth_method,
                issuer: &tokens.issuer,
            },
        )?;
        // Bound tokens are refreshed with a proof of the same key (RFC 9449 §5).
        let mut request = request;
        request.dpop = tokens.dpop.is_some();
        let dpop = tokens.dpop.as_deref().map(|key| super::Dpop {
            key,
            nonces: &self.inner.nonces,
        });
        let reply = self.inner.http.post_token(&request, dpop)?;
        let parsed = TokenResponse::parse(
            reply.status,
            reply.content_type.as_deref(),
            &reply.body,
            &request.url,
            true,
        );
        let response = match parsed {
            Ok(r) => r,
            Err(e) => {
                if matches!(
                    e,
                    Error::OAuth {
                        kind: OAuthErrorKind::Token,
                        ..
                    }
                ) && (400..500).contains(&reply.status)
                {
                    log::debug!("oauth: the refresh was refused; the tokens are forgotten");
                    let storage = &self.inner.storage;
                    let _ = storage.remove(&credential_id(&tokens.issuer, &tokens.resource));
                    // Why, for whoever finds the server needing a login (another process too).
                    let index_id = resource_index_id(&self.inner.server_resource);
                    if let Some(mut index) = storage.get(&index_id) {
                        let why = match &e {
                            Error::OAuth { message, .. } => message.clone(),
                            e => e.to_string(),
                        };
                        index.extra.insert("refused".into(), json!(why));
                        let _ = storage.set(&index_id, index);
                    }
                    let mut s = self.inner.state.lock();
                    s.tokens = None;
                }
                return Err(e);
            }
        };
        let mut credential = tokens.credential.clone();
        // A refreshed token that is no longer bound goes out without proofs.
        let token_type = &response.token_type;
        if !token_type.is_empty() && !token_type.eq_ignore_ascii_case("dpop") {
            credential.extra.remove("dpopKey");
        }
        credential.access_token = response.access_token.expose().to_owned();
        credential.expires_at = expires_at(&response);
        match self.refresh_at(response.expires_in) {
            Some(at) => credential.extra.insert("refreshAt".into(), json!(at)),
            None => credential.extra.remove("refreshAt"),
        };
        if let Some(r) = &response.refresh_token {
            credential.refresh_token = Some(r.expose().to_owned());
        }
        if let Some(scope) = &response.scope {
            credential.extra.insert("scope".into(), json!(scope));
        }
        self.save(credential)
    }

    pub(super) fn needs_refresh(&self, tokens: &Tokens) -> bool {
        let c = &tokens.credential;
        if let Some(at) = c.extra.get("refreshAt").and_then(Value::as_u64) {
            return now_ms() >= at;
        }
        let margin = self.inner.options.refresh_margin.as_millis() as u64;
        c.expires_at.is_some_and(|at| now_ms() + margin >= at)
    }

    /// When tokens that live `expires_in` are refreshed: `refresh_margin` before they expire,
    /// but not before half their life (a short-lived token is not refreshed on every request).
    pub(super) fn refresh_at(&self, expires_in: Option<u64>) -> Option<u64> {
        let life = expires_in?.saturating_mul(1000);
        let margin = self.inner.options.refresh_margin.as_millis() as u64;
        Some(now_ms().saturating_add(life.saturating_sub(margin).max(life / 2)))
    }

    /// Refreshes the tokens now, if a refresh token is stored.
    pub fn refresh(&self) -> Result<(), Error> {
        let tokens = self
            .tokens()
            .ok_or_else(|| error(OAuthErrorKind::LoginRequired, "not logged in"))?;
        match self.claim() {
            Some(_guard) => self.refresh_now(&tokens),
            None => Ok(()),
        }
    }
}

pub(super) fn expires_at(tokens: &TokenResponse) -> Option<u64> {
    tokens
        .expires_in
        .map(|s| now_ms().saturating_add(s.saturating_mul(1000)))
}
