//! OAuth 2.1 for HTTP servers: the MCP authorization flow (2025-03-26 … 2025-11-25, with the
//! 2026-07-28 hardening), as a client.
//!
//! ## The flow
//!
//! 1. **Challenge.** A server answers `401` with `WWW-Authenticate: Bearer
//!    resource_metadata="…", scope="…"` (`Challenge::parse`).
//! 2. **Protected Resource Metadata** (RFC 9728): the header's URL, else
//!    `/.well-known/oauth-protected-resource/<path>`, then `/.well-known/oauth-protected-resource`.
//!    Its `resource` must name this server; its first `authorization_servers` entry is the issuer.
//!    A server with none (2025-03-26) has its metadata at its origin.
//! 3. **Authorization server metadata** (RFC 8414, then OpenID Connect discovery, in the spec's
//!    order for issuers with and without a path). A document whose `issuer` is not the one it was
//!    fetched for is discarded. A 2025-03-26 server without any gets `/authorize`, `/token`,
//!    `/register` at its origin. An AS that does not list `S256` in
//!    `code_challenge_methods_supported` is refused for the code flow.
//! 4. **Client identity**, in order: the configured `clientId` (pre-registered); the host's Client
//!    ID Metadata Document URL when the AS says `client_id_metadata_document_supported`; a client
//!    registered earlier with this AS; Dynamic Client Registration (RFC 7591,
//!    `application_type: "native"`). Else an error saying what to configure.
//! 5. **Grant.** The authorization code with PKCE S256, `state`, `resource` (RFC 8707) on both
//!    requests and the RFC 9207 `iss` check; or `client_credentials`; or the enterprise-managed
//!    grant (SEP-990: the IdP's ID token is exchanged (RFC 8693) for an ID-JAG, which the MCP
//!    server's AS takes as a JWT bearer grant (RFC 7523)). The token endpoint authenticates the
//!    client by `none`, `client_secret_basic`, `client_secret_post` or `private_key_jwt`
//!    (ES256, RS256), as the AS advertises.
//! 6. **Using tokens.** [`OAuthProvider`] is the HTTP transport's
//!    [`AuthProvider`](crate::transport::AuthProvider): it sends `Bearer` tokens of this server
//!    only, refreshes them before they expire, and offers
//!    on a `401` a refresh, then a new login, and on a `403 insufficient_scope` a step-up with
//!    the union of the granted and the challenged scopes, each bounded per request.
//!
//! Inside, the flow is a value (`flow::Flow`, no I/O: each step says what it needs, the answer
//! moves it on); `driver` runs it over HTTP with every wait bounded, and an [`Authorizer`] performs the
//! one interactive step ([`browser`] opens the system browser and takes the redirect on
//! `http://127.0.0.1:<port>/callback`; [`headless`] follows the URL itself; [`no_login`]
//! refuses).
//!
//! ## What is stored where
//!
//! Tokens go to the host's [`AuthStorage`] (the file default, [`FileAuthStorage`](crate::config::FileAuthStorage), is
//! written atomically with mode 0600), one [`Credential`] per
//! authorization server issuer and resource, under the id [`credential_id`]`(issuer, resource)`.
//! Its `extra` map holds the issuer, the resource, the token endpoint, the client id (and the
//! secret of a client this crate registered dynamically), the token endpoint auth method and the
//! granted scopes. One more entry per resource ([`resource_index_id`]) remembers which issuer
//! the resource was last authorized by, so a token is only ever sent where it was issued for
//! and a changed authorization server means registering (or, for a pre-registered client, an
//! error) again. Secrets from the config (client secrets, private keys, ID tokens) are never
//! stored. No token, code, verifier, secret or key reaches a log, an error text or `Debug`.
//!
#![doc = include_str!("../../docs/auth.md")]

//!
//! ## Without the `oauth` feature
//!
//! Only the token storage ([`AuthStorage`], [`Credential`]) is built: a config's static
//! headers, bearer tokens and stored credentials still work, and a server that asks for an
//! OAuth login (`401` with `WWW-Authenticate`) fails with
//! [`FeatureMissing`](crate::Error::FeatureMissing).

#[cfg(feature = "oauth")]
mod authorizer;
#[cfg(feature = "oauth")]
mod caught;
#[cfg(feature = "oauth")]
pub(crate) mod challenge;
#[cfg(feature = "oauth")]
mod config;
#[cfg(feature = "oauth")]
pub(crate) mod dpop;
#[cfg(feature = "oauth")]
mod driver;
#[cfg(feature = "oauth")]
mod endpoints;
#[cfg(feature = "oauth")]
mod flow;
#[cfg(feature = "oauth")]
mod jwt;
#[cfg(feature = "oauth")]
pub(crate) mod metadata;
#[cfg(feature = "oauth")]
mod pkce;
#[cfg(feature = "oauth")]
mod provider;
#[cfg(feature = "oauth")]
mod registration;
mod storage;
#[cfg(feature = "oauth")]
pub(crate) mod token;

/// One request on the OAuth client's HTTP (the one exchange, a proxy and CAs as the environment
/// says, one deadline, a capped body, never re-sent): the `mcp` command's OpenTelemetry exporter
/// posts with it. The status and body, or the failure in words.
#[cfg(all(feature = "otel", feature = "oauth"))]
pub(crate) fn post_once(
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    deadline: std::time::Instant,
) -> Result<(u16, Vec<u8>), String> {
    let wire = crate::net::fetch::Fetch::new(
        1 << 20,
        None,
        None,
        crate::net::target::TlsSettings::default(),
    );
    match wire.request("POST", url, headers, Some(body), deadline) {
        Ok(r) => Ok((r.status, r.body)),
        Err(crate::net::fetch::Failure::Timeout) => Err("timed out".to_owned()),
        Err(crate::net::fetch::Failure::TooLarge(n)) => {
            Err(format!("answered with more than {n} bytes"))
        }
        Err(crate::net::fetch::Failure::Other(why)) => Err(why),
    }
}

#[cfg(feature = "oauth")]
pub use authorizer::{
    browser, browser_with, headless, no_login, open_in_browser, AuthorizationSession, Authorizer,
};
#[cfg(feature = "oauth")]
pub(crate) use config::OAuthConfig;
#[cfg(feature = "oauth")]
pub use driver::OAuthOptions;
#[cfg(feature = "oauth")]
pub use provider::{credential_id, resource_index_id, AuthStatus, OAuthProvider};
pub use storage::{AuthStorage, Credential};

#[cfg(feature = "oauth")]
use crate::error::{Error, OAuthErrorKind};

/// An [`Error::OAuth`].
#[cfg(feature = "oauth")]
pub(crate) fn error(kind: OAuthErrorKind, message: impl Into<String>) -> Error {
    Error::OAuth {
        kind,
        message: message.into(),
    }
}

#[cfg(feature = "oauth")]
/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(feature = "oauth")]
/// A secret string: never printed by `Debug`.
#[derive(Clone, PartialEq, Eq, Default)]
pub(crate) struct Secret(String);

#[cfg(feature = "oauth")]
impl Secret {
    /// Wraps a secret value.
    pub(crate) fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value (to send it where it belongs; never to log it).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

#[cfg(feature = "oauth")]
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}
