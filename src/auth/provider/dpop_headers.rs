//! The DPoP side of [`OAuthProvider`](super::OAuthProvider) as the transport's auth hook: the
//! headers of one request to the MCP server (`Authorization: DPoP <token>` and a proof made
//! for that request, with the server's latest nonce). The re-send a `use_dpop_nonce` challenge
//! asks for (RFC 9449 §9) is the transport's (`transport::http::auth`).

use super::OAuthProvider;

impl OAuthProvider {
    /// The headers that authorize `method` to `url`: the token, and with bound tokens their
    /// proof (with the server's latest nonce). None without a usable token.
    pub(super) fn request_headers(&self, method: &str, url: &str) -> Vec<(String, String)> {
        // `authorization` refreshes a token about to expire; the header and its proof are then
        // made from one reading of the tokens (another thread may refresh meanwhile).
        let Some(value) = crate::net::target::AuthProvider::authorization(self) else {
            return Vec::new();
        };
        let tokens = self
            .tokens()
            .filter(|t| !t.credential.access_token.is_empty());
        let Some(tokens) = tokens else {
            return vec![("Authorization".to_owned(), value)];
        };
        let token = tokens.credential.access_token.as_str();
        let Some(key) = &tokens.dpop else {
            return vec![("Authorization".to_owned(), format!("Bearer {token}"))];
        };
        let mut headers = vec![("Authorization".to_owned(), format!("DPoP {token}"))];
        let nonce = self.inner.resource_nonces.get(url);
        match key.proof(method, url, nonce.as_deref(), Some(token)) {
            Ok(proof) => headers.push(("DPoP".to_owned(), proof)),
            Err(e) => log::warn!("oauth: no DPoP proof for this request: {e}"),
        }
        headers
    }
}
