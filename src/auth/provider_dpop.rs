//! The DPoP side of [`OAuthProvider`](super::OAuthProvider) as the transport's auth hook: the
//! headers of one request to the MCP server (`Authorization: DPoP <token>` and a proof made
//! for that request, with the server's latest nonce). The re-send a `use_dpop_nonce` challenge
//! asks for (RFC 9449 §9) is the transport's (`transport::http::auth`).

use super::OAuthProvider;

impl OAuthProvider {
    /// The headers that authorize `method` to `url`: the token, and with bound tokens their
    /// proof (with the server's latest nonce). None without a usable token.
    pub(super) fn request_headers(&self, method: &str, url: &str) -> Vec<(String, String)> {
        let Some(value) = crate::transport::AuthProvider::authorization(self) else {
            return Vec::new();
        };
        let mut headers = vec![("Authorization".to_owned(), value)];
        let Some(tokens) = self.tokens() else {
            return headers;
        };
        if let Some(key) = &tokens.dpop {
            let nonce = self.inner.resource_nonces.get(url);
            let token = tokens.credential.access_token.as_str();
            match key.proof(method, url, nonce.as_deref(), Some(token)) {
                Ok(proof) => headers.push(("DPoP".to_owned(), proof)),
                Err(e) => log::warn!("oauth: no DPoP proof for this request: {e}"),
            }
        }
        headers
    }
}
